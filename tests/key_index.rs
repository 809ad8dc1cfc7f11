//! The key index of keyed pipelines: it is caught up with whatever other writers did (a
//! `deltalake` delete and append between runs), rebuilt when its sidecars are deleted or
//! damaged, bounded by `upsert.index_memory` (evicted buckets read back), and never trusted
//! over the table: after every phase each key has exactly its last value, in deltabus and in
//! the reference reader, and rows whose key is null are never matched.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use rdkafka::mocking::MockCluster;
use serde_json::{json, Value};

use crate::support::{committed, pipeline, produce, run_until, runtime};

/// One keyed run on its own broker and app id (so positions start afresh): `records` are
/// (Kafka key, payload) on two partitions. Returns the pipeline's metrics text at the end.
fn keyed_run(
    table: &str,
    app: &str,
    keys: &[&str],
    props: &[(&str, &str)],
    budget: &str,
    records: Vec<(String, Option<String>)>,
) -> String {
    keyed_run_with(table, app, keys, props, budget, records, |_| {})
}

/// [`keyed_run`] with the pipeline's configuration changed by `tweak`.
fn keyed_run_with(
    table: &str,
    app: &str,
    keys: &[&str],
    props: &[(&str, &str)],
    budget: &str,
    records: Vec<(String, Option<String>)>,
    tweak: impl FnOnce(&mut deltabus::config::PipelineConfig),
) -> String {
    let _guard = crate::support::native_clients_lock();
    let rendered = Arc::new(Mutex::new(String::new()));
    let seen = rendered.clone();
    runtime().block_on(async {
        let cluster = MockCluster::new(1).unwrap();
        cluster.create_topic("kv", 2, 1).unwrap();
        let brokers = cluster.bootstrap_servers();
        let mut p = pipeline(&brokers, "kv", table);
        p.app_id = Some(app.into());
        // Several flushes per run: later ones look up what earlier ones wrote.
        p.flush.max_rows = 60;
        for (k, v) in props {
            p.properties.insert((*k).into(), (*v).into());
        }
        p.upsert = Some(deltabus::config::UpsertConfig {
            key_columns: keys.iter().map(|k| (*k).to_string()).collect(),
            format: deltabus::config::UpsertFormat::Plain,
            op_field: None,
            index_memory: budget.parse().unwrap(),
        });
        tweak(&mut p);
        let n = records.len() as u64;
        let records: Vec<_> = records.into_iter().enumerate().map(|(i, (k, v))| ((i % 2) as i32, Some(k), v)).collect();
        produce(&brokers, "kv", &records).await;
        run_until(vec![p], None, move |m| {
            // Counted first, rendered after: a flush sets the index gauges before its rows
            // count as committed, so the last text seen holds the last flush's figures.
            let done = committed(m, "p0") >= n;
            *seen.lock().unwrap() = m.render();
            done
        })
        .await;
    });
    let text = rendered.lock().unwrap().clone();
    text
}

/// A counter or gauge of pipeline p0 in a metrics text.
fn metric(text: &str, name: &str) -> u64 {
    text.lines()
        .find(|l| l.starts_with(&format!("{name}{{pipeline=\"p0\"}}")))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no {name} in the metrics:\n{text}"))
}

fn upsert(id: i64, v: i64) -> (String, Option<String>) {
    (id.to_string(), Some(json!({"id": id, "v": v}).to_string()))
}

/// The live rows as id → v, each key once (nulls under `None`, counted).
fn live(rows: impl Iterator<Item = Value>) -> (BTreeMap<i64, i64>, usize) {
    let (mut m, mut nulls) = (BTreeMap::new(), 0);
    for r in rows {
        match r["id"].as_i64() {
            Some(id) => assert!(m.insert(id, r["v"].as_i64().unwrap()).is_none(), "key {id} appears twice"),
            None => nulls += 1,
        }
    }
    (m, nulls)
}

