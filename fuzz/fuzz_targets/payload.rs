//! Kafka payloads decoded against a table schema (good rows or dead letters, never a panic;
//! the one-pass value check never approves what the full walk would not).
#![no_main]
use std::sync::Arc;

use arrow::datatypes::{DataType, Field, Schema, TimeUnit};
use deltabus::decode::json::PayloadDecoder;
use deltabus::common::record::RawRecord;
use deltabus::delta::json_values::{RecordRules, Verdict};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let schema = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, true),
        Field::new("name", DataType::Utf8, true),
        Field::new("amount", DataType::Float64, true),
        Field::new("ts", DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())), true),
        Field::new("tags", DataType::List(Arc::new(Field::new("element", DataType::Utf8, true))), true),
        Field::new(
            "nested",
            DataType::Struct(vec![Field::new("a", DataType::Int32, true), Field::new("b", DataType::Boolean, true)].into()),
            true,
        ),
    ]));
    let rules = RecordRules::new(&schema);
    let decoder = PayloadDecoder::new(schema, 1 << 16);
    // The input split at newlines: several records, one poll.
    let records: Vec<RawRecord<'_>> = data
        .split(|b| *b == b'\n')
        .enumerate()
        .map(|(i, payload)| RawRecord {
            topic: "t",
            partition: 0,
            offset: i as i64,
            timestamp_ms: Some(0),
            key: None,
            payload: Some(payload),
        })
        .collect();
    // The one-pass check approves only what the full walk decodes as it is.
    for r in &records {
        if let Some(p) = r.payload.filter(|p| std::str::from_utf8(p).is_ok()) {
            if rules.one_pass(p) {
                assert_eq!(rules.check_walk(p), Ok(Verdict::AsIs), "{}", String::from_utf8_lossy(p));
            }
        }
    }
    let decoded = decoder.decode(&records);
    let rows = decoded.batch.as_ref().map_or(0, |b| b.num_rows());
    assert_eq!(rows + decoded.dead_letters.len(), records.len(), "every record is a row or a dead letter");
});
