//! UniForm tables read through Iceberg readers that prune: every statistic they skip files and
//! manifests by (manifest-list partition summaries, partition tuples, column bounds, null
//! counts) bounds the rows it stands for, for every partition and column type, nulls,
//! Unicode, long strings, negative numbers, dates and timestamps before 1970. pyiceberg scans
//! with hundreds of filters, each compared with the same filter applied to the unfiltered
//! rows, and Java Iceberg (the planner of Spark, Trino and Flink) plans the same filters,
//! each plan checked to hold every file with a matching row; partition values read alike in
//! every reader (`""` is null everywhere).

use crate::support::python::run_python_json;
use crate::support::uniform::{assert_readers_agree, current_metadata, python_or_skip};
use crate::support::write_jsonl;

const SCHEMA: &str = r#"{"type":"struct","fields":[
{"name":"p","type":"string","nullable":true,"metadata":{}},
{"name":"q","type":"long","nullable":true,"metadata":{}},
{"name":"d","type":"date","nullable":true,"metadata":{}},
{"name":"t","type":"timestamp","nullable":true,"metadata":{}},
{"name":"f","type":"double","nullable":true,"metadata":{}},
{"name":"b","type":"boolean","nullable":true,"metadata":{}},
{"name":"s","type":"string","nullable":true,"metadata":{}},
{"name":"n","type":"integer","nullable":true,"metadata":{}},
{"name":"x","type":"double","nullable":true,"metadata":{}},
{"name":"r","type":"float","nullable":true,"metadata":{}},
{"name":"dt","type":"date","nullable":true,"metadata":{}},
{"name":"ts","type":"timestamp","nullable":true,"metadata":{}},
{"name":"ntz","type":"timestamp_ntz","nullable":true,"metadata":{}},
{"name":"dec","type":"decimal(10,2)","nullable":true,"metadata":{}}
]}"#;

