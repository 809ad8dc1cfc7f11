//! Avro datums decoded against a writer schema with every kind of field the decoder maps
//! (records, unions, enums, arrays, maps, timestamps, decimals): every datum becomes a row or
//! a dead letter, never a panic. The input is cut into datums at 0xFF bytes.
#![no_main]
use deltabus::common::record::RawRecord;
use deltabus::decode::avro::AvroDecoder;
use libfuzzer_sys::fuzz_target;

const SCHEMA: &str = r#"{"type":"record","name":"r","fields":[
  {"name":"id","type":"long"},
  {"name":"name","type":["null","string"]},
  {"name":"amount","type":"double"},
  {"name":"tags","type":{"type":"array","items":"string"}},
  {"name":"kind","type":{"type":"enum","name":"k","symbols":["A","B","Ü"]}},
  {"name":"counts","type":{"type":"map","values":"int"}},
  {"name":"at","type":{"type":"long","logicalType":"timestamp-micros"}},
  {"name":"price","type":{"type":"bytes","logicalType":"decimal","precision":10,"scale":2}},
  {"name":"inner","type":{"type":"record","name":"i","fields":[{"name":"ok","type":"boolean"}]}}]}"#;

fuzz_target!(|data: &[u8]| {
    let Ok(rt) = tokio::runtime::Builder::new_current_thread().build() else { return };
    let mut decoder = AvroDecoder::plain(SCHEMA).expect("the schema is valid");
    let records: Vec<RawRecord<'_>> = data
        .split(|b| *b == 0xff)
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
    let decoded = rt.block_on(decoder.decode(&records));
    let rows: usize = decoded.runs.iter().map(|r| r.rows_from.len()).sum();
    assert_eq!(rows + decoded.dead_letters.len(), records.len(), "every datum is a row or a dead letter");
});
