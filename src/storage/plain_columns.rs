//! [sync] Which columns of a new data file skip Parquet's dictionary encoding.
//!
//! Parquet writers start every column with a dictionary and fall back to plain encoding once
//! the dictionary passes its page limit (1 MiB): for a column of unique values (ids, event
//! times) every value up to that point was hashed and interned for nothing, and the hash table
//! grown to about 130,000 entries, in every file. parquet-mr gives such columns up after their
//! first page; the Rust writer has no such check, so the choice is made here before files
//! are opened: from every batch a transaction writes when it writes them at once
//! (`DataWriter::write_all`: ingest flushes, push and Kafka commit groups), else from the
//! first batch written to the file.
//!
//! Contract:
//! - Only top-level columns of a primitive or string/binary type are judged; nested, boolean
//!   and already dictionary-encoded columns keep the writer's default.
//! - A column is written plain when a sample of [`SAMPLE`] of the batches' non-null values,
//!   drawn at rows chosen by a fixed pseudo-random sequence (the same batches, the same
//!   choice), holds no value twice **and** the batches' values would fill the dictionary page
//!   limit on their own: the dictionary could only fall back. A column of at most 130,000
//!   distinct 8-byte values (which a dictionary holds) shows about 16 repeats in such a
//!   sample; one repeat keeps the dictionary.
//! - A writer that rolls to a new file also writes plain the columns whose dictionary its
//!   closed files abandoned (a dictionary page followed by data pages of another encoding:
//!   [`abandoned_dictionaries`]), so a streamed write (`deltabus write`) pays for the
//!   abandoned dictionary once, not in every file.
//! - The choice changes how values are encoded, never which values are written: any reader
//!   reads both encodings.

use arrow::array::{Array, RecordBatch};
use arrow::datatypes::DataType;
use arrow::row::{RowConverter, SortField};
use parquet::basic::{Encoding, PageType};
use parquet::file::metadata::ParquetMetaData;
use parquet::schema::types::ColumnPath;

/// Values sampled per column; fewer non-null values in the batch: the writer's default.
const SAMPLE: usize = 2048;
/// The dictionary page limit of the writer's properties (Parquet's default, 1 MiB).
const DICTIONARY_LIMIT: usize = parquet::file::properties::DEFAULT_DICTIONARY_PAGE_SIZE_LIMIT;

/// The top-level columns of `batches` (of one schema, the first's) to write without a
/// dictionary, by name.
pub(crate) fn plain_columns(batches: &[&RecordBatch]) -> Vec<String> {
    let rows = batches.iter().map(|b| b.num_rows()).sum();
    plain_columns_of_sample(batches, rows)
}

/// [`plain_columns`] judged from `batches`, a sample drawn from across a transaction's `rows`
/// rows: the sample must hold no value twice, and its values scaled to `rows` must fill the
/// dictionary page limit.
pub(crate) fn plain_columns_of_sample(batches: &[&RecordBatch], rows: usize) -> Vec<String> {
    let Some(first) = batches.first() else { return Vec::new() };
    let sampled: usize = batches.iter().map(|b| b.num_rows()).sum();
    let scale = if sampled == 0 { 1.0 } else { (rows as f64 / sampled as f64).max(1.0) };
    let schema = first.schema();
    schema
        .fields()
        .iter()
        .enumerate()
        .filter(|(i, f)| {
            if !judged(f.data_type()) {
                return false;
            }
            let columns: Option<Vec<&dyn Array>> = batches
                .iter()
                .map(|b| b.columns().get(*i).filter(|c| c.data_type() == f.data_type()).map(|c| c.as_ref()))
                .collect();
            columns.is_some_and(|c| unique_past_a_dictionary(&c, scale))
        })
        .map(|(_, f)| f.name().clone())
        .collect()
}

/// [`plain_columns`] as Parquet column paths.
pub(crate) fn plain_paths(batches: &[&RecordBatch]) -> Vec<ColumnPath> {
    plain_columns(batches).into_iter().map(|n| ColumnPath::new(vec![n])).collect()
}

