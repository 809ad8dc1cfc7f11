//! The S3 emulator (moto, started by `scripts/test.sh`) as the tests and the benchmarks reach
//! it: a fresh bucket, and the storage options that point deltabus at it. Shared by both
//! (`tests/main.rs` includes this file).

use std::collections::HashMap;

/// Storage options for the emulator at `endpoint`.
pub fn s3_options(endpoint: &str) -> HashMap<String, String> {
    [
        ("aws_endpoint", endpoint),
        ("aws_allow_http", "true"),
        ("aws_region", "us-east-1"),
        ("aws_access_key_id", "test"),
        ("aws_secret_access_key", "test"),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect()
}

/// The same options as `--storage-option KEY=VALUE` flags.
#[allow(dead_code)]
pub fn s3_cli_options(endpoint: &str) -> Vec<String> {
    let mut options: Vec<(String, String)> = s3_options(endpoint).into_iter().collect();
    options.sort();
    options.into_iter().flat_map(|(k, v)| ["--storage-option".to_string(), format!("{k}={v}")]).collect()
}

/// Creates a bucket named `<prefix>-<random>` and returns its name.
pub fn new_bucket(endpoint: &str, prefix: &str) -> String {
    let bucket = format!("{prefix}-{}", uuid::Uuid::new_v4().simple());
    let created = std::process::Command::new("curl")
        .args(["-sf", "-X", "PUT", &format!("{endpoint}/{bucket}")])
        .status()
        .expect("run curl");
    assert!(created.success(), "creating bucket {bucket} at {endpoint}");
    bucket
}