fn check(table: &str, expected: &BTreeMap<i64, i64>, nulls: usize) {
    assert_eq!(live(crate::support::rows(table).into_iter()), (expected.clone(), nulls), "deltabus cat");
    if let Some(oracle) = crate::support::kernel_oracle() {
        let out = std::process::Command::new(oracle).args(["rows", table]).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let rows =
            String::from_utf8_lossy(&out.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect::<Vec<_>>();
        assert_eq!(live(rows.into_iter()), (expected.clone(), nulls), "the reference reader");
    }
}

fn sidecars(table: &str) -> Vec<std::path::PathBuf> {
    match std::fs::read_dir(std::path::Path::new(table).join("_deltabus/key_index")) {
        Ok(d) => d.map(|e| e.unwrap().path()).collect(),
        Err(_) => Vec::new(),
    }
}

fn active_files(table: &str) -> usize {
    let out = crate::support::run_json(&["files", table]);
    out["files"].as_array().map_or(0, Vec::len)
}

#[test]
fn the_index_catches_up_with_foreign_writers_and_is_rebuilt_when_lost_or_damaged() {
    let Some(python) = crate::support::python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("t").to_string_lossy().into_owned();
    // Copy-on-write (deltalake rewrites files; it does not write deletion vectors).
    let cow = [("delta.enableDeletionVectors", "false")];
    let mut expected = BTreeMap::new();

    // 1. 300 keys, then 150 of them again: every file indexed as it is written.
    let m = keyed_run(&table, "a1", &["id"], &cow, "64MiB", (0..300).map(|i| upsert(i, 1)).collect());
    expected.extend((0..300).map(|i| (i, 1)));
    assert_eq!(metric(&m, "deltabus_key_index_rebuilt_files_total"), 0, "nothing to rebuild on a new table");
    let m = keyed_run(&table, "a2", &["id"], &cow, "64MiB", (0..150).map(|i| upsert(i, 2)).collect());
    expected.extend((0..150).map(|i| (i, 2)));
    check(&table, &expected, 0);
    assert!((1..=active_files(&table) as u64).contains(&metric(&m, "deltabus_key_index_files")), "{m}");
    assert_eq!(metric(&m, "deltabus_key_index_rebuilt_files_total"), 0, "the sidecars were read: {m}");
    assert!(!sidecars(&table).is_empty());

    // 2. A foreign writer between runs: a delete and an append of keys the pipeline then upserts.
    let script = "import sys\nimport pyarrow as pa\nfrom deltalake import DeltaTable, write_deltalake\n\
        DeltaTable(sys.argv[1]).delete('id < 50')\n\
        write_deltalake(sys.argv[1], pa.table({'id': pa.array(range(1000, 1010), pa.int64()), \
        'v': pa.array([0] * 10, pa.int64())}), mode='append')\n";
    let out = crate::support::run_python(&python, script, &[table.as_ref()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    expected.retain(|id, _| *id >= 50);
    expected.extend((1000..1010).map(|i| (i, 0)));
    check(&table, &expected, 0);
    let mut records: Vec<_> = (0..100).chain(1000..1010).map(|i| upsert(i, 3)).collect();
    records.push(("200".into(), None)); // a tombstone
    let m = keyed_run(&table, "a3", &["id"], &cow, "64MiB", records);
    expected.extend((0..100).chain(1000..1010).map(|i| (i, 3)));
    expected.remove(&200);
    check(&table, &expected, 0);
    assert!(metric(&m, "deltabus_key_index_rebuilt_files_total") >= 1, "the foreign files were indexed: {m}");

    // 3. Half the sidecars deleted, the other half damaged: every file is rebuilt.
    let files = sidecars(&table);
    for (i, f) in files.iter().enumerate() {
        if i % 2 == 0 {
            std::fs::remove_file(f).unwrap();
        } else {
            let bytes = std::fs::read(f).unwrap();
            std::fs::write(f, &bytes[..bytes.len() / 2]).unwrap();
        }
    }
    let before = active_files(&table) as u64;
    let m = keyed_run(&table, "a4", &["id"], &cow, "64MiB", (100..140).map(|i| upsert(i, 4)).collect());
    expected.extend((100..140).map(|i| (i, 4)));
    check(&table, &expected, 0);
    assert_eq!(metric(&m, "deltabus_key_index_rebuilt_files_total"), before, "every file rebuilt once: {m}");

    // 4. VACUUM drops sidecars of files no longer live once past its retention, keeps the rest.
    let dir = std::path::Path::new(&table).join("_deltabus/key_index");
    let some = sidecars(&table).pop().unwrap();
    let fingerprint = some.file_name().unwrap().to_string_lossy().split_once('-').unwrap().1.to_string();
    let orphan = dir.join(format!("{}-{fingerprint}", "0".repeat(32)));
    std::fs::copy(&some, &orphan).unwrap();
    for f in sidecars(&table) {
        let when = chrono::Utc::now().timestamp() - 8 * 86_400;
        assert!(std::process::Command::new("touch")
            .arg("-d")
            .arg(format!("@{when}"))
            .arg(&f)
            .status()
            .unwrap()
            .success());
    }
    let out = crate::support::deltabus(&["vacuum", &table]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(!orphan.exists(), "the orphan sidecar was vacuumed");
    assert_eq!(sidecars(&table).len(), active_files(&table), "one sidecar per live file stays");
    check(&table, &expected, 0);
}

#[test]
fn a_small_memory_budget_evicts_and_reloads_buckets_with_unicode_multi_column_keys_and_null_keys() {
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("t").to_string_lossy().into_owned();
    let regions = ["Zürich", "東京", "🔑-α", "plain"];
    let row = |r: &str, id: i64, v: i64| {
        (json!({"region": r, "id": id}).to_string(), Some(json!({"region": r, "id": id, "v": v}).to_string()))
    };
    let all = |v: i64| -> Vec<_> { (0..400).map(|i| row(regions[(i % 4) as usize], i, v)).collect() };
    let nulls = |v: i64| -> Vec<(String, Option<String>)> {
        vec![("{}".into(), Some(json!({"region": "Zürich", "id": null, "v": v}).to_string()))]
    };
    // Deletion vectors (the default of keyed tables): flushes read no data file, only DVs.
    let budget = "2KiB";
    let m = keyed_run(&table, "b1", &["region", "id"], &[], budget, [all(1), nulls(1)].concat());
    assert!(metric(&m, "deltabus_key_index_resident_bytes") <= 2048, "{m}");
    let mut updates: Vec<_> = (0..400).step_by(3).map(|i| row(regions[(i % 4) as usize], i, 2)).collect();
    updates.push((json!({"region": "東京", "id": 5}).to_string(), None)); // tombstone of (東京, 5)
    updates.extend(nulls(2));
    let m = keyed_run(&table, "b2", &["region", "id"], &[], budget, updates);
    assert!(metric(&m, "deltabus_key_index_bucket_loads_total") > 0, "evicted buckets were read back: {m}");
    assert!(metric(&m, "deltabus_key_index_resident_bytes") <= 2048, "{m}");
    let mut expected: BTreeMap<i64, i64> = (0..400).map(|i| (i, if i % 3 == 0 { 2 } else { 1 })).collect();
    // The tombstone names (東京, 5): region of 5 is regions[1].
    expected.remove(&5);
    // Null keys are never matched: each of their rows stays.
    check(&table, &expected, 2);
}

#[test]
fn sidecars_deleted_while_a_pipeline_runs_are_rebuilt_from_the_data() {
    let _guard = crate::support::native_clients_lock();
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("t").to_string_lossy().into_owned();
    let rendered = Arc::new(Mutex::new(String::new()));
    let seen = rendered.clone();
    runtime().block_on(async {
        let cluster = MockCluster::new(1).unwrap();
        cluster.create_topic("kv", 2, 1).unwrap();
        let brokers = cluster.bootstrap_servers();
        let mut p = pipeline(&brokers, "kv", &table);
        p.flush.max_rows = 60;
        p.upsert = Some(deltabus::config::UpsertConfig {
            key_columns: vec!["id".into()],
            format: deltabus::config::UpsertFormat::Plain,
            op_field: None,
            // Every bucket evicted after each flush: the next one reads the sidecars back.
            index_memory: "1KiB".parse().unwrap(),
        });
        let records = |v: i64| -> Vec<_> {
            (0..300).map(|i| upsert(i, v)).enumerate().map(|(n, (k, p))| ((n % 2) as i32, Some(k), p)).collect()
        };
        produce(&brokers, "kv", &records(1)).await;
        // Once the first records are in, the index directory is deleted, and only then are the
        // updates produced: every later flush finds its sidecars gone.
        let (index_dir, second) = (std::path::Path::new(&table).join("_deltabus/key_index"), records(2));
        let pending = Mutex::new(Some((brokers.clone(), second)));
        let sent = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let producer_done = sent.clone();
        run_until(vec![p], None, move |m| {
            // Counted before rendering (see `keyed_run`).
            let committed_now = committed(m, "p0");
            *seen.lock().unwrap() = m.render();
            if committed_now >= 300 {
                if let Some((brokers, second)) = pending.lock().unwrap().take() {
                    std::fs::remove_dir_all(&index_dir).unwrap();
                    let done = producer_done.clone();
                    std::thread::spawn(move || {
                        runtime().block_on(produce(&brokers, "kv", &second));
                        done.store(true, std::sync::atomic::Ordering::SeqCst);
                    });
                }
            }
            sent.load(std::sync::atomic::Ordering::SeqCst) && committed_now >= 600
        })
        .await;
    });
    let m = rendered.lock().unwrap().clone();
    assert!(metric(&m, "deltabus_key_index_rebuilt_files_total") > 0, "the lost sidecars were rebuilt: {m}");
    check(&table, &(0..300).map(|i| (i, 2)).collect(), 0);
}

/// The live rows of a table as `cat` prints them: the key column's value (as JSON text) → v,
/// failing when a key appears twice.
fn live_by_text(table: &str) -> BTreeMap<String, i64> {
    let mut m = BTreeMap::new();
    for r in crate::support::rows(table) {
        let key = r["id"].to_string();
        assert!(m.insert(key.clone(), r["v"].as_i64().unwrap()).is_none(), "key {key} appears twice in {table}");
    }
    m
}

/// Rows keyed before a key column is widened are found by keys sent after it: upserts
/// replace them and tombstones delete them, whether the widening is explicit (`alter
/// --widen`, precision past what a JSON number holds, a scale added, a date becoming a
/// timestamp) or made by schema evolution inside the flush that carries the keys; with
/// deletion vectors (rows found through the key index's sidecars written before the
/// widening) and with change data on (rows matched by value in the files read).
#[test]
fn keys_written_before_a_key_column_is_widened_are_found_after_it() {
    let dir = tempfile::tempdir().unwrap();
    let schema = |ty: &str| {
        let path = dir.path().join(format!("{}.json", ty.replace(['(', ')', ','], "_")));
        let text = format!(
            r#"{{"type":"struct","fields":[{{"name":"id","type":"{ty}","nullable":true,"metadata":{{}}}},
            {{"name":"v","type":"long","nullable":true,"metadata":{{}}}}]}}"#
        );
        std::fs::write(&path, text).unwrap();
        path
    };
    let rec = |key: &str, v: Option<i64>| {
        let payload = v.map(|v| format!("{{\"id\":{key},\"v\":{v}}}"));
        (key.trim_matches('"').to_string(), payload)
    };
    // (name, type, properties, widen to, keys)
    type Case<'a> = (&'a str, &'a str, &'a [&'a str], &'a str, Vec<&'a str>);
    let cases: [Case; 4] = [
        ("decimal-dv", "decimal(10,2)", &[], "decimal(20,4)", vec!["1.25", "2.5", "7", "0.5"]),
        (
            "decimal-cdf",
            "decimal(10,2)",
            &["delta.enableChangeDataFeed=true"],
            "decimal(20,4)",
            vec!["1.25", "2.5", "7", "0.5"],
        ),
        (
            "date-dv",
            "date",
            &[],
            "timestamp_ntz",
            vec!["\"2024-02-29\"", "\"2024-03-01\"", "\"1999-12-31\"", "\"2000-01-01\""],
        ),
        (
            "date-cdf",
            "date",
            &["delta.enableChangeDataFeed=true"],
            "timestamp_ntz",
            vec!["\"2024-02-29\"", "\"2024-03-01\"", "\"1999-12-31\"", "\"2000-01-01\""],
        ),
    ];
    for (name, ty, props, wider, keys) in cases {
        let path = dir.path().join(name);
        let table = path.to_string_lossy().into_owned();
        let mut args = vec!["--schema".to_string(), schema(ty).to_string_lossy().into_owned()];
        for p in props.iter().chain(&["delta.enableTypeWidening=true"]) {
            args.extend(["--property".to_string(), (*p).to_string()]);
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        crate::support::write_ok(&path, &args, "{\"v\":0}\n");
        keyed_run(&table, "a1", &["id"], &[], "64MiB", keys.iter().map(|k| rec(k, Some(1))).collect());
        let before = live_by_text(&table);
        assert_eq!(before.len(), 5, "{name}: {before:?}");
        let r = crate::support::run_json(&["alter", &table, "--widen", &format!("id={wider}")]);
        assert!(r["version"].is_u64(), "{name}: {r}");
        // Upsert two keys, delete one, add one.
        let (a, b, c) = (keys[0], keys[2], keys[1]);
        keyed_run(&table, "a2", &["id"], &[], "64MiB", vec![rec(a, Some(2)), rec(b, Some(2)), rec(c, None)]);
        let after = live_by_text(&table);
        assert_eq!(after.len(), 4, "{name}: each key once, the deleted one gone: {after:?}");
        assert_eq!(after.values().filter(|v| **v == 2).count(), 2, "{name}: {after:?}");
        assert_eq!(after.values().filter(|v| **v == 1).count(), 1, "{name}: {after:?}");
    }

    // Schema evolution widens the key inside the flush that carries the keys: a tombstone
    // and an upsert of keys written before it, beside a value that needs more precision.
    let path = dir.path().join("evolving");
    let table = path.to_string_lossy().into_owned();
    let decimal = schema("decimal(10,2)");
    let args = ["--schema", decimal.to_str().unwrap(), "--property", "delta.enableTypeWidening=true"];
    crate::support::write_ok(&path, &args, "{\"v\":0}\n");
    keyed_run(&table, "b1", &["id"], &[], "64MiB", ["1.25", "2.5", "7"].iter().map(|k| rec(k, Some(1))).collect());
    let records =
        vec![rec("2.5", None), rec("1.25", Some(2)), rec("123456789012345678.25", Some(2)), rec("7", Some(2))];
    keyed_run_with(&table, "b2", &["id"], &[], "64MiB", records, |p| p.evolve_schema = true);
    let after = live_by_text(&table);
    assert_eq!(after.len(), 4, "{after:?}");
    assert_eq!(after.values().filter(|v| **v == 2).count(), 3, "{after:?}");
    let d = crate::support::run_json(&["describe", &table]);
    assert!(d["schema"]["fields"][0]["type"].as_str().unwrap().starts_with("decimal(20,"), "{d}");
}
