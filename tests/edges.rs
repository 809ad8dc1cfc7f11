//! The edges a new user meets first: values land exactly as sent or are refused by line and
//! field, table properties and options are checked or applied (never silently ignored),
//! followers resume where they stopped, maintenance never breaks a write in flight, and
//! processes end quietly on closed pipes and signals.

use std::io::Write as _;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::{assert_clean_failure, deltabus, run_json, write_jsonl};

fn rows(table: &str) -> Vec<Value> {
    let out = deltabus(&["cat", table]);
    assert!(out.status.success(), "cat: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn new_long_table(dir: &std::path::Path) -> String {
    let table = dir.join("t").to_string_lossy().into_owned();
    let out = write_jsonl(table.as_ref(), &[], "{\"x\":1}\n");
    assert!(out.status.success(), "{}", stderr(&out));
    table
}

#[test]
fn values_that_do_not_fit_their_column_exactly_are_refused_by_line_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let table = new_long_table(dir.path());
    for (input, why) in [
        ("{\"x\":2}\n{\"x\":2.9}\n", "fraction"),
        ("{\"x\":-0.5}\n", "fraction"),
        ("{\"x\":99999999999999999999999}\n", "out of range"),
        ("{\"x\":true}\n", "boolean"),
        ("{\"x\":{\"a\":1}}\n", "object"),
    ] {
        let out = write_jsonl(table.as_ref(), &[], input);
        assert_clean_failure(&out, input);
        let e = stderr(&out);
        assert!(e.contains("field \"x\"") && e.contains(why), "{input}: {e}");
        assert_eq!(out.status.code(), Some(1), "{input}");
    }
    assert!(stderr(&write_jsonl(table.as_ref(), &[], "{\"x\":2}\n{\"x\":2.9}\n")).contains("line 2"));
    // Nothing was committed, and exact spellings of integers still land.
    let out = write_jsonl(table.as_ref(), &[], "{\"x\":2.0}\n{\"x\":\"7\"}\n{\"x\":1e3}\n");
    assert!(out.status.success(), "{}", stderr(&out));
    let mut xs: Vec<i64> = rows(&table).iter().map(|r| r["x"].as_i64().unwrap()).collect();
    xs.sort_unstable();
    assert_eq!(xs, vec![1, 2, 7, 1000]);
}

#[test]
fn inference_keeps_every_value_mixed_types_become_strings_big_integers_decimals() {
    let dir = tempfile::tempdir().unwrap();
    // 1,000 integers, then a fraction past the sample: the column is long, so the fraction
    // is refused by line and field, and nothing is created.
    let t1 = dir.path().join("late_fraction").to_string_lossy().into_owned();
    let mut input: String = (0..1000).map(|i| format!("{{\"x\":{i}}}\n")).collect();
    input.push_str("{\"x\":1.99}\n");
    let out = write_jsonl(t1.as_ref(), &[], &input);
    assert_clean_failure(&out, "a fraction after 1,000 integers");
    assert!(stderr(&out).contains("line 1001: field \"x\": 1.99 has a fraction"), "{}", stderr(&out));
    assert!(!dir.path().join("late_fraction/_delta_log/00000000000000000000.json").exists());
    // Within the sample, integers and fractions make a double column that keeps 1.99.
    let t0 = dir.path().join("early_fraction").to_string_lossy().into_owned();
    assert!(write_jsonl(t0.as_ref(), &[], "{\"x\":1}\n{\"x\":1.99}\n").status.success());
    assert!(rows(&t0).iter().any(|r| r["x"].as_f64() == Some(1.99)));
    // Past 64 bits: decimal(38,0), exact.
    let t2 = dir.path().join("big").to_string_lossy().into_owned();
    let out = write_jsonl(t2.as_ref(), &[], "{\"n\":99999999999999999999999}\n{\"n\":5}\n");
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&deltabus(&["cat", &t2]).stdout).into_owned();
    assert!(text.contains("99999999999999999999999"), "{text}");
    let described = run_json(&["describe", &t2]);
    assert!(described.to_string().contains("decimal(38,0)"), "{described}");
    // Mixed types: a string column holding each value's JSON text.
    let t3 = dir.path().join("mixed").to_string_lossy().into_owned();
    let out = write_jsonl(t3.as_ref(), &[], "{\"a\":1}\n{\"a\":\"x\"}\n{\"a\":{\"b\":true}}\n{\"a\":null}\n");
    assert!(out.status.success(), "{}", stderr(&out));
    let mut got: Vec<String> = rows(&t3).iter().filter_map(|r| r["a"].as_str().map(str::to_string)).collect();
    got.sort();
    assert_eq!(got, vec!["1", "x", "{\"b\":true}"]);
    // Objects nested too deep for a schema are refused with the way out.
    let t4 = dir.path().join("deep").to_string_lossy().into_owned();
    let deep = format!("{}1{}\n", "{\"a\":".repeat(50), "}".repeat(50));
    let out = write_jsonl(t4.as_ref(), &[], &deep);
    assert_clean_failure(&out, "deep");
    assert!(stderr(&out).contains("nests objects more than"), "{}", stderr(&out));
    // Invalid UTF-8 names its line.
    let mut child = Command::new(env!("CARGO_BIN_EXE_deltabus"))
        .args(["write", dir.path().join("utf8").to_str().unwrap()])
        .stdin(Stdio::piped())
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(b"{\"a\":1}\n{\"a\":\"\xff\"}\n").unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(stderr(&out).contains("line 2: not valid UTF-8"), "{}", stderr(&out));
}

