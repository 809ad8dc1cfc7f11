//! UniForm: Iceberg metadata beside the Delta log, judged by Iceberg readers nobody here
//! wrote (pyiceberg's `StaticTable`, DuckDB's iceberg extension), against `deltabus cat` at
//! every converted version: appends over several commits, Unicode column names and partition
//! values, schema evolution (old files read the new column as null), copy-on-write deletes, a
//! compaction (a replace snapshot with the same rows), a writer killed between the Delta
//! commit and the Iceberg metadata (caught up by the next commit or `deltabus uniform`), and
//! store faults under the conversion (the pointer always opens a complete snapshot).

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

use crate::support::python::{compare_rows, iceberg_rows};
use crate::support::uniform::{assert_readers_agree, cat, current_metadata, metadata, python_or_skip};
use crate::support::{assert_clean_failure, deltabus, kernel_oracle, run_json, write_jsonl};

const UNIFORM: &[&str] = &["--property", "delta.universalFormat.enabledFormats=iceberg"];

fn ok(out: &Output) -> Value {
    assert!(out.status.success(), "deltabus failed: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(out.stdout.split(|b| *b == b'\n').find(|l| !l.is_empty()).unwrap_or(b"null")).unwrap()
}

#[test]
fn uniform_tables_read_alike_in_iceberg_and_delta_readers() {
    let Some(py) = python_or_skip() else { return };
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("t");
    let mut args = UNIFORM.to_vec();
    args.extend(["--partition-by", "région"]);
    let created = ok(&write_jsonl(&table, &args, "{\"id\":1,\"région\":\"é\",\"名前\":\"一\",\"n\":1.5}\n{\"id\":2,\"région\":\"日本\",\"名前\":\"二\",\"n\":2.5}\n"));
    assert_eq!(created["version"], 0);
    let described = run_json(&["describe", table.to_str().unwrap()]);
    let features: Vec<&str> =
        described["protocol"]["writerFeatures"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    assert!(features.contains(&"icebergCompatV2") && features.contains(&"columnMapping"), "{features:?}");
    assert_eq!(described["iceberg"]["deltaVersion"], 0);
    assert_eq!(described["iceberg"]["behind"], 0);
    for i in 3..6 {
        let rows = format!(
            "{{\"id\":{i},\"région\":\"é\",\"名前\":\"x{i}\",\"n\":{i}.0}}\n{{\"id\":{},\"région\":\"é\",\"名前\":\"w\",\"n\":1e3}}\n{{\"id\":{},\"région\":null,\"名前\":\"y\",\"n\":0.5}}\n",
            i + 100,
            i * 10
        );
        ok(&write_jsonl(&table, &[], &rows));
    }
    assert_readers_agree(&py, &table);
    // A new column mid-stream: old files read it as null.
    ok(&write_jsonl(
        &table,
        &["--merge-schema"],
        "{\"id\":7,\"région\":\"日本\",\"名前\":\"新\",\"n\":7.0,\"extra\":\"ü\"}\n",
    ));
    let meta = metadata(&table);
    assert_eq!(meta["schemas"].as_array().unwrap().len(), 2, "the evolved schema is appended");
    assert_readers_agree(&py, &table);
    // Copy-on-write delete: no deletion vectors on a UniForm table.
    let deleted = ok(&deltabus(&["delete", table.to_str().unwrap(), "--where", "id = 3 OR id = 40"]));
    assert_eq!(deleted["mode"], "copy-on-write");
    assert_eq!(metadata(&table)["snapshots"].as_array().unwrap().last().unwrap()["summary"]["operation"], "overwrite");
    assert_readers_agree(&py, &table);
    // Compaction: a replace snapshot holding the same rows.
    let before = cat(&table, None);
    ok(&deltabus(&["compact", table.to_str().unwrap()]));
    let last = metadata(&table)["snapshots"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["summary"]["operation"], "replace");
    compare_rows(&before, &cat(&table, None)).unwrap();
    assert_readers_agree(&py, &table);
    // Partition values are materialised in the data files (icebergCompatV2).
    let summary = &last["summary"];
    assert_eq!(summary["delta-version"], run_json(&["describe", table.to_str().unwrap()])["version"].to_string());
}

#[test]
fn uniform_turned_on_for_an_existing_table_reads_alike() {
    let Some(py) = python_or_skip() else { return };
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("t");
    let t = table.to_str().unwrap();
    // A plain Delta table: no column mapping, partition values only in the log, files without
    // field ids, a nested struct, Unicode names and values, two commits.
    ok(&write_jsonl(
        &table,
        &["--partition-by", "région"],
        "{\"id\":1,\"région\":\"é\",\"名前\":\"一\",\"s\":{\"x\":1.5,\"ü\":\"a\"},\"tags\":[\"a\",null]}\n{\"id\":2,\"région\":\"日本\",\"名前\":\"二\",\"s\":null,\"tags\":[]}\n",
    ));
    ok(&write_jsonl(&table, &[], "{\"id\":3,\"région\":null,\"名前\":\"三\",\"s\":{\"x\":-2.0,\"ü\":null}}\n"));
    let out = deltabus(&["uniform", t]);
    assert_clean_failure(&out, "--enable");
    assert!(String::from_utf8_lossy(&out.stderr).contains("--enable"), "the error names the way to turn it on");
    let before = cat(&table, None);
    let enabled = ok(&deltabus(&["uniform", "--enable", t]));
    assert_eq!(enabled["enabledAt"], 2, "{enabled}");
    assert_eq!(enabled["deltaVersion"], 2);
    assert_eq!(enabled["converted"], true, "turning it on converted the table: {enabled}");
    compare_rows(&before, &cat(&table, None)).unwrap();
    let d = run_json(&["describe", t]);
    let features: Vec<&str> =
        d["protocol"]["writerFeatures"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    assert!(features.contains(&"icebergCompatV2") && features.contains(&"columnMapping"), "{features:?}");
    assert_eq!(d["iceberg"]["behind"], 0);
    // The files written before read by name on both sides.
    assert_readers_agree(&py, &table);
    // New files carry field ids and their partition values.
    ok(&write_jsonl(&table, &[], "{\"id\":4,\"région\":\"é\",\"名前\":\"四\",\"s\":{\"x\":4.0,\"ü\":\"ö\"}}\n"));
    ok(&write_jsonl(&table, &["--merge-schema"], "{\"id\":5,\"région\":\"日本\",\"名前\":\"五\",\"new\":true}\n"));
    assert_readers_agree(&py, &table);
    let again = ok(&deltabus(&["uniform", "--enable", t]));
    assert_eq!((again["enabledAt"].clone(), again["converted"].clone()), (Value::Null, Value::Bool(false)));

    // Deletion vectors in live files are refused until a compaction rewrites them.
    let dv = dir.path().join("dv");
    let d = dv.to_str().unwrap();
    ok(&write_jsonl(&dv, &["--property", "delta.enableDeletionVectors=true"], "{\"id\":1}\n{\"id\":2}\n"));
    assert_eq!(ok(&deltabus(&["delete", d, "--where", "id = 1"]))["mode"], "deletion-vectors");
    let out = deltabus(&["uniform", "--enable", d]);
    assert_clean_failure(&out, "deletion vectors");
    assert!(String::from_utf8_lossy(&out.stderr).contains("deletion vectors"));
    assert_eq!(run_json(&["describe", d])["version"], 1, "nothing committed");
    ok(&deltabus(&["compact", d]));
    ok(&deltabus(&["uniform", "--enable", d]));
    assert_eq!(run_json(&["describe", d])["properties"]["delta.enableDeletionVectors"], "false");
    assert_readers_agree(&py, &dv);
    let deleted = ok(&deltabus(&["delete", d, "--where", "id = 2"]));
    assert_eq!(deleted["mode"], "copy-on-write", "deletes rewrite files once UniForm is on");
    assert_readers_agree(&py, &dv);
}

#[test]
fn arrays_and_maps_get_nested_field_ids_and_read_alike() {
    let Some(py) = python_or_skip() else { return };
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("t");
    let schema = dir.path().join("schema.json");
    let long = "\"long\"";
    std::fs::write(
        &schema,
        format!(
            r#"{{"type":"struct","fields":[
            {{"name":"id","type":{long},"nullable":true,"metadata":{{}}}},
            {{"name":"tags","type":{{"type":"array","elementType":"string","containsNull":true}},"nullable":true,"metadata":{{}}}},
            {{"name":"grid","type":{{"type":"array","elementType":{{"type":"array","elementType":{long},"containsNull":true}},"containsNull":true}},"nullable":true,"metadata":{{}}}},
            {{"name":"attrs","type":{{"type":"map","keyType":"string","valueType":{long},"valueContainsNull":true}},"nullable":true,"metadata":{{}}}}
            ]}}"#
        ),
    )
    .unwrap();
    let mut args = UNIFORM.to_vec();
    args.extend(["--schema", schema.to_str().unwrap()]);
    ok(&write_jsonl(
        &table,
        &args,
        "{\"id\":1,\"tags\":[\"a\",\"ü\",null],\"grid\":[[1,2],[],null],\"attrs\":{\"größe\":3,\"n\":null}}\n{\"id\":2,\"tags\":null,\"grid\":[],\"attrs\":{}}\n",
    ));
    let d = run_json(&["describe", table.to_str().unwrap()]);
    let fields = d["schema"]["fields"].as_array().unwrap();
    let ids = |name: &str| {
        fields.iter().find(|f| f["name"] == name).unwrap()["metadata"]["delta.columnMapping.nested.ids"].clone()
    };
    assert_eq!(ids("tags").as_object().unwrap().len(), 1, "{d}");
    assert_eq!(ids("grid").as_object().unwrap().len(), 2);
    assert_eq!(ids("attrs").as_object().unwrap().len(), 2);
    assert_eq!(d["properties"]["delta.columnMapping.maxColumnId"], "9", "column and nested ids share the counter");
    // A new array column mid-stream gets its ids too.
    ok(&write_jsonl(&table, &["--merge-schema"], "{\"id\":3,\"tags\":[\"日本\"],\"more\":[1.5]}\n"));
    assert_eq!(run_json(&["describe", table.to_str().unwrap()])["properties"]["delta.columnMapping.maxColumnId"], "11");
    assert_readers_agree(&py, &table);
}

