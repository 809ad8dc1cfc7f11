//! `--where` predicates: parsing, statistics pruning and row evaluation.
#![no_main]
use std::sync::Arc;

use arrow::array::{ArrayRef, Float64Array, Int64Array, RecordBatch, StringArray};
use deltabus::delta::predicate::parse;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(expr) = parse(text) else { return };
    let batch = RecordBatch::try_from_iter(vec![
        ("id", Arc::new(Int64Array::from(vec![Some(1), None, Some(-3)])) as ArrayRef),
        ("s", Arc::new(StringArray::from(vec![Some("a"), Some("é"), None])) as ArrayRef),
        ("x", Arc::new(Float64Array::from(vec![Some(1.5), Some(f64::NAN), None])) as ArrayRef),
    ])
    .expect("batch");
    let _ = expr.evaluate(&batch);
    let stats = serde_json::json!({"numRecords": 3, "minValues": {"id": -3, "s": "a", "x": 1.5},
        "maxValues": {"id": 1, "s": "é", "x": 1.5}, "nullCount": {"id": 1, "s": 1, "x": 1}});
    let _ = expr.may_match_file(&|_| None, Some(&stats), &|p| p.to_vec());
    let _ = expr.columns();
});
