//! The Python side of the tests: the test venv's interpreter, the `deltalake` package's
//! reading of a table, and row comparison.

use std::path::Path;

pub fn compare_rows(expected_jsonl: &[u8], actual_jsonl: &[u8]) -> Result<(), String> {
    crate::compare::rows(expected_jsonl, actual_jsonl, &[]).map(|_| ())
}

pub fn python() -> Option<String> {
    crate::support::emulator("DELTABUS_TEST_PYTHON")
}

/// Rows as the Python `deltalake` package reads them, as JSON lines.
pub fn deltalake_rows(python: &str, table: &Path) -> Vec<u8> {
    let script = r#"
import json, sys, datetime, decimal
from deltalake import DeltaTable
def norm(v):
    if isinstance(v, list):
        if v and all(isinstance(e, tuple) and len(e) == 2 for e in v):
            return [{"key": norm(k), "value": norm(x)} for k, x in v]
        return [norm(e) for e in v]
    if isinstance(v, dict):
        return {k: norm(x) for k, x in v.items()}
    if isinstance(v, (bytes, bytearray)):
        return v.hex()
    if isinstance(v, (datetime.datetime, datetime.date, decimal.Decimal)):
        return v.isoformat() if not isinstance(v, decimal.Decimal) else str(v)
    return v
for row in DeltaTable(sys.argv[1]).to_pyarrow_table().to_pylist():
    print(json.dumps(norm(row)))
"#;
    let out = crate::support::run_python(python, script, &[table.as_os_str()]);
    assert!(out.status.success(), "deltalake failed: {}", String::from_utf8_lossy(&out.stderr));
    out.stdout
}
