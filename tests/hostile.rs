//! Damaged and hostile tables: refused with a clear error, never a panic, never a read outside
//! the table root; damaged hints are survived by falling back to listing.

use std::path::Path;
use std::sync::Arc;

use arrow::array::{ArrayRef, Int64Array, RecordBatch};
use deltabus::delta::dv::encode_file;
use roaring::RoaringTreemap;

use crate::support::{assert_clean_failure, deltabus};

const PROTOCOL: &str = r#"{"protocol":{"minReaderVersion":1,"minWriterVersion":2}}"#;
const DV_PROTOCOL: &str = r#"{"protocol":{"minReaderVersion":3,"minWriterVersion":7,"readerFeatures":["deletionVectors"],"writerFeatures":["deletionVectors"]}}"#;
const METADATA: &str = r#"{"metaData":{"id":"t","format":{"provider":"parquet","options":{}},"schemaString":"{\"type\":\"struct\",\"fields\":[{\"name\":\"id\",\"type\":\"long\",\"nullable\":true,\"metadata\":{}}]}","partitionColumns":[],"configuration":{},"createdTime":1}}"#;

fn add(path: &str, extra: &str) -> String {
    format!(
        r#"{{"add":{{"path":"{path}","partitionValues":{{}},"size":0,"modificationTime":1,"dataChange":true{extra}}}}}"#
    )
}

/// Writes a Parquet file of ids `0..n`.
fn write_ids(path: &Path, n: i64) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let batch =
        RecordBatch::try_from_iter(vec![("id", Arc::new(Int64Array::from_iter_values(0..n)) as ArrayRef)]).unwrap();
    let file = std::fs::File::create(path).unwrap();
    let mut w = parquet::arrow::ArrowWriter::try_new(file, batch.schema(), None).unwrap();
    w.write(&batch).unwrap();
    w.close().unwrap();
}

fn write_log(table: &Path, commits: &[Vec<String>]) {
    let log = table.join("_delta_log");
    std::fs::create_dir_all(&log).unwrap();
    for (v, lines) in commits.iter().enumerate() {
        std::fs::write(log.join(format!("{v:020}.json")), lines.join("\n")).unwrap();
    }
}

