//! `deltabus write` end to end: typed round trips read identically by deltabus, the Python
//! `deltalake` package and the reference reader (kernel-oracle); checkpoints on the interval;
//! idempotent writes; bad rows that commit nothing; schema evolution; concurrent writers;
//! refusal of tables with features deltabus cannot honour.

use crate::support::*;
use std::io::Write as _;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use serde_json::Value;

use crate::support::{assert_clean_failure, deltabus, kernel_oracle, write_jsonl};

fn write(table: &Path, args: &[&str], input: &str) -> Output {
    write_jsonl(table, args, input)
}

fn ok_json(out: &Output) -> Value {
    assert!(out.status.success(), "failed: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

const SCHEMA: &str = r#"{"type":"struct","fields":[
 {"name":"id","type":"long","nullable":false,"metadata":{}},
 {"name":"i","type":"integer","nullable":true,"metadata":{}},
 {"name":"sh","type":"short","nullable":true,"metadata":{}},
 {"name":"by","type":"byte","nullable":true,"metadata":{}},
 {"name":"d","type":"double","nullable":true,"metadata":{}},
 {"name":"f","type":"float","nullable":true,"metadata":{}},
 {"name":"b","type":"boolean","nullable":true,"metadata":{}},
 {"name":"s","type":"string","nullable":true,"metadata":{}},
 {"name":"day","type":"date","nullable":true,"metadata":{}},
 {"name":"ts","type":"timestamp","nullable":true,"metadata":{}},
 {"name":"amount","type":"decimal(10,2)","nullable":true,"metadata":{}},
 {"name":"tags","type":{"type":"array","elementType":"long","containsNull":true},"nullable":true,"metadata":{}},
 {"name":"nested","type":{"type":"struct","fields":[{"name":"x","type":"string","nullable":true,"metadata":{}},{"name":"y","type":"long","nullable":true,"metadata":{}}]},"nullable":true,"metadata":{}},
 {"name":"attrs","type":{"type":"map","keyType":"string","valueType":"long","valueContainsNull":true},"nullable":true,"metadata":{}},
 {"name":"region","type":"string","nullable":true,"metadata":{}}
]}"#;

fn record(n: i64) -> String {
    let region = ["eu", "us/west", "a:b %", ""][(n % 4) as usize];
    let region = if region.is_empty() { "null".to_string() } else { format!("{region:?}") };
    let amount = format!("{}.{:02}", n * 3, n % 100);
    format!(
        r#"{{"id":{n},"i":{i},"sh":{sh},"by":{by},"d":{d},"f":{f},"b":{b},"s":{s},"day":"2024-0{m}-1{n1}","ts":"2024-06-15T12:30:{sec:02}.123456Z","amount":{amt},"tags":[{n},null],"nested":{{"x":"n{n}","y":{n}}},"attrs":{{"k{n}":{n}}},"region":{region}}}"#,
        i = n * 7,
        sh = n % 300,
        by = n % 100 - 50,
        d = n as f64 * 1.5,
        f = n as f64 / 4.0,
        b = n % 2 == 0,
        s = if n % 5 == 0 { "null".into() } else { format!("\"str-{n}\"") },
        m = n % 9 + 1,
        n1 = n % 10,
        sec = n % 60,
        amt = amount,
    )
}

