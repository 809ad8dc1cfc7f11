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

#[test]
fn pipeline_configs_are_validated_and_secrets_redacted() {
    let root = env!("CARGO_MANIFEST_DIR");
    let out = deltabus(&["config", "check", "--config", &format!("{root}/config/docker.toml")]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("[pipelines.orders.kafka]") && text.contains("topic = \"orders\""), "{text}");
    assert!(!text.contains("minioadmin"), "storage secrets are redacted: {text}");

    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.toml");
    std::fs::write(
        &bad,
        "[pipelines.x]\ntable = \"/tmp/t\"\n[pipelines.x.kafka]\nbrokers = \"b:9092\"\ntopic = \"t\"\nstart = \"yesterday\"\n",
    )
    .unwrap();
    let out = deltabus(&["config", "check", "--config", bad.to_str().unwrap()]);
    assert_clean_failure(&out, "bad start");
    assert!(String::from_utf8_lossy(&out.stderr).contains("pipelines.x.kafka.start"));
    // `run` without pipelines says what to add.
    let out = deltabus(&["run"]);
    assert_clean_failure(&out, "no pipelines");
    assert!(String::from_utf8_lossy(&out.stderr).contains("[pipelines.<name>]"));
    // A secret in Kafka properties never reaches the output.
    let secret = dir.path().join("secret.toml");
    std::fs::write(
        &secret,
        "[pipelines.x]\ntable = \"/tmp/t\"\n[pipelines.x.kafka]\nbrokers = \"b:9092\"\ntopic = \"t\"\nproperties = { \"sasl.password\" = \"hunter2\" }\n",
    )
    .unwrap();
    let out = deltabus(&["config", "check", "--config", secret.to_str().unwrap()]);
    assert!(out.status.success());
    assert!(!String::from_utf8_lossy(&out.stdout).contains("hunter2"));
}

/// Argument errors are one `error:` line and exit 1, like every other user error.
#[test]
fn argument_errors_are_one_line() {
    for args in [&["cat", "t", "--version", "abc"][..], &["no-such-command"], &["vacuum"], &["cat", "t", "--bogus"]] {
        let out = deltabus(args);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.starts_with("error: ") && err.trim_end().lines().count() == 1, "{args:?}: {err}");
    }
}
