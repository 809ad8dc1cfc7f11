//! Arrow IPC stream bodies of push requests (`Content-Type:
//! application/vnd.apache.arrow.stream`) decoded against a table, with and without schema
//! evolution: an answer (rows or a refusal naming why) for every body, never a panic.
#![no_main]
use deltabus::config::server::{ResolvedTable, ServerTable};
use deltabus::delta::create::infer_schema;
use deltabus::serve::body::arrow_stream;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let current = infer_schema(&[r#"{"id":1,"name":"ä","amount":1.5,"tags":["x"],"nested":{"a":1}}"#]).ok();
    for evolve in [false, true] {
        let table = ResolvedTable {
            name: "t".into(),
            settings: ServerTable { create: true, evolve_schema: evolve, ..ServerTable::default() },
            schema: None,
            tokens: Vec::new(),
        };
        if let Ok(rows) = arrow_stream(data, &table, current.as_ref()) {
            let n: usize = rows.batches.iter().map(|b| b.num_rows()).sum();
            assert_eq!(n as u64 + rows.bad.len() as u64, rows.count, "every row is kept or refused");
        }
        let _ = arrow_stream(data, &table, None);
    }
});
