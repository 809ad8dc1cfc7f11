//! Kafka-protocol request frames as the listener takes them: the header, the body of every
//! API spoken, and a Produce request's record batches (every codec, inflated within a bound)
//! decoded into rows against a table: an answer or a refusal for every frame, never a panic,
//! and never more inflated bytes than the bound. The reader's look at a Produce request's
//! first bytes (for the time it may wait for room) agrees with the full decoding.
#![no_main]
use bytes::Bytes;
use deltabus::config::kafka::TopicFormat;
use deltabus::config::server::{ResolvedTable, ServerTable};
use deltabus::delta::create::infer_schema;
use deltabus::serve::body::BadLines;
use deltabus::serve::kafka::apis::{decode_request, Request};
use deltabus::serve::kafka::wire::spoken;
use deltabus::serve::kafka::conn::read_head;
use deltabus::serve::kafka::frame::{produce_timeout, request_timeout, PREFIX};
use deltabus::serve::kafka::records::{batches, rows};
use libfuzzer_sys::fuzz_target;

const LIMIT: usize = 1 << 20;

fuzz_target!(|data: &[u8]| {
    if data.len() < 8 {
        return;
    }
    let timeout = produce_timeout(data);
    let _ = produce_timeout(&data[..data.len().min(PREFIX)]);
    let mut frame = Bytes::copy_from_slice(data);
    let Ok(head) = read_head(&mut frame) else { return };
    let Ok(Request::Produce(produce)) = decode_request(&head, frame) else { return };
    if spoken(head.api, head.version) {
        assert_eq!(timeout, Some(request_timeout(produce.timeout_ms)), "the first bytes' timeout is the request's");
    }
    let current = infer_schema(&[r#"{"id":1,"name":"ä","tags":["x"]}"#]).ok();
    let table = ResolvedTable {
        name: "t".into(),
        settings: ServerTable { create: true, ..ServerTable::default() },
        schema: None,
        tokens: Vec::new(),
    };
    for topic in produce.topic_data {
        for part in topic.partition_data {
            let Some(records) = part.records else { continue };
            let Ok(found) = batches("t", part.index, &records, LIMIT) else { continue };
            for batch in &found {
                let inflated: usize = batch
                    .records
                    .iter()
                    .map(|r| r.key.as_ref().map_or(0, Bytes::len) + r.value.as_ref().map_or(0, Bytes::len))
                    .sum();
                assert!(inflated <= LIMIT, "a batch inflated past the bound");
                for format in [TopicFormat::Json, TopicFormat::Bytes] {
                    if let Ok((r, _)) = rows(format, batch, &table, current.as_ref(), BadLines::DeadLetter) {
                        let n: usize = r.batches.iter().map(|b| b.num_rows()).sum();
                        assert_eq!(n as u64, r.count, "the count is the rows kept");
                        assert!(n + r.bad.len() <= batch.records.len(), "no record kept twice");
                    }
                }
            }
        }
    }
});
