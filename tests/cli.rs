//! CLI behaviour on bad input: clear errors, no panics.

use crate::common::{assert_clean_failure, deltabus};

#[test]
fn missing_table_is_a_clean_error() {
    let dir = tempfile::tempdir().unwrap();
    let out = deltabus(&["cat", dir.path().to_str().unwrap()]);
    assert_clean_failure(&out, "empty dir");
    let out = deltabus(&["files", "/nonexistent/deltabus/table"]);
    assert_clean_failure(&out, "missing dir");
    let out = deltabus(&["files", "ftp://host/table"]);
    assert_clean_failure(&out, "bad scheme");
}
