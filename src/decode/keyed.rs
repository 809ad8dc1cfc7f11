//! Keyed ingestion [sync]: what a record means for its key, and which change per key wins.
//!
//! - A key is the values of the configured key columns, as a canonical JSON array string
//!   (`[42]`, `["eu",7]`), computed the same way from an Arrow row, a JSON object (a Debezium
//!   `before` image, a JSON Kafka key) and a bare Kafka key (a single key column).
//! - A record is an upsert of its row, or a delete of its key: a tombstone (null payload, key
//!   from the Kafka key), an `op` field whose value is `d` or `delete` (plain payloads), or a
//!   Debezium envelope with `op = "d"` (key from `before`, else the Kafka key). Envelopes with
//!   `c`, `r` or `u` upsert their `after` image; `{"schema":…, "payload":…}` wrappers (the JSON
//!   converter with schemas) are unwrapped.
//! - Within a micro-batch the change with the highest offset per key wins (keys are expected
//!   to be partitioned by key, as Kafka producers do).

use std::collections::{HashMap, HashSet};

use arrow::array::{Array, AsArray, BooleanArray, Int64Array, RecordBatch};
use serde_json::Value;

/// What one record does.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum RecordChange {
    /// Upsert the row in these payload bytes (to be decoded against the table schema).
    Upsert(Vec<u8>),
    /// The payload as it is is the row.
    UpsertAsIs,
    Delete(String),
}

pub(crate) use super::key_types::KeyColumns;
pub(crate) use crate::delta::row_keys::keys_of_batch;

/// The changed keys, for finding their rows in table files quickly: one integer or string
/// key column is matched on its values directly (no per-row key strings); other keys through
/// their canonical strings.
#[derive(Debug, Clone)]
pub(crate) enum KeySet {
    Ints { column: String, keys: HashMap<i64, String> },
    Strs { column: String, keys: HashMap<String, String> },
    Canonical { columns: Vec<String>, keys: HashSet<String> },
}

impl KeySet {
    /// The set of `keys` (canonical strings) over `columns`.
    pub(crate) fn new<'a>(columns: &[String], keys: impl Iterator<Item = &'a String>) -> KeySet {
        let keys: Vec<&String> = keys.collect();
        if let [column] = columns {
            let parsed: Vec<Option<Value>> = keys
                .iter()
                .map(|k| serde_json::from_str::<Vec<Value>>(k).ok().and_then(|v| v.into_iter().next()))
                .collect();
            if parsed.iter().all(|v| v.as_ref().is_some_and(Value::is_i64)) {
                let ints = keys.iter().zip(&parsed).filter_map(|(k, v)| Some((v.as_ref()?.as_i64()?, (*k).clone())));
                return KeySet::Ints { column: column.clone(), keys: ints.collect() };
            }
            if parsed.iter().all(|v| v.as_ref().is_some_and(Value::is_string)) {
                let strs = keys
                    .iter()
                    .zip(&parsed)
                    .filter_map(|(k, v)| Some((v.as_ref()?.as_str()?.to_string(), (*k).clone())));
                return KeySet::Strs { column: column.clone(), keys: strs.collect() };
            }
        }
        KeySet::Canonical { columns: columns.to_vec(), keys: keys.into_iter().cloned().collect() }
    }

    /// Which rows of `batch` have a changed key; the canonical keys found go to `found`.
    /// The direct matches hold only where the column holds what they compare (integers,
    /// strings); any other column (a decimal, a date, a widened column) is matched through
    /// the rows' canonical keys.
    pub(crate) fn matches(&self, batch: &RecordBatch, found: &mut HashSet<String>) -> BooleanArray {
        use arrow::datatypes::DataType as A;
        let column = |c: &str| batch.column_by_name(c).map(|a| (a.data_type().clone(), a));
        match self {
            KeySet::Ints { column: c, keys } => match column(c) {
                Some((A::Int8 | A::Int16 | A::Int32 | A::Int64, col)) => {
                    let Ok(col) = arrow::compute::cast(col, &A::Int64) else {
                        return BooleanArray::from(vec![false; batch.num_rows()]);
                    };
                    let col = col
                        .as_any()
                        .downcast_ref::<Int64Array>()
                        .cloned()
                        .unwrap_or_else(|| Int64Array::from(vec![None; 0]));
                    hits(col.iter().map(|v| v.and_then(|v| keys.get(&v))), found)
                }
                _ => one_column(batch, c, keys.values(), found),
            },
            KeySet::Strs { column: c, keys } => match column(c) {
                Some((A::Utf8, col)) => {
                    let col = col.as_string::<i32>();
                    hits(col.iter().map(|v| v.and_then(|v| keys.get(v))), found)
                }
                _ => one_column(batch, c, keys.values(), found),
            },
            KeySet::Canonical { columns, keys } => canonical(batch, columns, |k| keys.contains(k), found),
        }
    }
}

