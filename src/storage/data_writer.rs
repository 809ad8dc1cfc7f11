//! Writing data files: logical Arrow batches in, Parquet files and their `add` actions out.
//!
//! Rows are split by partition value into Hive-style directories (escaped as Spark does); each
//! partition has one open file that rolls at the target size. Files use physical column names
//! (and field ids under column mapping), contain partition columns only under icebergCompatV2, are named
//! `part-<n>-<uuid>-c000.<codec>.parquet`, and carry statistics computed from the batches as
//! they are written; columns of unique values skip the dictionary (`plain_columns`).
//! Generated columns (`delta.generationExpression`) are computed before the split, so derived
//! partitions (`date(ts)`) are filled. Nothing is committed here: the caller commits the adds.

use std::collections::HashMap;
use std::sync::Arc;

use arrow::array::{
    new_null_array, Array, ArrayRef, AsArray, ListArray, MapArray, RecordBatch, StructArray, UInt32Array,
};
use arrow::datatypes::{DataType as ArrowType, SchemaRef};
use object_store::buffered::BufWriter;
use object_store::ObjectStoreExt;
use parquet::arrow::AsyncArrowWriter;
use parquet::basic::{BrotliLevel, Compression, GzipLevel, ZstdLevel};
use parquet::file::properties::WriterProperties;
use parquet::schema::types::ColumnPath;

use super::location::Table;
use crate::delta::actions::{Add, PartitionValues};
use crate::delta::arrow_schema::physical_schema;
use crate::delta::partition::{encode_add_path, partition_dir, serialize_value};
use crate::delta::properties::Codec;

/// The longest partition directory name written (bytes, escaped).
const MAX_SEGMENT_BYTES: usize = 255;
use crate::delta::snapshot::Snapshot;
use crate::delta::stats::StatsCollector;
use crate::error::{Error, Result};

/// How data files are written.
#[derive(Debug, Clone)]
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) struct WriterConfig {
    /// Roll to a new file past this many bytes (default: `delta.targetFileSize` or 128 MiB).
    pub target_file_size: u64,
    pub compression: Codec,
}

impl WriterConfig {
    /// The defaults for a table: its properties, else 128 MiB and zstd.
    pub(crate) fn for_snapshot(s: &Snapshot) -> Self {
        WriterConfig {
            target_file_size: s.properties.target_file_size.unwrap_or(128 << 20),
            compression: s.properties.compression_codec.unwrap_or_default(),
        }
    }
}

/// Parquet's compression for a codec, and the file-name part that names it.
fn codec(c: Codec) -> (Compression, &'static str) {
    match c {
        Codec::Zstd => (Compression::ZSTD(ZstdLevel::default()), "zstd"),
        Codec::Snappy => (Compression::SNAPPY, "snappy"),
        Codec::Gzip => (Compression::GZIP(GzipLevel::default()), "gz"),
        Codec::Lz4 => (Compression::LZ4_RAW, "lz4"),
        Codec::Brotli => (Compression::BROTLI(BrotliLevel::default()), "br"),
        Codec::Uncompressed => (Compression::UNCOMPRESSED, "uncompressed"),
    }
}

struct OpenFile {
    writer: AsyncArrowWriter<BufWriter>,
    clock: crate::common::clock::Clock,
    rel: String,
    partition_values: PartitionValues,
    stats: StatsCollector,
}

/// Rows a writer takes one chunk at a time ([`DataWriter::write_streamed`]).
pub(crate) trait RowChunks: Sync {
    /// Chunks held.
    fn count(&self) -> usize;
    /// The batches of chunk `i` (`i < count()`).
    ///
    /// # Errors
    /// The holder's own (rows it cannot give back).
    fn chunk(&self, i: usize) -> Result<Vec<RecordBatch>>;
}

/// Writes a table's data files for one transaction.
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) struct DataWriter {
    table: Table,
    snapshot: Snapshot,
    physical: SchemaRef,
    config: WriterConfig,
    props: WriterProperties,
    ext: &'static str,
    open: HashMap<String, OpenFile>,
    done: Vec<Add>,
    counter: usize,
    /// Writing change-data files (`_change_data/`, with a `_change_type` column).
    change_data: bool,
    /// The generated columns, computed (and checked) for every batch.
    generated: Vec<crate::delta::generated::Generated>,
    /// The columns written without a dictionary, chosen from all of a transaction's rows
    /// ([`DataWriter::write_all`]); `None`: chosen per file from its first rows.
    plain: Option<Vec<ColumnPath>>,
    /// Columns whose dictionary a closed file of this writer abandoned: later files write
    /// them plain from the start.
    abandoned: Vec<ColumnPath>,
    /// A clustered table's clustering columns (physical paths): every file keeps their
    /// statistics.
    clustering: Vec<Vec<String>>,
}

