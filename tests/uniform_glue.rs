//! UniForm tables registered in AWS Glue (the Glue API of the moto server the suite starts),
//! read back through pyiceberg's Glue catalog against `deltabus cat`: the table is registered
//! when created (an Iceberg table with its `metadata_location`, and a Delta table at the
//! root), the pointer moves after every commit, a writer killed between the Iceberg metadata
//! and the Glue move leaves readers on the previous complete snapshot until `deltabus uniform`
//! or the next commit moves it, and a name taken by another kind of table is a clean error
//! that holds back no commit.

use std::path::Path;
use std::process::{Command, Output, Stdio};

use serde_json::Value;

use crate::support::python::compare_rows;
use crate::support::stores::emulator;
use crate::support::uniform::python_or_skip;
use crate::support::{assert_clean_failure, run_python};

const ENV: [(&str, &str); 4] = [
    ("AWS_ACCESS_KEY_ID", "testing"),
    ("AWS_SECRET_ACCESS_KEY", "testing"),
    ("AWS_REGION", "us-east-1"),
    ("AWS_EC2_METADATA_DISABLED", "true"),
];

/// `deltabus <args>` against the emulator's Glue, with `input` on stdin and one more
/// environment variable.
fn deltabus_glue(endpoint: &str, args: &[&str], input: &str, extra: Option<(&str, &str)>) -> Output {
    use std::io::Write as _;
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_deltabus"));
    cmd.args(args).env("AWS_ENDPOINT_URL_GLUE", endpoint).envs(ENV);
    if let Some((k, v)) = extra {
        cmd.env(k, v);
    }
    let mut child = cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    child.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
    child.wait_with_output().unwrap()
}

