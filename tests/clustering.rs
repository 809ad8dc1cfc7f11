//! Clustered tables: created by `deltabus write --cluster-by` (the `clustering` and
//! `domainMetadata` features, the `delta.clustering` domain by physical name paths), kept valid
//! by every append (statistics for every clustering column whatever the statistics settings,
//! no `clusteringProvider`), changed and removed by `deltabus cluster-by`, refused in one line
//! where the rules say no; and Spark, the reference engine, reads and optimizes the clustered
//! tables deltabus writes and takes deltabus's appends, deletes and keyed upserts into its own
//! liquid-clustered tables.

use serde_json::{json, Value};

use crate::support::spark::{sorted, spark, spark_rows, spark_sql};
use crate::support::{deltabus, rows, run_json, write_jsonl};

/// Every action of every commit of a local table, by version.
fn commits(table: &std::path::Path) -> Vec<(u64, Vec<Value>)> {
    let mut out: Vec<(u64, Vec<Value>)> = std::fs::read_dir(table.join("_delta_log"))
        .unwrap()
        .filter_map(|e| {
            let path = e.unwrap().path();
            let name = path.file_name()?.to_string_lossy().into_owned();
            let version = name.strip_suffix(".json")?.parse().ok()?;
            let text = std::fs::read_to_string(&path).unwrap();
            Some((version, text.lines().map(|l| serde_json::from_str(l).unwrap()).collect()))
        })
        .collect();
    out.sort_by_key(|(v, _)| *v);
    out
}

/// The statistics of the files the commit at `version` adds.
fn added_stats(table: &std::path::Path, version: u64) -> Vec<Value> {
    let (_, actions) = commits(table).into_iter().find(|(v, _)| *v == version).unwrap();
    let adds: Vec<&Value> = actions.iter().filter_map(|a| a.get("add")).collect();
    assert!(!adds.is_empty(), "version {version} adds no file");
    for a in &adds {
        assert!(a.get("clusteringProvider").is_none(), "an append names a clustering provider: {a}");
    }
    adds.iter().map(|a| serde_json::from_str(a["stats"].as_str().unwrap()).unwrap()).collect()
}

fn records(ids: std::ops::Range<i64>) -> String {
    const DEVICES: [&str; 4] = ["sensor-ü", "名前", "b", "a/b"];
    ids.map(|i| {
        let device = DEVICES[i as usize % DEVICES.len()];
        json!({"id": i, "device": device, "n": i * 3, "ok": i % 2 == 0, "address": {"city": format!("Zürich-{}", i % 5)}})
            .to_string()
            + "\n"
    })
    .collect()
}

fn fails(table: &std::path::Path, args: &[&str], input: &str, why: &str) {
    let out = write_jsonl(table, args, input);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{args:?} succeeded");
    assert!(err.contains(why), "{args:?}: {err}");
    assert_eq!(err.trim().lines().count(), 1, "{args:?}: not one line: {err}");
}

