//! Keyed ingestion of registry topics: Confluent-framed record keys (Avro, Protobuf, JSON),
//! and Debezium's Avro envelope unwrapped in Arrow (no per-record JSON).
//!
//! - A key in the Confluent wire format is decoded with its writer schema: an Avro key (a
//!   record whose fields include the key columns, or a primitive for one key column) into the
//!   same canonical key string rows get ([`keys_of_batch`]); a Protobuf key through its proto3
//!   JSON; a framed JSON key as the JSON after the frame. Other keys are read as JSON or text
//!   ([`KeyColumns::of_record_key`]). Every key is converted to the key columns' types.
//! - A Debezium envelope (`before`, `after`, `op`) decoded by `arrow-avro` becomes the rows of
//!   its `after` records (ops `c`, `r`, `u`) and the deletes of its `before` keys (op `d`);
//!   an envelope without the record its op needs, or with another op, is a dead letter.

use std::collections::HashMap;

use arrow::array::{Array, AsArray, BooleanArray, RecordBatch, StructArray};
use arrow::compute::cast;
use arrow::datatypes::DataType;

use super::keyed::{keys_of_batch, KeyColumns};
use crate::common::record::RawRecord;
use crate::decode::avro::{AvroDecoder, AvroRun};
use crate::decode::protobuf::ProtoDecoder;
use crate::decode::registry::Framing;

/// How a registry format's record keys are read.
#[derive(Debug)]
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) enum KeyDecoder {
    /// Confluent-framed Avro keys.
    Avro(AvroDecoder),
    /// Confluent-framed Protobuf keys (read through their proto3 JSON).
    Protobuf(ProtoDecoder),
    /// Framed JSON keys (`json-schema` topics): the JSON after the frame.
    FramedJson(Framing),
}