fn cat(table: &Path) -> std::process::Output {
    deltabus(&["cat", table.to_str().unwrap()])
}

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn data_paths_outside_the_root_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    write_ids(&dir.path().join("outside.parquet"), 3);
    let table = dir.path().join("t");
    for bad in
        ["../outside.parquet", "a/../../outside.parquet", "%2E%2E/outside.parquet", "/etc/passwd", "file:///etc/passwd"]
    {
        let _ = std::fs::remove_dir_all(&table);
        write_log(&table, &[vec![PROTOCOL.into(), METADATA.into(), add(bad, "")]]);
        for cmd in ["cat", "files"] {
            let out = deltabus(&[cmd, table.to_str().unwrap()]);
            assert_clean_failure(&out, &format!("{cmd} {bad}"));
            assert!(stderr(&out).contains("refused path"), "{bad}: {}", stderr(&out));
        }
    }
    // With the opt-in, an absolute path inside the root is accepted; outside still refused.
    let _ = std::fs::remove_dir_all(&table);
    write_ids(&table.join("in.parquet"), 2);
    let inside = format!("file://{}", table.join("in.parquet").display());
    write_log(&table, &[vec![PROTOCOL.into(), METADATA.into(), add(&inside, "")]]);
    assert_clean_failure(&cat(&table), "absolute without opt-in");
    let out = deltabus(&["cat", table.to_str().unwrap(), "--allow-absolute-paths"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(String::from_utf8_lossy(&out.stdout).lines().count(), 2);
}

#[test]
fn deletion_vector_paths_and_bytes_are_checked() {
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("t");
    write_ids(&table.join("f.parquet"), 10);
    let bitmap: RoaringTreemap = [1u64, 3].into_iter().collect();
    let file = encode_file(&bitmap);
    // A genuine DV file at the root, named by the uuid that z85 "vBn[lx{q8@P<9BNH/isA" encodes.
    let dv_name = "deletion_vector_61d16c75-6994-46b7-a15b-8b538852e50e.bin";
    std::fs::write(table.join(dv_name), &file).unwrap();
    let size = file.len() - 9;
    let dv = |storage: &str, path: &str, card: u64| {
        format!(
            r#","deletionVector":{{"storageType":"{storage}","pathOrInlineDv":"{path}","offset":1,"sizeInBytes":{size},"cardinality":{card}}}"#
        )
    };
    let good = dv("u", "vBn[lx{q8@P<9BNH/isA", 2);
    write_log(&table, &[vec![DV_PROTOCOL.into(), METADATA.into(), add("f.parquet", &good)]]);
    let out = cat(&table);
    assert!(out.status.success(), "{}", stderr(&out));
    let ids: Vec<String> = String::from_utf8_lossy(&out.stdout).lines().map(str::to_string).collect();
    assert_eq!(ids.len(), 8);
    assert!(!ids.contains(&r#"{"id":1}"#.to_string()) && !ids.contains(&r#"{"id":3}"#.to_string()));

    let cases = [
        (dv("u", "../../vBn[lx{q8@P<9BNH/isA", 2), "refused path"),
        (dv("p", "file:///etc/passwd", 2), "refused path"),
        (dv("u", "vBn[lx{q8@P<9BNH/isA", 3), "cardinality"),
        (dv("r", "vBn[lx{q8@P<9BNH/isA", 2), "storage type"),
        (dv("i", "@@@@@", 2), "deletion vector"),
    ];
    for (desc, needle) in cases {
        std::fs::remove_dir_all(table.join("_delta_log")).unwrap();
        write_log(&table, &[vec![DV_PROTOCOL.into(), METADATA.into(), add("f.parquet", &desc)]]);
        let out = cat(&table);
        assert_clean_failure(&out, &desc);
        assert!(stderr(&out).contains(needle), "{desc}: {}", stderr(&out));
        if needle == "refused path" {
            // Every command refuses a table that points outside its root.
            for cmd in ["files", "vacuum"] {
                let out = deltabus(&[cmd, table.to_str().unwrap()]);
                assert_clean_failure(&out, &format!("{cmd} {desc}"));
                assert!(stderr(&out).contains(needle), "{cmd} {desc}: {}", stderr(&out));
            }
        }
    }
    // A flipped byte in the DV file fails its checksum.
    let mut corrupt = file.clone();
    corrupt[12] ^= 0x40;
    std::fs::write(table.join(dv_name), &corrupt).unwrap();
    std::fs::remove_dir_all(table.join("_delta_log")).unwrap();
    write_log(&table, &[vec![DV_PROTOCOL.into(), METADATA.into(), add("f.parquet", &good)]]);
    let out = cat(&table);
    assert_clean_failure(&out, "corrupt DV");
    assert!(stderr(&out).contains("checksum"), "{}", stderr(&out));
}

#[test]
fn damaged_logs_are_refused_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("t");
    let cases: Vec<(Vec<Vec<String>>, &str)> = vec![
        (vec![vec![PROTOCOL.into(), METADATA.into()], vec!["{not json".into()]], "not JSON"),
        (vec![vec![PROTOCOL.into()]], "no metaData"),
        (vec![vec![METADATA.into()]], "no protocol"),
        (
            vec![vec![r#"{"protocol":{"minReaderVersion":3,"minWriterVersion":7,"readerFeatures":["catalogManaged"],"writerFeatures":["catalogManaged"]}}"#.into(), METADATA.into()]],
            "catalogManaged",
        ),
        (vec![vec![r#"{"protocol":{"minReaderVersion":4,"minWriterVersion":7,"writerFeatures":[]}}"#.into(), METADATA.into()]], "reader version 4"),
        (vec![vec![PROTOCOL.into(), METADATA.into(), r#"{"add":{"path":"x"}}"#.into()]], "invalid add"),
        (vec![vec![PROTOCOL.into(), METADATA.into(), METADATA.into()]], "more than one metaData"),
        (vec![vec![PROTOCOL.into(), METADATA.replace("\"id\\\",\\\"type\\\":\\\"long", "\"id\\\",\\\"type\\\":\\\"int128").to_string()]], "unknown data type"),
    ];
    for (commits, needle) in cases {
        let _ = std::fs::remove_dir_all(&table);
        write_log(&table, &commits);
        let out = deltabus(&["files", table.to_str().unwrap()]);
        assert_clean_failure(&out, needle);
        assert!(stderr(&out).contains(needle), "{needle}: {}", stderr(&out));
    }
    // A gap in the versions.
    let _ = std::fs::remove_dir_all(&table);
    write_log(&table, &[vec![PROTOCOL.into(), METADATA.into()], vec![], vec![]]);
    std::fs::remove_file(table.join("_delta_log/00000000000000000001.json")).unwrap();
    let out = deltabus(&["files", table.to_str().unwrap()]);
    assert_clean_failure(&out, "gap");
    assert!(stderr(&out).contains("version 1"), "{}", stderr(&out));
    // Asking for a version past the end.
    let out = deltabus(&["files", table.to_str().unwrap(), "--version", "0"]);
    assert!(out.status.success());
    let out = deltabus(&["files", table.to_str().unwrap(), "--version", "9"]);
    assert_clean_failure(&out, "future version");
}

#[test]
fn damaged_checkpoint_hints_fall_back_to_listing() {
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("t");
    write_ids(&table.join("a.parquet"), 2);
    write_ids(&table.join("b.parquet"), 3);
    write_log(&table, &[vec![PROTOCOL.into(), METADATA.into(), add("a.parquet", "")], vec![add("b.parquet", "")]]);
    let t = table.to_str().unwrap();
    assert!(deltabus(&["checkpoint", t]).status.success());
    let log = table.join("_delta_log");
    let count = |out: std::process::Output| {
        assert!(out.status.success(), "{}", stderr(&out));
        String::from_utf8_lossy(&out.stdout).lines().count()
    };
    assert_eq!(count(cat(&table)), 5);
    for hint in ["garbage{", r#"{"version":7,"size":3}"#, r#"{"version":1,"size":3,"checksum":"0000"}"#] {
        std::fs::write(log.join("_last_checkpoint"), hint).unwrap();
        assert_eq!(count(cat(&table)), 5, "hint {hint}");
    }
    // An undecodable checkpoint is skipped in favour of replaying the commits.
    std::fs::write(log.join("00000000000000000001.checkpoint.parquet"), b"PAR1 this is not parquet").unwrap();
    assert_eq!(count(cat(&table)), 5);
    // Without the commits it covers, the table cannot be reconstructed: a clean error.
    std::fs::remove_file(log.join("00000000000000000000.json")).unwrap();
    assert_clean_failure(&cat(&table), "unreadable checkpoint and no commits");
}

/// `checkpoint` is a write: a writer protocol deltabus does not implement is refused, as by
/// `write`, `delete`, `compact` and `vacuum`.
#[test]
fn checkpoint_refuses_an_unknown_writer_protocol() {
    for protocol in [
        r#"{"protocol":{"minReaderVersion":1,"minWriterVersion":8}}"#,
        r#"{"protocol":{"minReaderVersion":3,"minWriterVersion":7,"readerFeatures":[],"writerFeatures":["someFutureFeature"]}}"#,
    ] {
        let dir = tempfile::tempdir().unwrap();
        let table = dir.path().join("t");
        write_ids(&table.join("f.parquet"), 3);
        write_log(&table, &[vec![protocol.into(), METADATA.into(), add("f.parquet", "")]]);
        let out = deltabus(&["checkpoint", table.to_str().unwrap()]);
        assert_clean_failure(&out, protocol);
        assert!(!table.join("_delta_log/00000000000000000000.checkpoint.parquet").exists(), "{protocol}: written");
    }
}

/// `_last_checkpoint` is a hint: when the checkpoint it names is garbage, an older checkpoint
/// or the commits rebuild the table, for reads and writes alike.
#[test]
fn an_unreadable_hinted_checkpoint_falls_back_to_older_state() {
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("t");
    let t = table.to_str().unwrap();
    for n in 0..12 {
        let args: &[&str] = if n == 0 { &["--property", "delta.checkpointInterval=5"] } else { &[] };
        let out = crate::support::write_jsonl(&table, args, &format!("{{\"id\":{n}}}\n"));
        assert!(out.status.success(), "{}", stderr(&out));
    }
    let log = table.join("_delta_log");
    assert!(log.join("00000000000000000010.checkpoint.parquet").exists());
    for garbage in [
        &["00000000000000000010.checkpoint.parquet"][..],
        &["00000000000000000005.checkpoint.parquet", "00000000000000000010.checkpoint.parquet"],
    ] {
        for name in garbage {
            std::fs::write(log.join(name), b"not parquet at all").unwrap();
        }
        let out = cat(&table);
        assert!(out.status.success(), "{garbage:?}: cat: {}", stderr(&out));
        assert_eq!(String::from_utf8_lossy(&out.stdout).lines().count(), 12, "{garbage:?}");
        let out = crate::support::write_jsonl(&table, &[], "{\"id\":100}\n");
        assert!(out.status.success(), "{garbage:?}: write: {}", stderr(&out));
        let out = deltabus(&["delete", t, "--where", "id = 100"]);
        assert!(out.status.success(), "{garbage:?}: delete: {}", stderr(&out));
        let out = deltabus(&["vacuum", t, "--dry-run"]);
        assert!(out.status.success(), "{garbage:?}: vacuum: {}", stderr(&out));
    }
}

/// A directory named like the next commit is refused at once with one line, and the write's
/// files are removed (its commit provably did not land).
#[test]
fn a_directory_named_like_a_commit_is_refused_quickly() {
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("t");
    for n in 0..2 {
        assert!(crate::support::write_jsonl(&table, &[], &format!("{{\"id\":{n}}}\n")).status.success());
    }
    std::fs::create_dir(table.join("_delta_log/00000000000000000002.json")).unwrap();
    let out = crate::support::write_jsonl(&table, &[], "{\"id\":2}\n");
    assert_clean_failure(&out, "directory as commit");
    // Refused by the phantom-version check (three reads of "exists, unreadable"), not after
    // the committer's 50 attempts: that path's error says "gave up after".
    assert!(stderr(&out).contains("cannot be read as a commit file"), "{}", stderr(&out));
    assert!(!stderr(&out).contains("gave up after"), "{}", stderr(&out));
    let parquet = std::fs::read_dir(&table)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".parquet"))
        .count();
    assert_eq!(parquet, 2, "the failed write's file is removed");
}

/// Every command against every kind of hostile or damaged table: no panic, a clean one-line
/// error when it refuses, and nothing outside the table root touched (a file beside the table
/// that the log names survives unchanged).
#[test]
fn every_command_refuses_hostile_tables_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let outside = dir.path().join("outside.parquet");
    write_ids(&outside, 3);
    let before = std::fs::read(&outside).unwrap();
    let dv = r#","deletionVector":{"storageType":"p","pathOrInlineDv":"file:///etc/passwd","offset":1,"sizeInBytes":10,"cardinality":1}"#;
    let tables: Vec<(&str, Vec<String>)> = vec![
        ("path outside", vec![PROTOCOL.into(), METADATA.into(), add("../outside.parquet", "")]),
        ("dv outside", vec![DV_PROTOCOL.into(), METADATA.into(), add("f.parquet", dv)]),
        ("garbage commit", vec!["{not json".into()]),
        ("unknown reader feature", vec![
            r#"{"protocol":{"minReaderVersion":3,"minWriterVersion":7,"readerFeatures":["fromTheFuture"],"writerFeatures":["fromTheFuture"]}}"#.into(),
            METADATA.into(),
        ]),
        ("no metadata", vec![PROTOCOL.into(), add("f.parquet", "")]),
        ("claimed row counts", {
            let huge = r#","stats":"{\"numRecords\":9223372036854775807}""#;
            let mut lines = vec![PROTOCOL.to_string(), METADATA.to_string()];
            lines.extend(["a", "b", "c"].map(|f| add(&format!("{f}.parquet"), huge)));
            lines.push(add("f.parquet", r#","stats":"{\"numRecords\":-9223372036854775808}""#));
            lines.push(
                add("d.parquet", "").replace(r#""size":0"#, r#""size":-9223372036854775808"#),
            );
            lines.push(add("e.parquet", "").replace(r#""size":0"#, r#""size":9223372036854775807"#));
            lines
        }),
    ];
    for (name, lines) in tables {
        let table = dir.path().join(name.replace(' ', "-"));
        write_ids(&table.join("f.parquet"), 3);
        write_log(&table, &[lines]);
        let t = table.to_str().unwrap();
        let target = dir.path().join(format!("{}-copy", name.replace(' ', "-")));
        let target = target.to_str().unwrap();
        let commands: Vec<Vec<&str>> = vec![
            vec!["cat", t],
            vec!["files", t],
            vec!["describe", t],
            vec!["history", t],
            vec!["changes", t, "--from", "0"],
            vec!["tail", t, "--from", "0", "--once"],
            vec!["follow", t, "--into", target, "--follower-id", "f", "--once"],
            vec!["delete", t, "--where", "id = 1"],
            vec!["compact", t, "--dry-run"],
            vec!["compact", t],
            vec!["vacuum", t, "--retention-hours", "0", "--force"],
            vec!["cleanup-log", t],
            vec!["checkpoint", t],
        ];
        for cmd in commands {
            let out = deltabus(&cmd);
            let err = stderr(&out);
            assert!(!err.contains("panicked") && !err.contains("overflowed"), "{name}: {cmd:?} panicked: {err}");
            if !out.status.success() {
                assert_clean_failure(&out, &format!("{name}: {cmd:?}"));
            }
        }
        let out = crate::support::write_jsonl(&table, &[], "{\"id\":9}\n");
        assert!(!stderr(&out).contains("panicked"), "{name}: write panicked");
        assert_eq!(std::fs::read(&outside).unwrap(), before, "{name}: the file outside the root was touched");
    }
}

/// Hostile predicates (10,000 parentheses, 30,000 NOTs) are one-line errors for every command
/// that takes `--where`; a 10,000-term AND chain works.
#[test]
fn hostile_predicates_are_clean_errors_in_every_command() {
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("t");
    assert!(crate::support::write_jsonl(&table, &[], "{\"id\":1}\n{\"id\":2}\n").status.success());
    let t = table.to_str().unwrap();
    let deep = format!("{}id = 1{}", "(".repeat(10_000), ")".repeat(10_000));
    let nots = format!("{}id = 1", "NOT ".repeat(30_000));
    for predicate in [&deep, &nots] {
        for cmd in [
            vec!["delete", t, "--where", predicate],
            vec!["changes", t, "--from", "0", "--where", predicate],
            vec!["tail", t, "--from", "0", "--once", "--where", predicate],
        ] {
            let out = deltabus(&cmd);
            assert_clean_failure(&out, cmd[0]);
            assert!(stderr(&out).contains("nested more than"), "{}", stderr(&out));
        }
    }
    let chain = vec!["id = 1"; 10_000].join(" AND ");
    let out = deltabus(&["changes", t, "--from", "0", "--where", &chain]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(String::from_utf8_lossy(&out.stdout).lines().count(), 1);
}

/// File sizes that overflow 64 bits together are reported saturated, never negative.
#[test]
fn describe_never_reports_a_negative_size() {
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("t");
    let big = |p: &str| {
        format!(
            r#"{{"add":{{"path":"{p}","partitionValues":{{}},"size":{},"modificationTime":1,"dataChange":true}}}}"#,
            i64::MAX / 2 + 1
        )
    };
    write_log(&table, &[vec![PROTOCOL.into(), METADATA.into(), big("a.parquet"), big("b.parquet"), big("c.parquet")]]);
    let d = crate::support::run_json(&["describe", table.to_str().unwrap()]);
    assert_eq!(d["sizeInBytes"].as_i64(), Some(i64::MAX), "{d}");
}