#[test]
fn clustered_tables_are_created_kept_valid_and_changed() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t");
    let table = path.to_str().unwrap();
    let no_stats = ["--property", "delta.dataSkippingNumIndexedCols=0"];
    let args = [&["--cluster-by", "device, address.city"][..], &no_stats[..]].concat();
    crate::support::tables::write_ok(&path, &args, &records(0..40));
    let log = commits(&path);
    let first = &log[0].1;
    let protocol = first.iter().find_map(|a| a.get("protocol")).unwrap();
    let writer: Vec<&str> =
        protocol["writerFeatures"].as_array().unwrap().iter().map(|f| f.as_str().unwrap()).collect();
    assert!(writer.contains(&"clustering") && writer.contains(&"domainMetadata"), "{protocol}");
    let domain = first.iter().find_map(|a| a.get("domainMetadata")).unwrap();
    assert_eq!(domain["domain"], "delta.clustering");
    let columns: Value = serde_json::from_str(domain["configuration"].as_str().unwrap()).unwrap();
    assert_eq!(columns, json!({"clusteringColumns": [["device"], ["address", "city"]]}));
    // Statistics for the clustering columns only (the table indexes no column of its own).
    for s in added_stats(&path, 0) {
        assert!(s["minValues"]["device"].is_string() && s["maxValues"]["address"]["city"].is_string(), "{s}");
        assert!(s["minValues"].get("n").is_none() && s["minValues"].get("id").is_none(), "{s}");
    }
    let d = run_json(&["describe", table]);
    assert_eq!(d["clusteringColumns"], json!(["device", "address.city"]), "{d}");
    // An append without the flag keeps them; one naming other columns is refused.
    crate::support::tables::write_ok(&path, &[], &records(40..60));
    for s in added_stats(&path, 1) {
        assert!(s["minValues"]["device"].is_string(), "{s}");
    }
    fails(
        &path,
        &["--cluster-by", "n"],
        &records(60..61),
        "cannot apply: the table exists clustered by [device, address.city]",
    );
    assert_eq!(commits(&path).len(), 2, "a refused write committed");

    // Changed, asked again (nothing to do), and removed.
    let changed = run_json(&["cluster-by", table, "n"]);
    assert_eq!((changed["version"].as_u64(), &changed["clusteringColumns"]), (Some(2), &json!(["n"])));
    assert_eq!(run_json(&["cluster-by", table, "N"])["version"], Value::Null);
    crate::support::tables::write_ok(&path, &[], &records(60..70));
    for s in added_stats(&path, 3) {
        assert!(s["minValues"]["n"].is_number() && s["minValues"].get("device").is_none(), "{s}");
    }
    let history = String::from_utf8_lossy(&deltabus(&["history", table]).stdout).into_owned();
    assert!(history.contains("CLUSTER BY"), "{history}");
    let none = run_json(&["cluster-by", table, "--none"]);
    assert_eq!(none["clusteringColumns"], json!([]));
    assert_eq!(run_json(&["describe", table])["clusteringColumns"], json!([]));
    let ids: Vec<i64> = crate::support::tables::ids(table);
    assert_eq!(ids, (0..70).collect::<Vec<_>>());
    let out = deltabus(&["cluster-by", table, "ok"]);
    assert!(!out.status.success() && String::from_utf8_lossy(&out.stderr).contains("no min/max statistics"));
}

#[test]
fn clustering_the_rules_refuse_is_refused_in_one_line_before_anything_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t");
    let input = records(0..5);
    fails(&path, &["--cluster-by", "n", "--partition-by", "device"], &input, "cannot also be partitioned");
    fails(&path, &["--cluster-by", "id,n,device,address.city,id"], &input, "at most 4");
    fails(&path, &["--cluster-by", "nope"], &input, "not in the schema");
    fails(&path, &["--cluster-by", "ok"], &input, "no min/max statistics");
    fails(&path, &["--cluster-by", "address"], &input, "no min/max statistics");
    assert!(!path.join("_delta_log").exists(), "a refused table was created");
}