/// The match mask of rows whose key was found (`Some`: its canonical key).
fn hits<'k>(rows: impl Iterator<Item = Option<&'k String>>, found: &mut HashSet<String>) -> BooleanArray {
    rows.map(|hit| {
        if let Some(k) = hit {
            found.insert(k.clone());
        }
        Some(hit.is_some())
    })
    .collect()
}

/// [`canonical`] over the one key column `column` of a direct key set that does not hold
/// what the column does.
fn one_column<'k>(
    batch: &RecordBatch,
    column: &str,
    keys: impl Iterator<Item = &'k String>,
    found: &mut HashSet<String>,
) -> BooleanArray {
    let keys: HashSet<&String> = keys.collect();
    canonical(batch, &[column.to_string()], |k| keys.contains(k), found)
}

/// The match mask of rows whose canonical key over `columns` is one of the keys.
fn canonical(
    batch: &RecordBatch,
    columns: &[String],
    is_key: impl Fn(&String) -> bool,
    found: &mut HashSet<String>,
) -> BooleanArray {
    keys_of_batch(batch, columns)
        .into_iter()
        .map(|k| {
            let hit = k.filter(|k| is_key(k));
            let is = hit.is_some();
            found.extend(hit);
            Some(is)
        })
        .collect()
}

/// Interprets a Debezium change event.
///
/// # Errors
/// A message (the dead-letter reason) for anything that is not a usable envelope.
pub(crate) fn debezium_change(
    payload: &[u8],
    kafka_key: Option<&[u8]>,
    columns: &KeyColumns,
) -> Result<RecordChange, String> {
    let v: Value = serde_json::from_slice(payload).map_err(|e| format!("invalid JSON: {e}"))?;
    let envelope = match v.get("payload") {
        Some(p) if v.get("schema").is_some() => p,
        _ => &v,
    };
    let op = envelope.get("op").and_then(Value::as_str).ok_or("not a Debezium envelope: no \"op\" field")?;
    match op {
        "c" | "r" | "u" => match envelope.get("after") {
            Some(after @ Value::Object(_)) => Ok(RecordChange::Upsert(after.to_string().into_bytes())),
            _ => Err(format!("Debezium op {op:?} without an \"after\" object")),
        },
        // The key from `before`, else from the record key; one that is there but does not
        // convert to the key columns' types is refused, not looked up elsewhere.
        // The key from `before` (or else the record key), converted to the key columns' types.
        "d" => {
            let from_before = envelope.get("before").filter(|b| b.is_object()).map(|b| columns.of_object(b));
            match (from_before, kafka_key) {
                (Some(Ok(key)), _) => Ok(RecordChange::Delete(key)),
                (Some(Err(why)), Some(k)) => columns.of_record_key(k).map(RecordChange::Delete).map_err(|_| why),
                (Some(Err(why)), None) => Err(why),
                (None, Some(k)) => columns.of_record_key(k).map(RecordChange::Delete),
                (None, None) => Err("Debezium delete without \"before\" or a record key".to_string()),
            }
        }
        other => Err(format!("Debezium op {other:?} is not one of c, r, u, d")),
    }
}

/// Where a keyed change stands among the changes of one commit: of two changes to a key, the
/// later one wins. Each source orders by its own position.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) enum ChangeOrder {
    /// A Kafka record's offset in its partition (a key's records share a partition).
    Offset(i64),
    /// A pushed record (HTTP or a Kafka client of the listener): its request's rank among the
    /// requests of the commit (a producer's requests by sequence), then its place in the
    /// request.
    Pushed { request: u32, record: u32 },
    /// A change's place among one source commit's changes (a mirror applies a commit's deletes
    /// before its new rows).
    InCommit(u64),
}

/// One keyed change of a commit: its place, and the row (batch index, row index) for an
/// upsert.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Change {
    pub order: ChangeOrder,
    pub row: Option<(usize, usize)>,
}

