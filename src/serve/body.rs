//! [sync] A request body into rows against the table: JSON lines (one object per line, blank
//! lines skipped) or an Arrow IPC stream.
//!
//! JSON lines go through the decoding room's JSON decoder (strict: unknown fields are errors,
//! values a column cannot hold exactly are refused by field). A line that does not fit is
//! either the request's error, naming its line (nothing of the request is written), or, when
//! the request asks for it and the table has a dead-letter table, a dead letter while the rest
//! is written. New columns are added when the table evolves (`evolve_schema`); a table that
//! does not exist yet gets the configured schema or one inferred from the request.

use std::sync::Arc;

use arrow::array::RecordBatch;

use crate::common::record::{DeadLetter, RawRecord};
use crate::config::server::ResolvedTable;
use crate::decode::json::PayloadDecoder;
use crate::decode::projection::{project, Mismatch};
use crate::delta::arrow_schema::{arrow_schema_strict, delta_struct_of};
use crate::delta::create::{infer_schema, merge_schema};
use crate::delta::schema::StructType;

/// Lines sampled to infer a new table's schema or new columns.
const SAMPLE_LINES: usize = 1000;

/// What to do with lines that do not fit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) enum BadLines {
    /// The request fails naming the first bad line; nothing is written.
    Refuse,
    /// Bad lines go to the dead-letter table; the rest is written.
    DeadLetter,
}

/// A decoded request.
#[derive(Debug)]
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) struct Rows {
    pub batches: Vec<RecordBatch>,
    /// The schema the batches are in (the table's, evolved or inferred).
    pub schema: Arc<StructType>,
    pub bad: Vec<DeadLetter>,
    pub count: u64,
}

/// Why a body is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) enum Refusal {
    /// 400: a line (1-based) that does not fit, or a body that is not what it says.
    Bad(String),
    /// 413: a line over the limit.
    TooLarge(String),
    /// 404: the table does not exist and may not be created.
    NoTable(String),
}

/// Decodes JSON lines against `current` (the table's schema; `None` when it does not exist).
///
/// # Errors
/// A [`Refusal`] naming the line and field.
pub(crate) fn json_lines(
    body: &[u8],
    table: &ResolvedTable,
    current: Option<&StructType>,
    max_line: usize,
    bad_lines: BadLines,
) -> Result<Rows, Refusal> {
    let mut lines: Vec<(usize, &[u8])> = Vec::new();
    for (i, raw) in body.split(|b| *b == b'\n').enumerate() {
        let line = raw.strip_suffix(b"\r").unwrap_or(raw);
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        if line.len() > max_line {
            return Err(Refusal::TooLarge(format!(
                "line {}: {} bytes is over the line limit of {max_line} (server.max_line)",
                i + 1,
                line.len()
            )));
        }
        lines.push((i + 1, line));
    }
    json_records(&lines, table, current, bad_lines)
}

/// Decodes JSON objects, each numbered (a line, or a record's place in its batch), against
/// `current` as [`json_lines`] does.
///
/// # Errors
/// A [`Refusal`] naming the record and field.
pub(crate) fn json_records(
    lines: &[(usize, &[u8])],
    table: &ResolvedTable,
    current: Option<&StructType>,
    bad_lines: BadLines,
) -> Result<Rows, Refusal> {
    let creating = current.is_none();
    let mut schema = match current {
        Some(s) => s.clone(),
        None if !table.settings.create => {
            return Err(Refusal::NoTable(format!(
                "table {:?} does not exist yet and is not created by the server (create = false)",
                table.name
            )))
        }
        None => match &table.schema {
            Some(s) => s.clone(),
            None => inferred(lines, table).ok_or_else(|| first_unparsable(lines))?,
        },
    };
    let record = table.variants.record();
    let mut decoded = decode(lines, &schema, &table.name, record);
    if !decoded.bad.is_empty() && (table.settings.evolve_schema || (creating && table.schema.is_none())) {
        // A new column the table cannot take (a name that needs column mapping) is the reason
        // given, not the lines it leaves undecoded.
        let merged = inferred(lines, table).map(|inc| merge_schema(&schema, &inc)).transpose();
        if let Some(merged) = merged.map_err(|e| Refusal::Bad(e.to_string()))?.flatten() {
            schema = merged;
            decoded = decode(lines, &schema, &table.name, record);
        }
    }
    // Values only a wider type of their column holds widen it, on a table configured for it
    // (the commit checks the table itself allows it).
    let properties: std::collections::HashMap<String, String> =
        table.settings.properties.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    if !decoded.bad.is_empty() && table.settings.evolve_schema && crate::delta::type_widening::enabled(&properties) {
        let refused: Vec<&[u8]> = decoded.bad.iter().filter_map(|b| b.payload.as_deref()).collect();
        if let Some(widened) = crate::decode::widening::widened(&schema, &[], &refused, usize::MAX) {
            schema = widened;
            decoded = decode(lines, &schema, &table.name, record);
        }
    }
    if let (BadLines::Refuse, Some(first)) = (bad_lines, decoded.bad.first()) {
        return Err(Refusal::Bad(format!("line {}: {}", first.offset, first.reason)));
    }
    Ok(Rows { count: decoded.count, batches: decoded.batches, schema: Arc::new(schema), bad: decoded.bad })
}