#[test]
fn spark_reads_and_optimizes_clustered_tables_deltabus_writes_and_takes_its_appends() {
    let Some(spark) = spark() else { return };
    let dir = tempfile::tempdir().unwrap();
    // Ours: clustered by a string and a nested column; Spark reads it, appends, and clusters.
    let path = dir.path().join("ours");
    let t = path.to_str().unwrap();
    crate::support::tables::write_ok(&path, &["--cluster-by", "device,address.city"], &records(0..50));
    crate::support::tables::write_ok(&path, &[], &records(50..100));
    let detail = spark_sql(&spark, &[&format!("DESCRIBE DETAIL delta.`{t}`")]).unwrap();
    assert_eq!(detail[0]["clusteringColumns"], json!(["device", "address.city"]), "{detail:?}");
    assert_eq!(spark_rows(&spark, t), sorted(rows(t)));
    let (sql_insert, sql_optimize) = (
        format!("INSERT INTO delta.`{t}` SELECT 100 + id, 'spark', (100 + id) * 3, true, named_struct('city', 'Köln') FROM range(0, 20)"),
        format!("OPTIMIZE delta.`{t}`"),
    );
    spark_sql(&spark, &[&sql_insert, &sql_optimize]).unwrap_or_else(|e| panic!("{e}"));
    crate::support::tables::write_ok(&path, &[], &records(120..130));
    assert_eq!(spark_rows(&spark, t), sorted(rows(t)));
    // deltabus clusters what is new beside Spark's clustered files; Spark reads and optimizes on.
    let report = run_json(&["compact", t]);
    assert_eq!(report["clustered"], true, "{report}");
    spark_sql(&spark, &[&sql_optimize]).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(spark_rows(&spark, t), sorted(rows(t)));
    let d = run_json(&["describe", t]);
    assert!(d["clusteredBytes"].as_i64().unwrap() > 0, "Spark's clustering names its provider: {d}");

    // Spark's: liquid clustered by an int column; deltabus appends with its statistics, and
    // Spark's OPTIMIZE and reads go on; Spark's ALTER TABLE ... CLUSTER BY shows in describe.
    let theirs = dir.path().join("theirs");
    let s = theirs.to_str().unwrap();
    spark_sql(
        &spark,
        &[
            &format!("CREATE TABLE delta.`{s}` (id BIGINT, name STRING, n INT) USING delta CLUSTER BY (n)"),
            &format!("INSERT INTO delta.`{s}` SELECT id, concat('ü-', id), CAST(id % 7 AS INT) FROM range(0, 100)"),
        ],
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let ours: String =
        (100..150).map(|i| json!({"id": i, "name": format!("名前-{i}"), "n": i % 7}).to_string() + "\n").collect();
    crate::support::tables::write_ok(&theirs, &[], &ours);
    let version = commits(&theirs).last().unwrap().0;
    for st in added_stats(&theirs, version) {
        assert!(st["minValues"]["n"].is_number(), "{st}");
    }
    spark_sql(&spark, &[&format!("OPTIMIZE delta.`{s}`"), &format!("ALTER TABLE delta.`{s}` CLUSTER BY (id)")])
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(spark_rows(&spark, s), sorted(rows(s)));
    assert_eq!(run_json(&["describe", s])["clusteringColumns"], json!(["id"]));
    crate::support::tables::write_ok(&theirs, &[], &ours.replace("\"id\":1", "\"id\":2"));
    assert_eq!(spark_rows(&spark, s).len(), 200);
}

/// The files of a `--dry-run` delete scans and skips for `predicate`.
fn scanned_skipped(table: &str, predicate: &str) -> (u64, u64) {
    let r = run_json(&["delete", table, "--where", predicate, "--dry-run"]);
    (r["filesScanned"].as_u64().unwrap(), r["filesSkipped"].as_u64().unwrap())
}

#[test]
fn compact_clusters_what_is_new_and_filters_on_either_column_skip_files() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t");
    let table = path.to_str().unwrap();
    // Eight appends, each spanning every device and the whole range of n.
    let batch = |b: i64| -> String {
        (b * 1500..(b + 1) * 1500)
            .map(|i| json!({"id": i, "device": format!("dévice-{}", i % 8), "n": (i * 7919) % 1000}).to_string() + "\n")
            .collect()
    };
    crate::support::tables::write_ok(&path, &["--cluster-by", "device,n"], &batch(0));
    for b in 1..8 {
        crate::support::tables::write_ok(&path, &[], &batch(b));
    }
    let before = crate::support::tables::rows_by_id(table);
    assert_eq!(scanned_skipped(table, "device = 'dévice-3'"), (8, 0), "appends span every device");
    let small = ["compact", table, "--target-file-size", "4KiB"];
    let report = run_json(&small);
    assert_eq!((report["clustered"].as_bool(), report["filesIn"].as_u64()), (Some(true), Some(8)), "{report}");
    assert_eq!(crate::support::tables::rows_by_id(table), before, "compaction changed rows");
    let files = report["filesOut"].as_u64().unwrap();
    assert!(files >= 10, "{report}");
    // Either column alone now skips most files.
    for predicate in ["device = 'dévice-3'", "n < 100"] {
        let (scanned, skipped) = scanned_skipped(table, predicate);
        assert!(skipped > scanned, "{predicate}: scanned {scanned}, skipped {skipped} of {files}");
    }
    // `cat --where` reads only the files that may match, and says how many it skipped.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_deltabus"))
        .args(["cat", table, "--where", "device = 'dévice-3'"])
        .env("DELTABUS_LOG", "info")
        .output()
        .unwrap();
    let printed = crate::support::tables::ids_printed(&out);
    let expected: Vec<i64> = (0..12000).filter(|i| i % 8 == 3).collect();
    assert_eq!(printed, expected);
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(log.contains("cat.pruned") && !log.contains("files_skipped=0"), "{log}");
    for (_, actions) in commits(&path).into_iter().skip(8) {
        for add in actions.iter().filter_map(|a| a.get("add")) {
            assert_eq!((&add["clusteringProvider"], &add["dataChange"]), (&json!("deltabus"), &json!(false)));
        }
    }
    let d = run_json(&["describe", table]);
    assert_eq!(d["clusteredBytes"], d["sizeInBytes"], "{d}");
    // Nothing new: nothing rewritten. One new file: only it. --full: everything.
    assert_eq!(run_json(&small)["filesIn"], 0);
    crate::support::tables::write_ok(&path, &[], &batch(8));
    assert_eq!(run_json(&small)["filesIn"], 1);
    let all = run_json(&["describe", table])["numFiles"].as_u64().unwrap();
    let full = run_json(&["compact", table, "--target-file-size", "4KiB", "--full"]);
    assert_eq!(full["filesIn"].as_u64(), Some(all), "{full}");
    assert_eq!(crate::support::tables::ids(table), (0..13500).collect::<Vec<_>>());
    // The rewrites are no changes to the change feed.
    let v = run_json(&["describe", table])["version"].as_u64().unwrap();
    let out = deltabus(&["changes", table, "--from", &v.to_string(), "--to", &v.to_string()]);
    assert!(out.status.success() && out.stdout.is_empty(), "{}", String::from_utf8_lossy(&out.stdout));
}

