//! Helpers shared by the integration tests.

use std::path::PathBuf;
use std::process::{Command, Output};

/// The shared conformance corpus (`../shared/conformance`, or `DELTABUS_CONFORMANCE_DIR`).
pub fn conformance_dir() -> PathBuf {
    if let Ok(dir) = std::env::var("DELTABUS_CONFORMANCE_DIR") {
        return PathBuf::from(dir);
    }
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/conformance")
}

/// Runs the deltabus binary.
pub fn deltabus(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_deltabus")).args(args).output().expect("run deltabus")
}

/// Asserts that a failed run failed cleanly: non-zero exit, a message, no panic.
pub fn assert_clean_failure(out: &Output, what: &str) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{what}: expected failure, got success");
    assert!(stderr.starts_with("error: "), "{what}: stderr lacks an error line: {stderr}");
    assert!(!stderr.contains("panicked") && !stderr.contains("RUST_BACKTRACE"), "{what}: panicked: {stderr}");
}
