//! Spark 4.2 with Delta Lake 4.4 (the engine the protocol is defined by; one session for the
//! run, `tools/spark-delta/server.py`) against deltabus, row for row:
//! - Spark reads what deltabus writes: a partitioned table with Unicode values and partition
//!   values that need escaping in paths, appends, deletes as deletion vectors, DV-purging
//!   compaction and a checkpoint; column mapping with schema evolution; `DESCRIBE HISTORY`
//!   shows deltabus's commitInfo;
//! - a Spark Structured Streaming query reading a table deltabus appends to and compacts, run
//!   again after each step, delivers each row exactly once (compaction's rewrites carry
//!   `dataChange=false` and are not replayed), also while a Kafka pipeline fills the table,
//!   and `deltabus follow` reads the table that Spark's stream writes with each row once;
//! - Spark as a second writer: its UPDATE, DELETE and MERGE (retried when they lose a race)
//!   beside deltabus appending and compacting; no row lost or repeated, both engines read
//!   the same table;
//! - deltabus reads what Spark writes: INSERT, UPDATE, DELETE and MERGE with deletion vectors
//!   and the change data feed on, and `deltabus changes` equals Spark's `table_changes`
//!   (update pre- and post-images included); column mapping with a renamed and a dropped
//!   column; type widening; row tracking, liquid clustering and V2 checkpoints together;
//! - row tracking and in-commit timestamps as Spark reads them from deltabus's tables; the
//!   generated columns both compute; Spark tables whose rules deltabus cannot keep (identity,
//!   CHECK constraints, expressions it cannot compute) refused untouched.

use serde_json::{json, Value};

use crate::support::spark::{sorted, spark, spark_row_ids, spark_rows, spark_sql, spark_stream_once};
use crate::support::{deltabus, rows, write_ok};

fn cat(table: &str) -> Vec<Value> {
    sorted(rows(table))
}

fn run_ok(args: &[&str]) {
    let out = deltabus(args);
    assert!(out.status.success(), "deltabus {args:?}: {}", String::from_utf8_lossy(&out.stderr));
}

const COUNTRIES: [&str; 7] = ["DE", "Zürich", "a b", "x/y", "p=q", "100%", ""];

fn records(ids: std::ops::Range<i64>) -> String {
    ids.map(|i| {
        json!({"id": i, "country": COUNTRIES[i as usize % COUNTRIES.len()], "name": format!("名前-ü-{i}"),
               "amount": i as f64 * 1.5, "ok": i % 2 == 0})
        .to_string()
            + "\n"
    })
    .collect()
}

#[test]
fn spark_reads_every_step_of_a_table_deltabus_writes() {
    let Some(spark) = spark() else { return };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("events");
    let t = path.to_str().unwrap();
    let same = |step: &str| {
        let ours = cat(t);
        assert!(!ours.is_empty());
        assert_eq!(spark_rows(&spark, t), ours, "Spark reads the table as deltabus does after {step}");
    };
    let props = ["--partition-by", "country", "--property", "delta.enableDeletionVectors=true"];
    write_ok(&path, &props, &records(0..70));
    same("the first write");
    write_ok(&path, &[], &records(70..140));
    same("an append");
    run_ok(&["delete", t, "--where", "id < 30 OR country = 'Zürich' OR name IN ('名前-ü-77', '名前-ü-99')"]);
    same("a delete (deletion vectors)");
    run_ok(&["compact", t]);
    same("compaction");
    run_ok(&["checkpoint", t]);
    write_ok(&path, &[], &records(140..150));
    same("a checkpoint and one more commit");

    let history = spark_sql(&spark, &[&format!("DESCRIBE HISTORY delta.`{t}`")]).unwrap();
    let ours = crate::support::run_json(&["describe", t]);
    assert_eq!(history.len() as u64, ours["version"].as_u64().unwrap() + 1, "every version in Spark's history");
    for h in &history {
        assert!(h["engineInfo"].as_str().is_some_and(|e| e.starts_with("deltabus/")), "{h}");
        assert!(h["operation"].as_str().is_some_and(|o| !o.is_empty()), "{h}");
    }
    let ops: Vec<&str> = history.iter().filter_map(|h| h["operation"].as_str()).collect();
    assert!(ops.contains(&"DELETE") && ops.contains(&"OPTIMIZE"), "{ops:?}");
}

