//! Kafka payloads decoded against a table schema (good rows or dead letters, never a panic;
//! the one-pass value check never approves what the full walk would not; the one-scan decoder
//! of flat tables gives the same rows and dead letters as the value rules plus `arrow_json`).
#![no_main]
use std::sync::Arc;

use arrow::datatypes::{DataType, Field, Schema, TimeUnit};
use deltabus::common::record::RawRecord;
use deltabus::decode::json::PayloadDecoder;
use deltabus::decode::json_values::{RecordRules, Verdict};
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
            DataType::Struct(
                vec![Field::new("a", DataType::Int32, true), Field::new("b", DataType::Boolean, true)].into(),
            ),
            true,
        ),
    ]));
    // The same names, flat: the one-scan decoder's tables.
    let flat = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("name", DataType::Utf8, true),
        Field::new("amount", DataType::Float64, true),
        Field::new("ts", DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())), true),
        Field::new("tags", DataType::Float32, true),
        Field::new("nested", DataType::Int8, true),
        Field::new("day", DataType::Date32, true),
        Field::new("ntz", DataType::Timestamp(TimeUnit::Millisecond, None), true),
        Field::new("d", DataType::Decimal128(9, 3), true),
        Field::new("ok", DataType::Boolean, true),
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
    // The one scan and the reference agree row for row and letter for letter.
    let one_scan = PayloadDecoder::new(flat, 1 << 16);
    let reference = one_scan.clone().reference();
    let (ours, theirs) = (one_scan.decode(&records), reference.decode(&records));
    assert_eq!(ours.batch, theirs.batch);
    assert_eq!(ours.rows_from, theirs.rows_from);
    let letters = |d: &deltabus::decode::json::Decoded| {
        d.dead_letters.iter().map(|l| (l.offset, l.reason.clone())).collect::<Vec<_>>()
    };
    assert_eq!(letters(&ours), letters(&theirs));
});