#[test]
fn numbers_for_timestamps_are_seconds() {
    let dir = tempfile::tempdir().unwrap();
    let schema = dir.path().join("schema.json");
    std::fs::write(
        &schema,
        r#"{"type":"struct","fields":[{"name":"ts","type":"timestamp","nullable":true,"metadata":{}}]}"#,
    )
    .unwrap();
    let table = dir.path().join("t").to_string_lossy().into_owned();
    let out = write_jsonl(
        table.as_ref(),
        &["--schema", schema.to_str().unwrap()],
        "{\"ts\":1700000000}\n{\"ts\":1700000000.5}\n{\"ts\":\"2024-01-02T03:04:05Z\"}\n",
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let mut ts: Vec<String> = rows(&table).iter().map(|r| r["ts"].as_str().unwrap().to_string()).collect();
    ts.sort();
    assert_eq!(ts[0], "2023-11-14T22:13:20.000000Z");
    assert_eq!(ts[1], "2023-11-14T22:13:20.500000Z");
    let out = write_jsonl(table.as_ref(), &[], "{\"ts\":1.0000001}\n");
    assert!(stderr(&out).contains("microsecond"), "{}", stderr(&out));
}

#[test]
fn table_properties_and_options_are_checked_applied_or_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = |n: &str| dir.path().join(n).to_string_lossy().into_owned();
    for prop in [
        "delta.enableDeletionVectors=maybe",
        "delta.checkpointInterval=0",
        "delta.checkpointInterval=-1",
        "delta.deletedFileRetentionDuration=garbage",
    ] {
        let out = write_jsonl(path("p").as_ref(), &["--property", prop], "{\"a\":1}\n");
        assert_clean_failure(&out, prop);
        assert!(stderr(&out).contains(prop.split('=').next().unwrap()), "{prop}: {}", stderr(&out));
    }
    assert!(!dir.path().join("p/_delta_log/00000000000000000000.json").exists());
    // Booleans in any case.
    let ict = path("ict");
    let out = write_jsonl(ict.as_ref(), &["--property", "delta.enableInCommitTimestamps=TRUE"], "{\"a\":1}\n");
    assert!(out.status.success(), "{}", stderr(&out));
    let first = std::fs::read_to_string(dir.path().join("ict/_delta_log/00000000000000000000.json")).unwrap();
    assert!(first.contains("inCommitTimestamp\":"), "version 0 carries its in-commit timestamp: {first}");
    // Column names that need column mapping.
    for name in ["", "a b", "c=d"] {
        let out = write_jsonl(path("names").as_ref(), &[], &format!("{{\"{name}\":1}}\n"));
        assert_clean_failure(&out, name);
    }
    let mapped =
        write_jsonl(path("mapped").as_ref(), &["--property", "delta.columnMapping.mode=name"], "{\"a b\":1}\n");
    assert!(mapped.status.success(), "{}", stderr(&mapped));
    // On an existing table: a different partitioning is refused, a feature change is refused,
    // a plain property is applied and reported.
    let t = path("existing");
    assert!(write_jsonl(t.as_ref(), &[], "{\"a\":1,\"p\":\"x\"}\n").status.success());
    let out = write_jsonl(t.as_ref(), &["--partition-by", "p"], "{\"a\":2,\"p\":\"x\"}\n");
    assert_clean_failure(&out, "partition-by on an existing table");
    assert!(stderr(&out).contains("--partition-by"), "{}", stderr(&out));
    let out = write_jsonl(t.as_ref(), &["--property", "delta.enableDeletionVectors=true"], "{\"a\":2,\"p\":\"x\"}\n");
    assert_clean_failure(&out, "feature property on an existing table");
    let out = write_jsonl(t.as_ref(), &["--property", "delta.checkpointInterval=3"], "{\"a\":2,\"p\":\"x\"}\n");
    assert!(out.status.success(), "{}", stderr(&out));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["propertiesSet"], serde_json::json!(["delta.checkpointInterval=3"]));
    let described = run_json(&["describe", &t]);
    assert_eq!(described["properties"]["delta.checkpointInterval"], "3", "{described}");
    // Every column a partition column.
    let out = write_jsonl(path("allparts").as_ref(), &["--partition-by", "p"], "{\"p\":\"x\"}\n");
    assert_clean_failure(&out, "every column a partition column");
    assert!(stderr(&out).contains("every column is a partition column"), "{}", stderr(&out));
    // A file is not a table directory.
    let file = dir.path().join("afile");
    std::fs::write(&file, "x").unwrap();
    let out = write_jsonl(&file, &[], "{\"a\":1}\n");
    assert_clean_failure(&out, "write into a file");
    assert!(stderr(&out).contains("is a file, not a table directory"), "{}", stderr(&out));
}