impl DataWriter {
    /// A writer for the snapshot's schema and partitioning.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for an unknown codec; [`Error::Unsupported`] for generated
    /// columns deltabus cannot compute.
    #[cfg_attr(feature = "internal-api", visibility::make(pub))]
    pub(crate) fn new(table: &Table, snapshot: &Snapshot, config: WriterConfig) -> Result<Self> {
        let (compression, ext) = codec(config.compression);
        let physical =
            Arc::new(physical_schema(&snapshot.schema, dropped_partition_columns(snapshot), snapshot.column_mapping()));
        Ok(DataWriter {
            table: table.clone(),
            snapshot: snapshot.clone(),
            physical,
            props: WriterProperties::builder().set_compression(compression).build(),
            ext,
            config,
            open: HashMap::new(),
            done: Vec::new(),
            counter: 0,
            change_data: false,
            generated: crate::delta::generated::generated_columns(&snapshot.schema)?,
            plain: None,
            abandoned: Vec::new(),
            clustering: crate::delta::clustering::physical_columns(snapshot)?,
        })
    }

    /// A writer of rows the table already holds (compaction, copy-on-write deletes, their
    /// change data): generated columns keep their stored values, unchecked (rows another
    /// engine wrote in another time zone stay rewritable).
    pub(crate) fn rewriting(mut self) -> Self {
        self.generated.clear();
        self
    }

    /// A writer of change-data files: batches carry the table's columns plus `_change_type`;
    /// files go under `_change_data/` (partitioned like the table). [`DataWriter::finish_cdc`]
    /// returns their `cdc` actions.
    ///
    /// # Errors
    /// As [`DataWriter::new`].
    pub(crate) fn for_change_data(table: &Table, snapshot: &Snapshot, config: WriterConfig) -> Result<Self> {
        let mut with_type = snapshot.clone();
        with_type.schema.fields.push(crate::delta::schema::StructField::new(
            super::change_reader::CHANGE_TYPE,
            crate::delta::schema::DataType::Primitive(crate::delta::schema::PrimitiveType::String),
            true,
        ));
        let mut w = DataWriter::new(table, &with_type, config)?;
        w.change_data = true;
        Ok(w)
    }

    /// Closes a change-data writer's files and returns their `cdc` actions.
    ///
    /// # Errors
    /// As [`DataWriter::finish`].
    pub(crate) async fn finish_cdc(self) -> Result<Vec<crate::delta::actions::Cdc>> {
        Ok(self
            .finish()
            .await?
            .into_iter()
            .map(|a| crate::delta::actions::Cdc {
                path: a.path,
                partition_values: a.partition_values,
                size: a.size,
                data_change: false,
                tags: None,
            })
            .collect())
    }

