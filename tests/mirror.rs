//! `follow --mirror`: a source that writers append to, delete from (deletion vectors and
//! copy-on-write), compact and evolve is mirrored by runs that fail store calls and are
//! killed with -9 mid-run, and by two racing mirrors of which one is paused past the other's
//! progress; the target's rows equal the source's at every version a mirror delivered (read by
//! deltabus), and at the end row for row as the reference reader reads them.

use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::Value;

use crate::support::tables::write_lines;
use crate::support::{deltabus, run_json};

fn sorted_rows(args: &[&str]) -> Vec<String> {
    let out = deltabus(args);
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    normalized(&out.stdout)
}

/// JSON lines as sorted objects without nulls, sorted: column order and absent nulls aside,
/// deltabus and the reference reader print the same rows the same way.
fn normalized(text: &[u8]) -> Vec<String> {
    let mut rows: Vec<String> = String::from_utf8_lossy(text)
        .lines()
        .map(|l| {
            let v: serde_json::Map<String, Value> = serde_json::from_str(l).unwrap();
            let sorted: std::collections::BTreeMap<_, _> = v.into_iter().filter(|(_, v)| !v.is_null()).collect();
            serde_json::to_string(&sorted).unwrap()
        })
        .collect();
    rows.sort();
    rows
}

/// The reference reader's rows of `table`, normalized (`None` without the reader).
fn reference_rows(table: &str) -> Option<Vec<String>> {
    let oracle = crate::support::kernel_oracle()?;
    let out = Command::new(oracle).arg("rows").arg(table).output().unwrap();
    assert!(out.status.success(), "reference reader: {}", String::from_utf8_lossy(&out.stderr));
    Some(normalized(&out.stdout))
}

fn mirror_args<'a>(source: &'a str, target: &'a str) -> Vec<&'a str> {
    vec!["follow", source, "--into", target, "--follower-id", "copy", "--mirror", "--key-columns", "id", "--once"]
}