/// A Kafka pipeline configured with `cluster_by` creates its table clustered in the first
/// flush's commit, and its background compactor clusters what the flushes append: rows once,
/// the change feed inserting each once.
#[test]
fn a_pipeline_creates_a_clustered_table_and_its_compactor_clusters_it() {
    use crate::support::kafka::{committed, pipeline, produce, run_until, runtime};
    let _guard = crate::support::native_clients_lock();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t");
    let table = path.to_string_lossy().into_owned();
    runtime().block_on(async {
        let cluster = rdkafka::mocking::MockCluster::new(1).unwrap();
        cluster.create_topic("c", 2, 1).unwrap();
        let brokers = cluster.bootstrap_servers();
        let mut p = pipeline(&brokers, "c", &table);
        p.cluster_by = vec!["device".into(), "id".into()];
        p.flush.max_rows = 40;
        p.compaction.enabled = true;
        p.compaction.min_files = 4;
        p.compaction.interval = "200ms".parse().unwrap();
        // Ten bursts, each once the one before is in the table: ten flushes at least, so the
        // compactor's threshold of four files is met whatever a poll takes at once.
        let producer = tokio::spawn({
            let (brokers, table) = (brokers.clone(), table.clone());
            async move {
                for burst in 0..10 {
                    let records: Vec<_> = (burst * 100..(burst + 1) * 100)
                        .map(|i| {
                            (i % 2, None, Some(json!({"id": i, "device": format!("dévice-{}", i % 5)}).to_string()))
                        })
                        .collect();
                    produce(&brokers, "c", &records).await;
                    crate::support::tables::wait_for_rows_in(&table, (burst as usize + 1) * 100).await;
                }
            }
        });
        let reports =
            run_until(vec![p], None, |m| committed(m, "p0") >= 1000 && m.pipeline("p0").compaction_commits.get() >= 1)
                .await;
        producer.await.unwrap();
        assert_eq!(reports["p0"].rows_committed, 1000);
    });
    assert_eq!(crate::support::tables::ids(&table), (0..1000).collect::<Vec<_>>());
    let log = commits(&path);
    let first = &log[0].1;
    assert!(first.iter().any(|a| a.get("domainMetadata").is_some()) && first.iter().any(|a| a.get("add").is_some()));
    assert_eq!(run_json(&["describe", &table])["clusteringColumns"], json!(["device", "id"]));
    let clustered = log.iter().flat_map(|(_, a)| a.iter().filter_map(|x| x.get("add")));
    let history = String::from_utf8_lossy(&deltabus(&["history", &table]).stdout).into_owned();
    assert!(clustered.filter(|a| a["clusteringProvider"] == "deltabus").count() > 0, "nothing clustered: {history}");
    let out = deltabus(&["changes", &table, "--from", "0"]);
    let inserts = String::from_utf8_lossy(&out.stdout).lines().filter(|l| l.contains("\"insert\"")).count();
    assert_eq!(inserts, 1000);
}

