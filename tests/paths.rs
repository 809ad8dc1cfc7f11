//! Paths and partition values as a property: arbitrary Unicode and the awkward ASCII set
//! (`/ = % # ? : space`, empty, very long) as partition values, and Unicode column names, go
//! through `write` → `cat` → kernel-oracle → `deltalake` unchanged, and VACUUM afterwards
//! deletes nothing live. Seeded: a failure prints the seed and the values.

use std::process::Command;

use serde_json::{json, Value};

use crate::support::{compare_rows, deltalake_rows, python};
use crate::support::{deltabus, kernel_oracle, write_jsonl, Rng};

/// Awkward values that must survive as they are.
const AWKWARD: &[&str] = &[
    "München",
    "東京",
    "a/b",
    "x=y",
    "50%",
    "%25",
    "#hash",
    "q?",
    "c:d",
    "with space",
    " lead",
    "trail ",
    "😀 emoji",
    "tab\there",
    "a%2Fb",
    "ünï/cödé=%",
    "'quote\"",
    "back\\slash",
    "{[<>]}",
];

/// Random strings for the property test.
trait Strings {
    /// A string of 1-8 characters from ASCII punctuation, Latin, Greek, CJK and emoji.
    fn string(&mut self) -> String;
}

impl Strings for Rng {
    fn string(&mut self) -> String {
        let len = 1 + self.next() % 8;
        (0..len)
            .map(|_| {
                let r = self.next();
                let c = match r % 5 {
                    0 => b" /=%#?:&+,;@!$'()*"[(r >> 8) as usize % 18] as u32,
                    1 => 0xC0 + (r >> 8) as u32 % 0x40,
                    2 => 0x3B1 + (r >> 8) as u32 % 25,
                    3 => 0x4E00 + (r >> 8) as u32 % 0x5000,
                    _ => 0x1F600 + (r >> 8) as u32 % 0x40,
                };
                char::from_u32(c).unwrap_or('x')
            })
            .collect()
    }
}

#[test]
fn unicode_and_awkward_partition_values_round_trip_through_every_reader() {
    let seed = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().subsec_nanos() as u64 | 1;
    let mut rng = Rng(seed);
    let mut values: Vec<String> = AWKWARD.iter().map(|s| s.to_string()).collect();
    values.push("l".repeat(200));
    values.extend((0..20).map(|_| rng.string()));
    values.sort();
    values.dedup();
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("t");
    let input: String = values
        .iter()
        .enumerate()
        .map(|(i, v)| json!({"id": i, "größe": v, "ключ": format!("{v}!")}).to_string() + "\n")
        .collect();
    let out = write_jsonl(&table, &["--partition-by", "größe"], &input);
    assert!(out.status.success(), "seed {seed}: write: {}", String::from_utf8_lossy(&out.stderr));
    let rows = crate::support::rows_by_id(table.to_str().unwrap());
    assert_eq!(rows.len(), values.len(), "seed {seed}");
    for (i, v) in values.iter().enumerate() {
        assert_eq!(rows[i]["größe"], json!(v), "seed {seed}: partition value {v:?}");
        assert_eq!(rows[i]["ключ"], json!(format!("{v}!")), "seed {seed}");
    }
    let ours = deltabus(&["cat", table.to_str().unwrap()]).stdout;
    if let Some(oracle) = kernel_oracle() {
        let out = Command::new(oracle).arg("rows").arg(&table).output().unwrap();
        assert!(out.status.success(), "seed {seed}: kernel-oracle: {}", String::from_utf8_lossy(&out.stderr));
        compare_rows(&ours, &out.stdout).unwrap_or_else(|d| panic!("seed {seed}: kernel reads differently: {d}"));
    }
    if let Some(py) = python() {
        let theirs = deltalake_rows(&py, &table);
        compare_rows(&ours, &theirs).unwrap_or_else(|d| panic!("seed {seed}: deltalake reads differently: {d}"));
    }
    // VACUUM with zero retention deletes nothing live.
    let out = deltabus(&["vacuum", table.to_str().unwrap(), "--retention-hours", "0", "--force"]);
    assert!(out.status.success(), "vacuum: {}", String::from_utf8_lossy(&out.stderr));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        crate::support::rows_by_id(table.to_str().unwrap()),
        rows,
        "seed {seed}: vacuum deleted a live file: {report}"
    );
}

/// Empty strings and the Hive null marker are the same thing in a partition directory: both
/// read back as null (as in Spark).
#[test]
fn empty_and_hive_default_partition_values_read_as_null() {
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("t");
    let input = "{\"id\":0,\"p\":\"\"}\n{\"id\":1,\"p\":\"__HIVE_DEFAULT_PARTITION__\"}\n{\"id\":2,\"p\":null}\n";
    let out = write_jsonl(&table, &["--partition-by", "p"], input);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let rows = crate::support::rows_by_id(table.to_str().unwrap());
    assert!(rows.iter().all(|r| r["p"].is_null()), "{rows:?}");
}