/// The columns of a written file whose chunks start with a dictionary and go on with data
/// pages of another encoding (the writer abandoned the dictionary).
pub(crate) fn abandoned_dictionaries(meta: &ParquetMetaData) -> Vec<ColumnPath> {
    let mut out: Vec<ColumnPath> = Vec::new();
    for chunk in meta.row_groups().iter().flat_map(|rg| rg.columns()) {
        let Some(stats) = chunk.page_encoding_stats() else { continue };
        let data = |t: PageType| matches!(t, PageType::DATA_PAGE | PageType::DATA_PAGE_V2);
        let dictionary = |e: Encoding| matches!(e, Encoding::RLE_DICTIONARY | Encoding::PLAIN_DICTIONARY);
        let fell_back = chunk.dictionary_page_offset().is_some()
            && stats.iter().any(|s| data(s.page_type) && !dictionary(s.encoding) && s.count > 0);
        if fell_back && !out.contains(chunk.column_path()) {
            out.push(chunk.column_path().clone());
        }
    }
    out
}

fn judged(t: &DataType) -> bool {
    (t.is_primitive() && !matches!(t, DataType::Float16))
        || matches!(
            t,
            DataType::Utf8
                | DataType::LargeUtf8
                | DataType::Binary
                | DataType::LargeBinary
                | DataType::FixedSizeBinary(_)
        )
}

/// Whether a pseudo-random sample of the arrays' non-null values (the arrays one after
/// another) holds no value twice and the arrays alone, times `scale`, would fill a dictionary
/// page.
fn unique_past_a_dictionary(arrays: &[&dyn Array], scale: f64) -> bool {
    let present: usize = arrays.iter().map(|a| a.len() - a.null_count()).sum();
    let starts: Vec<usize> = arrays
        .iter()
        .scan(0, |at, a| {
            let start = *at;
            *at += a.len();
            Some(start)
        })
        .collect();
    let total: usize = arrays.iter().map(|a| a.len()).sum();
    let Ok(len) = u32::try_from(total) else { return false };
    if present < SAMPLE {
        return false;
    }
    // Row `i` of the arrays one after another: (array, row in it).
    let locate = |i: usize| {
        let a = starts.partition_point(|s| *s <= i) - 1;
        (a, i - starts[a])
    };
    // xorshift32 from a fixed seed: rows drawn with repeats allowed (a repeated row is skipped).
    let mut state = 0x9E37_79B9u32;
    let mut rows = std::collections::HashSet::with_capacity(SAMPLE);
    let mut picks = Vec::with_capacity(SAMPLE);
    for _ in 0..SAMPLE * 8 {
        state ^= state << 13;
        state ^= state >> 17;
        state ^= state << 5;
        let i = state % len;
        let (a, row) = locate(i as usize);
        if arrays[a].is_valid(row) && rows.insert(i) {
            picks.push((a, row));
            if picks.len() == SAMPLE {
                break;
            }
        }
    }
    if picks.len() < SAMPLE {
        return false;
    }
    let Ok(sample) = arrow::compute::interleave(arrays, &picks) else { return false };
    let Ok(converter) = RowConverter::new(vec![SortField::new(sample.data_type().clone())]) else { return false };
    let Ok(encoded) = converter.convert_columns(std::slice::from_ref(&sample)) else { return false };
    let distinct: std::collections::HashSet<&[u8]> = encoded.iter().map(|r| r.data()).collect();
    distinct.len() == sample.len()
        && present as f64 * scale * value_bytes(sample.as_ref()) as f64 >= DICTIONARY_LIMIT as f64
}