    /// Writes a batch in the table's logical schema (partition columns included). Generated
    /// columns are computed where null and checked where given.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when the batch does not fit the schema (for example a null in
    /// a non-nullable column, or a generated column's value that differs from its
    /// expression's); [`Error::Storage`] for I/O.
    #[cfg_attr(feature = "internal-api", visibility::make(pub))]
    pub(crate) async fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        let batch = &crate::delta::generated::apply(batch, &self.generated)?;
        for (dir, values, part) in self.split(batch)? {
            let physical = self.to_physical(&part)?;
            if !self.open.contains_key(&dir) {
                let file = self.open_file(&dir, values, &physical)?;
                self.open.insert(dir.clone(), file);
            }
            let Some(file) = self.open.get_mut(&dir) else { continue };
            file.writer.write(&physical).await.map_err(|e| Error::data_file(&file.rel, e))?;
            file.stats.update(&physical);
            let size = file.writer.bytes_written() + file.writer.in_progress_size();
            if size as u64 >= self.config.target_file_size {
                if let Some(f) = self.open.remove(&dir) {
                    let (add, abandoned) = Self::close(f).await?;
                    self.learn(abandoned);
                    self.done.push(add);
                }
            }
        }
        Ok(())
    }

    /// Writes every batch and closes the files: the adds, or, on any error, nothing left
    /// behind (the files written so far are deleted).
    ///
    /// # Errors
    /// As [`DataWriter::write`] and [`DataWriter::finish`].
    pub(crate) async fn write_all<'b>(
        mut self,
        batches: impl IntoIterator<Item = &'b RecordBatch>,
    ) -> Result<Vec<Add>> {
        let batches: Vec<&RecordBatch> = batches.into_iter().collect();
        self.choose_plain(&batches, batches.iter().map(|b| b.num_rows()).sum());
        for b in batches {
            if let Err(e) = self.write(b).await {
                self.abort().await;
                return Err(e);
            }
        }
        self.finish().await
    }

    /// Writes rows handed over one chunk at a time (each dropped once written) and closes the
    /// files: the adds, or, on any error, nothing left behind. The columns written plain are
    /// judged from `sample`, batches drawn from across all `rows` rows.
    ///
    /// # Errors
    /// As [`DataWriter::write_all`], and the chunks' own errors.
    pub(crate) async fn write_streamed<C: RowChunks + ?Sized>(
        mut self,
        sample: &[&RecordBatch],
        rows: usize,
        chunks: &C,
    ) -> Result<Vec<Add>> {
        self.choose_plain(sample, rows);
        for i in 0..chunks.count() {
            let written = match chunks.chunk(i) {
                Ok(batches) => self.write_each(&batches).await,
                Err(e) => Err(e),
            };
            if let Err(e) = written {
                self.abort().await;
                return Err(e);
            }
        }
        self.finish().await
    }

    /// Chooses the columns every file of this writer writes without a dictionary, judged from
    /// `sample` as if from all of a transaction's `rows` (`plain_columns`).
    fn choose_plain(&mut self, sample: &[&RecordBatch], rows: usize) {
        let mode = self.snapshot.column_mapping();
        let physical =
            |name: String| self.snapshot.schema.field(&name).map_or(name.clone(), |f| f.physical_name(mode).into());
        let plain = super::plain_columns::plain_columns_of_sample(sample, rows).into_iter().map(physical);
        self.plain = Some(plain.map(|n| ColumnPath::new(vec![n])).collect());
    }

    async fn write_each(&mut self, batches: &[RecordBatch]) -> Result<()> {
        for b in batches {
            self.write(b).await?;
        }
        Ok(())
    }

    /// Closes every open file and returns the adds, in the order files were closed.
    ///
    /// # Errors
    /// [`Error::Storage`] when a final upload fails.
    #[cfg_attr(feature = "internal-api", visibility::make(pub))]
    pub(crate) async fn finish(mut self) -> Result<Vec<Add>> {
        let mut open: Vec<(String, OpenFile)> = self.open.drain().collect();
        open.sort_by(|a, b| a.0.cmp(&b.0));
        for (_, f) in open {
            let (add, _) = Self::close(f).await?;
            self.done.push(add);
        }
        Ok(self.done)
    }

    /// Deletes the files written so far (after a failed or abandoned transaction).
    pub(crate) async fn abort(self) {
        self.table.delete_uncommitted(&self.done.iter().map(|a| a.path.clone()).collect::<Vec<_>>()).await;
        for f in self.open.into_values() {
            let path = self.table.relative_path(&f.rel);
            drop(f.writer);
            let _ = self.table.store.delete(&path).await;
        }
    }

    /// Opens a file of the partition `dir`; columns of unique values skip the dictionary
    /// (`plain_columns`), chosen from the transaction's rows or else from `first`, the first
    /// rows written to the file.
    fn open_file(&mut self, dir: &str, values: PartitionValues, first: &RecordBatch) -> Result<OpenFile> {
        self.counter += 1;
        let rel = if self.change_data {
            format!("_change_data/{dir}cdc-{:05}-{}-c000.{}.parquet", self.counter - 1, uuid::Uuid::new_v4(), self.ext)
        } else {
            format!("{dir}part-{:05}-{}-c000.{}.parquet", self.counter - 1, uuid::Uuid::new_v4(), self.ext)
        };
        let path = self.table.relative_path(&rel);
        let sink = BufWriter::with_capacity(self.table.store.clone(), path, 8 << 20);
        let mut plain = self.plain.clone().unwrap_or_else(|| super::plain_columns::plain_paths(&[first]));
        plain.extend(self.abandoned.iter().filter(|c| !plain.contains(c)).cloned().collect::<Vec<_>>());
        let props = plain
            .into_iter()
            .fold(self.props.clone().into_builder(), |b, c| b.set_column_dictionary_enabled(c, false))
            .build();
        let writer = AsyncArrowWriter::try_new(sink, self.physical.clone(), Some(props))
            .map_err(|e| Error::data_file(&rel, e))?;
        let s = &self.snapshot;
        let stats = StatsCollector::new(&s.schema, dropped_partition_columns(s), &s.properties, s.column_mapping())
            .with_leaves(&s.schema, s.column_mapping(), &self.clustering);
        Ok(OpenFile { writer, clock: self.table.clock().clone(), rel, partition_values: values, stats })
    }

    /// Finishes a file (an associated function: a `&self` held across the upload would make
    /// the writer's futures require `Sync`); also returns the columns whose dictionary the file
    /// abandoned.
    async fn close(mut f: OpenFile) -> Result<(Add, Vec<ColumnPath>)> {
        let meta = f.writer.finish().await.map_err(|e| Error::data_file(&f.rel, e))?;
        let abandoned = super::plain_columns::abandoned_dictionaries(&meta);
        let size = f.writer.bytes_written() as i64;
        let add = Add {
            path: encode_add_path(&f.rel),
            partition_values: f.partition_values,
            size,
            modification_time: f.clock.now_ms(),
            data_change: true,
            stats: Some(f.stats.to_json()),
            tags: None,
            deletion_vector: None,
            base_row_id: None,
            default_row_commit_version: None,
            clustering_provider: None,
        };
        Ok((add, abandoned))
    }

    /// Remembers columns a closed file abandoned the dictionary of.
    fn learn(&mut self, abandoned: Vec<ColumnPath>) {
        for c in abandoned {
            if !self.abandoned.contains(&c) {
                self.abandoned.push(c);
            }
        }
    }

    /// Splits a batch by partition values: (directory, values, rows).
    fn split(&self, batch: &RecordBatch) -> Result<Vec<(String, PartitionValues, RecordBatch)>> {
        let cols = &self.snapshot.metadata.partition_columns;
        if cols.is_empty() {
            return Ok(vec![(String::new(), PartitionValues::new(), batch.clone())]);
        }
        let mode = self.snapshot.column_mapping();
        let arrays: Vec<(String, ArrayRef)> = cols
            .iter()
            .map(|c| {
                let physical = self.snapshot.schema.field(c).map_or(c.as_str(), |f| f.physical_name(mode)).to_string();
                let array = batch
                    .column_by_name(c)
                    .cloned()
                    .unwrap_or_else(|| new_null_array(&ArrowType::Utf8, batch.num_rows()));
                (physical, array)
            })
            .collect();
        let mut groups: HashMap<Vec<Option<String>>, Vec<u32>> = HashMap::new();
        let mut order = Vec::new();
        for row in 0..batch.num_rows() {
            let key: Vec<Option<String>> = arrays.iter().map(|(_, a)| serialize_value(a.as_ref(), row)).collect();
            let entry = groups.entry(key.clone()).or_insert_with(|| {
                order.push(key);
                Vec::new()
            });
            entry.push(row as u32);
        }
        let mut out = Vec::with_capacity(order.len());
        for key in order {
            let rows = groups.remove(&key).unwrap_or_default();
            let part = if rows.len() == batch.num_rows() {
                batch.clone()
            } else {
                let idx = UInt32Array::from(rows);
                let columns = batch
                    .columns()
                    .iter()
                    .map(|c| arrow::compute::take(c.as_ref(), &idx, None))
                    .collect::<std::result::Result<Vec<_>, _>>()
                    .map_err(|e| Error::Internal(format!("partition split: {e}")))?;
                RecordBatch::try_new(batch.schema(), columns)
                    .map_err(|e| Error::Internal(format!("partition split: {e}")))?
            };
            let part = if materialises_partitions(&self.snapshot) { as_logged(part, cols, &key)? } else { part };
            let named: Vec<(String, Option<String>)> =
                arrays.iter().map(|(n, _)| n.clone()).zip(key.iter().cloned()).collect();
            let values: PartitionValues = named.iter().cloned().collect();
            let dir = partition_dir(&named);
            // Refused before anything is written: most file systems (and HDFS) allow 255 bytes
            // per path segment.
            if let Some(seg) = dir.split('/').find(|s| s.len() > MAX_SEGMENT_BYTES) {
                return Err(Error::InvalidArgument(format!(
                    "a partition directory would be {} bytes long (at most {MAX_SEGMENT_BYTES}): {}...",
                    seg.len(),
                    seg.chars().take(40).collect::<String>()
                )));
            }
            out.push((dir, values, part));
        }
        Ok(out)
    }

    /// Drops partition columns and relabels the rest with physical names and types.
    fn to_physical(&self, batch: &RecordBatch) -> Result<RecordBatch> {
        let mut columns = Vec::with_capacity(self.physical.fields().len());
        let dropped = dropped_partition_columns(&self.snapshot);
        let data_fields = self.snapshot.schema.fields.iter().filter(|f| !dropped.contains(&f.name));
        for (logical, physical) in data_fields.zip(self.physical.fields()) {
            let col = match batch.column_by_name(&logical.name) {
                Some(c) => relabel(c, physical.data_type())?,
                None => new_null_array(physical.data_type(), batch.num_rows()),
            };
            columns.push(col);
        }
        RecordBatch::try_new(self.physical.clone(), columns)
            .map_err(|e| Error::InvalidArgument(format!("rows do not fit the table schema: {e}")))
    }
}