/// Deletes and keyed upserts into a table Spark created liquid-clustered (deletion vectors on):
/// `deltabus delete` and a push table upserting by key write into it as into any table, the
/// clustering columns and their statistics stay (a file given a deletion vector keeps Spark's
/// clustering), and Spark reads, optimizes and reads again the same rows as `deltabus cat`.
#[test]
fn deletes_and_keyed_upserts_into_a_spark_clustered_table() {
    use std::io::BufRead;
    let Some(spark) = spark() else { return };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("spark clustered");
    let s = path.to_str().unwrap();
    spark_sql(
        &spark,
        &[
            &format!(
                "CREATE TABLE delta.`{s}` (id BIGINT, name STRING, n INT) USING delta CLUSTER BY (n) \
                 TBLPROPERTIES ('delta.enableDeletionVectors' = 'true')"
            ),
            &format!("INSERT INTO delta.`{s}` SELECT id, concat('ü-', id), CAST(id % 7 AS INT) FROM range(0, 100)"),
            &format!("OPTIMIZE delta.`{s}`"),
        ],
    )
    .unwrap_or_else(|e| panic!("{e}"));

    // A delete by the clustering column: 14 of the 100 rows (ids 3, 10, ..., 94).
    let deleted = run_json(&["delete", s, "--where", "n = 3"]);
    assert_eq!(deleted["rowsDeleted"], 14, "{deleted}");
    assert_eq!(spark_rows(&spark, s), sorted(rows(s)));

    // Upserts by key through a push table: ids 0..10 renamed (3 and 10 come back), 200..205 new.
    let config = dir.path().join("serve.toml");
    let text = format!(
        "[server]\nlisten = \"127.0.0.1:0\"\n[server.tables.c]\ntable = {}\nkey_columns = [\"id\"]\n",
        toml::Value::String(s.to_string())
    );
    std::fs::write(&config, text).unwrap();
    let mut server = crate::support::processes::serve(&config, &dir.path().join("serve.log"), None);
    let mut first = String::new();
    std::io::BufReader::new(server.stdout.take().unwrap()).read_line(&mut first).unwrap();
    let addr = serde_json::from_str::<Value>(&first).unwrap()["listening"].as_str().unwrap().to_string();
    let body: String = (0..=10)
        .chain(200..206)
        .map(|i| json!({"id": i, "name": format!("upserted-{i}-名前"), "n": i % 7}).to_string() + "\n")
        .collect();
    // A producer retries a 503 (the table still opening its key index) as the push contract says.
    let pushed = std::process::Command::new("curl")
        .args(["-sS", "--fail", "--retry", "30", "-H", "Content-Type: application/x-ndjson", "--data-binary", &body])
        .arg(format!("http://{addr}/v1/tables/c/records"))
        .output()
        .unwrap();
    let log = std::fs::read_to_string(dir.path().join("serve.log")).unwrap_or_default();
    assert!(pushed.status.success(), "{}{log}", String::from_utf8_lossy(&pushed.stderr));
    let (status, _) = crate::support::processes::terminate(server);
    assert!(status.success());

    let ours = rows(s);
    let ids: std::collections::BTreeSet<i64> = ours.iter().map(|r| r["id"].as_i64().unwrap()).collect();
    assert_eq!((ours.len(), ids.len()), (86 + 2 + 6, 94), "each key once: {ours:?}");
    let renamed = ours.iter().filter(|r| r["name"].as_str().is_some_and(|n| n.starts_with("upserted-"))).count();
    assert_eq!(renamed, 17);
    assert_eq!(spark_rows(&spark, s), sorted(ours.clone()));
    assert_eq!(run_json(&["describe", s])["clusteringColumns"], json!(["n"]));
    // The upsert's commit: Spark's file again with a deletion vector (its clustering kept) and
    // a new file of the changed rows (with statistics for the clustering column).
    let (_, actions) = commits(&path).pop().unwrap();
    let adds: Vec<&Value> = actions.iter().filter_map(|a| a.get("add")).collect();
    assert!(adds.iter().any(|a| a["deletionVector"].is_object() && a["clusteringProvider"] == "liquid"), "{adds:?}");
    for a in &adds {
        let st: Value = serde_json::from_str(a["stats"].as_str().unwrap()).unwrap();
        assert!(st["minValues"]["n"].is_number(), "the clustering column keeps its statistics: {st}");
    }
    spark_sql(&spark, &[&format!("OPTIMIZE delta.`{s}`")]).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(spark_rows(&spark, s), sorted(ours));
    let history = spark_sql(&spark, &[&format!("DESCRIBE HISTORY delta.`{s}`")]).unwrap();
    let engines: Vec<&str> = history.iter().filter_map(|h| h["engineInfo"].as_str()).collect();
    assert!(engines.iter().filter(|e| e.starts_with("deltabus/")).count() >= 2, "{engines:?}");
}