/// The mean bytes of a value of the sample, as Parquet stores it plain.
fn value_bytes(sample: &dyn Array) -> usize {
    use arrow::array::AsArray;
    let n = sample.len().max(1);
    match sample.data_type() {
        DataType::Utf8 => sample.as_string::<i32>().value_data().len() / n,
        DataType::LargeUtf8 => sample.as_string::<i64>().value_data().len() / n,
        DataType::Binary => sample.as_binary::<i32>().value_data().len() / n,
        DataType::LargeBinary => sample.as_binary::<i64>().value_data().len() / n,
        DataType::FixedSizeBinary(w) => usize::try_from(*w).unwrap_or(0),
        t => t.primitive_width().unwrap_or(0),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::array::{ArrayRef, BooleanArray, Int64Array, StringArray};
    use parquet::file::reader::SerializedFileReader;

    use super::*;
    use crate::delta::schema::StructType;
    use crate::delta::snapshot::Snapshot;
    use crate::storage::data_writer::{DataWriter, WriterConfig};
    use crate::storage::location::Table;

    fn batch(columns: Vec<(&str, ArrayRef)>) -> RecordBatch {
        RecordBatch::try_from_iter(columns).unwrap()
    }

    fn chosen(b: &RecordBatch) -> Vec<String> {
        plain_columns(&[b])
    }

    /// A new table in memory at `url` of columns `id long, user string`, with `properties`.
    fn id_user_table(url: &str, properties: &[(&str, &str)]) -> (Table, Snapshot) {
        let schema = StructType::parse(
            r#"{"type":"struct","fields":[{"name":"id","type":"long","nullable":false,"metadata":{}},
            {"name":"user","type":"string","nullable":true,"metadata":{}}]}"#,
        )
        .unwrap();
        let props = properties.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        let (protocol, metadata) = crate::delta::create::new_table(schema, &[], &props).unwrap();
        let table = Table::open(url, crate::storage::StorageOptions::default()).unwrap();
        (table, Snapshot::for_new_table(protocol, metadata).unwrap())
    }

    /// The Parquet reader of a file the table holds.
    async fn read_back(table: &Table, path: &str) -> SerializedFileReader<bytes::Bytes> {
        use object_store::ObjectStoreExt;
        let bytes = table.store.get(&table.relative_path(path)).await.unwrap().bytes().await.unwrap();
        SerializedFileReader::new(bytes).unwrap()
    }

    #[test]
    fn unique_columns_big_enough_to_fall_back_are_written_plain() {
        let n = 250_000i64;
        let b = batch(vec![
            ("id", Arc::new(Int64Array::from_iter_values(0..n)) as ArrayRef),
            ("ts", Arc::new(Int64Array::from_iter_values((0..n).map(|i| 1_700_000_000_000 + i * 7))) as ArrayRef),
            ("user", Arc::new(StringArray::from_iter_values((0..n).map(|i| format!("user-{}", i % 9973))))),
            ("country", Arc::new(StringArray::from_iter_values((0..n).map(|i| ["DE", "FR"][i as usize % 2])))),
            ("ok", Arc::new(BooleanArray::from_iter((0..n).map(|i| Some(i % 2 == 0))))),
            ("uuid", Arc::new(StringArray::from_iter_values((0..n).map(|i| format!("{:032x}", i * 0x9E37_79B9))))),
        ]);
        assert_eq!(chosen(&b), ["id", "ts", "uuid"]);
        // The same rows in batches of 4,096 (one poll each): the same choice.
        let polls: Vec<RecordBatch> =
            (0..b.num_rows()).step_by(4096).map(|s| b.slice(s, 4096.min(b.num_rows() - s))).collect();
        assert_eq!(plain_columns(&polls.iter().collect::<Vec<_>>()), ["id", "ts", "uuid"]);
        // One poll alone is too small to judge: a user column of 9,973 values would look unique.
        assert!(plain_columns(&[&polls[0]]).is_empty());
    }

    #[test]
    fn small_batches_nulls_and_repeats_keep_the_dictionary() {
        // Unique, but too few values to fill a dictionary page: the default stays.
        let small = batch(vec![("id", Arc::new(Int64Array::from_iter_values(0..20_000)) as ArrayRef)]);
        assert!(chosen(&small).is_empty());
        // Too few non-null values to judge.
        let sparse = Int64Array::from_iter((0..200_000i64).map(|i| (i % 1000 == 0).then_some(i)));
        assert!(chosen(&batch(vec![("id", Arc::new(sparse) as ArrayRef)])).is_empty());
        // 50,000 values over and over (a dictionary of 400 kB holds them).
        let periodic = Int64Array::from_iter_values((0..400_000i64).map(|i| i % 50_000));
        assert!(chosen(&batch(vec![("id", Arc::new(periodic) as ArrayRef)])).is_empty());
        // The same choice for the same batch.
        let ids = batch(vec![("id", Arc::new(Int64Array::from_iter_values(0..300_000)) as ArrayRef)]);
        assert_eq!(chosen(&ids), chosen(&ids));
        // Unicode strings, unique and long: plain.
        let text = StringArray::from_iter_values((0..100_000).map(|i| format!("ünïcødé-{i}-日本語")));
        assert_eq!(chosen(&batch(vec![("t", Arc::new(text) as ArrayRef)])), ["t"]);
    }

    /// Through the data writer, on a column-mapped table (physical names differ from the
    /// logical ones): the unique column's chunks carry no dictionary page, the repeating
    /// one's do, and every value reads back.
    #[tokio::test]
    async fn write_all_writes_unique_columns_plain_and_every_value_reads_back() {
        use parquet::file::reader::FileReader;
        use parquet::record::RowAccessor;

        let (table, snapshot) = id_user_table("memory:///plain", &[("delta.columnMapping.mode", "name")]);
        let n = 200_000i64;
        let polls: Vec<RecordBatch> = (0..n)
            .step_by(4096)
            .map(|s| {
                let rows = s..(s + 4096).min(n);
                batch(vec![
                    ("id", Arc::new(Int64Array::from_iter_values(rows.clone())) as ArrayRef),
                    ("user", Arc::new(StringArray::from_iter_values(rows.map(|i| format!("usér-{}", i % 997))))),
                ])
            })
            .collect();
        let writer = DataWriter::new(&table, &snapshot, WriterConfig::for_snapshot(&snapshot)).unwrap();
        let adds = writer.write_all(&polls).await.unwrap();
        assert_eq!(adds.len(), 1);
        let reader = read_back(&table, &adds[0].path).await;
        let meta = reader.metadata();
        let mut dictionaries = std::collections::BTreeMap::new();
        for rg in meta.row_groups() {
            for c in rg.columns() {
                let logical =
                    if c.column_path().string() == snapshot.schema.fields[0].physical_name(snapshot.column_mapping()) {
                        "id"
                    } else {
                        "user"
                    };
                assert_ne!(c.column_path().string(), logical, "the file uses physical names");
                dictionaries.entry(logical).or_insert(Vec::new()).push(c.dictionary_page_offset().is_some());
            }
        }
        assert!(dictionaries["id"].iter().all(|d| !d), "the unique column is written plain: {dictionaries:?}");
        assert!(dictionaries["user"].iter().all(|d| *d), "the repeating column keeps its dictionary: {dictionaries:?}");
        let mut seen = Vec::new();
        for row in reader.get_row_iter(None).unwrap() {
            let row = row.unwrap();
            seen.push((row.get_long(0).unwrap(), row.get_string(1).unwrap().clone()));
        }
        let expected: Vec<(i64, String)> = (0..n).map(|i| (i, format!("usér-{}", i % 997))).collect();
        assert_eq!(seen, expected);
    }

    /// A streamed writer (batches too small to judge) that rolls files: the first file
    /// abandons the unique column's dictionary, the later ones write it plain from the start,
    /// and every value reads back.
    #[tokio::test]
    async fn a_rolling_writer_writes_plain_what_its_first_file_abandoned() {
        use parquet::file::reader::FileReader;

        let (table, snapshot) = id_user_table("memory:///rolling", &[]);
        let config = WriterConfig { target_file_size: 2 << 20, ..WriterConfig::for_snapshot(&snapshot) };
        let mut writer = DataWriter::new(&table, &snapshot, config).unwrap();
        let n = 1_200_000i64;
        for s in (0..n).step_by(4096) {
            let rows = s..(s + 4096).min(n);
            let b = batch(vec![
                ("id", Arc::new(Int64Array::from_iter_values(rows.clone().map(|i| i * 7919))) as ArrayRef),
                ("user", Arc::new(StringArray::from_iter_values(rows.map(|i| format!("usér-{}", i % 997))))),
            ]);
            writer.write(&b).await.unwrap();
        }
        let adds = writer.finish().await.unwrap();
        assert!(adds.len() >= 2, "{:?}", adds.iter().map(|a| a.size).collect::<Vec<_>>());
        let mut ids = Vec::new();
        let mut id_dictionaries = Vec::new();
        for add in &adds {
            let reader = read_back(&table, &add.path).await;
            let chunks: Vec<_> = reader.metadata().row_groups().iter().map(|rg| rg.column(0).clone()).collect();
            id_dictionaries.push(chunks.iter().any(|c| c.dictionary_page_offset().is_some()));
            let user_chunks = reader.metadata().row_groups().iter().map(|rg| rg.column(1).dictionary_page_offset());
            assert!(user_chunks.into_iter().all(|d| d.is_some()), "the repeating column keeps its dictionary");
            let abandoned = abandoned_dictionaries(reader.metadata());
            assert!(abandoned.iter().all(|c| c.string() == "id"), "{abandoned:?}");
            for row in reader.get_row_iter(None).unwrap() {
                ids.push(parquet::record::RowAccessor::get_long(&row.unwrap(), 0).unwrap());
            }
        }
        assert!(id_dictionaries[0], "the first file starts with a dictionary");
        assert!(id_dictionaries[1..].iter().all(|d| !d), "later files write the id plain: {id_dictionaries:?}");
        assert_eq!(ids, (0..n).map(|i| i * 7919).collect::<Vec<_>>());
    }
}
