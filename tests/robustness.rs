//! Decoders of untrusted bytes never panic: commit JSON, `_last_checkpoint`, DV records and
//! bitmaps, and checkpoint Parquet, fed with deterministic mutations of real corpus files.
//! (A cheap, always-on complement to coverage-guided fuzzing.)

use std::path::PathBuf;

use deltabus::delta::actions::parse_commit;
use deltabus::delta::dv::{decode_bitmap, decode_file_record};
use deltabus::delta::last_checkpoint::LastCheckpoint;
use deltabus::storage::{StorageOptions, Table};

use crate::support::conformance_dir;

/// xorshift64*: a deterministic mutation source.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn mutate(&mut self, input: &[u8]) -> Vec<u8> {
        let mut out = input.to_vec();
        match self.next() % 4 {
            0 if !out.is_empty() => {
                let n = (self.next() % 8 + 1) as usize;
                for _ in 0..n {
                    let i = (self.next() as usize) % out.len();
                    out[i] = self.next() as u8;
                }
            }
            1 if !out.is_empty() => out.truncate((self.next() as usize) % out.len()),
            2 if !out.is_empty() => {
                let i = (self.next() as usize) % out.len();
                let b = out[i];
                out.insert(i, b);
            }
            _ => out.extend_from_slice(&self.next().to_le_bytes()),
        }
        out
    }
}

fn corpus_files(suffix: &str) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![conformance_dir().join("tables")];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let p = entry.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.file_name().unwrap().to_string_lossy().ends_with(suffix)
                && !p.file_name().unwrap().to_string_lossy().starts_with('.')
            {
                found.push(p);
            }
        }
    }
    found.sort();
    found
}

#[test]
fn mutated_commits_and_hints_never_panic() {
    let mut rng = Rng(0x5eed);
    let commits = corpus_files(".json");
    assert!(commits.len() > 100);
    for path in commits.iter().take(300) {
        let bytes = std::fs::read(path).unwrap();
        for _ in 0..20 {
            let m = rng.mutate(&bytes);
            let _ = parse_commit(&m, "fuzz");
            let _ = LastCheckpoint::parse(&m);
        }
    }
}

#[test]
fn mutated_deletion_vectors_never_panic() {
    let mut rng = Rng(0xd17);
    let dvs = corpus_files(".bin");
    assert!(!dvs.is_empty());
    for path in &dvs {
        let bytes = std::fs::read(path).unwrap();
        for _ in 0..500 {
            let m = rng.mutate(&bytes);
            if m.len() > 1 {
                let size = (rng.next() % (m.len() as u64 + 8)) as usize;
                let _ = decode_file_record(&m[1..], size, "fuzz");
                let _ = decode_bitmap(&m[1..], "fuzz");
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn mutated_checkpoints_never_panic() {
    let mut rng = Rng(0xc4e);
    let checkpoints = corpus_files(".checkpoint.parquet");
    assert!(!checkpoints.is_empty());
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("_delta_log");
    std::fs::create_dir_all(&log).unwrap();
    let table = Table::open(dir.path().to_str().unwrap(), StorageOptions::default()).unwrap();
    for path in checkpoints.iter().take(12) {
        let bytes = std::fs::read(path).unwrap();
        for _ in 0..25 {
            let m = rng.mutate(&bytes);
            std::fs::write(log.join("00000000000000000000.checkpoint.parquet"), &m).unwrap();
            // Err is fine (and expected); a panic fails the test.
            let _ = table.snapshot(None).await;
        }
    }
}

/// Inputs the fuzzer found, kept as regression tests (`tests/fixtures/fuzz/`).
fn fuzz_fixture(name: &str) -> Vec<u8> {
    std::fs::read(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/fuzz").join(name)).unwrap()
}

/// Damaged Parquet that made the parquet crate panic (a footer with a negative column-chunk
/// offset; a dictionary-encoded page without its dictionary) or spin for minutes (a page header
/// declaring a huge list in an unknown field; a footer holding lists of billions of booleans): as a checkpoint it is skipped for the commits,
/// as a data file it is a clean one-line error.
#[test]
fn parquet_that_panicked_the_decoder_is_refused_not_a_panic() {
    for fixture in [
        "checkpoint-negative-chunk-offset.parquet",
        "checkpoint-missing-dictionary.parquet",
        "checkpoint-page-header-skip-hang.parquet",
        "footer-billions-of-booleans.parquet",
    ] {
        damaged_parquet_is_refused(&fuzz_fixture(fixture));
    }
}

fn damaged_parquet_is_refused(bytes: &[u8]) {
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("t");
    for n in 0..3 {
        let out = crate::support::write_jsonl(&table, &[], &format!("{{\"id\":{n}}}\n"));
        assert!(out.status.success());
    }
    let log = table.join("_delta_log");
    std::fs::write(log.join("00000000000000000002.checkpoint.parquet"), bytes).unwrap();
    std::fs::write(log.join("_last_checkpoint"), r#"{"version":2,"size":10}"#).unwrap();
    let limit = std::time::Duration::from_secs(60);
    let out = crate::support::deltabus_within(&["cat", table.to_str().unwrap()], limit);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout).lines().count(), 3);
    // The same bytes as a data file.
    let data = std::fs::read_dir(&table)
        .unwrap()
        .flatten()
        .find(|e| e.file_name().to_string_lossy().ends_with(".parquet"))
        .unwrap()
        .path();
    std::fs::write(&data, bytes).unwrap();
    // The log states the damaged file's true size, so the damage itself is what is read.
    let name = data.file_name().unwrap().to_string_lossy().to_string();
    for commit in
        std::fs::read_dir(&log).unwrap().flatten().filter(|e| e.file_name().to_string_lossy().ends_with(".json"))
    {
        let text = std::fs::read_to_string(commit.path()).unwrap();
        let fixed: Vec<String> = text
            .lines()
            .map(|line| {
                let mut action: serde_json::Value = serde_json::from_str(line).unwrap();
                if action["add"]["path"] == name.as_str() {
                    action["add"]["size"] = serde_json::json!(bytes.len());
                }
                action.to_string()
            })
            .collect();
        std::fs::write(commit.path(), fixed.join("\n") + "\n").unwrap();
    }
    let out = crate::support::deltabus_within(&["cat", table.to_str().unwrap()], limit);
    crate::support::assert_clean_failure(&out, "damaged data file");
}
