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

/// Configuration errors and `config check` never print a secret: syntax errors name the line
/// and column only, type errors name the key, URLs and brokers lose their user-info.
#[test]
fn configuration_errors_and_checks_never_print_secrets() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        ("syntax.toml", "[storage]\naws_secret_access_key = \"S3SECRET_abc\n", true),
        (
            "type.toml",
            "[pipelines.p]\ntable = \"/tmp/x\"\n[pipelines.p.kafka]\nbrokers = \"b\"\ntopic = \"t\"\nproperties = \"sasl.password=S3SECRET_abc\"\n",
            true,
        ),
        (
            "urls.toml",
            "[pipelines.p]\ntable = \"s3://AKIA:S3SECRET_abc@bucket/x\"\n[pipelines.p.kafka]\nbrokers = \"user:S3SECRET_abc@b:9092\"\ntopic = \"t\"\n",
            false,
        ),
    ];
    for (name, text, fails) in cases {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        let out = deltabus(&["config", "check", "--config", path.to_str().unwrap()]);
        let all = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert!(!all.contains("S3SECRET"), "{name}: {all}");
        if fails {
            assert_clean_failure(&out, name);
            assert_eq!(String::from_utf8_lossy(&out.stderr).trim_end().lines().count(), 1, "{name}: one line: {all}");
        } else {
            assert!(out.status.success(), "{name}: {all}");
            assert!(all.contains("s3://<redacted>@bucket/x"), "{all}");
        }
    }
}
