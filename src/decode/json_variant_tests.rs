use std::sync::Arc;

use arrow::array::{Array, AsArray};
use arrow::datatypes::{DataType, Field, Int64Type, Schema, SchemaRef};
use serde_json::{json, Value};

use crate::common::record::RawRecord;
use crate::decode::json::PayloadDecoder;
use crate::delta::arrow_schema::variant_fields;

fn schema(nullable: bool) -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("properties", DataType::Struct(variant_fields()), nullable),
        Field::new("name", DataType::Utf8, true),
    ]))
}

fn records(payloads: &[&'static str]) -> Vec<RawRecord<'static>> {
    payloads
        .iter()
        .enumerate()
        .map(|(i, p)| RawRecord {
            topic: "t",
            partition: 0,
            offset: 100 + i as i64,
            timestamp_ms: None,
            key: None,
            payload: Some(p.as_bytes()),
        })
        .collect()
}

/// The printed JSON of a variant column's rows (`None` for null rows).
fn printed(batch: &arrow::array::RecordBatch, column: usize) -> Vec<Option<Value>> {
    let s = batch.column(column).as_struct();
    let (m, v) = (s.column(0).as_binary::<i32>(), s.column(1).as_binary::<i32>());
    (0..s.len())
        .map(|i| {
            s.is_valid(i).then(|| {
                let variant = parquet_variant::Variant::try_new(m.value(i), v.value(i)).unwrap();
                crate::delta::arrow_value::variant_json(&variant)
            })
        })
        .collect()
}

/// The variant field lands whatever its shape, the other columns as always; absent and null
/// fields are null rows; bad records (in the variant field or elsewhere) are dead letters
/// carrying their own payload, and the rest proceeds in order.
#[test]
fn a_variant_field_of_any_shape_lands_beside_typed_columns() {
    let d = PayloadDecoder::new(schema(true), 1 << 20);
    let payloads = [
        r#"{"id": 1, "properties": {"a": 1, "ключ": ["x", 2.50, null]}, "name": "n"}"#,
        r#"{"properties": 7, "id": 2}"#,
        r#"{"id": 3}"#,
        r#"{"id": 4, "properties": null}"#,
        r#"{"id": "five", "properties": {}}"#,
        r#"{"id": 6, "properties": {"a": 1, "a": 2}}"#,
        r#"[1]"#,
        r#"{"id": 8, "properties": "text", "extra": true}"#,
        r#"{"id": 9, "properties": [1e400]}"#,
        r#"{"id": 10, "properties": {"deep": {"er": [true]}}, "name": "😀"}"#,
    ];
    let out = d.decode(&records(&payloads));
    assert_eq!(out.rows_from, vec![0, 1, 2, 3, 9]);
    let offsets: Vec<i64> = out.dead_letters.iter().map(|l| l.offset).collect();
    assert_eq!(offsets, vec![104, 105, 106, 107, 108]);
    for l in &out.dead_letters {
        assert_eq!(l.payload.as_deref(), Some(payloads[(l.offset - 100) as usize].as_bytes()), "{}", l.reason);
    }
    assert!(out.dead_letters[1].reason.contains(r#"field "properties": the key "a" appears twice"#));
    assert!(out.dead_letters[4].reason.contains("out of the range"), "{}", out.dead_letters[4].reason);
    let batch = out.batch.expect("rows");
    assert_eq!(batch.schema(), schema(true));
    let ids: Vec<i64> = batch.column(0).as_primitive::<Int64Type>().values().to_vec();
    assert_eq!(ids, vec![1, 2, 3, 4, 10]);
    assert_eq!(
        printed(&batch, 1),
        vec![
            Some(json!({"a": 1, "ключ": ["x", 2.5, null]})),
            Some(json!(7)),
            None,
            None,
            Some(json!({"deep": {"er": [true]}})),
        ]
    );
    assert_eq!(batch.column(2).as_string::<i32>().value(4), "😀");
}

/// A non-nullable variant column refuses records without the field; the others land.
#[test]
fn a_required_variant_column_refuses_records_without_it() {
    let d = PayloadDecoder::new(schema(false), 1 << 20);
    let out = d.decode(&records(&[r#"{"id": 1, "properties": {}}"#, r#"{"id": 2}"#]));
    assert_eq!(out.rows_from, vec![0]);
    assert_eq!(out.dead_letters.len(), 1);
    assert!(out.dead_letters[0].reason.contains(r#"field "properties" is missing or null"#));
}

/// With a record column, the whole payload (any JSON value) is that column's value.
#[test]
fn the_whole_record_lands_in_its_variant_column() {
    let schema = Arc::new(Schema::new(vec![Field::new("record", DataType::Struct(variant_fields()), true)]));
    let d = PayloadDecoder::new(schema, 1 << 20).with_record_variant("record");
    let out = d.decode(&records(&[r#"{"id": 1, "record": 2}"#, "[1, 2]", "{oops", "  \"s\"  "]));
    assert_eq!(out.rows_from, vec![0, 1, 3]);
    assert_eq!(out.dead_letters.len(), 1);
    assert_eq!(
        printed(&out.batch.unwrap(), 0),
        vec![Some(json!({"id": 1, "record": 2})), Some(json!([1, 2])), Some(json!("s"))]
    );
}