#[test]
fn a_mirror_equals_its_source_at_every_delivered_version_through_faults_and_kills() {
    let dir = tempfile::tempdir().unwrap();
    let (source, target) = (dir.path().join("source"), dir.path().join("target"));
    let (s, t) = (source.to_str().unwrap().to_string(), target.to_str().unwrap().to_string());
    let mut next = 0;
    for round in 0..8 {
        let rows: String = (next..next + 60).map(|id| format!("{{\"id\":{id},\"v\":\"r{round}-{id}\"}}\n")).collect();
        write_lines(&s, &rows);
        next += 60;
        match round % 4 {
            1 => assert!(deltabus(&["delete", &s, "--where", &format!("id < {}", round * 20)]).status.success()),
            2 => {
                // Updates as delete + insert of the same keys (copy-on-write in one commit).
                assert!(deltabus(&["delete", &s, "--where", &format!("id >= {} AND id < {}", next - 30, next - 20)])
                    .status
                    .success());
                let again: String =
                    (next - 30..next - 20).map(|id| format!("{{\"id\":{id},\"v\":\"again-{id}\"}}\n")).collect();
                write_lines(&s, &again);
            }
            3 => assert!(deltabus(&["compact", &s]).status.success()),
            _ => {}
        }
        if round == 5 {
            // A new column: the mirror takes the source's schema.
            let mut w = Command::new(env!("CARGO_BIN_EXE_deltabus"))
                .args(["write", &s, "--evolve-schema"])
                .stdin(Stdio::piped())
                .stdout(Stdio::null())
                .spawn()
                .unwrap();
            let line = format!("{{\"id\":{next},\"v\":\"wide\",\"extra\":\"e\"}}\n");
            std::io::Write::write_all(&mut w.stdin.take().unwrap(), line.as_bytes()).unwrap();
            assert!(w.wait().unwrap().success());
            next += 1;
        }
        // A run killed with -9 part way, then one that completes under store faults.
        let mut child = Command::new(env!("CARGO_BIN_EXE_deltabus"))
            .args(mirror_args(&s, &t))
            .env("DELTABUS_FAULTS", format!("rate=0.05,seed={round}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // A pause about time: each round's kill comes a little later.
        std::thread::sleep(Duration::from_millis(40 + 30 * round));
        let _ = child.kill();
        child.wait().unwrap();
        let out = Command::new(env!("CARGO_BIN_EXE_deltabus"))
            .args(mirror_args(&s, &t))
            .env("DELTABUS_FAULTS", format!("rate=0.05,seed={}", 100 + round))
            .output()
            .unwrap();
        assert!(out.status.success(), "mirror run: {}", String::from_utf8_lossy(&out.stderr));
        let report: Value = serde_json::from_slice(&out.stdout).unwrap();
        let at = report["position"].as_u64().expect("a position");
        assert_eq!(at, run_json(&["describe", &s])["version"].as_u64().unwrap(), "caught up");
        let expected = sorted_rows(&["cat", &s, "--version", &at.to_string()]);
        assert_eq!(sorted_rows(&["cat", &t]), expected, "round {round}: the mirror at source version {at}");
        if let Some(rows) = reference_rows(&t) {
            assert_eq!(rows, expected, "round {round}: the reference reader's rows of the mirror");
        }
    }
    // Every version of the target that delivered a source version (its txn) equals the source
    // at that version: no delivery left the mirror part-way between two source versions.
    let mut checked = 0;
    for (target_version, source_version) in delivered_versions(&target) {
        let expected = sorted_rows(&["cat", &s, "--version", &source_version.to_string()]);
        let got = sorted_rows(&["cat", &t, "--version", &target_version.to_string()]);
        assert_eq!(got, expected, "target version {target_version} = source version {source_version}");
        checked += 1;
    }
    // The source's data commits: 8 appends, 2 deletes, 2 delete + re-append pairs, the wide row
    // (compactions change no rows and deliver nothing).
    assert_eq!(checked, 15, "one delivery per data commit of the source");
    crate::support::spark::spark_reads_as_deltabus(&t);
}

/// Two mirror processes of the same follower on one target while a writer appends, deletes,
/// updates (copy-on-write) and compacts the source: one is paused with SIGSTOP while the other
/// catches up past it, then resumed (its delivery in flight must not land twice); the other is
/// killed with -9 and restarted; every store call may fail. Each target commit delivers a
/// source version once, in order, and the target equals the source at every delivered version.
#[test]
fn racing_and_paused_mirrors_deliver_each_source_version_once() {
    let dir = tempfile::tempdir().unwrap();
    let (source, target) = (dir.path().join("source"), dir.path().join("target"));
    let (s, t) = (source.to_str().unwrap().to_string(), target.to_str().unwrap().to_string());
    let log = dir.path().join("mirrors.log");
    write_lines(&s, &(0..50).map(|id| format!("{{\"id\":{id},\"v\":\"first\"}}\n")).collect::<String>());
    let spawn = |seed: u32| {
        let log = std::fs::OpenOptions::new().create(true).append(true).open(&log).unwrap();
        Command::new(env!("CARGO_BIN_EXE_deltabus"))
            .args(["follow", &s, "--into", &t, "--follower-id", "copy", "--mirror", "--key-columns", "id"])
            .args(["--poll-interval", "50ms"])
            .env("DELTABUS_FAULTS", format!("rate=0.03,seed={seed}"))
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap()
    };
    let signal = |child: &std::process::Child, sig: &str| {
        assert!(Command::new("kill").arg(sig).arg(child.id().to_string()).status().unwrap().success());
    };
    let (mut a, mut b) = (spawn(1), spawn(2));
    let mut next = 50;
    for round in 0..12 {
        let rows: String = (next..next + 25).map(|id| format!("{{\"id\":{id},\"v\":\"r{round}\"}}\n")).collect();
        write_lines(&s, &rows);
        next += 25;
        match round % 4 {
            1 => assert!(deltabus(&[
                "delete",
                &s,
                "--where",
                &format!("id >= {} AND id < {}", round * 9, round * 9 + 6)
            ])
            .status
            .success()),
            2 => {
                let (lo, hi) = (next - 20, next - 10);
                assert!(deltabus(&["delete", &s, "--where", &format!("id >= {lo} AND id < {hi}")]).status.success());
                write_lines(&s, &(lo..hi).map(|id| format!("{{\"id\":{id},\"v\":\"again\"}}\n")).collect::<String>());
            }
            3 => assert!(deltabus(&["compact", &s]).status.success()),
            _ => {}
        }
        match round {
            2 => signal(&a, "-STOP"),
            6 => signal(&a, "-CONT"),
            8 => {
                signal(&b, "-KILL");
                b.wait().unwrap();
                b = spawn(3);
            }
            _ => {}
        }
        // A pause about time: kills and restarts are spaced while the mirrors run.
        std::thread::sleep(Duration::from_millis(150));
    }
    let expected = sorted_rows(&["cat", &s]);
    let deadline = std::time::Instant::now() + Duration::from_secs(90);
    while !target.join("_delta_log").exists() || sorted_rows(&["cat", &t]) != expected {
        let log = std::fs::read_to_string(&log).unwrap_or_default();
        assert!(std::time::Instant::now() < deadline, "the mirrors did not catch up: {log}");
        std::thread::sleep(Duration::from_millis(200));
    }
    for m in [&mut a, &mut b] {
        signal(m, "-TERM");
        let status = m.wait().unwrap();
        assert!(status.success(), "{}", std::fs::read_to_string(&log).unwrap_or_default());
    }
    let delivered = delivered_versions(&target);
    let versions: Vec<u64> = delivered.iter().map(|(_, v)| *v).collect();
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    eprintln!(
        "{} deliveries; mirror log: {} lines, {} injected faults",
        delivered.len(),
        text.lines().count(),
        text.matches("fault_injected").count()
    );
    assert!(versions.windows(2).all(|w| w[0] < w[1]), "each source version delivered once, in order: {versions:?}");
    for (target_version, source_version) in &delivered {
        let expected = sorted_rows(&["cat", &s, "--version", &source_version.to_string()]);
        let got = sorted_rows(&["cat", &t, "--version", &target_version.to_string()]);
        assert_eq!(got, expected, "target version {target_version} = source version {source_version}");
    }
    assert_eq!(sorted_rows(&["cat", &t]), expected);
    if let Some(rows) = reference_rows(&t) {
        assert_eq!(rows, expected, "the reference reader's rows of the mirror");
    }
}

/// `follow --mirror` without key columns copies the source's files and deletion vectors and
/// replays its commits: with row tracking, partitions and deletion vectors on the source, and
/// runs killed with -9 or failing 5% of store calls, the target equals the source at every
/// delivered version, its live files are the source's (same paths, same deletion vectors, same
/// base row ids: every row keeps its row id) and the row-id high-water mark is the source's; a
/// mirror started part way begins as a copy of the source before that version.
#[test]
fn a_mirror_without_keys_copies_files_and_keeps_row_ids() {
    let dir = tempfile::tempdir().unwrap();
    let (source, target, later) = (dir.path().join("source"), dir.path().join("target"), dir.path().join("later"));
    let (s, t, l) = (source.to_str().unwrap(), target.to_str().unwrap(), later.to_str().unwrap());
    let write = |lines: String, extra: &[&str]| {
        let mut w = Command::new(env!("CARGO_BIN_EXE_deltabus"))
            .args(["write", s, "--partition-by", "p", "--property", "delta.enableRowTracking=true"])
            .args(["--property", "delta.enableDeletionVectors=true"])
            .args(extra)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        std::io::Write::write_all(&mut w.stdin.take().unwrap(), lines.as_bytes()).unwrap();
        assert!(w.wait().unwrap().success());
    };
    let mirror = |target: &str, from: &str, seed: u64| {
        Command::new(env!("CARGO_BIN_EXE_deltabus"))
            .args(["follow", s, "--into", target, "--follower-id", "files", "--mirror", "--once", "--from", from])
            .env("DELTABUS_FAULTS", format!("rate=0.05,seed={seed}"))
            .output()
            .unwrap()
    };
    for round in 0..6u64 {
        let rows: String = (round * 40..round * 40 + 40)
            .map(|id| format!("{{\"id\":{id},\"p\":\"part-{}\",\"v\":\"ü{round}\"}}\n", id % 3))
            .collect();
        write(rows, &[]);
        if round % 2 == 1 {
            let predicate = format!("id >= {} AND id < {}", round * 30, round * 30 + 15);
            assert!(deltabus(&["delete", s, "--where", &predicate]).status.success());
        }
        if round == 3 {
            write("{\"id\":1000,\"p\":\"part-0\",\"v\":\"wide\",\"extra\":\"e\"}\n".into(), &["--evolve-schema"]);
        }
        let mut child = Command::new(env!("CARGO_BIN_EXE_deltabus"))
            .args(["follow", s, "--into", t, "--follower-id", "files", "--mirror", "--once", "--from", "0"])
            .env("DELTABUS_FAULTS", format!("rate=0.05,seed={round}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // A pause about time: each round's kill comes a little later.
        std::thread::sleep(Duration::from_millis(30 + 25 * round));
        let _ = child.kill();
        child.wait().unwrap();
        let out = mirror(t, "0", 100 + round);
        assert!(out.status.success(), "mirror run: {}", String::from_utf8_lossy(&out.stderr));
        if round == 2 {
            // A second mirror starts here: a copy of the source before its first version.
            let at = run_json(&["describe", s])["version"].as_u64().unwrap();
            let out = mirror(l, &at.to_string(), 200);
            assert!(out.status.success(), "later mirror: {}", String::from_utf8_lossy(&out.stderr));
        }
    }
    let out = mirror(l, "0", 300);
    assert!(out.status.success(), "later mirror: {}", String::from_utf8_lossy(&out.stderr));
    let delivered = delivered_versions(&target);
    assert_eq!(delivered.len() as u64, run_json(&["describe", s])["version"].as_u64().unwrap() + 1, "every commit");
    for (target_version, source_version) in &delivered {
        let expected = sorted_rows(&["cat", s, "--version", &source_version.to_string()]);
        let got = sorted_rows(&["cat", t, "--version", &target_version.to_string()]);
        assert_eq!(got, expected, "target version {target_version} = source version {source_version}");
    }
    let expected = sorted_rows(&["cat", s]);
    assert_eq!(sorted_rows(&["cat", l]), expected, "the mirror started part way");
    // The same files, deletion vectors and row ids; the same high-water mark.
    let files = |url: &str| {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let snapshot =
            rt.block_on(deltabus::storage::Table::open(url, Default::default()).unwrap().snapshot(None)).unwrap();
        let mut files: Vec<(String, Option<i64>, Option<String>)> = snapshot
            .files()
            .into_iter()
            .map(|a| (a.path.clone(), a.base_row_id, a.deletion_vector.as_ref().map(|d| d.unique_id())))
            .collect();
        files.sort();
        let mark = snapshot.domains().get("delta.rowTracking").map(|d| d.configuration.clone());
        (files, mark, snapshot.metadata.partition_columns.clone(), snapshot.metadata.id.clone())
    };
    let (source_files, target_files) = (files(s), files(t));
    assert!(source_files.0.iter().all(|f| f.1.is_some()) && source_files.0.iter().any(|f| f.2.is_some()));
    assert_eq!(target_files.0, source_files.0, "live files with their row ids and deletion vectors");
    assert_eq!((&target_files.1, &target_files.2), (&source_files.1, &source_files.2));
    assert_ne!(target_files.3, source_files.3, "the mirror is a table of its own");
    for table in [t, l] {
        if let Some(rows) = reference_rows(table) {
            assert_eq!(rows, expected, "the reference reader's rows of {table}");
        }
    }
    // Spark reads the mirrors' rows, and the same row ids (and commit versions) as the source's.
    if let Some(spark) = crate::support::spark::spark() {
        let ids = crate::support::spark::spark_row_ids(&spark, s, "id");
        for table in [t, l] {
            crate::support::spark::spark_reads_as_deltabus(table);
            assert_eq!(crate::support::spark::spark_row_ids(&spark, table, "id"), ids, "row ids of {table}");
        }
    }
    // Compaction (no row tracking here: deltabus compacts only tables without it) is replayed
    // like any commit: the target ends with the source's compacted files.
    let (s2, t2) = (dir.path().join("compacted"), dir.path().join("compacted-copy"));
    let (s2, t2) = (s2.to_str().unwrap(), t2.to_str().unwrap());
    for round in 0..4 {
        write_lines(s2, &(round * 10..round * 10 + 10).map(|id| format!("{{\"id\":{id}}}\n")).collect::<String>());
    }
    assert!(deltabus(&["delete", s2, "--where", "id < 5"]).status.success());
    assert!(deltabus(&["compact", s2]).status.success());
    write_lines(s2, "{\"id\":100}\n");
    let out = Command::new(env!("CARGO_BIN_EXE_deltabus"))
        .args(["follow", s2, "--into", t2, "--follower-id", "files", "--mirror", "--once"])
        .env("DELTABUS_FAULTS", "rate=0.05,seed=7")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(files(t2).0, files(s2).0, "the compacted files");
    assert_eq!(sorted_rows(&["cat", t2]), sorted_rows(&["cat", s2]));
    // What cannot be a copy is refused with a reason: a filter, or a target that is not one.
    let out =
        deltabus(&["follow", s, "--into", t, "--follower-id", "files", "--mirror", "--once", "--where", "id > 3"]);
    assert!(!out.status.success() && String::from_utf8_lossy(&out.stderr).contains("--where does not apply"));
    let out = deltabus(&["follow", s, "--into", t, "--follower-id", "other", "--mirror", "--once"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("is not a mirror made by"), "{err}");
}

/// (target version, source version) of each target commit carrying the mirror's txn.
fn delivered_versions(target: &std::path::Path) -> Vec<(u64, u64)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(target.join("_delta_log")).unwrap() {
        let name = e.unwrap().file_name().to_string_lossy().into_owned();
        let Some(v) = name.strip_suffix(".json").and_then(|v| v.parse::<u64>().ok()) else { continue };
        let text = std::fs::read_to_string(target.join("_delta_log").join(&name)).unwrap();
        let txn = text
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .find_map(|a| a["txn"]["version"].as_u64());
        if let Some(source_version) = txn {
            out.push((v, source_version));
        }
    }
    out.sort_unstable();
    out
}

/// `[delta]` pipelines of `run` with `mirror = true` and with `group`: the mirror equals the
/// source and the group member's table holds every change row once; bad combinations are
/// refused at configuration.
#[test]
fn run_pipelines_mirror_and_join_groups() {
    let dir = tempfile::tempdir().unwrap();
    let p = |n: &str| dir.path().join(n).to_str().unwrap().to_string();
    let (s, mirror, member) = (p("source"), p("mirror"), p("member"));
    write_lines(&s, &(0..40).map(|id| format!("{{\"id\":{id},\"v\":\"a\"}}\n")).collect::<String>());
    let config = dir.path().join("run.toml");
    let write_config = |extra: &str| {
        std::fs::write(
            &config,
            format!(
                "[pipelines.copy]\ntable = {mirror:?}\n[pipelines.copy.delta]\nsource = {s:?}\nstart = \"0\"\npoll_interval = \"50ms\"\nmirror = true\nkey_columns = [\"id\"]\n\
                 [pipelines.share]\ntable = {member:?}\n[pipelines.share.delta]\nsource = {s:?}\nstart = \"0\"\npoll_interval = \"50ms\"\ngroup = \"g\"\nlease = \"2s\"\n{extra}"
            ),
        )
        .unwrap();
    };
    write_config("start_extra = 1\n");
    let bad = deltabus(&["--config", config.to_str().unwrap(), "run"]);
    assert!(!bad.status.success());
    write_config("");
    let mut run = Command::new(env!("CARGO_BIN_EXE_deltabus"))
        .args(["--config", config.to_str().unwrap(), "run"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    assert!(deltabus(&["delete", &s, "--where", "id < 10"]).status.success());
    write_lines(&s, &(40..60).map(|id| format!("{{\"id\":{id},\"v\":\"b\"}}\n")).collect::<String>());
    let expected = sorted_rows(&["cat", &s]);
    let changes = deltabus(&["changes", &s, "--from", "0"]).stdout;
    let change_rows = String::from_utf8_lossy(&changes).lines().count();
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        let copied = deltabus(&["cat", &mirror]);
        let shared = deltabus(&["cat", &member]);
        let done = copied.status.success()
            && shared.status.success()
            && sorted_rows(&["cat", &mirror]) == expected
            && String::from_utf8_lossy(&shared.stdout).lines().count() == change_rows;
        if done {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "the pipelines did not catch up");
        std::thread::sleep(Duration::from_millis(200));
    }
    assert!(Command::new("kill").arg("-TERM").arg(run.id().to_string()).status().unwrap().success());
    assert!(run.wait().unwrap().success());
    let f = run_json(&["followers", &s]);
    assert_eq!(f["groups"][0]["group"], "g");
    // Refused at configuration: a mirror copying files that would skip commits, a group
    // starting at a snapshot.
    for (section, why) in [
        (
            "[pipelines.x]\ntable = \"/tmp/x\"\n[pipelines.x.delta]\nsource = \"/tmp/y\"\nmirror = true\nskip_change_commits = true\n",
            "delta.mirror",
        ),
        ("[pipelines.x]\ntable = \"/tmp/x\"\n[pipelines.x.delta]\nsource = \"/tmp/y\"\ngroup = \"g\"\n", "delta.start"),
    ] {
        std::fs::write(&config, section).unwrap();
        let out = deltabus(&["--config", config.to_str().unwrap(), "config", "check"]);
        let text = String::from_utf8_lossy(&out.stderr).to_string() + &String::from_utf8_lossy(&out.stdout);
        assert!(!out.status.success() && text.contains(why), "{section}: {text}");
    }
}

/// A `[delta]` pipeline whose source is its own table is refused like `follow` refuses it:
/// with a one-line error naming the pipeline and the table, before anything is written, for a
/// plain follower, a mirror and a group member alike.
#[test]
fn a_run_pipeline_refuses_its_own_table_as_its_source() {
    let dir = tempfile::tempdir().unwrap();
    let t = dir.path().join("tàble").to_str().unwrap().to_string();
    write_lines(&t, "{\"id\":1}\n");
    let config = dir.path().join("run.toml");
    for extra in ["", "mirror = true\n", "group = \"g\"\nstart = \"latest\"\n"] {
        std::fs::write(
            &config,
            format!("[pipelines.loop]\ntable = {t:?}\n[pipelines.loop.delta]\nsource = {t:?}\n{extra}"),
        )
        .unwrap();
        let out = deltabus(&["--config", config.to_str().unwrap(), "run"]);
        assert!(!out.status.success(), "{extra}: expected a failure");
        let err = String::from_utf8_lossy(&out.stderr);
        let last = err.lines().last().unwrap_or_default();
        assert!(last.starts_with("error: ") && !err.contains("panicked"), "{extra}: {err}");
        assert!(last.contains("pipeline loop") && last.contains("both the source and the target"), "{extra}: {err}");
        assert_eq!(std::fs::read_dir(format!("{t}/_delta_log")).unwrap().count(), 1, "{extra}: nothing written");
        assert!(!std::path::Path::new(&format!("{t}/_deltabus")).exists(), "{extra}: no lease or registration left");
    }
}