/// Decodes an Arrow IPC stream, its columns matched to the table's by name and cast.
///
/// # Errors
/// A [`Refusal`] when the stream does not read or its columns do not fit.
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) fn arrow_stream(body: &[u8], table: &ResolvedTable, current: Option<&StructType>) -> Result<Rows, Refusal> {
    let bad = |e: &dyn std::fmt::Display| Refusal::Bad(format!("Arrow IPC stream: {e}"));
    let reader = arrow::ipc::reader::StreamReader::try_new(std::io::Cursor::new(body), None).map_err(|e| bad(&e))?;
    let incoming = delta_struct_of(reader.schema().as_ref()).map_err(|e| bad(&e))?;
    let batches: Vec<RecordBatch> = reader.collect::<Result<_, _>>().map_err(|e| bad(&e))?;
    let schema = match current {
        Some(s) => match merge_schema(s, &incoming).map_err(|e| bad(&e))? {
            Some(merged) if table.settings.evolve_schema => merged,
            Some(_) => {
                let extra: Vec<&str> =
                    incoming.fields.iter().filter(|f| s.field(&f.name).is_none()).map(|f| f.name.as_str()).collect();
                return Err(Refusal::Bad(format!(
                    "the stream has columns not in the table schema: {} (evolve_schema is off)",
                    extra.join(", ")
                )));
            }
            None => s.clone(),
        },
        None if !table.settings.create => {
            return Err(Refusal::NoTable(format!("table {:?} does not exist yet and create = false", table.name)))
        }
        None => table.schema.clone().unwrap_or(incoming),
    };
    let target = Arc::new(arrow_schema_strict(&schema));
    let mut out = Vec::with_capacity(batches.len());
    let mut count = 0u64;
    for b in batches.iter().filter(|b| b.num_rows() > 0) {
        count += b.num_rows() as u64;
        out.push(project(b, &target).map_err(|m| match m {
            Mismatch::Extra(f) => Refusal::Bad(format!("columns not in the table schema: {}", f.join(", "))),
            Mismatch::Refused(why) => Refusal::Bad(format!("Arrow IPC stream: {why}")),
        })?);
    }
    Ok(Rows { batches: out, schema: Arc::new(schema), bad: Vec::new(), count })
}

struct Decoded {
    batches: Vec<RecordBatch>,
    bad: Vec<DeadLetter>,
    count: u64,
}

/// Bytes of lines decoded together: the decoder copies its input and builds a tape of it, so
/// decoding a large body in chunks keeps that transient memory at a chunk instead of twice the
/// body (the rows themselves are one batch per chunk).
const CHUNK_BYTES: usize = 1 << 20;

/// `record` names the variant column each whole line lands in, if one does.
fn decode(lines: &[(usize, &[u8])], schema: &StructType, name: &str, record: Option<&str>) -> Decoded {
    let arrow = Arc::new(arrow_schema_strict(schema));
    let decoder = PayloadDecoder::new(arrow, usize::MAX);
    let decoder = match record {
        Some(column) => decoder.with_record_variant(column),
        None => decoder,
    };
    let mut out = Decoded { batches: Vec::new(), bad: Vec::new(), count: 0 };
    let mut rest = lines;
    while !rest.is_empty() {
        let mut bytes = 0;
        let n = rest
            .iter()
            .position(|(_, l)| {
                bytes += l.len() + 1;
                bytes > CHUNK_BYTES
            })
            .map_or(rest.len(), |i| i.max(1));
        let (chunk, tail) = rest.split_at(n);
        rest = tail;
        let records: Vec<RawRecord<'_>> = chunk
            .iter()
            .map(|(n, bytes)| RawRecord {
                topic: name,
                partition: 0,
                offset: *n as i64,
                timestamp_ms: None,
                key: None,
                payload: Some(bytes),
            })
            .collect();
        let decoded = decoder.decode(&records);
        out.count += decoded.batch.as_ref().map_or(0, |b| b.num_rows() as u64);
        out.batches.extend(decoded.batch);
        out.bad.extend(decoded.dead_letters);
    }
    out
}