/// Commits of rows whose ranges differ, so that files and manifests can be told apart.
fn commits() -> Vec<String> {
    let long = format!("{}é tail", "x".repeat(40));
    let rows = [
        vec![
            r#"{"p":"a","q":-5,"d":"1969-12-31","t":"1969-12-31T23:59:59.999500Z","f":-2.5,"b":true,"s":"alpha","n":-2147483648,"x":-1.5,"r":1.5,"dt":"1900-01-01","ts":"1960-06-01T12:00:00.123456Z","ntz":"2024-05-05T05:05:05.5","dec":-12.34}"#.to_string(),
            r#"{"p":"a","q":0,"d":"2024-02-29","t":"2024-01-01T00:00:00.000001Z","f":0.0,"b":false,"s":"","n":0,"x":3.25,"r":-2.25,"dt":"2100-12-31","ts":"2030-01-01T00:00:00Z","ntz":"1969-01-01T00:00:00","dec":0.5}"#.to_string(),
        ],
        vec![
            format!(r#"{{"p":"b","q":7,"d":"2024-03-01","t":"2024-06-01T12:30:00Z","f":1e10,"b":true,"s":"{long}","n":5,"x":-100.0,"r":0.25,"dt":"2000-01-01","ts":"2000-01-01T00:00:00.5Z","ntz":"2000-02-02T02:02:02","dec":99999999.99}}"#),
            r#"{"p":"c","q":9223372036854775807,"d":null,"t":null,"f":null,"b":null,"s":"Ωmega","n":2147483647,"x":null,"r":null,"dt":null,"ts":null,"ntz":null,"dec":null}"#.to_string(),
        ],
        vec![
            r#"{"p":"","q":null,"d":"1970-01-01","t":"1970-01-01T00:00:00Z","f":-0.5,"b":false,"s":"😀 emoji","n":-1,"x":0.0,"r":8.0,"dt":"1969-07-20","ts":"1969-07-20T20:17:40Z","ntz":"1969-07-20T20:17:40.000001","dec":-0.01}"#.to_string(),
            r#"{"p":null,"q":-9223372036854775808,"d":"2024-02-29","t":"2024-02-29T23:59:59.999999Z","f":2.5,"b":true,"s":null,"n":null,"x":1e300,"r":-8.5,"dt":"2024-02-29","ts":"2024-02-29T23:59:59.999999Z","ntz":"2024-02-29T23:59:59.999999","dec":12.34}"#.to_string(),
        ],
        vec![
            r#"{"p":"日本","q":42,"d":"2024-02-29","t":"2024-01-01T00:00:00.000001Z","f":-2.5,"b":true,"s":"zz","n":42,"x":-1.5,"r":1.5,"dt":"1900-01-01","ts":"1960-06-01T12:00:00.123456Z","ntz":"2024-05-05T05:05:05.5","dec":-12.34}"#.to_string(),
            r#"{"p":"é","q":1,"d":"1969-12-31","t":"1969-12-31T23:59:59.999500Z","f":0.0,"b":false,"s":"alpha","n":1,"x":3.25,"r":-2.25,"dt":"2100-12-31","ts":"2030-01-01T00:00:00Z","ntz":"1969-01-01T00:00:00","dec":0.5}"#.to_string(),
        ],
    ];
    rows.iter().map(|c| c.join("\n") + "\n").collect()
}

/// Every distinct value of every column as a filter (=, !=, <, <=, >, >=, IN, NOT IN, starts
/// with), plus IS NULL and IS NOT NULL: the rows pyiceberg returns must be the unfiltered rows
/// that match. Prints the filters checked and the mismatches.
const FILTERS: &str = r#"
import json, sys
from pyiceberg.table import StaticTable
from pyiceberg.expressions import (EqualTo, NotEqualTo, LessThan, LessThanOrEqual, GreaterThan,
    GreaterThanOrEqual, In, NotIn, IsNull, NotNull, StartsWith)
t = StaticTable.from_metadata(sys.argv[1])
rows = t.scan().to_arrow().to_pylist()
def key(r): return json.dumps(r, default=str, sort_keys=True)
checked, wrong = 0, []
def check(name, expr, pred):
    global checked
    checked += 1
    got = sorted(key(r) for r in t.scan(row_filter=expr).to_arrow().to_pylist())
    want = sorted(key(r) for r in rows if pred(r))
    if got != want:
        wrong.append({"filter": name, "got": len(got), "want": len(want)})
for col in rows[0].keys():
    values = sorted({r[col] for r in rows if r[col] is not None}, key=lambda v: (str(type(v)), v))
    check(col + " is null", IsNull(col), lambda r, c=col: r[c] is None)
    check(col + " not null", NotNull(col), lambda r, c=col: r[c] is not None)
    for v in values:
        n = "%s %%s %r" % (col, v)
        check(n % "=", EqualTo(col, v), lambda r, c=col, v=v: r[c] is not None and r[c] == v)
        check(n % "!=", NotEqualTo(col, v), lambda r, c=col, v=v: r[c] is not None and r[c] != v)
        if not isinstance(v, bool):
            check(n % "<", LessThan(col, v), lambda r, c=col, v=v: r[c] is not None and r[c] < v)
            check(n % "<=", LessThanOrEqual(col, v), lambda r, c=col, v=v: r[c] is not None and r[c] <= v)
            check(n % ">", GreaterThan(col, v), lambda r, c=col, v=v: r[c] is not None and r[c] > v)
            check(n % ">=", GreaterThanOrEqual(col, v), lambda r, c=col, v=v: r[c] is not None and r[c] >= v)
        if isinstance(v, str) and len(v) > 1:
            pre = v[: max(1, len(v) - 3)]
            check("%s starts with %r" % (col, pre), StartsWith(col, pre), lambda r, c=col, p=pre: r[c] is not None and r[c].startswith(p))
    if len(values) >= 2:
        pair = values[:1] + values[-1:]
        check(col + " in ends", In(col, pair), lambda r, c=col, s=pair: r[c] in s)
        # Iceberg's NOT IN holds for nulls (pyiceberg keeps them), unlike !=.
        check(col + " not in ends", NotIn(col, pair), lambda r, c=col, s=pair: r[c] not in s)
print(json.dumps({"rows": len(rows), "checked": checked, "wrong": wrong}, default=str))
"#;

/// The same filters through Java Iceberg (`IcebergProbe`, one JVM for all of them): the files
/// it plans must include every file holding a row the filter matches (each file's rows read
/// by pyiceberg, one scan task at a time). Prints the filters checked, those where Java
/// skipped a file, and the misses.
const JAVA_PLANS: &str = r#"
import json, sys, subprocess, datetime, decimal
from pyiceberg.table import StaticTable
from pyiceberg.io.pyarrow import ArrowScan
from pyiceberg.expressions import AlwaysTrue
meta, probe = sys.argv[1], sys.argv[2]
t = StaticTable.from_metadata(meta)
tasks = list(t.scan().plan_files())
files = {task.file.file_path: ArrowScan(t.metadata, t.io, t.schema(), AlwaysTrue()).to_table([task]).to_pylist() for task in tasks}
def text(v):
    if isinstance(v, bool): return "true" if v else "false"
    if isinstance(v, (datetime.date, datetime.datetime)): return v.isoformat()
    return str(v) if not isinstance(v, float) else repr(v)
specs, preds = [], {}
def add(name, col, op, values, pred):
    specs.append({"name": name, "column": col, "op": op, "values": [text(v) for v in values]})
    preds[name] = pred
cols = list(next(iter(files.values()))[0].keys())
for col in cols:
    values = sorted({r[col] for rows in files.values() for r in rows if r[col] is not None}, key=lambda v: (str(type(v)), v))
    add(col + " is null", col, "isnull", [], lambda r, c=col: r[c] is None)
    add(col + " not null", col, "notnull", [], lambda r, c=col: r[c] is not None)
    for v in values:
        n = "%s %%s %r" % (col, v)
        add(n % "=", col, "eq", [v], lambda r, c=col, v=v: r[c] is not None and r[c] == v)
        add(n % "!=", col, "ne", [v], lambda r, c=col, v=v: r[c] is not None and r[c] != v)
        if not isinstance(v, bool):
            add(n % "<", col, "lt", [v], lambda r, c=col, v=v: r[c] is not None and r[c] < v)
            add(n % "<=", col, "le", [v], lambda r, c=col, v=v: r[c] is not None and r[c] <= v)
            add(n % ">", col, "gt", [v], lambda r, c=col, v=v: r[c] is not None and r[c] > v)
            add(n % ">=", col, "ge", [v], lambda r, c=col, v=v: r[c] is not None and r[c] >= v)
        if isinstance(v, str) and len(v) > 1:
            pre = v[: max(1, len(v) - 3)]
            add("%s starts with %r" % (col, pre), col, "startswith", [pre], lambda r, c=col, p=pre: r[c] is not None and r[c].startswith(p))
    if len(values) >= 2:
        pair = values[:1] + values[-1:]
        add(col + " in ends", col, "in", pair, lambda r, c=col, s=pair: r[c] in s)
cp = probe + "/lib/*:" + probe + "/classes"
out = subprocess.run(["java", "-cp", cp, "IcebergProbe", meta], input=json.dumps(specs), capture_output=True, text=True)
if out.returncode != 0:
    sys.exit("IcebergProbe failed: " + out.stderr[-2000:])
planned = json.loads(out.stdout)
wrong, pruned = [], 0
for name, pred in preds.items():
    need = {f for f, rows in files.items() if any(pred(r) for r in rows)}
    got = set(planned[name])
    if not need <= got:
        wrong.append({"filter": name, "missed": len(need - got)})
    pruned += len(got) < len(files)
print(json.dumps({"files": len(files), "checked": len(preds), "pruned": pruned, "wrong": wrong}))
"#;

#[test]
fn pruning_iceberg_readers_get_every_row_a_filter_matches() {
    let Some(py) = python_or_skip() else { return };
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("t");
    let schema = dir.path().join("schema.json");
    std::fs::write(&schema, SCHEMA).unwrap();
    let schema_arg = schema.to_str().unwrap();
    let create = [
        "--property",
        "delta.universalFormat.enabledFormats=iceberg",
        "--schema",
        schema_arg,
        "--partition-by",
        "p,q,d,t,f,b",
    ];
    for (i, rows) in commits().iter().enumerate() {
        let args: &[&str] = if i == 0 { &create } else { &[] };
        let out = write_jsonl(&table, args, rows);
        assert!(out.status.success(), "commit {i}: {}", String::from_utf8_lossy(&out.stderr));
    }
    // Every reader reads the same rows at every snapshot: `""` is null in the log, in the
    // materialised partition column and in the Iceberg partition tuple alike.
    assert_readers_agree(&py, &table);
    let meta = current_metadata(&table);
    let v = run_python_json(&py, FILTERS, &[meta.as_os_str()]);
    assert_eq!(v["rows"], 8, "{v}");
    assert!(v["checked"].as_u64().unwrap() > 300, "{v}");
    assert_eq!(v["wrong"], serde_json::json!([]), "filters whose rows pyiceberg got wrong: {v}");
    // Java Iceberg, as Spark, Trino and Flink plan: every file a filter needs is planned, and
    // files are skipped.
    if let Some(probe) = crate::support::iceberg_probe() {
        let java = run_python_json(&py, JAVA_PLANS, &[meta.as_os_str(), probe.as_os_str()]);
        eprintln!("Java Iceberg plans: {java}");
        assert!(java["checked"].as_u64().unwrap() > 300, "{java}");
        assert!(java["pruned"].as_u64().unwrap() > 100, "Java Iceberg skipped files: {java}");
        assert_eq!(java["wrong"], serde_json::json!([]), "filters whose files Java Iceberg skipped wrongly: {java}");
    }
}

/// A compaction rewrites the files into one manifest: the summary bounds cover every
/// partition value it holds, and pruning readers still find every row.
#[test]
fn pruning_survives_compaction_and_deletes() {
    let Some(py) = python_or_skip() else { return };
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("t");
    let t = table.to_str().unwrap();
    let create = ["--property", "delta.universalFormat.enabledFormats=iceberg", "--partition-by", "p"];
    for (i, p) in ["a", "b", "c", "", "ü"].iter().enumerate() {
        let rows = format!("{{\"id\":{i},\"p\":\"{p}\"}}\n{{\"id\":{},\"p\":null}}\n", i + 10);
        let args: &[&str] = if i == 0 { &create } else { &[] };
        let out = write_jsonl(&table, args, &rows);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }
    let script = r#"
import json, sys
from pyiceberg.table import StaticTable
from pyiceberg.expressions import EqualTo, In, GreaterThan, IsNull
t = StaticTable.from_metadata(sys.argv[1])
n = lambda e: len(t.scan(row_filter=e).to_arrow())
print(json.dumps({"a": n(EqualTo("p", "a")), "ab": n(In("p", ["a", "b"])), "gt0": n(GreaterThan("p", "0")),
                  "null": n(IsNull("p")), "u": n(EqualTo("p", "ü")), "empty": n(EqualTo("p", ""))}))
"#;
    let expect = serde_json::json!({"a": 1, "ab": 2, "gt0": 4, "null": 6, "u": 1, "empty": 0});
    let got = run_python_json(&py, script, &[current_metadata(&table).as_os_str()]);
    assert_eq!(got, expect, "after appends");
    let out = crate::support::deltabus(&["compact", t]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(run_python_json(&py, script, &[current_metadata(&table).as_os_str()]), expect, "after compaction");
    let out = crate::support::deltabus(&["delete", t, "--where", "id = 0"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let mut after = expect.clone();
    after["a"] = 0.into();
    after["ab"] = 1.into();
    after["gt0"] = 3.into();
    assert_eq!(run_python_json(&py, script, &[current_metadata(&table).as_os_str()]), after, "after a delete");
    assert_readers_agree(&py, &table);
}

/// A UniForm table (column mapping by name) takes new columns whose names Delta allows only
/// under column mapping, at the top level and inside a struct, from `write --evolve-schema`;
/// every reader reads them.
#[test]
fn names_needing_column_mapping_evolve_uniform_tables() {
    let Some(py) = python_or_skip() else { return };
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("t");
    let create = ["--property", "delta.universalFormat.enabledFormats=iceberg"];
    let out = write_jsonl(&table, &create, "{\"id\":1,\"s\":{\"a\":1}}\n");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let rows = "{\"id\":2,\"s\":{\"a\":2,\"x y\":\"ü\"},\"top new\":\"é\",\"t(1)=\":3}\n";
    let out = write_jsonl(&table, &["--evolve-schema"], rows);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let described = crate::support::run_json(&["describe", table.to_str().unwrap()]);
    let names: Vec<&str> =
        described["schema"]["fields"].as_array().unwrap().iter().filter_map(|f| f["name"].as_str()).collect();
    assert_eq!(names, ["id", "s", "top new", "t(1)="], "{described}");
    let cat = crate::support::uniform::cat(&table, None);
    let text = String::from_utf8_lossy(&cat);
    assert!(text.contains("\"x y\":\"ü\"") && text.contains("\"top new\":\"é\""), "{text}");
    assert_readers_agree(&py, &table);
    // A table without column mapping still refuses such a name, naming the fix.
    let plain = dir.path().join("plain");
    assert!(write_jsonl(&plain, &[], "{\"id\":1}\n").status.success());
    let out = write_jsonl(&plain, &["--evolve-schema"], "{\"id\":2,\"top new\":1}\n");
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("delta.columnMapping.mode=name"));
}