/// Whether the table keeps partition values in its data files too (icebergCompatV2: Iceberg
/// readers read them there).
fn materialises_partitions(snapshot: &Snapshot) -> bool {
    snapshot.metadata.configuration.get("delta.enableIcebergCompatV2").is_some_and(|v| v.eq_ignore_ascii_case("true"))
}

/// The partition columns left out of data files: all of them, unless the files keep them.
fn dropped_partition_columns(snapshot: &Snapshot) -> &[String] {
    if materialises_partitions(snapshot) {
        &[]
    } else {
        &snapshot.metadata.partition_columns
    }
}

/// `part` with each partition column replaced by what its `partitionValues` string means to
/// a reader (the same function `cat` materialises them with), so every reader of the file
/// and of the log gets one answer: `""` is null, `-0.0` is `0.0`, a timestamp or decimal is
/// what its spelling parses back to.
fn as_logged(part: RecordBatch, columns: &[String], values: &[Option<String>]) -> Result<RecordBatch> {
    let schema = part.schema();
    let mut arrays = part.columns().to_vec();
    for (name, value) in columns.iter().zip(values) {
        let Some((i, field)) = schema.column_with_name(name) else { continue };
        arrays[i] = crate::delta::scan::partition_array(value.as_deref(), field.data_type(), part.num_rows())
            .map_err(|e| Error::InvalidArgument(format!("partition column {name:?}: {e}")))?;
    }
    RecordBatch::try_new(schema, arrays).map_err(|e| Error::Internal(format!("partition values: {e}")))
}