#[test]
fn spark_reads_a_column_mapped_table_deltabus_evolves() {
    let Some(spark) = spark() else { return };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mapped");
    let t = path.to_str().unwrap();
    let props = ["--property", "delta.columnMapping.mode=name", "--partition-by", "country"];
    write_ok(&path, &props, &records(0..20));
    // A later batch brings a new column, with a name Parquet could not hold as it is.
    let wider: String = (20..40)
        .map(|i| {
            json!({"id": i, "country": "DE", "name": "n", "amount": 1.0, "ok": true, "Größe (cm)": i}).to_string()
                + "\n"
        })
        .collect();
    write_ok(&path, &["--evolve-schema"], &wider);
    let ours = cat(t);
    assert!(ours.iter().any(|r| r.get("Größe (cm)").is_some()), "{ours:?}");
    assert_eq!(spark_rows(&spark, t), ours);
}

#[test]
fn deltabus_reads_and_tails_what_spark_writes() {
    let Some(spark) = spark() else { return };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("spark");
    let t = path.to_str().unwrap();
    let q = |s: &str| s.replace("{T}", &format!("delta.`{t}`"));
    let statements = [
        q("CREATE TABLE {T} (id BIGINT, name STRING, part STRING) USING delta PARTITIONED BY (part) \
           TBLPROPERTIES ('delta.enableDeletionVectors' = 'true', 'delta.enableChangeDataFeed' = 'true')"),
        q("INSERT INTO {T} SELECT id, concat('ü-', id), CASE id % 3 WHEN 0 THEN 'a b' WHEN 1 THEN 'Zürich' ELSE 'x/y' END \
           FROM range(0, 300)"),
        q("UPDATE {T} SET name = concat(name, '-updated') WHERE id % 10 = 1"),
        q("DELETE FROM {T} WHERE id % 7 = 0"),
        q("MERGE INTO {T} AS t USING (SELECT id, 'merged' AS name, 'a b' AS part FROM range(290, 320)) AS s \
           ON t.id = s.id WHEN MATCHED THEN UPDATE SET name = s.name WHEN NOT MATCHED THEN INSERT *"),
        q("SELECT count(*) AS n FROM {T}"),
    ];
    let statements: Vec<&str> = statements.iter().map(String::as_str).collect();
    let counted = spark_sql(&spark, &statements).unwrap();
    assert_eq!(counted[0]["n"].as_i64(), Some(cat(t).len() as i64));
    assert_eq!(cat(t), spark_rows(&spark, t), "deltabus reads Spark's table as Spark does");
    let files = crate::support::run_json(&["files", t]);
    assert!(files["files"].as_array().unwrap().iter().any(|f| f["dv"] == true), "Spark wrote deletion vectors");

    // The change feed of versions 1.. (the creation has no rows): the same rows, change types
    // and versions (commit timestamps are printed differently).
    let out = deltabus(&["changes", t, "--from", "1"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let strip = |mut r: Value| {
        r.as_object_mut().unwrap().remove("_commit_timestamp");
        r
    };
    let ours: Vec<Value> =
        String::from_utf8_lossy(&out.stdout).lines().map(|l| strip(serde_json::from_str(l).unwrap())).collect();
    let theirs = spark_sql(&spark, &[&format!("SELECT * FROM table_changes_by_path('{t}', 1)")]).unwrap();
    let theirs: Vec<Value> = theirs.into_iter().map(strip).collect();
    let kinds = |rows: &[Value]| {
        let mut k: Vec<String> = rows.iter().map(|r| r["_change_type"].as_str().unwrap().to_string()).collect();
        k.sort();
        k.dedup();
        k
    };
    assert_eq!(kinds(&theirs), ["delete", "insert", "update_postimage", "update_preimage"]);
    assert_eq!(sorted(ours), sorted(theirs), "deltabus changes equals Spark's table_changes");
}

#[test]
fn spark_and_deltabus_streams_pass_each_row_once_both_ways() {
    let Some(spark) = spark() else { return };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("source");
    let t = path.to_str().unwrap();
    let sink = dir.path().join("sink").to_string_lossy().into_owned();
    let checkpoint = dir.path().join("checkpoint").to_string_lossy().into_owned();
    let followed = dir.path().join("followed").to_string_lossy().into_owned();
    // Spark's stream runs, then deltabus follows the table Spark's stream writes.
    let stream = || {
        spark_stream_once(&spark, t, &sink, &checkpoint).unwrap_or_else(|e| panic!("{e}"));
        run_ok(&["follow", &sink, "--into", &followed, "--follower-id", "after-spark", "--once"]);
    };
    let props = ["--partition-by", "country", "--target-file-size", "4KiB"];
    write_ok(&path, &props, &records(0..40));
    stream();
    // Small appends, compacted after the stream read some of them and before it read others.
    for batch in 1..4i64 {
        write_ok(&path, &[], &records(batch * 40..batch * 40 + 40));
    }
    stream();
    write_ok(&path, &[], &records(160..200));
    run_ok(&["compact", t]);
    stream();
    run_ok(&["compact", t, "--min-file-size", "1MiB"]);
    write_ok(&path, &[], &records(200..240));
    stream();
    let history = String::from_utf8(deltabus(&["history", t]).stdout).unwrap();
    assert!(history.lines().filter(|l| l.contains("OPTIMIZE")).count() >= 1, "compaction rewrote files: {history}");
    let got = cat(&sink);
    let mut ids: Vec<i64> = got.iter().map(|r| r["id"].as_i64().unwrap()).collect();
    ids.sort_unstable();
    assert_eq!(ids, (0..240).collect::<Vec<_>>(), "each row once in Spark's stream");
    assert_eq!(got, cat(t), "the stream's rows are the table's");
    // The follower appends the change rows (the row, `_change_type` and the commit's version
    // and time): one insert for each row.
    let changes = cat(&followed);
    assert!(changes.iter().all(|r| r["_change_type"] == "insert"), "{changes:?}");
    let rows: Vec<Value> = changes
        .into_iter()
        .map(|mut r| {
            r.as_object_mut().unwrap().retain(|k, _| !k.starts_with('_'));
            r
        })
        .collect();
    assert_eq!(sorted(rows), got, "deltabus follows Spark's stream output, each row once");
}

/// Runs `sql` in Spark again while it loses a race with a concurrent deltabus commit (Spark's
/// ConcurrentAppend/DeleteRead/DeleteDelete exceptions); each statement here is idempotent.
fn spark_retrying(spark: &str, sql: &str) -> u32 {
    for attempt in 0..20 {
        match spark_sql(spark, &[sql]) {
            Ok(_) => return attempt,
            Err(e) if e.contains("Concurrent") => continue,
            Err(e) => panic!("{sql}: {e}"),
        }
    }
    panic!("{sql}: lost 20 races in a row")
}

#[test]
fn spark_updates_deletes_and_merges_beside_deltabus_appending_and_compacting() {
    let Some(spark) = spark() else { return };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("shared");
    let t = path.to_str().unwrap().to_string();
    let rows = |ids: std::ops::Range<i64>| -> String {
        ids.map(|i| json!({"id": i, "v": format!("ü-{i}")}).to_string() + "\n").collect()
    };
    let props = ["--property", "delta.enableDeletionVectors=true", "--target-file-size", "8KiB"];
    write_ok(&path, &props, &rows(0..1000));
    // deltabus appends 20 batches and compacts after every fifth, while Spark changes the table.
    let writer = {
        let (path, t) = (path.clone(), t.clone());
        std::thread::spawn(move || {
            let mut compactions = 0;
            for b in 0..20i64 {
                write_ok(&path, &[], &rows(1000 + b * 50..1050 + b * 50));
                if b % 5 == 4 {
                    let out = deltabus(&["compact", &t, "--min-file-size", "1MiB"]);
                    assert!(out.status.success(), "compact: {}", String::from_utf8_lossy(&out.stderr));
                    compactions += 1;
                }
            }
            compactions
        })
    };
    let table = format!("delta.`{t}`");
    let mut retries = 0;
    for sql in [
        format!("UPDATE {table} SET v = 'spark' WHERE id < 200"),
        format!("DELETE FROM {table} WHERE id >= 900 AND id < 1000"),
        format!(
            "MERGE INTO {table} AS t USING (SELECT id FROM range(100, 300)) AS s ON t.id = s.id \
             WHEN MATCHED THEN UPDATE SET v = 'merged'"
        ),
        format!("DELETE FROM {table} WHERE id = 1003 OR id = 1998"),
    ] {
        retries += spark_retrying(&spark, &sql);
    }
    assert_eq!(writer.join().unwrap(), 4);
    // Ids 1003 and 1998 may have been appended after Spark's delete ran: only what Spark saw
    // was deleted. Every other row is there once, with its last value.
    let ours = cat(&t);
    let mut seen = std::collections::BTreeMap::new();
    for r in &ours {
        let id = r["id"].as_i64().unwrap();
        assert!(seen.insert(id, r["v"].as_str().unwrap().to_string()).is_none(), "id {id} twice");
    }
    for id in (0..900).chain(1000..2000) {
        let want = match id {
            0..=99 => "spark".to_string(),
            100..=299 => "merged".to_string(),
            1003 | 1998 => continue,
            _ => format!("ü-{id}"),
        };
        assert_eq!(seen.remove(&id), Some(want), "id {id}");
    }
    seen.remove(&1003);
    seen.remove(&1998);
    assert!(seen.is_empty(), "rows that should be gone: {seen:?}");
    assert_eq!(spark_rows(&spark, &t), ours, "both engines read the same table ({retries} Spark retries)");
}

/// Spark writes a table with `statements` (`{T}` names it); deltabus reads it row for row as
/// Spark does. The table's path.
fn spark_writes_deltabus_reads(spark: &str, dir: &std::path::Path, name: &str, statements: &[&str]) -> String {
    let t = dir.join(name).to_string_lossy().into_owned();
    let table = format!("delta.`{t}`");
    let statements: Vec<String> = statements.iter().map(|s| s.replace("{T}", &table)).collect();
    let statements: Vec<&str> = statements.iter().map(String::as_str).collect();
    spark_sql(spark, &statements).unwrap_or_else(|e| panic!("{name}: {e}"));
    let out = deltabus(&["cat", &t]);
    assert!(out.status.success(), "{name}: deltabus cat: {}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(cat(&t), spark_rows(spark, &t), "{name}: deltabus reads it as Spark does");
    t
}

#[test]
fn deltabus_reads_spark_tables_with_the_newer_table_features() {
    let Some(spark) = spark() else { return };
    let dir = tempfile::tempdir().unwrap();
    let fill = "INSERT INTO {T} SELECT id, concat('ü-', id), CAST(id % 100 AS INT) FROM range(0, 200)";
    // Column mapping: a renamed and a dropped column, values written before and after.
    spark_writes_deltabus_reads(
        &spark,
        dir.path(),
        "renamed",
        &[
            "CREATE TABLE {T} (id BIGINT, name STRING, n INT) USING delta \
             TBLPROPERTIES ('delta.columnMapping.mode' = 'name')",
            fill,
            "ALTER TABLE {T} RENAME COLUMN name TO `the name`",
            "ALTER TABLE {T} DROP COLUMN n",
            "INSERT INTO {T} SELECT id, concat('after-', id) FROM range(200, 250)",
        ],
    );
    // Type widening: INT to BIGINT, files of both widths.
    spark_writes_deltabus_reads(
        &spark,
        dir.path(),
        "widened",
        &[
            "CREATE TABLE {T} (id BIGINT, name STRING, n INT) USING delta \
             TBLPROPERTIES ('delta.enableTypeWidening' = 'true')",
            fill,
            "ALTER TABLE {T} CHANGE COLUMN n TYPE BIGINT",
            "INSERT INTO {T} SELECT id, 'wide', id * 10000000000 FROM range(200, 220)",
        ],
    );
    // Row tracking, liquid clustering, V2 checkpoints (every second commit) and deletion
    // vectors together.
    let t = spark_writes_deltabus_reads(
        &spark,
        dir.path(),
        "clustered",
        &[
            "CREATE TABLE {T} (id BIGINT, name STRING, n INT) USING delta CLUSTER BY (n) \
             TBLPROPERTIES ('delta.enableRowTracking' = 'true', 'delta.checkpointPolicy' = 'v2', \
             'delta.checkpointInterval' = '2', 'delta.enableDeletionVectors' = 'true')",
            fill,
            "INSERT INTO {T} SELECT id, 'more', 7 FROM range(200, 300)",
            "DELETE FROM {T} WHERE n = 7",
            "UPDATE {T} SET name = 'updated' WHERE id < 10",
            "OPTIMIZE {T}",
        ],
    );
    // Spark wrote V2 checkpoints (UUID-named), which deltabus read from.
    let log: Vec<String> = std::fs::read_dir(format!("{t}/_delta_log"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(log.iter().any(|n| n.split('.').nth(2).is_some_and(|u| u.len() == 36)), "{log:?}");
    // Their file actions are in sidecars; with the commits before the newest checkpoint gone,
    // both engines read the table from the checkpoint and its sidecars alone.
    let sidecars = std::fs::read_dir(format!("{t}/_delta_log/_sidecars")).unwrap();
    assert!(sidecars.filter_map(|e| e.ok()).any(|e| e.file_name().to_string_lossy().ends_with(".parquet")));
    let newest = log.iter().filter(|n| n.contains(".checkpoint.")).filter_map(|n| n[..20].parse::<u64>().ok()).max();
    let newest = newest.unwrap();
    let before_newest =
        |n: &&String| n.len() == 25 && n.ends_with(".json") && n[..20].parse::<u64>().is_ok_and(|v| v < newest);
    for name in log.iter().filter(before_newest) {
        std::fs::remove_file(format!("{t}/_delta_log/{name}")).unwrap();
    }
    assert_eq!(cat(&t), spark_rows(&spark, &t), "read from the V2 checkpoint and its sidecars");
}

/// The in-commit timestamp of each version's commitInfo.
fn commit_timestamps(table: &str, versions: std::ops::Range<u64>) -> Vec<i64> {
    versions
        .map(|v| {
            let text = std::fs::read_to_string(format!("{table}/_delta_log/{v:020}.json")).unwrap();
            let first: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
            first["commitInfo"]["inCommitTimestamp"].as_i64().unwrap_or_else(|| panic!("version {v}: {first}"))
        })
        .collect()
}

#[test]
fn spark_reads_row_ids_and_commit_timestamps_as_deltabus_writes_them() {
    let Some(spark) = spark() else { return };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tracked");
    let t = path.to_str().unwrap();
    let props = [
        "--partition-by",
        "country",
        "--property",
        "delta.enableRowTracking=true",
        "--property",
        "delta.enableInCommitTimestamps=true",
        "--property",
        "delta.enableDeletionVectors=true",
    ];
    write_ok(&path, &props, &records(0..50));
    write_ok(&path, &[], &records(50..100));
    let first = spark_row_ids(&spark, t, "id");
    for (id, (_, version)) in &first {
        assert_eq!(*version, i64::from(id.parse::<i64>().unwrap() >= 50), "row {id}'s commit version");
    }
    // Deleted rows leave; the others keep their row ids and commit versions (deletion vectors).
    run_ok(&["delete", t, "--where", "id < 20 OR country = 'DE'"]);
    assert_eq!(spark_rows(&spark, t), cat(t));
    let after = spark_row_ids(&spark, t, "id");
    assert_eq!(after.len(), 68);
    assert!(after.iter().all(|(id, ids)| first[id] == *ids), "row ids are stable through a delete");
    // Both engines append; row ids stay distinct (one high-water mark), through a checkpoint.
    spark_sql(&spark, &[&format!("INSERT INTO delta.`{t}` SELECT 1000 + id, 'DE', 's', 1.0, true FROM range(5)")])
        .unwrap();
    run_ok(&["checkpoint", t]);
    write_ok(&path, &[], &records(100..110));
    assert_eq!(spark_rows(&spark, t), cat(t));
    let last = spark_row_ids(&spark, t, "id");
    assert_eq!(last.len(), 83);
    assert!(after.iter().all(|(id, ids)| last[id] == *ids), "row ids are stable through others' appends");
    // Without deletion vectors a delete would rewrite files and give the rows kept new ids:
    // refused, nothing written.
    let plain = dir.path().join("rewrites");
    let p = plain.to_str().unwrap();
    write_ok(&plain, &["--property", "delta.enableRowTracking=true"], &records(0..10));
    let ids = spark_row_ids(&spark, p, "id");
    let entries =
        || std::fs::read_dir(&plain).unwrap().count() + std::fs::read_dir(plain.join("_delta_log")).unwrap().count();
    let before = entries();
    let out = deltabus(&["delete", p, "--where", "id < 3"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.trim().lines().count() == 1 && err.contains("row ids"), "{err}");
    assert_eq!(spark_row_ids(&spark, p, "id"), ids);
    assert_eq!(entries(), before, "nothing written");
    // Spark travels by our in-commit timestamps: each version's timestamp names that version.
    let times = commit_timestamps(t, 0..2);
    for (version, rows) in [(0, 50), (1, 100)] {
        let at = chrono::DateTime::from_timestamp_millis(times[version]).unwrap().format("%Y-%m-%d %H:%M:%S%.3f");
        let sql = format!("SELECT count(*) AS n FROM delta.`{t}` TIMESTAMP AS OF '{at}'");
        let n = spark_sql(&spark, &[&sql]).unwrap()[0]["n"].as_i64().unwrap();
        assert_eq!(n, rows, "Spark at version {version}'s in-commit timestamp");
    }
}

/// `rows` with each `ts` written without trailing zeros in its fraction of a second
/// (`…59.999000Z` and `…59.999Z` are the same instant).
fn instants(rows: Vec<Value>) -> Vec<Value> {
    rows.into_iter()
        .map(|mut r| {
            if let Some(ts) = r.get("ts").and_then(Value::as_str).and_then(|t| t.strip_suffix('Z')) {
                let ts = if ts.contains('.') { ts.trim_end_matches('0').trim_end_matches('.') } else { ts };
                r["ts"] = json!(format!("{ts}Z"));
            }
            r
        })
        .collect()
}

#[test]
fn spark_and_deltabus_compute_the_same_generated_columns() {
    let Some(spark) = spark() else { return };
    let dir = tempfile::tempdir().unwrap();
    let events = |ids: std::ops::Range<i64>| -> String {
        ids.map(|i| {
            let ts = ["2024-02-28T22:15:00Z", "2024-02-29T23:59:59.999Z", "2024-12-31T00:00:00Z"][i as usize % 3];
            let ts = if i % 7 == 6 { Value::Null } else { json!(ts) };
            json!({"id": i, "ts": ts, "name": format!("ü-{i}")}).to_string() + "\n"
        })
        .collect()
    };
    let agree = |t: &str, expected: usize| {
        let check = format!(
            "SELECT count(*) AS n, count_if(ts_date <=> CAST(ts AS DATE)) AS d, \
             count_if(h <=> date_format(ts, 'yyyy-MM-dd-HH')) AS h FROM delta.`{t}`"
        );
        let r = &spark_sql(&spark, &[&check]).unwrap()[0];
        assert_eq!(
            (r["n"].as_u64(), r["d"].as_u64(), r["h"].as_u64()),
            (Some(expected as u64), r["n"].as_u64(), r["n"].as_u64()),
            "{t}: {r}"
        );
        assert_eq!(cat(t).len(), expected);
    };
    // deltabus creates the table with `date(ts)` and `hour(ts)` partitions; Spark appends to it.
    let ours = dir.path().join("ours");
    let t = ours.to_str().unwrap();
    let schema = dir.path().join("schema.json");
    std::fs::write(
        &schema,
        json!({"type": "struct", "fields": [
            {"name": "id", "type": "long", "nullable": true, "metadata": {}},
            {"name": "ts", "type": "timestamp", "nullable": true, "metadata": {}},
            {"name": "name", "type": "string", "nullable": true, "metadata": {}}]})
        .to_string(),
    )
    .unwrap();
    write_ok(
        &ours,
        &["--schema", schema.to_str().unwrap(), "--partition-by", "date(ts),hour(ts) as h"],
        &events(0..30),
    );
    spark_sql(
        &spark,
        &[&format!("INSERT INTO delta.`{t}` (id, ts, name) VALUES (100, TIMESTAMP'2025-06-01 13:45:00', 'spark')")],
    )
    .unwrap();
    write_ok(&ours, &[], &events(30..40));
    agree(t, 41);
    assert_eq!(spark_rows(&spark, t).len(), 41);
    // Spark creates one (V2 checkpoints every two commits, deletion vectors); deltabus appends,
    // checkpoints and reads it.
    let theirs = dir.path().join("theirs");
    let s = theirs.to_str().unwrap();
    spark_sql(
        &spark,
        &[
            &format!(
                "CREATE TABLE delta.`{s}` (id BIGINT, ts TIMESTAMP, name STRING, \
                 ts_date DATE GENERATED ALWAYS AS (CAST(ts AS DATE)), \
                 h STRING GENERATED ALWAYS AS (date_format(ts, 'yyyy-MM-dd-HH'))) \
                 USING delta PARTITIONED BY (ts_date) TBLPROPERTIES ('delta.checkpointPolicy' = 'v2', \
                 'delta.checkpointInterval' = '2', 'delta.enableDeletionVectors' = 'true')"
            ),
            &format!("INSERT INTO delta.`{s}` (id, ts, name) VALUES (100, TIMESTAMP'2025-06-01 13:45:00', 'spark')"),
        ],
    )
    .unwrap();
    write_ok(&theirs, &[], &events(0..30));
    run_ok(&["checkpoint", s]);
    spark_sql(&spark, &[&format!("DELETE FROM delta.`{s}` WHERE id % 5 = 0")]).unwrap();
    write_ok(&theirs, &[], &events(30..40));
    agree(s, 34);
    assert_eq!(instants(spark_rows(&spark, s)), instants(cat(s)));
}

#[test]
fn spark_tables_deltabus_cannot_keep_the_rules_of_are_refused_untouched() {
    let Some(spark) = spark() else { return };
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        ("identity", "CREATE TABLE {T} (id BIGINT GENERATED ALWAYS AS IDENTITY, name STRING) USING delta", "identity"),
        ("constraint", "CREATE TABLE {T} (id BIGINT, name STRING) USING delta", "constraint"),
        (
            "expression",
            "CREATE TABLE {T} (id BIGINT, name STRING, up STRING GENERATED ALWAYS AS (upper(name))) USING delta",
            "upper(name)",
        ),
    ];
    for (name, create, says) in cases {
        let path = dir.path().join(name);
        let t = path.to_str().unwrap();
        let mut statements = vec![create.replace("{T}", &format!("delta.`{t}`"))];
        if name == "constraint" {
            statements.push(format!("ALTER TABLE delta.`{t}` ADD CONSTRAINT positive CHECK (id > 0)"));
        }
        let columns = if name == "identity" { "(name) VALUES ('a')" } else { "(id, name) VALUES (1, 'a')" };
        statements.push(format!("INSERT INTO delta.`{t}` {columns}"));
        let statements: Vec<&str> = statements.iter().map(String::as_str).collect();
        spark_sql(&spark, &statements).unwrap();
        let before = spark_rows(&spark, t);
        let log = std::fs::read_dir(path.join("_delta_log")).unwrap().count();
        let out = crate::support::write_jsonl(&path, &[], "{\"id\":2,\"name\":\"b\"}\n");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success() && err.trim().lines().count() == 1, "{name}: {err}");
        assert!(err.to_lowercase().contains(says), "{name}: the error names {says}: {err}");
        assert_eq!(std::fs::read_dir(path.join("_delta_log")).unwrap().count(), log, "{name}: nothing committed");
        assert_eq!(spark_rows(&spark, t), before, "{name}");
    }
}

#[test]
fn spark_streams_a_table_a_kafka_pipeline_fills_while_compaction_rewrites_it() {
    use crate::support::processes::{start_producer_to, table_rows, terminate, wait_for_rows, TOTAL};
    use std::time::{Duration, Instant};
    let Some(spark) = spark() else { return };
    let Some(brokers) = crate::support::emulator("DELTABUS_TEST_KAFKA_BROKERS") else { return };
    let _clients = crate::support::native_clients_lock();
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("events").to_string_lossy().into_owned();
    let sink = dir.path().join("sink").to_string_lossy().into_owned();
    let checkpoint = dir.path().join("checkpoint").to_string_lossy().into_owned();
    let topic = format!("spark-stream-{}", uuid::Uuid::new_v4().simple());
    {
        use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async {
            let admin: AdminClient<_> =
                rdkafka::ClientConfig::new().set("bootstrap.servers", &brokers).create().unwrap();
            let new = NewTopic::new(&topic, 4, TopicReplication::Fixed(1));
            let r = admin.create_topics([&new], &AdminOptions::new()).await.expect("create topic");
            assert!(r.iter().all(Result::is_ok), "{r:?}");
        });
    }
    let producer = start_producer_to(brokers.clone(), topic.clone(), 8);
    let log_path = dir.path().join("ingest.log");
    let log = std::fs::File::create(&log_path).unwrap();
    let ingest = std::process::Command::new(env!("CARGO_BIN_EXE_deltabus"))
        .args(["ingest", &topic, &table, "--brokers", &brokers, "--app-id", "spark-stream", "--create"])
        .args(["--flush-interval", "300ms", "--max-rows", "500"])
        .stdout(std::process::Stdio::piped())
        .stderr(log)
        .spawn()
        .unwrap();
    // Spark's stream runs again and again while the pipeline commits, each run followed by a
    // compaction (beside the pipeline's commits), until every record is in the table.
    wait_for_rows(&table, 1, &log_path);
    let deadline = Instant::now() + Duration::from_secs(240);
    let mut runs = 0;
    loop {
        let complete = producer.is_finished() && table_rows(&table) >= TOTAL;
        spark_stream_once(&spark, &table, &sink, &checkpoint).unwrap_or_else(|e| panic!("{e}"));
        run_ok(&["compact", &table]);
        runs += 1;
        if complete {
            break;
        }
        assert!(Instant::now() < deadline, "{} of {TOTAL} rows after 240 s", table_rows(&table));
    }
    producer.join().unwrap();
    let (status, _) = terminate(ingest);
    assert!(status.success(), "the pipeline stops cleanly: {status}");
    spark_stream_once(&spark, &table, &sink, &checkpoint).unwrap_or_else(|e| panic!("{e}"));
    let history = String::from_utf8(deltabus(&["history", &table]).stdout).unwrap();
    let optimized = history.lines().filter(|l| l.contains("OPTIMIZE")).count();
    assert!(runs >= 2 && optimized >= 1, "{runs} stream runs, {optimized} compactions");
    let mut ids: Vec<i64> = cat(&sink).iter().map(|r| r["id"].as_i64().unwrap()).collect();
    ids.sort_unstable();
    assert_eq!(ids, (0..TOTAL).collect::<Vec<_>>(), "each record once in Spark's stream ({runs} runs)");
}