#[test]
fn typed_round_trip_is_read_identically_by_three_readers() {
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("typed");
    let schema = dir.path().join("schema.json");
    std::fs::write(&schema, SCHEMA).unwrap();
    // 12 commits: the table is created, then appended to; version 10 gets a checkpoint.
    for batch in 0..12i64 {
        let input: String = (batch * 25..batch * 25 + 25).map(|n| record(n) + "\n").collect();
        let mut args = vec!["--partition-by", "region"];
        let schema_arg = schema.to_str().unwrap().to_string();
        if batch == 0 {
            args.extend(["--schema", schema_arg.as_str()]);
        }
        let report = ok_json(&write(&table, &args, &input));
        assert_eq!(report["outcome"], "committed");
        assert_eq!(report["version"], batch);
        assert_eq!(report["rows"], 25);
    }
    assert!(table.join("_delta_log/00000000000000000010.checkpoint.parquet").exists(), "checkpoint at the interval");
    let desc: Value = serde_json::from_slice(&deltabus(&["describe", table.to_str().unwrap()]).stdout).unwrap();
    assert_eq!(desc["lastCheckpoint"], 10);
    assert!(
        table.join("region=us%2Fwest").is_dir()
            && table.join("region=a%3Ab %25").is_dir()
            && table.join("region=__HIVE_DEFAULT_PARTITION__").is_dir()
    );

    let ours = deltabus(&["cat", table.to_str().unwrap()]);
    assert!(ours.status.success());
    let rows: Vec<Value> =
        String::from_utf8_lossy(&ours.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(rows.len(), 300);
    let r6 = rows.iter().find(|r| r["id"] == 6).unwrap();
    assert_eq!(r6["region"], "a:b %");
    assert_eq!(r6["amount"], 18.06);
    assert_eq!(r6["ts"], "2024-06-15T12:30:06.123456Z");
    assert_eq!(r6["attrs"], serde_json::json!([{"key": "k6", "value": 6}]));
    assert!(rows.iter().find(|r| r["id"] == 7).unwrap().get("region").is_none(), "null partition value");
    // Our own rows, re-read from the JSON we wrote, match the input semantics.
    // (maps are objects in the input and key/value entries in the output)
    let input: Vec<u8> = (0..300)
        .map(|n| {
            let mut v: Value = serde_json::from_str(&record(n)).unwrap();
            let entries: Vec<Value> = v["attrs"]
                .as_object()
                .unwrap()
                .iter()
                .map(|(k, x)| serde_json::json!({"key": k, "value": x}))
                .collect();
            v["attrs"] = Value::Array(entries);
            v.to_string() + "\n"
        })
        .collect::<String>()
        .into_bytes();
    compare_rows(&input, &ours.stdout).unwrap();

    // Files carry statistics.
    let log0 = std::fs::read_to_string(table.join("_delta_log/00000000000000000001.json")).unwrap();
    assert!(log0.contains(r#"\"minValues\":{"#) && log0.contains(r#"\"numRecords\":"#));

    if let Some(py) = python() {
        compare_rows(&ours.stdout, &deltalake_rows(&py, &table))
            .unwrap_or_else(|d| panic!("deltalake reads differently: {d}"));
    }
    if let Some(oracle) = kernel_oracle() {
        let out = Command::new(oracle).arg("rows").arg(&table).output().unwrap();
        assert!(out.status.success(), "kernel-oracle: {}", String::from_utf8_lossy(&out.stderr));
        compare_rows(&ours.stdout, &out.stdout).unwrap_or_else(|d| panic!("kernel reads differently: {d}"));
    }
}

#[test]
fn idempotent_writes_commit_once() {
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("t");
    let input = "{\"a\":1}\n{\"a\":2}\n";
    let args = ["--app-id", "loader", "--txn-version", "7"];
    assert_eq!(ok_json(&write(&table, &args, input))["outcome"], "committed");
    let second = ok_json(&write(&table, &args, input));
    assert_eq!(second["outcome"], "already_applied");
    assert_eq!(second["txnVersion"], 7);
    assert_eq!(rows(table.to_str().unwrap()).len(), 2);
    let older = ok_json(&write(&table, &["--app-id", "loader", "--txn-version", "3"], input));
    assert_eq!(older["outcome"], "already_applied");
    assert_eq!(ok_json(&write(&table, &["--app-id", "loader", "--txn-version", "8"], input))["version"], 1);
    let desc: Value = serde_json::from_slice(&deltabus(&["describe", table.to_str().unwrap()]).stdout).unwrap();
    assert_eq!(desc["txns"]["loader"], 8);
}

fn parquet_files(dir: &Path) -> usize {
    let mut n = 0;
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() && !p.ends_with("_delta_log") {
            n += parquet_files(&p);
        } else if p.extension().is_some_and(|x| x == "parquet") {
            n += 1;
        }
    }
    n
}

#[test]
fn bad_rows_commit_nothing_and_name_the_line() {
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("t");
    ok_json(&write(&table, &[], "{\"a\":1,\"b\":\"x\"}\n"));
    let files_before = parquet_files(&table);
    let cases = [
        ("{\"a\":2}\n{\"a\":3}\n{\"a\":\"not a number\"}\n", "line 3"),
        ("{\"a\":2}\n{not json\n", "line 2"),
        ("{\"a\":2,\"zzz\":1}\n", "zzz"),
    ];
    for (input, needle) in cases {
        let out = write(&table, &[], input);
        assert_clean_failure(&out, needle);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(needle), "{needle}: {err}");
    }
    // Many records before the bad one, so data files were already written: all removed.
    let mut big: String = (0..20_000).map(|n| format!("{{\"a\":{n},\"b\":\"x\"}}\n")).collect();
    big.push_str("{\"a\":true}\n");
    let out = write(&table, &["--target-file-size", "1kb"], &big);
    assert_clean_failure(&out, "late bad row");
    assert!(String::from_utf8_lossy(&out.stderr).contains("line 20001"));
    assert_eq!(parquet_files(&table), files_before, "files of the failed write are deleted");
    let desc: Value = serde_json::from_slice(&deltabus(&["describe", table.to_str().unwrap()]).stdout).unwrap();
    assert_eq!(desc["version"], 0, "nothing committed");
    // A non-nullable column given null.
    let strict = dir.path().join("strict");
    let schema = dir.path().join("s.json");
    std::fs::write(
        &schema,
        r#"{"type":"struct","fields":[{"name":"k","type":"long","nullable":false,"metadata":{}}]}"#,
    )
    .unwrap();
    let out = write(&strict, &["--schema", schema.to_str().unwrap()], "{\"k\":1}\n{\"k\":null}\n");
    assert_clean_failure(&out, "null in non-nullable");
    assert!(String::from_utf8_lossy(&out.stderr).contains("line 2"), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn schema_evolution_only_when_asked() {
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("t");
    ok_json(&write(&table, &[], "{\"a\":1}\n"));
    let out = write(&table, &[], "{\"a\":2,\"extra\":\"x\"}\n");
    assert_clean_failure(&out, "new column");
    assert!(String::from_utf8_lossy(&out.stderr).contains("extra"));
    assert_eq!(ok_json(&write(&table, &["--merge-schema"], "{\"a\":2,\"extra\":\"x\"}\n"))["version"], 1);
    let mut rows = rows(table.to_str().unwrap());
    rows.sort_by_key(|r| r["a"].as_i64());
    assert_eq!(rows, vec![serde_json::json!({"a":1}), serde_json::json!({"a":2,"extra":"x"})]);
    let out = write(&table, &["--mode", "create"], "{\"a\":3}\n");
    assert_clean_failure(&out, "create over existing");
}

/// A `deltabus write <table> <args>` process fed 100 rows of writer `w` (`{"w":w,"n":0..100}`).
fn spawn_writer(table: &Path, w: usize, args: &[&str]) -> std::process::Child {
    let mut child = Command::new(env!("CARGO_BIN_EXE_deltabus"))
        .arg("write")
        .arg(table)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let input: String = (0..100).map(|n| format!("{{\"w\":{w},\"n\":{n}}}\n")).collect();
    child.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
    child
}

#[test]
fn concurrent_writer_processes_lose_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("t");
    ok_json(&write(&table, &[], "{\"w\":-1,\"n\":0}\n"));
    let children: Vec<_> = (0..6).map(|w| spawn_writer(&table, w, &[])).collect();
    let mut versions: Vec<i64> =
        children.into_iter().map(|c| ok_json(&c.wait_with_output().unwrap())["version"].as_i64().unwrap()).collect();
    versions.sort();
    assert_eq!(versions, vec![1, 2, 3, 4, 5, 6]);
    assert_eq!(rows(table.to_str().unwrap()).len(), 601);
}

/// Six processes race to create a missing table, two for each (app id, txn version): the
/// creation race's losers append, exactly one write of each pair lands, the other reports
/// `already_applied`, and the files of writes that did not land are deleted.
#[test]
fn idempotent_writers_racing_to_create_a_table_land_once_each() {
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("t");
    let children: Vec<_> = (0..6)
        .map(|w| {
            let app = format!("lädër-{}", w % 3);
            spawn_writer(&table, w, &["--app-id", &app, "--txn-version", "1"])
        })
        .collect();
    let outcomes: Vec<Value> = children.into_iter().map(|c| ok_json(&c.wait_with_output().unwrap())).collect();
    let landed = outcomes.iter().filter(|o| o["outcome"] == "committed").count();
    let applied = outcomes.iter().filter(|o| o["outcome"] == "already_applied").count();
    assert_eq!((landed, applied), (3, 3), "{outcomes:?}");
    let rows = rows(table.to_str().unwrap());
    assert_eq!(rows.len(), 300);
    let mut writers: Vec<i64> = rows.iter().map(|r| r["w"].as_i64().unwrap()).collect();
    writers.sort();
    writers.dedup();
    let mut apps: Vec<i64> = writers.iter().map(|w| w % 3).collect();
    apps.sort();
    assert_eq!(apps, vec![0, 1, 2], "one write of each app id: {writers:?}");
    let files: Value = serde_json::from_slice(&deltabus(&["files", table.to_str().unwrap()]).stdout).unwrap();
    assert_eq!(parquet_files(&table), files["files"].as_array().unwrap().len(), "no file of a write that did not land");
    let desc: Value = serde_json::from_slice(&deltabus(&["describe", table.to_str().unwrap()]).stdout).unwrap();
    assert_eq!(desc["txns"], serde_json::json!({"lädër-0": 1, "lädër-1": 1, "lädër-2": 1}));
}

#[test]
fn tables_with_unhonoured_features_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    // A CHECK constraint deltabus cannot evaluate.
    let checked = dir.path().join("checked");
    std::fs::create_dir_all(checked.join("_delta_log")).unwrap();
    std::fs::write(
        checked.join("_delta_log/00000000000000000000.json"),
        r#"{"protocol":{"minReaderVersion":1,"minWriterVersion":3}}
{"metaData":{"id":"c","format":{"provider":"parquet","options":{}},"schemaString":"{\"type\":\"struct\",\"fields\":[{\"name\":\"a\",\"type\":\"long\",\"nullable\":true,\"metadata\":{}}]}","partitionColumns":[],"configuration":{"delta.constraints.positive":"a > 0"}}}"#,
    )
    .unwrap();
    let out = write(&checked, &[], "{\"a\":-1}\n");
    assert_clean_failure(&out, "check constraint");
    assert!(String::from_utf8_lossy(&out.stderr).contains("delta.constraints.positive"));
    assert_eq!(parquet_files(&checked), 0, "refused before writing any data");
}

fn log_lines(table: &Path, version: u64) -> Vec<Value> {
    std::fs::read_to_string(table.join(format!("_delta_log/{version:020}.json")))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn tables_with_features_round_trip() {
    let cases: &[(&str, &[&str], bool)] = &[
        ("cm-name", &["delta.columnMapping.mode=name"], false),
        ("cm-id", &["delta.columnMapping.mode=id"], false),
        ("ict", &["delta.enableInCommitTimestamps=true"], true),
        ("row-tracking", &["delta.enableRowTracking=true"], true),
        ("dv-cdf", &["delta.enableDeletionVectors=true", "delta.enableChangeDataFeed=true"], false),
    ];
    let dir = tempfile::tempdir().unwrap();
    for (name, props, deltalake_reads) in cases {
        let table = dir.path().join(name);
        for batch in 0..3i64 {
            let input: String = (batch * 10..batch * 10 + 10)
                .map(|n| format!("{{\"id\":{n},\"nested\":{{\"v\":\"x{n}\"}},\"p\":\"k{}\"}}\n", n % 2))
                .collect();
            let mut args: Vec<String> = vec!["--partition-by".into(), "p".into()];
            for p in *props {
                args.push("--property".into());
                args.push(p.to_string());
            }
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            assert_eq!(ok_json(&write(&table, &args, &input))["version"], batch, "{name}");
        }
        let ours = deltabus(&["cat", table.to_str().unwrap()]);
        assert!(ours.status.success(), "{name}: {}", String::from_utf8_lossy(&ours.stderr));
        assert_eq!(String::from_utf8_lossy(&ours.stdout).lines().count(), 30, "{name}");
        if let Some(oracle) = kernel_oracle() {
            let out = Command::new(oracle).arg("rows").arg(&table).output().unwrap();
            assert!(out.status.success(), "{name}: kernel-oracle: {}", String::from_utf8_lossy(&out.stderr));
            compare_rows(&ours.stdout, &out.stdout).unwrap_or_else(|d| panic!("{name}: kernel reads differently: {d}"));
        }
        if *deltalake_reads {
            if let Some(py) = python() {
                compare_rows(&ours.stdout, &deltalake_rows(&py, &table))
                    .unwrap_or_else(|d| panic!("{name}: deltalake: {d}"));
            }
        }
    }
    // Column mapping: physical names in files and partition values, logical names on read.
    let cm = dir.path().join("cm-name");
    let v0 = log_lines(&cm, 0);
    let add = v0.iter().find_map(|l| l.get("add")).unwrap();
    assert!(add["path"].as_str().unwrap().starts_with("col-"), "partition directory uses the physical name");
    assert!(add["partitionValues"].as_object().unwrap().keys().all(|k| k.starts_with("col-")));
    // In-commit timestamps: first action, strictly increasing.
    let ict = dir.path().join("ict");
    let times: Vec<i64> =
        (0..3).map(|v| log_lines(&ict, v)[0]["commitInfo"]["inCommitTimestamp"].as_i64().unwrap()).collect();
    assert!(times.windows(2).all(|w| w[1] > w[0]), "{times:?}");
    // Row tracking: disjoint row-id ranges and the high-water mark.
    let rt = dir.path().join("row-tracking");
    let mut ranges = Vec::new();
    for v in 0..3 {
        for l in log_lines(&rt, v) {
            if let Some(a) = l.get("add") {
                let n = serde_json::from_str::<Value>(a["stats"].as_str().unwrap()).unwrap()["numRecords"]
                    .as_i64()
                    .unwrap();
                assert_eq!(a["defaultRowCommitVersion"], v);
                ranges.push((a["baseRowId"].as_i64().unwrap(), n));
            }
        }
    }
    ranges.sort();
    assert_eq!(ranges[0].0, 0);
    assert!(ranges.windows(2).all(|w| w[0].0 + w[0].1 == w[1].0), "contiguous, disjoint ranges: {ranges:?}");
    let desc: Value = serde_json::from_slice(&deltabus(&["describe", rt.to_str().unwrap()]).stdout).unwrap();
    assert_eq!(desc["domains"]["delta.rowTracking"], r#"{"rowIdHighWaterMark":29}"#);
}

/// A property that turns on a table feature deltabus does not implement is refused with one
/// line and nothing is written (not even the log directory); `delta.checkpointPolicy=v2` gets
/// its `v2Checkpoint` feature, which deltabus writes (classic checkpoints).
#[test]
fn properties_of_unimplemented_features_are_refused_before_anything_is_written() {
    let dir = tempfile::tempdir().unwrap();
    for props in [
        &["delta.enableIcebergCompatV1=true"][..],
        &["delta.enableVariantShredding=true"],
        &["delta.universalFormat.enabledFormats=hudi"],
    ] {
        let table = dir.path().join(format!("t-{}", props[0].len()));
        let args: Vec<&str> = props.iter().flat_map(|p| ["--property", *p]).collect();
        let out = write(&table, &args, "{\"id\":1,\"name\":\"ü\"}\n");
        assert_clean_failure(&out, props[0]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("does not"), "{err}");
        assert!(!table.join("_delta_log").exists(), "{props:?}: nothing written");
    }
    let table = dir.path().join("v2");
    let out = write(&table, &["--property", "delta.checkpointPolicy=v2"], "{\"id\":1}\n");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let described: Value = serde_json::from_slice(&deltabus(&["describe", table.to_str().unwrap()]).stdout).unwrap();
    let features = described["protocol"]["writerFeatures"].to_string();
    assert!(features.contains("v2Checkpoint"), "{described}");
}

/// Schema evolution on plain and column-mapped tables (name and id modes): `write
/// --evolve-schema` adds a column with a non-ASCII name and a field inside a struct; under
/// column mapping each gets a fresh id and physical name above the old
/// `delta.columnMapping.maxColumnId`, the old ones keep theirs; deltabus and the reference
/// reader read the same rows.
#[test]
fn evolution_on_column_mapped_tables_reads_the_same_everywhere() {
    let dir = tempfile::tempdir().unwrap();
    for mode in ["none", "name", "id"] {
        let table = dir.path().join(mode);
        let prop = format!("delta.columnMapping.mode={mode}");
        let first = "{\"id\":1,\"s\":{\"a\":1}}\n{\"id\":2,\"s\":{\"a\":2}}\n";
        ok_json(&write(&table, &["--property", &prop], first));
        let added = "{\"id\":3,\"s\":{\"a\":3,\"b\":\"ß\"},\"größe\":4.5}\n";
        let refused = write(&table, &[], added);
        assert_clean_failure(&refused, "new columns without --evolve-schema");
        let why = String::from_utf8_lossy(&refused.stderr);
        assert!(why.contains("s.b") && why.contains("größe"), "{mode}: {why}");
        let before: Value = serde_json::from_slice(&deltabus(&["describe", table.to_str().unwrap()]).stdout).unwrap();
        ok_json(&write(&table, &["--evolve-schema"], added));
        ok_json(&write(&table, &[], "{\"id\":4,\"s\":{\"a\":4,\"b\":\"x\"},\"größe\":1.0}\n"));
        let described: Value =
            serde_json::from_slice(&deltabus(&["describe", table.to_str().unwrap()]).stdout).unwrap();
        let ours = deltabus(&["cat", table.to_str().unwrap()]);
        assert!(ours.status.success(), "{mode}: {}", String::from_utf8_lossy(&ours.stderr));
        let rows: Vec<Value> =
            String::from_utf8_lossy(&ours.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        assert_eq!(rows.len(), 4, "{mode}");
        assert!(rows.iter().any(|r| r["größe"] == 4.5 && r["s"]["b"] == "ß"), "{mode}: {rows:?}");
        if let Some(oracle) = kernel_oracle() {
            let out = Command::new(oracle).arg("rows").arg(&table).output().unwrap();
            assert!(out.status.success(), "{mode}: kernel-oracle: {}", String::from_utf8_lossy(&out.stderr));
            compare_rows(&ours.stdout, &out.stdout).unwrap_or_else(|d| panic!("{mode}: kernel reads differently: {d}"));
        }
        if mode == "none" {
            continue;
        }
        let max: i64 = described["properties"]["delta.columnMapping.maxColumnId"].as_str().unwrap().parse().unwrap();
        let fields = described["schema"]["fields"].as_array().unwrap();
        let id_of = |f: &Value| f["metadata"]["delta.columnMapping.id"].as_i64().unwrap();
        let new = fields.iter().find(|f| f["name"] == "größe").unwrap();
        assert_eq!(id_of(new), max, "{mode}: the newest column has the highest id");
        assert!(new["metadata"]["delta.columnMapping.physicalName"].as_str().unwrap().starts_with("col-"));
        let old_max: i64 = before["properties"]["delta.columnMapping.maxColumnId"].as_str().unwrap().parse().unwrap();
        assert!(max > old_max, "{mode}: {old_max} → {max}");
        assert_eq!(before["schema"]["fields"][0], fields[0], "{mode}: old columns keep their mapping");
        assert_eq!(
            before["schema"]["fields"][1]["metadata"], fields[1]["metadata"],
            "{mode}: the struct keeps its mapping"
        );
        assert_eq!(before["schema"]["fields"][1]["type"]["fields"][0], fields[1]["type"]["fields"][0], "{mode}");
        let inner = fields.iter().find(|f| f["name"] == "s").unwrap()["type"]["fields"].as_array().unwrap().clone();
        let b = inner.iter().find(|f| f["name"] == "b").unwrap();
        assert!(id_of(b) > old_max && id_of(b) < max, "{mode}: {b}");
        // (deltalake's pyarrow reader refuses the columnMapping reader feature.)
    }
}

/// A checkpoint written from the committing writer's own state (its read snapshot advanced by
/// its commit, not the log read again) holds what replaying the commits gives: the same files,
/// transaction versions, schema and properties, with removes, a schema change and several
/// app ids on the way; also when the PUT of the checkpoint's commit lands and its answer is
/// lost (the commit read back, as `AlreadyExists` or as a timeout).
#[test]
fn a_checkpoint_holds_what_replaying_the_log_gives() {
    for lose in [None, Some("lose"), Some("lose-timeout")] {
        checkpoint_against_replay(lose);
    }
}

fn checkpoint_against_replay(lose: Option<&str>) {
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("t");
    let t = table.to_str().unwrap();
    for v in 0..=10i64 {
        if v == 4 || v == 9 {
            let out = deltabus(&["delete", t, "--where", &format!("id < {}", v * 10 - 30)]);
            assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
            continue;
        }
        let rows: String = (v * 10..v * 10 + 10)
            .map(|i| {
                if v >= 7 {
                    format!("{{\"id\":{i},\"name\":\"ü-{i}\",\"extra\":{i}}}\n")
                } else {
                    format!("{{\"id\":{i},\"name\":\"ü-{i}\"}}\n")
                }
            })
            .collect();
        let (app, tv) = (format!("app-{}", v % 3), v.to_string());
        let mut args = vec!["--app-id", app.as_str(), "--txn-version", tv.as_str()];
        if v == 7 {
            args.push("--merge-schema");
        }
        let out = match lose {
            Some(how) if v == 10 => {
                let faults = format!("rate=0,{how}=00000000000000000010.json");
                let out = crate::support::write_jsonl_with_env(&table, &args, &rows, &[("DELTABUS_FAULTS", &faults)]);
                let err = String::from_utf8_lossy(&out.stderr);
                assert!(err.contains("1 lost answers"), "{how}: the answer was lost: {err}");
                out
            }
            _ => write(&table, &args, &rows),
        };
        assert_eq!(ok_json(&out)["version"], v, "{lose:?}");
    }
    let checkpoint = table.join("_delta_log/00000000000000000010.checkpoint.parquet");
    assert!(checkpoint.exists(), "checkpoint at the interval");
    let state = || {
        let files: Value = serde_json::from_slice(&deltabus(&["files", t]).stdout).unwrap();
        let mut paths: Vec<String> =
            files["files"].as_array().unwrap().iter().map(|f| f["path"].as_str().unwrap().to_string()).collect();
        paths.sort();
        let mut desc: Value = serde_json::from_slice(&deltabus(&["describe", t]).stdout).unwrap();
        desc.as_object_mut().unwrap().remove("lastCheckpoint");
        (paths, desc, rows_sorted(t))
    };
    let through_checkpoint = state();
    std::fs::remove_file(&checkpoint).unwrap();
    std::fs::remove_file(table.join("_delta_log/_last_checkpoint")).unwrap();
    let replayed = state();
    assert_eq!(through_checkpoint, replayed, "{lose:?}");
    assert_eq!(replayed.1["txns"], serde_json::json!({"app-0": 6, "app-1": 10, "app-2": 8}));
    assert_eq!(replayed.2.len(), 90 - 50, "rows below 60 deleted");
}

fn rows_sorted(table: &str) -> Vec<String> {
    let mut rows: Vec<String> = crate::support::rows(table).iter().map(Value::to_string).collect();
    rows.sort();
    rows
}