/// Every struct field of `fields`, at any depth (inside arrays and maps too), with its path.
fn struct_fields<'a>(fields: &'a [Value], prefix: &str, out: &mut Vec<(String, &'a Value)>) {
    fn inner<'a>(t: &'a Value, path: &str, out: &mut Vec<(String, &'a Value)>) {
        match t["type"].as_str() {
            Some("struct") => struct_fields(t["fields"].as_array().unwrap(), path, out),
            Some("array") => inner(&t["elementType"], &format!("{path}.element"), out),
            Some("map") => {
                inner(&t["keyType"], &format!("{path}.key"), out);
                inner(&t["valueType"], &format!("{path}.value"), out);
            }
            _ => {}
        }
    }
    for f in fields {
        let path = format!("{prefix}{}{}", if prefix.is_empty() { "" } else { "." }, f["name"].as_str().unwrap());
        out.push((path.clone(), f));
        inner(&f["type"], &path, out);
    }
}

#[test]
fn structs_inside_arrays_and_maps_get_ids_and_read_alike() {
    let Some(py) = python_or_skip() else { return };
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("t");
    let t = table.to_str().unwrap();
    let schema = dir.path().join("schema.json");
    let field = |name: &str, t: &str| format!(r#"{{"name":"{name}","type":{t},"nullable":true,"metadata":{{}}}}"#);
    let st = |fields: &[String]| format!(r#"{{"type":"struct","fields":[{}]}}"#, fields.join(","));
    let array = |e: &str| format!(r#"{{"type":"array","elementType":{e},"containsNull":true}}"#);
    let map = |v: &str| format!(r#"{{"type":"map","keyType":"string","valueType":{v},"valueContainsNull":true}}"#);
    let item = st(&[field("sku", "\"string\""), field("qty", "\"long\""), field("notes", &array("\"string\""))]);
    let attr = st(&[field("v", "\"double\""), field("ü", "\"string\"")]);
    let deep = st(&[field("y", "\"string\"")]);
    let nested = st(&[field("inner", &array(&st(&[field("x", "\"long\"")])))]);
    let top = st(&[
        field("id", "\"long\""),
        field("items", &array(&item)),
        field("attrs", &map(&attr)),
        field("nested", &nested),
    ]);
    std::fs::write(&schema, top).unwrap();
    let mut args = UNIFORM.to_vec();
    args.extend(["--schema", schema.to_str().unwrap()]);
    ok(&write_jsonl(
        &table,
        &args,
        concat!(
            r#"{"id":1,"items":[{"sku":"a","qty":2,"notes":["ü",null]},null,{"sku":"日本","qty":null,"notes":[]}],"attrs":{"größe":{"v":1.5,"ü":"ö"},"n":null},"nested":{"inner":[{"x":7}]}}"#,
            "\n",
            r#"{"id":2,"items":[],"attrs":{},"nested":{"inner":[]}}"#,
            "\n",
            r#"{"id":3,"items":[null],"attrs":{"k":null},"nested":null}"#,
            "\n",
        ),
    ));
    // Every struct field, inside arrays and maps too, has its own id and physical name; the
    // ids are unique and below maxColumnId with the nested ids.
    let d = run_json(&["describe", t]);
    let mut all = Vec::new();
    struct_fields(d["schema"]["fields"].as_array().unwrap(), "", &mut all);
    let mut ids: Vec<i64> = Vec::new();
    for (path, f) in &all {
        let m = &f["metadata"];
        ids.push(m["delta.columnMapping.id"].as_i64().unwrap_or_else(|| panic!("{path} has no id: {d}")));
        assert!(m["delta.columnMapping.physicalName"].as_str().is_some_and(|n| n.starts_with("col-")), "{path}");
        if let Some(nested) = m["delta.columnMapping.nested.ids"].as_object() {
            ids.extend(nested.values().map(|v| v.as_i64().unwrap()));
        }
    }
    let n = ids.len();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), n, "ids are unique: {ids:?}");
    let max: i64 = d["properties"]["delta.columnMapping.maxColumnId"].as_str().unwrap().parse().unwrap();
    assert_eq!(max, *ids.last().unwrap());
    // 11 struct fields (4 columns, 7 inside), and 5 elements, keys and values: items, notes,
    // attrs (2), inner.
    assert_eq!(n, 11 + 5, "{ids:?}");
    assert_readers_agree(&py, &table);
    // pyiceberg 0.12 reads a null list or map of structs as an empty one (tables it wrote
    // itself too), and the fields of a struct inside a list inside a list as null when their
    // ids do not come in its own order, so the rows above hold neither; DuckDB reads both.
    // (A list of lists of structs stays out of the table above: delta-kernel-rs fails on such
    // a column in a file written before another column was added, plain Delta tables too.)
    let nulls = dir.path().join("nulls");
    let with_grid = dir.path().join("grid.json");
    let grid_schema = st(&[
        field("id", "\"long\""),
        field("items", &array(&item)),
        field("attrs", &map(&attr)),
        field("grid", &array(&array(&deep))),
    ]);
    std::fs::write(&with_grid, grid_schema).unwrap();
    let null_rows = r#"{"id":9,"items":null,"attrs":null,"grid":null}"#;
    let grid = r#"{"id":10,"items":[{"sku":"x"}],"grid":[[{"y":"z"},null],[{"y":"日本"}],[]]}"#;
    let mut grid_args = UNIFORM.to_vec();
    grid_args.extend(["--schema", with_grid.to_str().unwrap()]);
    ok(&write_jsonl(&nulls, &grid_args, &format!("{null_rows}\n{grid}\n")));
    let got = iceberg_rows(&py, &current_metadata(&nulls), "duckdb", None).unwrap();
    compare_rows(&cat(&nulls, None), &got).unwrap_or_else(|e| panic!("duckdb: {e}"));
    if let Some(oracle) = kernel_oracle() {
        let out = Command::new(oracle).arg("rows").arg(&nulls).output().unwrap();
        assert!(out.status.success(), "kernel-oracle: {}", String::from_utf8_lossy(&out.stderr));
        compare_rows(&cat(&nulls, None), &out.stdout).unwrap_or_else(|e| panic!("kernel-oracle: {e}"));
    }
    // More rows, a new column holding an array of structs (by inference), a copy-on-write
    // delete and a compaction: every step reads alike.
    ok(&write_jsonl(
        &table,
        &["--merge-schema"],
        r#"{"id":4,"items":[{"sku":"b","qty":1,"notes":["x"]}],"attrs":{},"more":{"parts":[{"k":"新","w":2}]}}"#,
    ));
    let d = run_json(&["describe", t]);
    let more = d["schema"]["fields"].as_array().unwrap().iter().find(|f| f["name"] == "more").unwrap().clone();
    let k = &more["type"]["fields"][0]["type"]["elementType"]["fields"][0];
    assert!(k["metadata"]["delta.columnMapping.id"].as_i64().unwrap() > max, "{more}");
    assert_readers_agree(&py, &table);
    assert_eq!(ok(&deltabus(&["delete", t, "--where", "id = 2"]))["mode"], "copy-on-write");
    assert_readers_agree(&py, &table);
    let before = cat(&table, None);
    ok(&deltabus(&["compact", t]));
    compare_rows(&before, &cat(&table, None)).unwrap();
    assert_readers_agree(&py, &table);

    // A plain table with structs inside arrays turned into a UniForm one: the files written
    // before (no field ids) read through the name mapping.
    let plain = dir.path().join("plain");
    let p = plain.to_str().unwrap();
    ok(&write_jsonl(
        &plain,
        &[],
        "{\"id\":1,\"items\":[{\"sku\":\"a\",\"ü\":[1,2]},{\"sku\":null,\"ü\":null}]}\n{\"id\":2,\"items\":[null]}\n",
    ));
    ok(&deltabus(&["uniform", "--enable", p]));
    assert_readers_agree(&py, &plain);
    ok(&write_jsonl(&plain, &[], "{\"id\":3,\"items\":[{\"sku\":\"日\",\"ü\":[]}]}\n"));
    assert_readers_agree(&py, &plain);
}

/// The corpus table Spark wrote with icebergCompatV2 (id mode) and every nesting of arrays,
/// maps and structs takes deltabus appends and, with UniForm turned on, reads alike in DuckDB's
/// Iceberg reader and the reference reader.
#[test]
fn a_spark_compat_table_with_every_nesting_takes_appends_and_uniform() {
    let Some(py) = python_or_skip() else { return };
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("spark");
    let status = Command::new("cp")
        .arg("-r")
        .arg(crate::support::conformance_dir().join("tables/table-with-icebegCompatV2Enabled"))
        .arg(&table)
        .status()
        .unwrap();
    assert!(status.success());
    let t = table.to_str().unwrap();
    let before = run_json(&["describe", t])["schema"].clone();
    ok(&write_jsonl(
        &table,
        &[],
        r#"{"IntegerType":7,"StringType":"ü","nested_struct":{"aa":"x","ac":{"aca":1}},"array_of_structs":[{"ab":3},null],"map_of_rows":{"1":{"ab":2}}}"#,
    ));
    assert_eq!(run_json(&["describe", t])["schema"], before, "Spark's ids and physical names are kept");
    let enabled = ok(&deltabus(&["uniform", "--enable", t]));
    assert_eq!(enabled["deltaVersion"], 2, "{enabled}");
    let got = iceberg_rows(&py, &current_metadata(&table), "duckdb", None).unwrap();
    compare_rows(&cat(&table, None), &got).unwrap_or_else(|e| panic!("duckdb: {e}"));
    if let Some(oracle) = kernel_oracle() {
        let out = Command::new(oracle).arg("rows").arg(&table).output().unwrap();
        assert!(out.status.success(), "kernel-oracle: {}", String::from_utf8_lossy(&out.stderr));
        compare_rows(&cat(&table, None), &out.stdout).unwrap_or_else(|e| panic!("kernel-oracle: {e}"));
    }
}

#[test]
fn vacuum_keeps_the_iceberg_metadata_and_deletes_its_orphans() {
    let Some(py) = python_or_skip() else { return };
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("t");
    let t = table.to_str().unwrap();
    ok(&write_jsonl(&table, UNIFORM, "{\"id\":1}\n"));
    for i in 2..5 {
        ok(&write_jsonl(&table, &[], &format!("{{\"id\":{i}}}\n")));
    }
    ok(&deltabus(&["compact", t]));
    // A manifest no snapshot lists (a conversion that lost its put), and everything old.
    std::fs::write(table.join("metadata/lost-m.avro"), b"x").unwrap();
    let ten_days_ago = format!("@{}", chrono::Utc::now().timestamp() - 10 * 86_400);
    for e in std::fs::read_dir(table.join("metadata")).unwrap() {
        let path = e.unwrap().path();
        assert!(Command::new("touch").arg("-d").arg(&ten_days_ago).arg(&path).status().unwrap().success());
    }
    let before = std::fs::read_dir(table.join("metadata")).unwrap().count();
    let report = ok(&deltabus(&["vacuum", t, "--retention-hours", "0", "--force"]));
    assert!(!table.join("metadata/lost-m.avro").exists(), "the orphan goes: {report}");
    let after = std::fs::read_dir(table.join("metadata")).unwrap().count();
    assert_eq!(after, before - 1, "only the orphan went");
    // The current snapshot still opens (earlier ones name files the zero retention removed).
    for reader in ["pyiceberg", "duckdb"] {
        let got = iceberg_rows(&py, &current_metadata(&table), reader, None).unwrap();
        compare_rows(&cat(&table, None), &got).unwrap_or_else(|e| panic!("{reader} after vacuum: {e}"));
    }
}

#[test]
fn manifests_are_merged_past_sixty_four_and_the_rows_stay() {
    let Some(py) = python_or_skip() else { return };
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("t");
    ok(&write_jsonl(&table, UNIFORM, "{\"id\":0}\n"));
    for i in 1..80 {
        ok(&write_jsonl(&table, &[], &format!("{{\"id\":{i}}}\n")));
    }
    let meta = metadata(&table);
    let current = meta["current-snapshot-id"].clone();
    let snap = meta["snapshots"].as_array().unwrap().iter().find(|s| s["snapshot-id"] == current).unwrap().clone();
    assert_eq!(snap["summary"]["total-data-files"], "80", "{snap}");
    for reader in ["pyiceberg", "duckdb"] {
        let got = iceberg_rows(&py, &current_metadata(&table), reader, None).unwrap();
        compare_rows(&cat(&table, None), &got).unwrap_or_else(|e| panic!("{reader}: {e}"));
    }
    // Every manifest the current snapshot lists, and no more than the merge allows.
    let script = "import sys\nfrom pyiceberg.table import StaticTable\nt = StaticTable.from_metadata(sys.argv[1])\nprint(len(t.current_snapshot().manifests(t.io)))\n";
    let out = crate::support::run_python(&py, script, &[current_metadata(&table).as_os_str()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let manifests: usize = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
    assert!(manifests <= 64, "{manifests} manifests");
}

#[test]
fn a_generated_partition_column_is_an_identity_partition() {
    let Some(py) = python_or_skip() else { return };
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("t");
    let schema = dir.path().join("schema.json");
    std::fs::write(
        &schema,
        r#"{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}},{"name":"ts","type":"timestamp","nullable":true,"metadata":{}}]}"#,
    )
    .unwrap();
    let mut args = UNIFORM.to_vec();
    args.extend(["--schema", schema.to_str().unwrap(), "--partition-by", "date(ts)"]);
    ok(&write_jsonl(
        &table,
        &args,
        "{\"id\":1,\"ts\":\"2026-01-02T03:04:05Z\"}\n{\"id\":2,\"ts\":\"2026-02-02T00:00:00Z\"}\n",
    ));
    let spec = &metadata(&table)["partition-specs"][0]["fields"];
    assert_eq!(spec.as_array().unwrap().len(), 1, "{spec}");
    assert_eq!((spec[0]["name"].as_str(), spec[0]["transform"].as_str()), (Some("ts_date"), Some("identity")));
    assert_readers_agree(&py, &table);
}

/// `deltabus write` with `input`, dying at crash point `point`.
fn crashing_write(table: &Path, point: &str, input: &str) -> Output {
    write_with_env(table, ("DELTABUS_CRASH_AT", point), input)
}

/// `deltabus write` with `input` and one environment variable set (a test hook).
fn write_with_env(table: &Path, (key, value): (&str, &str), input: &str) -> Output {
    use std::io::Write as _;
    let mut child = Command::new(env!("CARGO_BIN_EXE_deltabus"))
        .args(["write", table.to_str().unwrap()])
        .env(key, value)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
    child.wait_with_output().unwrap()
}

#[test]
fn a_writer_killed_between_commit_and_conversion_is_caught_up() {
    let Some(py) = python_or_skip() else { return };
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("t");
    ok(&write_jsonl(&table, UNIFORM, "{\"id\":1,\"s\":\"a\"}\n"));
    for point in ["commit.before_uniform", "uniform.before_metadata"] {
        let out = crashing_write(&table, point, "{\"id\":2,\"s\":\"b\"}\n");
        assert!(!out.status.success(), "{point}: the process was to die");
        let d = run_json(&["describe", table.to_str().unwrap()]);
        assert_eq!(d["iceberg"]["behind"], 1, "{point}: the Delta commit landed, its Iceberg metadata did not: {d}");
        // Readers of the pointer still see the previous version, complete.
        assert_readers_agree(&py, &table);
        let caught = ok(&deltabus(&["uniform", table.to_str().unwrap()]));
        assert_eq!(caught["converted"], true);
        assert_eq!(caught["deltaVersion"], d["version"]);
        assert_eq!(ok(&deltabus(&["uniform", table.to_str().unwrap()]))["converted"], false, "nothing left to do");
        assert_readers_agree(&py, &table);
    }
    // The next commit also catches up what an earlier death left behind.
    let out = crashing_write(&table, "commit.before_uniform", "{\"id\":8,\"s\":\"y\"}\n");
    assert!(!out.status.success());
    assert_eq!(run_json(&["describe", table.to_str().unwrap()])["iceberg"]["behind"], 1);
    ok(&write_jsonl(&table, &[], "{\"id\":9,\"s\":\"z\"}\n"));
    assert_eq!(run_json(&["describe", table.to_str().unwrap()])["iceberg"]["behind"], 0);
    assert_readers_agree(&py, &table);
}

#[test]
fn store_faults_under_the_conversion_never_corrupt_the_pointer() {
    let Some(py) = python_or_skip() else { return };
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("t");
    ok(&write_jsonl(&table, UNIFORM, "{\"id\":0}\n"));
    for i in 1..12 {
        let faults = format!("rate=0.15,seed={i}");
        let out = write_with_env(&table, ("DELTABUS_FAULTS", &faults), &format!("{{\"id\":{i}}}\n"));
        // Whatever happened, the pointer opens a complete snapshot that matches its Delta version.
        if table.join("metadata/version-hint.text").exists() {
            let meta = metadata(&table);
            let version: u64 = meta["snapshots"].as_array().unwrap().last().unwrap()["summary"]["delta-version"]
                .as_str()
                .unwrap()
                .parse()
                .unwrap();
            let got = iceberg_rows(&py, &current_metadata(&table), "pyiceberg", None).unwrap();
            compare_rows(&cat(&table, Some(version)), &got).unwrap_or_else(|e| panic!("after write {i}: {e}"));
        }
        let _ = out;
    }
    let caught = ok(&deltabus(&["uniform", table.to_str().unwrap()]));
    assert_eq!(caught["deltaVersion"], run_json(&["describe", table.to_str().unwrap()])["version"]);
    assert_readers_agree(&py, &table);
}

#[test]
fn what_iceberg_cannot_hold_is_refused_before_anything_is_written() {
    let dir = tempfile::tempdir().unwrap();
    for (props, input, needle) in [
        (&["delta.enableDeletionVectors=true"][..], "{\"id\":1}\n", "deletion vectors"),
        (&["delta.enableIcebergCompatV2=false"], "{\"id\":1}\n", "enableIcebergCompatV2"),
        (&["delta.columnMapping.mode=none"], "{\"id\":1}\n", "column mapping"),
    ] {
        let table = dir.path().join(format!("t{}", needle.len()));
        let mut args = UNIFORM.to_vec();
        for p in props {
            args.extend(["--property", p]);
        }
        let out = write_jsonl(&table, &args, input);
        assert_clean_failure(&out, needle);
        assert!(String::from_utf8_lossy(&out.stderr).contains(needle), "{}", String::from_utf8_lossy(&out.stderr));
        assert!(!table.join("_delta_log").exists() && !table.join("metadata").exists(), "{props:?}: nothing written");
    }
    let out = deltabus(&["uniform", dir.path().join("nope").to_str().unwrap()]);
    assert_clean_failure(&out, "not a table");
}