/// The winning change per key: the latest.
pub(crate) fn last_change_per_key(changes: impl IntoIterator<Item = (String, Change)>) -> HashMap<String, Change> {
    let mut out: HashMap<String, Change> = HashMap::new();
    for (key, change) in changes {
        match out.get(&key) {
            Some(c) if c.order > change.order => {}
            _ => {
                out.insert(key, change);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn cols(c: &[&str]) -> Vec<String> {
        c.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn keys_are_canonical_across_sources() {
        let id = cols(&["id"]);
        let two = cols(&["region", "id"]);
        let batch = RecordBatch::try_from_iter([
            ("id", Arc::new(arrow::array::Int64Array::from(vec![Some(42), None])) as arrow::array::ArrayRef),
            ("region", Arc::new(arrow::array::StringArray::from(vec!["eu", "us"]))),
        ])
        .unwrap();
        assert_eq!(keys_of_batch(&batch, &id), vec![Some("[42]".to_string()), None]);
        assert_eq!(keys_of_batch(&batch, &two)[0].as_deref(), Some("[\"eu\",42]"));
    }

    #[test]
    fn key_sets_match_rows_by_value() {
        let batch = RecordBatch::try_from_iter([
            (
                "id",
                Arc::new(arrow::array::Int32Array::from(vec![Some(1), Some(2), None, Some(4)]))
                    as arrow::array::ArrayRef,
            ),
            ("name", Arc::new(arrow::array::StringArray::from(vec!["a", "b", "c", "d"]))),
        ])
        .unwrap();
        let id = cols(&["id"]);
        let keys = ["[2]".to_string(), "[4]".to_string(), "[9]".to_string()];
        let set = KeySet::new(&id, keys.iter());
        assert!(matches!(set, KeySet::Ints { .. }));
        let mut found = HashSet::new();
        let mask = set.matches(&batch, &mut found);
        assert_eq!(mask, BooleanArray::from(vec![false, true, false, true]));
        assert_eq!(found, HashSet::from(["[2]".to_string(), "[4]".to_string()]));
        let names = ["[\"c\"]".to_string()];
        let set = KeySet::new(&cols(&["name"]), names.iter());
        assert!(matches!(set, KeySet::Strs { .. }));
        assert_eq!(set.matches(&batch, &mut HashSet::new()), BooleanArray::from(vec![false, false, true, false]));
        let pairs = ["[4,\"d\"]".to_string()];
        let set = KeySet::new(&cols(&["id", "name"]), pairs.iter());
        assert!(matches!(set, KeySet::Canonical { .. }));
        assert_eq!(set.matches(&batch, &mut HashSet::new()), BooleanArray::from(vec![false, false, false, true]));
    }

    #[test]
    fn debezium_envelopes() {
        let schema = crate::delta::schema::StructType::new(vec![crate::delta::schema::StructField::new(
            "id",
            crate::delta::schema::DataType::Primitive(crate::delta::schema::PrimitiveType::Long),
            true,
        )]);
        let id = KeyColumns::new(&cols(&["id"]), Some(&schema));
        let create = br#"{"before":null,"after":{"id":1,"name":"a"},"op":"c","ts_ms":1}"#;
        assert_eq!(debezium_change(create, None, &id), Ok(RecordChange::Upsert(br#"{"id":1,"name":"a"}"#.to_vec())));
        let wrapped =
            br#"{"schema":{"type":"struct"},"payload":{"before":{"id":1},"after":{"id":1,"name":"b"},"op":"u"}}"#;
        assert!(matches!(debezium_change(wrapped, None, &id), Ok(RecordChange::Upsert(_))));
        let delete = br#"{"before":{"id":1,"name":"b"},"after":null,"op":"d"}"#;
        assert_eq!(debezium_change(delete, None, &id), Ok(RecordChange::Delete("[1]".into())));
        let delete_no_before = br#"{"before":null,"after":null,"op":"d"}"#;
        assert_eq!(debezium_change(delete_no_before, Some(b"{\"id\":9}"), &id), Ok(RecordChange::Delete("[9]".into())));
        assert!(debezium_change(delete_no_before, None, &id).is_err());
        // A key that does not convert to the column's type is refused, not a silent no-op.
        let bad_key = br#"{"before":{"id":"x"},"after":null,"op":"d"}"#;
        assert!(debezium_change(bad_key, None, &id).unwrap_err().contains("not a Int64"));
        let text_key = br#"{"before":{"id":"12"},"after":null,"op":"d"}"#;
        assert_eq!(debezium_change(text_key, None, &id), Ok(RecordChange::Delete("[12]".into())));
        assert!(debezium_change(br#"{"id":1}"#, None, &id).unwrap_err().contains("op"));
        assert!(debezium_change(br#"{"op":"t"}"#, None, &id).is_err());
        assert!(debezium_change(b"{nope", None, &id).unwrap_err().contains("invalid JSON"));
    }

    #[test]
    fn the_last_change_per_key_wins() {
        let c = |offset, row| Change { order: ChangeOrder::Offset(offset), row };
        let won = last_change_per_key([
            ("[1]".to_string(), c(10, Some((0, 0)))),
            ("[2]".to_string(), c(11, Some((0, 1)))),
            ("[1]".to_string(), c(12, None)),
            ("[2]".to_string(), c(13, Some((1, 0)))),
            ("[3]".to_string(), c(14, None)),
            ("[3]".to_string(), c(9, Some((0, 2)))),
        ]);
        assert_eq!(won["[1]"], c(12, None), "a later delete beats an upsert");
        assert_eq!(won["[2]"], c(13, Some((1, 0))), "the later upsert wins");
        assert_eq!(won["[3]"], c(14, None), "order is by offset, not arrival");
        let pushed = |request, record| Change { order: ChangeOrder::Pushed { request, record }, row: None };
        let won = last_change_per_key([
            ("[1]".to_string(), pushed(1, 0)),
            ("[1]".to_string(), pushed(0, 7)),
            ("[2]".to_string(), pushed(0, 3)),
            ("[2]".to_string(), pushed(0, 2)),
        ]);
        assert_eq!((won["[1]"], won["[2]"]), (pushed(1, 0), pushed(0, 3)), "by request, then by record");
    }
}
