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

/// Rows of a UniForm table's Iceberg metadata as an Iceberg reader nobody here wrote reads
/// them (`reader`: `pyiceberg` through `StaticTable`, or `duckdb` through its iceberg
/// extension loaded from the `duckdb-ext-iceberg` wheel), as JSON lines; `snapshot` picks an
/// earlier Iceberg snapshot.
pub fn iceberg_rows(python: &str, metadata: &Path, reader: &str, snapshot: Option<i64>) -> Result<Vec<u8>, String> {
    let script = r#"
import json, sys, datetime, decimal, glob, os, sysconfig
meta, reader = sys.argv[1], sys.argv[2]
snap = int(sys.argv[3]) if len(sys.argv) > 3 else None
def norm(v):
    if isinstance(v, list):
        # Maps (pyarrow: a list of (key, value) tuples) as `deltabus cat` prints them.
        if v and all(isinstance(e, tuple) and len(e) == 2 for e in v):
            return [{"key": norm(a), "value": norm(b)} for a, b in v]
        return [norm(e) for e in v]
    if isinstance(v, dict):
        return {k: norm(x) for k, x in v.items()}
    if isinstance(v, (bytes, bytearray)):
        return v.hex()
    if isinstance(v, datetime.datetime) and v.tzinfo is not None:
        return v.astimezone(datetime.timezone.utc).replace(tzinfo=None).isoformat()
    if isinstance(v, (datetime.datetime, datetime.date)):
        return v.isoformat()
    if isinstance(v, decimal.Decimal):
        return str(v)
    return v
if reader == "pyiceberg":
    from pyiceberg.table import StaticTable
    t = StaticTable.from_metadata(meta)
    rows = (t.scan(snapshot_id=snap) if snap is not None else t.scan()).to_arrow().to_pylist()
else:
    import duckdb
    con = duckdb.connect(config={"allow_unsigned_extensions": "true"})
    root = sysconfig.get_paths()["purelib"]
    for ext in ("avro", "iceberg"):
        found = glob.glob(os.path.join(root, "duckdb_ext", "extensions", "*", "*", ext + ".duckdb_extension"))
        if not found:
            sys.exit("the duckdb " + ext + " extension wheel is not installed")
        con.execute("LOAD '" + found[0] + "'")
    con.execute("SET TimeZone = 'UTC'")
    q = "SELECT * FROM iceberg_scan(?" + (", snapshot_from_id = " + str(snap) if snap is not None else "") + ")"
    # Through Arrow, as pyiceberg's rows: maps at any depth become (key, value) pairs.
    rows = con.execute(q, [meta]).fetch_arrow_table().to_pylist()
for row in rows:
    print(json.dumps(norm(row), ensure_ascii=False))
"#;
    let mut args: Vec<std::ffi::OsString> = vec![metadata.as_os_str().to_owned(), reader.into()];
    if let Some(s) = snapshot {
        args.push(s.to_string().into());
    }
    let refs: Vec<&std::ffi::OsStr> = args.iter().map(|a| a.as_os_str()).collect();
    let out = crate::support::run_python(python, script, &refs);
    if out.status.success() {
        Ok(out.stdout)
    } else {
        Err(format!("{reader} failed: {}", String::from_utf8_lossy(&out.stderr)))
    }
}

/// Runs `script` and parses the last line it prints as JSON (the script must succeed).
pub fn run_python_json(python: &str, script: &str, args: &[&std::ffi::OsStr]) -> serde_json::Value {
    let out = crate::support::run_python(python, script, args);
    assert!(out.status.success(), "python failed: {}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(text.lines().last().unwrap_or("null")).unwrap_or_else(|_| panic!("python printed {text}"))
}
