//! Columns filled from the Kafka record instead of the payload: key, headers, topic,
//! partition, offset and timestamp, as configured in `[pipelines.<name>.columns]`.
//!
//! [`RecordColumns::fields`] gives their Delta types (used when a schema is inferred and to
//! strip them from the payload decoding schema); [`append`] adds their arrays to a decoded
//! batch, for the records the batch's rows came from.

use std::sync::Arc;

use arrow::array::{
    ArrayRef, Int32Array, Int64Array, MapBuilder, RecordBatch, StringArray, StringBuilder, TimestampMicrosecondArray,
};
use arrow::datatypes::{Field, Schema};

use crate::common::record::{Headers, RawRecord};
use crate::config::pipeline::RecordColumns;
use crate::delta::schema::{DataType, MapType, PrimitiveType, StructField};
use crate::error::{Error, Result};

impl RecordColumns {
    /// The configured columns as Delta fields (all nullable).
    pub fn fields(&self) -> Vec<StructField> {
        let string = || DataType::Primitive(PrimitiveType::String);
        let mut out = Vec::new();
        let mut add = |name: &Option<String>, t: DataType| {
            if let Some(n) = name {
                out.push(StructField::new(n, t, true));
            }
        };
        add(&self.key, string());
        add(
            &self.headers,
            DataType::Map(Box::new(MapType { key_type: string(), value_type: string(), value_contains_null: true })),
        );
        add(&self.topic, string());
        add(&self.partition, DataType::Primitive(PrimitiveType::Integer));
        add(&self.offset, DataType::Primitive(PrimitiveType::Long));
        add(&self.timestamp, DataType::Primitive(PrimitiveType::Timestamp));
        out
    }
}

/// Appends the configured record columns to `batch`, whose row `i` came from
/// `records[rows_from[i]]` (with `headers[rows_from[i]]`; `headers` may be empty when no
/// headers column is configured).
///
/// # Errors
/// [`Error::Internal`] when the arrays cannot be assembled (a bug).
pub(crate) fn append(
    batch: RecordBatch,
    cols: &RecordColumns,
    records: &[RawRecord<'_>],
    headers: &[Headers<'_>],
    rows_from: &[usize],
) -> Result<RecordBatch> {
    if cols.names().is_empty() {
        return Ok(batch);
    }
    let rows = || rows_from.iter().map(|&i| &records[i]);
    let mut fields: Vec<Arc<Field>> = batch.schema().fields().iter().cloned().collect();
    let mut columns: Vec<ArrayRef> = batch.columns().to_vec();
    let mut push = |name: &Option<String>, array: ArrayRef| {
        if let Some(n) = name {
            fields.push(Arc::new(Field::new(n, array.data_type().clone(), true)));
            columns.push(array);
        }
    };
    if cols.key.is_some() {
        let keys: StringArray = rows().map(|r| r.key.and_then(|k| std::str::from_utf8(k).ok())).collect();
        push(&cols.key, Arc::new(keys));
    }
    if cols.headers.is_some() {
        let mut b = MapBuilder::new(None, StringBuilder::new(), StringBuilder::new());
        for &i in rows_from {
            for (k, v) in headers.get(i).map(Vec::as_slice).unwrap_or_default() {
                b.keys().append_value(k);
                b.values().append_option(v.map(String::from_utf8_lossy));
            }
            b.append(true).map_err(|e| Error::Internal(format!("headers column: {e}")))?;
        }
        push(&cols.headers, Arc::new(b.finish()));
    }
    if cols.topic.is_some() {
        push(&cols.topic, Arc::new(rows().map(|r| Some(r.topic)).collect::<StringArray>()));
    }
    if cols.partition.is_some() {
        push(&cols.partition, Arc::new(rows().map(|r| Some(r.partition)).collect::<Int32Array>()));
    }
    if cols.offset.is_some() {
        push(&cols.offset, Arc::new(rows().map(|r| Some(r.offset)).collect::<Int64Array>()));
    }
    if cols.timestamp.is_some() {
        let ts: TimestampMicrosecondArray = rows().map(|r| r.timestamp_ms.and_then(|t| t.checked_mul(1000))).collect();
        push(&cols.timestamp, Arc::new(ts.with_timezone("UTC")));
    }
    RecordBatch::try_new(Arc::new(Schema::new(fields)), columns)
        .map_err(|e| Error::Internal(format!("record columns: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{Array, AsArray};

    #[test]
    fn columns_follow_the_rows_they_came_from() {
        let cols = RecordColumns {
            key: Some("k".into()),
            headers: Some("h".into()),
            topic: Some("t".into()),
            partition: Some("p".into()),
            offset: Some("o".into()),
            timestamp: Some("ts".into()),
        };
        let rec = |offset, key: Option<&'static [u8]>| RawRecord {
            topic: "events",
            partition: 3,
            offset,
            timestamp_ms: Some(1_000),
            key,
            payload: Some(b"{}"),
        };
        let records = [rec(10, Some(b"a")), rec(11, None), rec(12, Some(b"c"))];
        let headers: Vec<Headers<'_>> = vec![vec![("x", Some(&b"1"[..]))], vec![], vec![("y", None)]];
        let base = RecordBatch::try_new(
            Arc::new(Schema::new(vec![Field::new("id", arrow::datatypes::DataType::Int64, false)])),
            vec![Arc::new(Int64Array::from(vec![1, 3]))],
        )
        .unwrap();
        let out = append(base, &cols, &records, &headers, &[0, 2]).unwrap();
        assert_eq!(out.num_columns(), 7);
        let offsets = out.column_by_name("o").unwrap().as_primitive::<arrow::datatypes::Int64Type>();
        assert_eq!(offsets.values().to_vec(), vec![10, 12]);
        let keys = out.column_by_name("k").unwrap().as_string::<i32>();
        assert_eq!((keys.value(0), keys.value(1)), ("a", "c"));
        let h = out.column_by_name("h").unwrap().as_map();
        assert_eq!((h.value_length(0), h.value_length(1)), (1, 1));
        assert!(h.value(1).column(1).is_null(0), "a header without a value is a null");
        assert_eq!(cols.fields().len(), 6);
    }
}