/// The schema of the sampled lines that are JSON objects (`None` when none is), the table's
/// variant columns typed `variant` (with `record_variant`, that column alone).
fn inferred(lines: &[(usize, &[u8])], table: &ResolvedTable) -> Option<StructType> {
    if table.variants.record().is_some() {
        return Some(table.variants.applied(StructType::new(Vec::new())));
    }
    let sample: Vec<&str> = lines
        .iter()
        .filter_map(|(_, l)| std::str::from_utf8(l).ok())
        .filter(|l| serde_json::from_str::<serde_json::Value>(l).is_ok_and(|v| v.is_object()))
        .take(SAMPLE_LINES)
        .collect();
    if sample.is_empty() {
        return None;
    }
    infer_schema(&sample).ok().map(|s| table.variants.applied(s))
}

fn first_unparsable(lines: &[(usize, &[u8])]) -> Refusal {
    match lines.first() {
        None => Refusal::Bad("no records: the body holds no JSON line".into()),
        Some((n, _)) => Refusal::Bad(format!("line {n}: not a JSON object")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::server::ServerTable;

    fn table(create: bool, evolve: bool) -> ResolvedTable {
        ResolvedTable {
            name: "events".into(),
            settings: ServerTable { table: "/t".into(), create, evolve_schema: evolve, ..ServerTable::default() },
            schema: None,
            variants: Default::default(),
            tokens: Vec::new(),
        }
    }

    fn schema() -> StructType {
        StructType::parse(r#"{"type":"struct","fields":[{"name":"id","type":"long","nullable":false,"metadata":{}},{"name":"name","type":"string","nullable":true,"metadata":{}}]}"#).unwrap()
    }

    #[test]
    fn lines_decode_with_blank_lines_and_crlf_skipped() {
        let body = b"{\"id\":1,\"name\":\"\xc3\xa9t\xc3\xa9 \xe2\x98\x83\"}\r\n\n  \n{\"id\":2}\n";
        let rows = json_lines(body, &table(false, false), Some(&schema()), 1024, BadLines::Refuse).unwrap();
        assert_eq!((rows.count, rows.batches.len()), (2, 1));
        assert_eq!(*rows.schema, schema());
    }

    #[test]
    fn a_bad_line_is_named_or_dead_lettered() {
        let body = b"{\"id\":1}\n{\"id\":\"x\"}\n{not json\n{\"id\":4}\n";
        let e = json_lines(body, &table(false, false), Some(&schema()), 1024, BadLines::Refuse).unwrap_err();
        assert!(matches!(&e, Refusal::Bad(m) if m.starts_with("line 2:")), "{e:?}");
        let rows = json_lines(body, &table(false, false), Some(&schema()), 1024, BadLines::DeadLetter).unwrap();
        assert_eq!(rows.count, 2);
        assert_eq!(rows.bad.iter().map(|l| l.offset).collect::<Vec<_>>(), vec![2, 3]);
        assert_eq!(rows.bad[1].payload.as_deref(), Some(&b"{not json"[..]));
    }

    #[test]
    fn large_bodies_decode_in_chunks_keeping_order_and_line_numbers() {
        use arrow::array::AsArray;
        let line = |i: usize| format!("{{\"id\":{i},\"name\":\"{}\"}}\n", "ü".repeat(100));
        let total = 3 * CHUNK_BYTES / line(0).len();
        let mut body: String = (0..total).map(line).collect();
        body.push_str("{\"id\":\"bad\"}\n");
        body.push_str(&line(total));
        let rows = json_lines(body.as_bytes(), &table(false, false), Some(&schema()), 1024, BadLines::DeadLetter);
        let rows = rows.unwrap();
        assert!(rows.batches.len() >= 3, "{} batches for 3 MiB", rows.batches.len());
        let ids: Vec<i64> = rows
            .batches
            .iter()
            .flat_map(|b| b.column(0).as_primitive::<arrow::datatypes::Int64Type>().values().to_vec())
            .collect();
        assert_eq!(ids, (0..=total as i64).collect::<Vec<_>>());
        assert_eq!(rows.count, total as u64 + 1);
        assert_eq!(rows.bad.iter().map(|l| l.offset).collect::<Vec<_>>(), vec![total as i64 + 1]);
        // One line longer than a chunk is a chunk of its own.
        let long = format!("{{\"id\":7,\"name\":\"{}\"}}\n", "x".repeat(CHUNK_BYTES + 10));
        let rows = json_lines(long.as_bytes(), &table(false, false), Some(&schema()), usize::MAX, BadLines::Refuse);
        assert_eq!(rows.unwrap().count, 1);
    }

    #[test]
    fn long_lines_are_too_large_and_name_their_line() {
        let body = format!("{{\"id\":1}}\n{{\"id\":2,\"name\":\"{}\"}}\n", "x".repeat(100));
        let e = json_lines(body.as_bytes(), &table(false, false), Some(&schema()), 64, BadLines::Refuse).unwrap_err();
        assert!(matches!(&e, Refusal::TooLarge(m) if m.starts_with("line 2:")), "{e:?}");
    }

    /// A push table's variant columns: the field lands whatever its shape, a new table (or a
    /// new column) typed `variant`; with `record_variant`, each whole line in one column.
    #[test]
    fn variant_columns_take_any_shape_and_record_variant_the_whole_line() {
        use crate::config::variants::Variants;
        use crate::delta::schema::DataType;
        let body =
            b"{\"id\":1,\"p\":{\"a\":[1,\"\xc3\xbc\"]}}\n{\"id\":2,\"p\":7}\n{\"id\":3,\"p\":{\"k\":1,\"k\":2}}\n";
        let mut t = table(true, true);
        t.variants = Variants::new(&["p".to_string()], None).unwrap();
        let rows = json_lines(body, &t, None, 1024, BadLines::DeadLetter).unwrap();
        assert_eq!(rows.schema.field("p").unwrap().data_type, DataType::Variant);
        assert_eq!(rows.count, 2);
        assert!(rows.bad[0].reason.contains("appears twice"), "{:?}", rows.bad);
        let e = json_lines(body, &t, None, 1024, BadLines::Refuse).unwrap_err();
        assert!(matches!(&e, Refusal::Bad(m) if m.starts_with("line 3:") && m.contains("\"p\"")), "{e:?}");
        // An existing table gets the column as a new variant column.
        let rows = json_lines(body, &t, Some(&schema()), 1024, BadLines::DeadLetter).unwrap();
        assert_eq!((rows.count, rows.schema.field("p").map(|f| &f.data_type)), (2, Some(&DataType::Variant)));
        t.variants = Variants::new(&[], Some("record")).unwrap();
        let rows = json_lines(b"[1,2]\n\"text\"\n{\"any\":null}\nnot json\n", &t, None, 1024, BadLines::DeadLetter);
        let rows = rows.unwrap();
        assert_eq!((rows.count, rows.bad.len(), rows.schema.fields.len()), (3, 1, 1));
    }

    #[test]
    fn new_columns_need_evolution() {
        let body = b"{\"id\":1,\"extra\":true}\n";
        let e = json_lines(body, &table(false, false), Some(&schema()), 1024, BadLines::Refuse).unwrap_err();
        assert!(matches!(&e, Refusal::Bad(m) if m.contains("line 1")), "{e:?}");
        let rows = json_lines(body, &table(false, true), Some(&schema()), 1024, BadLines::Refuse).unwrap();
        assert!(rows.schema.field("extra").is_some() && rows.count == 1);
    }

    #[test]
    fn a_missing_table_is_inferred_when_created_and_refused_otherwise() {
        let body = b"{\"id\":1,\"tags\":[\"a\"]}\n{\"id\":2,\"more\":1.5}\n";
        let rows = json_lines(body, &table(true, false), None, 1024, BadLines::Refuse).unwrap();
        assert_eq!(rows.count, 2);
        assert!(rows.schema.field("more").is_some());
        let e = json_lines(body, &table(false, false), None, 1024, BadLines::Refuse).unwrap_err();
        assert!(matches!(e, Refusal::NoTable(_)));
        let e = json_lines(b"\n \n", &table(true, false), None, 1024, BadLines::Refuse).unwrap_err();
        assert!(matches!(&e, Refusal::Bad(m) if m.contains("no records")), "{e:?}");
    }

    #[test]
    fn arrow_streams_are_matched_by_name_and_cast() {
        use arrow::array::{Int32Array, StringArray};
        use arrow::datatypes::{DataType, Field, Schema};
        let s = Arc::new(Schema::new(vec![
            Field::new("name", DataType::Utf8, true),
            Field::new("id", DataType::Int32, false),
        ]));
        let b = RecordBatch::try_new(
            s.clone(),
            vec![Arc::new(StringArray::from(vec!["a", "b"])), Arc::new(Int32Array::from(vec![1, 2]))],
        )
        .unwrap();
        let mut buf = Vec::new();
        let mut w = arrow::ipc::writer::StreamWriter::try_new(&mut buf, &s).unwrap();
        w.write(&b).unwrap();
        w.finish().unwrap();
        drop(w);
        let rows = arrow_stream(&buf, &table(false, false), Some(&schema())).unwrap();
        assert_eq!(rows.count, 2);
        assert_eq!(rows.batches[0].schema().field(0).name(), "id");
        assert!(matches!(arrow_stream(b"junk", &table(false, false), Some(&schema())), Err(Refusal::Bad(_))));
    }
}