/// Re-types an array to a structurally identical type with other field names or nullability.
fn relabel(array: &ArrayRef, target: &ArrowType) -> Result<ArrayRef> {
    let err = |e: arrow::error::ArrowError| Error::InvalidArgument(format!("rows do not fit the table schema: {e}"));
    Ok(match (array.data_type(), target) {
        (ArrowType::Struct(_), ArrowType::Struct(fields)) => {
            let s = array.as_struct();
            let cols = s
                .columns()
                .iter()
                .zip(fields.iter())
                .map(|(c, f)| relabel(c, f.data_type()))
                .collect::<Result<Vec<_>>>()?;
            Arc::new(StructArray::try_new(fields.clone(), cols, s.nulls().cloned()).map_err(err)?)
        }
        (ArrowType::List(_), ArrowType::List(field)) => {
            let l = array.as_list::<i32>();
            let values = relabel(l.values(), field.data_type())?;
            Arc::new(ListArray::try_new(field.clone(), l.offsets().clone(), values, l.nulls().cloned()).map_err(err)?)
        }
        (ArrowType::Map(_, _), ArrowType::Map(field, sorted)) => {
            let m = array.as_map();
            let ArrowType::Struct(entry_fields) = field.data_type() else {
                return Err(Error::Internal("map entries".into()));
            };
            let entries =
                relabel(&(Arc::new(m.entries().clone()) as ArrayRef), &ArrowType::Struct(entry_fields.clone()))?;
            Arc::new(
                MapArray::try_new(
                    field.clone(),
                    m.offsets().clone(),
                    entries.as_struct().clone(),
                    m.nulls().cloned(),
                    *sorted,
                )
                .map_err(err)?,
            )
        }
        (a, b) if a == b => array.clone(),
        _ => arrow::compute::cast(array, target).map_err(err)?,
    })
}