/// The keys of `records` (by index) whose payload is null: decoded with `decoder` when
/// framed, else read as JSON or text. A key that cannot be read maps to the reason.
pub(crate) async fn tombstone_keys(
    decoder: Option<&mut KeyDecoder>,
    records: &[RawRecord<'_>],
    columns: &KeyColumns,
) -> HashMap<usize, Result<String, String>> {
    let mut out = HashMap::new();
    let mut framed: Vec<(usize, RawRecord<'_>)> = Vec::new();
    for (i, r) in records.iter().enumerate().filter(|(_, r)| r.payload.is_none()) {
        match (r.key, &decoder) {
            // (Framed: magic byte 0 and at least a 4-byte id; the decoder checks the rest.)
            (Some(k), Some(_)) if k.len() >= 5 && k[0] == 0 => framed.push((i, RawRecord { payload: Some(k), ..*r })),
            (Some(k), _) => {
                out.insert(i, columns.of_record_key(k).map_err(|why| format!("tombstone key: {why}")));
            }
            (None, _) => {
                out.insert(i, Err("tombstone without a key".into()));
            }
        }
    }
    let Some(decoder) = decoder else { return out };
    if framed.is_empty() {
        return out;
    }
    match decoder {
        KeyDecoder::FramedJson(framing) => {
            for (i, r) in &framed {
                let body = r.payload.and_then(|k| framing.split(k)).map(|(_, b)| b).unwrap_or_default();
                out.insert(*i, columns.of_record_key(body).map_err(|why| format!("tombstone key: {why}")));
            }
        }
        KeyDecoder::Protobuf(proto) => {
            let keys: Vec<Option<&[u8]>> = framed.iter().map(|(_, r)| r.payload).collect();
            for ((i, _), decoded) in framed.iter().zip(proto.decode(&keys).await) {
                let key = decoded
                    .map_err(|why| format!("record key: {why}"))
                    .and_then(|(_, json)| columns.of_record_key(&json).map_err(|why| format!("tombstone key: {why}")));
                out.insert(*i, key);
            }
        }
        KeyDecoder::Avro(avro) => {
            let keys: Vec<RawRecord<'_>> = framed.iter().map(|(_, r)| *r).collect();
            let decoded = avro.decode(&keys).await;
            for l in decoded.dead_letters {
                if let Some((i, _)) = framed.iter().find(|(_, r)| r.offset == l.offset) {
                    out.insert(*i, Err(format!("record key: {}", l.reason)));
                }
            }
            for run in decoded.runs {
                let batch = columns.cast_batch(&key_batch(&run.batch, columns.names()));
                for (row, key) in keys_of_batch(&batch, columns.names()).into_iter().enumerate() {
                    if let Some((i, _)) = run.rows_from.get(row).and_then(|k| framed.get(*k)) {
                        let names = columns.names();
                        let why =
                            || format!("record key lacks the key columns {names:?} or holds values not of their types");
                        out.insert(*i, key.ok_or_else(why));
                    }
                }
            }
        }
    }
    out
}

/// A decoded key as a batch with the key columns: a record key as it is; a primitive key (one
/// column) named after the one key column.
fn key_batch(batch: &RecordBatch, columns: &[String]) -> RecordBatch {
    if columns.len() == 1 && batch.num_columns() == 1 && batch.column_by_name(&columns[0]).is_none() {
        let field = arrow::datatypes::Field::new(&columns[0], batch.column(0).data_type().clone(), true);
        if let Ok(b) = RecordBatch::try_new(
            std::sync::Arc::new(arrow::datatypes::Schema::new(vec![field])),
            vec![batch.column(0).clone()],
        ) {
            return b;
        }
    }
    batch.clone()
}

/// What a run of Debezium envelopes holds.
#[derive(Debug, Default)]
pub(crate) struct Unwrapped {
    /// The `after` records of creates, reads and updates.
    pub rows: Option<AvroRun>,
    /// (input index, key) of deletes.
    pub deletes: Vec<(usize, String)>,
    /// (input index, reason) of envelopes that cannot be used.
    pub refused: Vec<(usize, String)>,
}

/// Unwraps a run of Debezium envelopes (see the module contract).
pub(crate) fn unwrap_debezium(run: AvroRun, columns: &KeyColumns) -> Unwrapped {
    let mut out = Unwrapped::default();
    let b = &run.batch;
    let refuse_all = |why: &str| run.rows_from.iter().map(|i| (*i, why.to_string())).collect::<Vec<_>>();
    let op = b.column_by_name("op").and_then(|c| cast(c, &DataType::Utf8).ok());
    let after = b.column_by_name("after").and_then(|c| c.as_struct_opt().cloned());
    let (Some(op), Some(after)) = (op, after) else {
        out.refused = refuse_all("not a Debezium envelope: no \"op\" string and \"after\" record");
        return out;
    };
    let op = op.as_string::<i32>();
    let before_keys: Vec<Option<String>> =
        match b.column_by_name("before").and_then(|c| c.as_struct_opt()).and_then(nullable_batch) {
            Some(before) => keys_of_batch(&columns.cast_batch(&before), columns.names()),
            None => vec![None; b.num_rows()],
        };
    let mut keep = Vec::with_capacity(b.num_rows());
    let mut kept_from = Vec::new();
    for (row, before_key) in before_keys.iter().enumerate() {
        let i = run.rows_from[row];
        let o = if op.is_valid(row) { op.value(row) } else { "" };
        let upsert = matches!(o, "c" | "r" | "u");
        keep.push(upsert && after.is_valid(row));
        match o {
            "c" | "r" | "u" if after.is_valid(row) => kept_from.push(i),
            "c" | "r" | "u" => out.refused.push((i, format!("Debezium op {o:?} without an \"after\" record"))),
            "d" => match before_key {
                Some(k) => out.deletes.push((i, k.clone())),
                None => out.refused.push((i, "Debezium delete without the key columns in \"before\"".into())),
            },
            other => out.refused.push((i, format!("Debezium op {other:?} is not one of c, r, u, d"))),
        }
    }
    if !kept_from.is_empty() {
        // Only valid `after` records are kept, so the filtered struct has no nulls of its own
        // and its fields keep their nullability.
        let kept = arrow::compute::filter(&after, &BooleanArray::from(keep)).ok();
        match kept.as_ref().and_then(|k| k.as_struct_opt()).filter(|k| k.null_count() == 0) {
            Some(k) => {
                let batch = RecordBatch::from(k.clone());
                out.rows = Some(AvroRun { schema_id: run.schema_id, batch, rows_from: kept_from });
            }
            None => {
                out.refused.extend(kept_from.into_iter().map(|i| (i, "Debezium \"after\" record unreadable".into())))
            }
        }
    }
    out
}

/// A struct column's fields as a batch whose columns are all nullable (a null struct slot may
/// hold nulls in fields its schema calls required).
fn nullable_batch(s: &StructArray) -> Option<RecordBatch> {
    let fields: Vec<arrow::datatypes::Field> =
        s.fields().iter().map(|f| f.as_ref().clone().with_nullable(true)).collect();
    RecordBatch::try_new(std::sync::Arc::new(arrow::datatypes::Schema::new(fields)), s.columns().to_vec()).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{ArrayRef, Int64Array, StringArray};
    use arrow::buffer::NullBuffer;
    use arrow::datatypes::{Field, Fields};
    use std::sync::Arc;

    fn image(ids: Vec<Option<i64>>, valid: Vec<bool>) -> ArrayRef {
        let fields = Fields::from(vec![Field::new("id", DataType::Int64, true)]);
        Arc::new(StructArray::new(fields, vec![Arc::new(Int64Array::from(ids))], Some(NullBuffer::from(valid))))
    }

    #[test]
    fn envelopes_become_after_rows_and_before_deletes() {
        let batch = RecordBatch::try_from_iter([
            ("before", image(vec![None, Some(1), Some(2), None, None], vec![false, true, true, false, false])),
            ("after", image(vec![Some(7), Some(1), None, None, Some(9)], vec![true, true, false, false, true])),
            ("op", Arc::new(StringArray::from(vec!["c", "u", "d", "u", "x"])) as ArrayRef),
        ])
        .unwrap();
        let run = AvroRun { schema_id: 3, batch, rows_from: vec![10, 11, 12, 13, 14] };
        let u = unwrap_debezium(run, &KeyColumns::new(&["id".to_string()], None));
        let rows = u.rows.unwrap();
        assert_eq!(rows.rows_from, vec![10, 11]);
        assert_eq!(rows.batch.column(0).as_primitive::<arrow::datatypes::Int64Type>().values(), &[7, 1]);
        assert_eq!(u.deletes, vec![(12, "[2]".to_string())]);
        assert_eq!(u.refused.iter().map(|r| r.0).collect::<Vec<_>>(), vec![13, 14]);
        assert!(u.refused[0].1.contains("without an \"after\""), "{:?}", u.refused);
    }

    #[test]
    fn primitive_keys_take_the_key_column_name() {
        let b = RecordBatch::try_from_iter([("value", Arc::new(Int64Array::from(vec![5])) as ArrayRef)]).unwrap();
        assert_eq!(keys_of_batch(&key_batch(&b, &["id".into()]), &["id".into()]), vec![Some("[5]".to_string())]);
    }
}