fn ok(out: &Output) -> Value {
    assert!(out.status.success(), "deltabus failed: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(out.stdout.split(|b| *b == b'\n').find(|l| !l.is_empty()).unwrap_or(b"null")).unwrap()
}

const GLUE: &str = r#"
import json, sys, boto3
from pyiceberg.catalog.glue import GlueCatalog
endpoint, db, name, what = sys.argv[1:5]
if what == "iceberg":
    cat = GlueCatalog("glue", **{"glue.endpoint": endpoint, "glue.region": "us-east-1",
        "glue.access-key-id": "testing", "glue.secret-access-key": "testing"})
    t = cat.load_table((db, name))
    print(json.dumps({"metadata": t.metadata_location}))
    for row in t.scan().to_arrow().to_pylist():
        print(json.dumps(row, ensure_ascii=False, default=str))
elif what == "get":
    g = boto3.client("glue", endpoint_url=endpoint, region_name="us-east-1",
        aws_access_key_id="testing", aws_secret_access_key="testing")
    print(json.dumps(g.get_table(DatabaseName=db, Name=name)["Table"], default=str))
else:
    g = boto3.client("glue", endpoint_url=endpoint, region_name="us-east-1",
        aws_access_key_id="testing", aws_secret_access_key="testing")
    g.create_database(DatabaseInput={"Name": db})
    g.create_table(DatabaseName=db, TableInput={"Name": name, "TableType": "EXTERNAL_TABLE",
        "Parameters": {"table_type": "HIVE"}})
"#;

fn glue_py(py: &str, endpoint: &str, db: &str, name: &str, what: &str) -> Vec<u8> {
    let args: Vec<&std::ffi::OsStr> = [endpoint, db, name, what].into_iter().map(std::ffi::OsStr::new).collect();
    let out = run_python(py, GLUE, &args);
    assert!(out.status.success(), "glue {what}: {}", String::from_utf8_lossy(&out.stderr));
    out.stdout
}

/// The Iceberg table as pyiceberg's Glue catalog opens it: its metadata location and rows.
fn through_glue(py: &str, endpoint: &str, db: &str, name: &str) -> (String, Vec<u8>) {
    let out = glue_py(py, endpoint, db, name, "iceberg");
    let (first, rows) = out.split_at(out.iter().position(|b| *b == b'\n').unwrap() + 1);
    let meta: Value = serde_json::from_slice(first).unwrap();
    (meta["metadata"].as_str().unwrap().to_string(), rows.to_vec())
}

fn cat(table: &Path) -> Vec<u8> {
    let out = crate::support::deltabus(&["cat", table.to_str().unwrap()]);
    assert!(out.status.success());
    out.stdout
}

fn hint(table: &Path) -> String {
    std::fs::read_to_string(table.join("metadata/version-hint.text")).unwrap().trim().to_string()
}

#[test]
fn uniform_tables_are_registered_in_glue_and_read_through_its_catalog() {
    let Some(py) = python_or_skip() else { return };
    let Some(endpoint) = emulator("DELTABUS_TEST_S3_ENDPOINT") else { return };
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("Orders");
    let t = table.to_str().unwrap();
    let db = format!("lake_{}", &uuid::Uuid::new_v4().simple().to_string()[..8]);
    let database = format!("deltabus.glue.database={db}");
    let created = ok(&deltabus_glue(
        &endpoint,
        &["write", t, "--property", "delta.universalFormat.enabledFormats=iceberg", "--property", &database],
        "{\"id\":1,\"名前\":\"一\"}\n",
        None,
    ));
    assert_eq!(created["version"], 0);
    // Registered on creation: the Iceberg table at the current metadata, the Delta one at the root.
    let (location, rows) = through_glue(&py, &endpoint, &db, "orders");
    assert!(location.ends_with(&format!("metadata/v{}.metadata.json", hint(&table))), "{location}");
    compare_rows(&cat(&table), &rows).unwrap();
    let delta: Value = serde_json::from_slice(&glue_py(&py, &endpoint, &db, "orders_delta", "get")).unwrap();
    assert_eq!(delta["Parameters"]["table_type"], "DELTA", "{delta}");
    assert_eq!(delta["StorageDescriptor"]["Location"].as_str().unwrap().trim_end_matches('/'), format!("file://{t}"));
    // Every commit moves the pointer.
    for i in 2..4 {
        ok(&deltabus_glue(&endpoint, &["write", t], &format!("{{\"id\":{i},\"名前\":\"n{i}\"}}\n"), None));
        let (location, rows) = through_glue(&py, &endpoint, &db, "orders");
        assert!(location.ends_with(&format!("v{}.metadata.json", hint(&table))), "{location} after commit {i}");
        compare_rows(&cat(&table), &rows).unwrap();
    }
    // Killed after the Iceberg metadata, before the Glue move: Glue readers see the previous
    // snapshot, complete, until `deltabus uniform` moves the pointer.
    let before = cat(&table);
    let (was, _) = through_glue(&py, &endpoint, &db, "orders");
    let out = deltabus_glue(
        &endpoint,
        &["write", t],
        "{\"id\":9,\"名前\":\"九\"}\n",
        Some(("DELTABUS_CRASH_AT", "uniform.before_glue")),
    );
    assert!(!out.status.success(), "the writer was to die");
    let (location, rows) = through_glue(&py, &endpoint, &db, "orders");
    assert_eq!(location, was, "the pointer did not move");
    compare_rows(&before, &rows).unwrap();
    let caught = ok(&deltabus_glue(&endpoint, &["uniform", t], "", None));
    assert_eq!(caught["glue"]["moved"], true, "{caught}");
    assert_eq!(caught["converted"], false, "the Iceberg side was already there");
    let (location, rows) = through_glue(&py, &endpoint, &db, "orders");
    assert!(location.ends_with(&format!("v{}.metadata.json", hint(&table))));
    compare_rows(&cat(&table), &rows).unwrap();
    assert_eq!(ok(&deltabus_glue(&endpoint, &["uniform", t], "", None))["glue"]["moved"], false, "nothing left to do");

    // A name taken by a table that is not this one's Iceberg table: a clean error, no commit lost.
    let other = dir.path().join("taken");
    let taken_db = format!("{db}_x");
    glue_py(&py, &endpoint, &taken_db, "taken", "create-hive");
    let database = format!("deltabus.glue.database={taken_db}");
    let props = ["--property", "delta.universalFormat.enabledFormats=iceberg", "--property", &database];
    let o = other.to_str().unwrap();
    let mut args = vec!["write", o];
    args.extend(props);
    ok(&deltabus_glue(&endpoint, &args, "{\"id\":1}\n", None));
    let out = deltabus_glue(&endpoint, &["uniform", o], "", None);
    assert_clean_failure(&out, "not an Iceberg table");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("is not an Iceberg table"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&cat(&other)).lines().count(), 1, "the commit stands");
}