#[test]
fn where_literals_of_the_wrong_type_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let t = dir.path().join("t").to_string_lossy().into_owned();
    assert!(write_jsonl(t.as_ref(), &[], "{\"name\":\"10\",\"flag\":true,\"n\":1}\n").status.success());
    for predicate in ["name = 5", "flag = 1", "name > 4", "n = 'x'"] {
        let out = deltabus(&["delete", &t, "--where", predicate]);
        assert_clean_failure(&out, predicate);
        assert!(stderr(&out).contains("--where: column"), "{predicate}: {}", stderr(&out));
        let out = deltabus(&["changes", &t, "--from", "0", "--where", predicate]);
        assert_clean_failure(&out, predicate);
    }
    let out = deltabus(&["changes", &t, "--from", "0", "--where", "name > '4'"]);
    assert!(out.status.success(), "{}", stderr(&out));
}

#[test]
fn a_tail_with_a_state_file_resumes_where_it_started() {
    let dir = tempfile::tempdir().unwrap();
    let t = new_long_table(dir.path());
    let state = dir.path().join("state.json").to_string_lossy().into_owned();
    // First run, nothing new: the start is recorded anyway.
    let out = deltabus(&["tail", &t, "--once", "--state-file", &state]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(out.stdout.is_empty());
    assert!(std::path::Path::new(&state).exists(), "the first run records where it started");
    // A commit between runs is delivered by the next run.
    assert!(write_jsonl(t.as_ref(), &[], "{\"x\":42}\n").status.success());
    let out = deltabus(&["tail", &t, "--once", "--state-file", &state]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("\"x\":42") && text.lines().count() == 1, "{text}");
    let out = deltabus(&["tail", &t, "--once", "--state-file", &state]);
    assert!(out.stdout.is_empty(), "nothing twice");
    // The same for a table follower started at `latest`.
    let target = dir.path().join("copy").to_string_lossy().into_owned();
    let follow = |expect_rows: u64| {
        let v = run_json(&["follow", &t, "--into", &target, "--follower-id", "f", "--from", "latest", "--once"]);
        assert_eq!(v["rows"], expect_rows, "{v}");
    };
    follow(0);
    assert!(write_jsonl(t.as_ref(), &[], "{\"x\":43}\n").status.success());
    follow(1);
    assert_eq!(rows(&target).iter().filter(|r| r["x"] == 43).count(), 1);
}

#[test]
fn vacuum_never_deletes_a_write_in_flight() {
    let dir = tempfile::tempdir().unwrap();
    let t = new_long_table(dir.path());
    // A staged file of a write in flight: no version names it, and it is new.
    let staged = dir.path().join("t/part-00000-in-flight.parquet");
    std::fs::write(&staged, b"PAR1").unwrap();
    let v = run_json(&["vacuum", &t, "--retention-hours", "0", "--force"]);
    assert!(staged.exists(), "a fresh uncommitted file survives a forced VACUUM: {v}");
    assert_eq!(v["uncommittedFilesKeptUnderHours"], 24, "{v}");
    // Files a version removed go at zero retention as before.
    assert!(write_jsonl(t.as_ref(), &[], "{\"x\":5}\n").status.success());
    assert!(run_json(&["delete", &t, "--where", "x = 1"])["rowsDeleted"] == 1);
    let v = run_json(&["vacuum", &t, "--retention-hours", "0", "--force"]);
    assert!(v["numFiles"].as_u64().unwrap() >= 1, "{v}");
    assert_eq!(rows(&t).len(), 1);
}

#[test]
fn followers_recover_after_log_cleanup_with_skip_gaps_and_errors_name_the_missing_version() {
    let dir = tempfile::tempdir().unwrap();
    let t = new_long_table(dir.path());
    let state = dir.path().join("state.json").to_string_lossy().into_owned();
    let out = deltabus(&["tail", &t, "--from", "0", "--once", "--state-file", &state]);
    assert!(out.status.success(), "{}", stderr(&out));
    for i in 0..12 {
        assert!(write_jsonl(t.as_ref(), &[], &format!("{{\"x\":{i}}}\n")).status.success());
    }
    // Log cleanup: drop commits 0..=9 (a checkpoint at 10 anchors the table).
    let log = dir.path().join("t/_delta_log");
    assert!(log.join("00000000000000000010.checkpoint.parquet").exists());
    for v in 0..10 {
        std::fs::remove_file(log.join(format!("{v:020}.json"))).unwrap();
    }
    let out = deltabus(&["cat", &t, "--version", "5"]);
    assert_clean_failure(&out, "cat a cleaned-up version");
    let e = stderr(&out);
    assert!(e.contains("version 5") && e.contains("oldest version that can be read is 10"), "{e}");
    let out = deltabus(&["tail", &t, "--once", "--state-file", &state]);
    assert_clean_failure(&out, "a follower behind the log without --skip-gaps");
    let out = deltabus(&["tail", &t, "--once", "--state-file", &state, "--skip-gaps"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("\"_commit_version\":11") && text.contains("\"_commit_version\":12"), "{text}");
    assert!(stderr(&out).contains("skipped"), "the gap is reported: {}", stderr(&out));
    // Positions past the log are named as such.
    let out = deltabus(&["changes", &t, "--from", "99"]);
    assert!(stderr(&out).contains("--from 99 is past the latest version, 12"), "{}", stderr(&out));
}

#[test]
fn parallel_appends_into_a_missing_table_all_land() {
    let dir = tempfile::tempdir().unwrap();
    let t = dir.path().join("t").to_string_lossy().into_owned();
    let children: Vec<_> = (0..20)
        .map(|i| {
            let mut c = Command::new(env!("CARGO_BIN_EXE_deltabus"))
                .args(["write", &t])
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            c.stdin.take().unwrap().write_all(format!("{{\"id\":{i}}}\n").as_bytes()).unwrap();
            c
        })
        .collect();
    for c in children {
        let out = c.wait_with_output().unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
    }
    let mut ids: Vec<i64> = rows(&t).iter().map(|r| r["id"].as_i64().unwrap()).collect();
    ids.sort_unstable();
    assert_eq!(ids, (0..20).collect::<Vec<_>>());
}

#[test]
fn an_interrupted_write_removes_its_files_and_commits_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let t = dir.path().join("t").to_string_lossy().into_owned();
    assert!(write_jsonl(t.as_ref(), &[], "{\"x\":1,\"pad\":\"p\"}\n").status.success());
    let mut child = Command::new(env!("CARGO_BIN_EXE_deltabus"))
        .args(["write", &t, "--target-file-size", "64k"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    // Enough rows for several files (pads that do not compress away), then the input stays
    // open while the signal comes.
    let mut rng = crate::support::Rng(7);
    for _ in 0..20_000 {
        let pad: String = (0..25).map(|_| format!("{:08x}", rng.next() as u32)).collect();
        stdin.write_all(format!("{{\"x\":1,\"pad\":\"{pad}\"}}\n").as_bytes()).unwrap();
    }
    stdin.flush().unwrap();
    let parquet = || {
        std::fs::read_dir(dir.path().join("t"))
            .unwrap()
            .flatten()
            .filter(|e| e.path().extension().is_some_and(|x| x == "parquet"))
            .count()
    };
    let started = Instant::now();
    while parquet() < 3 && started.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(parquet() >= 3, "the write staged files");
    assert!(Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap().success());
    let out = child.wait_with_output().unwrap();
    drop(stdin);
    assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
    assert!(stderr(&out).contains("interrupted"), "{}", stderr(&out));
    assert_eq!(parquet(), 1, "only the committed file is left");
    assert_eq!(rows(&t).len(), 1);
}

#[test]
fn closed_pipes_end_commands_quietly() {
    let dir = tempfile::tempdir().unwrap();
    let t = new_long_table(dir.path());
    for i in 0..30 {
        assert!(write_jsonl(t.as_ref(), &[], &format!("{{\"x\":{i}}}\n")).status.success());
    }
    for (args, close_stderr) in [
        (vec!["tail", t.as_str(), "--once", "--from", "0"], true),
        (vec!["tail", t.as_str(), "--from", "0"], false),
        (vec!["changes", t.as_str(), "--from", "0"], true),
        (vec!["cat", t.as_str()], true),
    ] {
        let started = Instant::now();
        let mut child = Command::new(env!("CARGO_BIN_EXE_deltabus"))
            .args(&args)
            .stdout(Stdio::piped())
            .stderr(if close_stderr { Stdio::piped() } else { Stdio::null() })
            .spawn()
            .unwrap();
        // The reader goes away at once, as `| head -c 0` would.
        drop(child.stdout.take());
        if close_stderr {
            drop(child.stderr.take());
        }
        let status = loop {
            if let Some(s) = child.try_wait().unwrap() {
                break s;
            }
            // A hang guard, not a timing figure: the command ends on its own once its reader left.
            assert!(started.elapsed() < Duration::from_secs(300), "{args:?} still running after its reader left");
            std::thread::sleep(Duration::from_millis(20));
        };
        assert_eq!(status.code(), Some(0), "{args:?}");
    }
}

#[test]
fn cat_stops_at_its_limit() {
    let dir = tempfile::tempdir().unwrap();
    let t = dir.path().join("t").to_string_lossy().into_owned();
    let input: String = (0..50_000).map(|i| format!("{{\"x\":{i}}}\n")).collect();
    assert!(write_jsonl(t.as_ref(), &[], &input).status.success());
    let out = deltabus(&["cat", &t, "--limit", "1"]);
    assert_eq!(String::from_utf8_lossy(&out.stdout).lines().count(), 1);
    let out = deltabus(&["cat", &t, "--limit", "0"]);
    assert!(out.status.success() && out.stdout.is_empty());
}

#[test]
fn errors_name_what_is_wrong_and_flags_speak_one_language() {
    let dir = tempfile::tempdir().unwrap();
    let t = new_long_table(dir.path());
    // Missing arguments are named; negative numbers called so; bare `deltabus` is a usage error.
    let out = deltabus(&["cat"]);
    assert!(stderr(&out).contains("<TABLE>") && out.status.code() == Some(1), "{}", stderr(&out));
    let out = deltabus(&["cat", &t, "--limit", "-1"]);
    assert!(stderr(&out).contains("-1") && stderr(&out).contains("negative"), "{}", stderr(&out));
    assert_eq!(deltabus(&[]).status.code(), Some(1));
    // An enum setting names its key.
    let cfg = dir.path().join("c.toml");
    std::fs::write(&cfg, "[log]\nformat = \"xml\"\n").unwrap();
    let out = deltabus(&["config", "check", "--config", cfg.to_str().unwrap()]);
    assert_clean_failure(&out, "enum value");
    let e = stderr(&out);
    assert!(e.contains("log.format: ") && e.contains("text or json") && !e.contains("variant"), "{e}");
    assert!(!e.contains("xml"), "the value is not echoed: {e}");
    // A client property's value is never echoed, even an unknown protocol.
    std::fs::write(
        &cfg,
        "[pipelines.x]\ntable = \"/tmp/t\"\n[pipelines.x.kafka]\nbrokers = \"b:9092\"\ntopic = \"t\"\nproperties = { \"security.protocol\" = \"hunter2\" }\n",
    )
    .unwrap();
    let out = deltabus(&["config", "check", "--config", cfg.to_str().unwrap()]);
    assert_clean_failure(&out, "bad protocol");
    assert!(stderr(&out).contains("security.protocol") && !stderr(&out).contains("hunter2"), "{}", stderr(&out));
    // Paths and tables are named.
    let out = deltabus(&["tail", &t, "--once", "--from", "0", "--output", "/nonexistent/dir/x"]);
    assert!(stderr(&out).contains("/nonexistent/dir/x"), "{}", stderr(&out));
    let out = deltabus(&["follow", &t, "--into", &t, "--follower-id", "f", "--once"]);
    assert!(stderr(&out).contains("both the source and the target"), "{}", stderr(&out));
    let out = deltabus(&["changes", &t, "--from", "5"]);
    assert!(stderr(&out).contains("--from 5 is past the latest version, 0"), "{}", stderr(&out));
    let out = deltabus(&["changes", &t, "--from", "snapshot"]);
    assert!(stderr(&out).contains("tail --from snapshot"), "{}", stderr(&out));
    let out = deltabus(&["changes", &t, "--from", "timestamp:2000-01-01T00:00:00Z"]);
    assert!(out.status.success() && String::from_utf8_lossy(&out.stdout).contains("\"x\":1"), "{}", stderr(&out));
    // Durations for VACUUM; a dry run may look below the retention without --force.
    let v = run_json(&["vacuum", &t, "--retention", "12h", "--dry-run"]);
    assert_eq!(v["dryRun"], true);
    assert_clean_failure(&deltabus(&["vacuum", &t, "--retention", "12h"]), "below the retention");
    // Each store its own hint.
    let out = deltabus(&["cat", "az://container/table"]);
    assert!(stderr(&out).contains("azure_storage_account_name"), "{}", stderr(&out));
    let out = deltabus(&["cat", "abfss://c@account.dfs.core.windows.net/table"]);
    assert!(stderr(&out).contains("no Azure credentials"), "{}", stderr(&out));
    let out = Command::new(env!("CARGO_BIN_EXE_deltabus"))
        .args(["cat", "gs://bucket/table"])
        .env_remove("GOOGLE_APPLICATION_CREDENTIALS")
        .output()
        .unwrap();
    // deltabus's own refusal, before any request (the metadata server's retries would end in
    // object_store's error instead).
    assert!(stderr(&out).contains("no Google Cloud credentials"), "{}", stderr(&out));
    let out = deltabus(&["cat", "s3://bucket/table", "--storage-option", "aws_no_such_option=1"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("aws_no_such_option"), "{}", stderr(&out));
    // A pipeline's table-shaping settings must match an existing table.
    let out = deltabus(&["ingest", "events", &t, "--brokers", "127.0.0.1:9", "--app-id", "a", "--partition-by", "x"]);
    assert!(stderr(&out).contains("partition_by [x] cannot apply"), "{}", stderr(&out));
    assert_eq!(out.status.code(), Some(1));
    // compact --dry-run counts the rows it would rewrite.
    assert!(write_jsonl(t.as_ref(), &[], "{\"x\":2}\n").status.success());
    let c = run_json(&["compact", &t, "--dry-run"]);
    assert_eq!(c["rows"], 2, "{c}");
    // The demo refuses a table from an earlier run instead of waiting for offsets.
    let out = deltabus(&["demo", "--table", &t]);
    assert_clean_failure(&out, "demo on an existing table");
    assert!(stderr(&out).contains("already holds a table"), "{}", stderr(&out));
}

#[test]
fn a_backfill_against_an_unreachable_broker_fails_in_bounded_time() {
    let dir = tempfile::tempdir().unwrap();
    let t = dir.path().join("t").to_string_lossy().into_owned();
    let out = Command::new(env!("CARGO_BIN_EXE_deltabus"))
        .args(["ingest", "events", &t, "--brokers", "alice:hunter2@127.0.0.1:9", "--app-id", "a", "--create"])
        .args(["--until-end", "--until-end-timeout", "3s"])
        .env("DELTABUS_LOG", "warn")
        .output()
        .unwrap();
    // Bounded by the stall timeout, which the error names (a hang would never return).
    let e = stderr(&out);
    assert_eq!(out.status.code(), Some(3), "{e}");
    assert!(e.lines().last().is_some_and(|l| l.starts_with("error: ")) && !e.contains("panicked"), "{e}");
    assert!(e.contains("stall_timeout") && e.contains("--until-end-timeout"), "{e}");
    assert!(!e.contains("hunter2"), "every line is redacted: {e}");
}

#[test]
fn tail_into_kafka_creates_a_missing_progress_topic_or_says_how() {
    use rdkafka::consumer::{BaseConsumer, Consumer};
    let dir = tempfile::tempdir().unwrap();
    let t = new_long_table(dir.path());
    let tail = |brokers: &str, progress: &str| {
        let args = ["tail", t.as_str(), "--once", "--from", "0", "--to-topic", "changes", "--brokers", brokers];
        deltabus(&[&args[..], &["--follower-id", "f", "--progress-topic", progress]].concat())
    };
    {
        // librdkafka's mock cluster takes no CreateTopics: a bounded, one-line error saying how.
        let _guard = crate::support::native_clients_lock();
        let cluster = rdkafka::mocking::MockCluster::new(1).expect("mock cluster");
        cluster.create_topic("changes", 1, 1).expect("topic");
        let out = tail(&cluster.bootstrap_servers(), "feed-progress");
        assert_clean_failure(&out, "no progress topic");
        let e = stderr(&out);
        assert!(e.contains("feed-progress") && e.contains("cleanup.policy=compact") && e.lines().count() == 1, "{e}");
    }
    // A real broker creates it: one partition, compacted.
    let Some(brokers) = crate::support::emulator("DELTABUS_TEST_KAFKA_BROKERS") else { return };
    let _guard = crate::support::native_clients_lock();
    let progress = format!("feed-progress-{}", std::process::id());
    let out = tail(&brokers, &progress);
    let lookup: BaseConsumer =
        rdkafka::config::ClientConfig::new().set("bootstrap.servers", &brokers).create().unwrap();
    let md = lookup.fetch_metadata(Some(&progress), Duration::from_secs(10)).unwrap();
    let topic = md.topics().iter().find(|t| t.name() == progress).expect("progress topic");
    assert_eq!(topic.partitions().len(), 1, "one partition: {}", stderr(&out));
    // Created by deltabus with its configuration, not by the broker on a metadata request.
    use rdkafka::admin::{AdminClient, AdminOptions, ResourceSpecifier};
    let admin: AdminClient<_> =
        rdkafka::config::ClientConfig::new().set("bootstrap.servers", &brokers).create().unwrap();
    let described = futures::executor::block_on(
        admin.describe_configs([&ResourceSpecifier::Topic(&progress)], &AdminOptions::new()),
    )
    .unwrap();
    let config = described[0].as_ref().unwrap();
    let policy = config.get("cleanup.policy").and_then(|e| e.value.clone());
    assert_eq!(policy.as_deref(), Some("compact"), "the progress topic is compacted: {}", stderr(&out));
}

/// Every codec the table property accepts is one the writer writes (`lz4_raw` included, in
/// any case), and `--compression` is checked before anything is written.
#[test]
fn every_accepted_parquet_codec_is_written() {
    let dir = tempfile::tempdir().unwrap();
    for (spelling, ext) in [("lz4_raw", "lz4"), ("LZ4", "lz4"), ("Snappy", "snappy"), ("none", "uncompressed")] {
        let table = dir.path().join(format!("t_{spelling}"));
        let prop = format!("delta.parquet.compression.codec={spelling}");
        let out = write_jsonl(&table, &["--property", &prop], "{\"a\":1}\n");
        assert!(out.status.success(), "{spelling}: {}", stderr(&out));
        let out = write_jsonl(&table, &[], "{\"a\":2}\n");
        assert!(out.status.success(), "{spelling} again: {}", stderr(&out));
        let files: Vec<String> = std::fs::read_dir(&table)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".parquet"))
            .collect();
        assert_eq!(files.len(), 2, "{spelling}: {files:?}");
        assert!(files.iter().all(|f| f.contains(&format!(".{ext}."))), "{spelling}: {files:?}");
        assert_eq!(rows(&table.to_string_lossy()).len(), 2);
    }
    let table = dir.path().join("flag");
    let out = write_jsonl(&table, &["--compression", "gzip2"], "{\"a\":1}\n");
    assert_clean_failure(&out, "--compression gzip2");
    assert!(stderr(&out).contains("unknown Parquet codec"), "{}", stderr(&out));
    assert!(!table.exists(), "nothing written for a bad flag");
    let out = write_jsonl(&table, &["--compression", "GZIP"], "{\"a\":1}\n");
    assert!(out.status.success(), "{}", stderr(&out));
}
