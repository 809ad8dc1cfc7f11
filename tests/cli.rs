//! CLI behaviour on bad input: clear errors, no panics.

use crate::support::{assert_clean_failure, deltabus};

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
    // The compose file passes the storage secret through the environment.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_deltabus"))
        .args(["config", "check", "--config", &format!("{root}/config/docker.toml")])
        .env("AWS_SECRET_ACCESS_KEY", "minioadmin")
        .output()
        .unwrap();
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

/// Secrets come from the environment or a mounted file, overrides keep text as written and
/// follow the file's spelling, `config check` shows what is not secret and asks librdkafka
/// about property names.
#[test]
fn secrets_from_the_environment_and_files_and_exact_overrides() {
    let dir = tempfile::tempdir().unwrap();
    let secret_file = dir.path().join("ssl-key-password");
    std::fs::write(&secret_file, "from-a-mounted-file\n").unwrap();
    let conf = dir.path().join("c.toml");
    std::fs::write(
        &conf,
        format!(
            "[pipelines.Orders]\ntable = \"/tmp/t\"\n[pipelines.Orders.kafka]\nbrokers = \"b:9092\"\ntopic = \"t\"\n\
             properties = {{ \"security.protocol\" = \"SASL_SSL\", \"sasl.mechanism\" = \"PLAIN\", \"sasl.username\" = \"svc\", \
             \"sasl.password\" = \"${{KAFKA_PASSWORD}}\", \"ssl.key.password\" = \"${{file:{}}}\" }}\n",
            secret_file.display()
        ),
    )
    .unwrap();
    let check = |env: &[(&str, &str)]| {
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_deltabus"));
        cmd.args(["--config", conf.to_str().unwrap(), "config", "check"]).env_remove("KAFKA_PASSWORD");
        for (k, v) in env {
            cmd.env(k, v);
        }
        cmd.output().unwrap()
    };
    // The variable is required.
    let out = check(&[]);
    assert_clean_failure(&out, "unset variable");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("KAFKA_PASSWORD is not set") && err.contains("sasl.password"), "{err}");
    let out = check(&[
        ("KAFKA_PASSWORD", "hunter2"),
        ("DELTABUS__PIPELINES__ORDERS__TABLE", "0123"),
        ("DELTABUS__PIPELINES__ORDERS__FLUSH__MAX_ROWS", "5000"),
        ("DELTABUS__PIPELINES__ORDERS__KAFKA__PROPERTIES__SASL.USERNAME", "svc2"),
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!text.contains("hunter2") && !text.contains("from-a-mounted-file"), "secrets hidden: {text}");
    assert!(text.contains("\"sasl.password\" = \"<redacted>\""), "{text}");
    assert!(
        text.contains("\"security.protocol\" = \"SASL_SSL\"") && text.contains("\"sasl.username\" = \"svc2\""),
        "{text}"
    );
    assert!(text.contains("table = \"0123\""), "text stays text: {text}");
    assert!(text.contains("max_rows = 5000") && text.contains("[pipelines.Orders"), "{text}");
    // A misspelt librdkafka property is named by librdkafka itself.
    let out =
        check(&[("KAFKA_PASSWORD", "x"), ("DELTABUS__PIPELINES__ORDERS__KAFKA__PROPERTIES__SECURTY.PROTOCOL", "SSL")]);
    assert_clean_failure(&out, "misspelt property");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("securty.protocol"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A misspelt `delta.*` property is refused with the closest known name (it would otherwise
/// silently do nothing); errors name the user's words, not Rust's.
#[test]
fn unknown_table_properties_and_unsupported_sql_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let t = dir.path().join("t");
    let out = crate::support::write_jsonl(&t, &["--property", "delta.enableDeletionVector=true"], "{\"id\":1}\n");
    assert_clean_failure(&out, "misspelt property");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("did you mean \"delta.enableDeletionVectors\""), "{err}");
    assert!(!t.join("_delta_log").exists() || std::fs::read_dir(t.join("_delta_log")).unwrap().count() == 0);
    let out =
        crate::support::write_jsonl(&t, &["--property", "delta.enableDeletionVectors=true"], "{\"name\":\"ab\"}\n");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let out = deltabus(&["delete", t.to_str().unwrap(), "--where", "name LIKE 'a%'"]);
    assert_clean_failure(&out, "LIKE");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("`LIKE`, which deltabus does not support") && !err.contains("Some("), "{err}");
}

/// Errors of `deltabus ingest` name its flags, not configuration keys; columns keep the
/// order of the first record and `cat` prints them in the schema's order.
#[test]
fn ingest_errors_name_flags_and_columns_keep_their_order() {
    let out = deltabus(&[
        "ingest",
        "topic",
        "/tmp/never",
        "--brokers",
        "127.0.0.1:1",
        "--app-id",
        "a",
        "--start",
        "beginning",
    ]);
    assert_clean_failure(&out, "bad --start");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--start") && !err.contains("pipelines."), "{err}");
    let dir = tempfile::tempdir().unwrap();
    let t = dir.path().join("t");
    let out = crate::support::write_jsonl(&t, &[], "{\"zeta\":1,\"alpha\":2,\"mid\":{\"y\":1,\"b\":2}}\n");
    assert!(out.status.success());
    let out = deltabus(&["cat", t.to_str().unwrap()]);
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "{\"zeta\":1,\"alpha\":2,\"mid\":{\"y\":1,\"b\":2}}");
}

/// `/metrics` of two pipelines is valid OpenMetrics (parsed by the Prometheus Python client's
/// parser when `DELTABUS_TEST_PYTHON` is set), with one family per metric, process metrics
/// and build information; `/health` and `/ready` answer.
#[tokio::test(flavor = "multi_thread")]
async fn metrics_exposition_is_valid_openmetrics() {
    use deltabus::metrics::Metrics;
    use std::io::{Read, Write};
    let metrics = std::sync::Arc::new(Metrics::default());
    for (name, n) in [("orders", 7), ("replica", 3)] {
        let p = metrics.pipeline(name);
        p.records_in.inc_by(n);
        p.flushed(deltabus::common::flush::FlushReason::Rows, 0.02);
        p.high_watermarks(&std::collections::BTreeMap::from([(0, 100), (1, 5)]));
        p.position(0, 90, Some(0));
    }
    metrics.pipeline("replica").source_lag(Some(4), 2, 1.5);
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let addr = format!("127.0.0.1:{port}");
    let _server = deltabus::metrics::serve(&addr, metrics.clone()).await.unwrap();
    let target = addr.clone();
    let get = move |path: &str| {
        let mut s = std::net::TcpStream::connect(&target).unwrap();
        write!(s, "GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").unwrap();
        let mut text = String::new();
        s.read_to_string(&mut text).unwrap();
        text
    };
    let response = tokio::task::spawn_blocking({
        let get = get.clone();
        move || get("/metrics")
    })
    .await
    .unwrap();
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    assert!(response.contains("application/openmetrics-text"), "{response}");
    let body = response.split_once("\r\n\r\n").unwrap().1.to_string();
    assert_eq!(body.matches("# TYPE deltabus_records_in counter").count(), 1, "{body}");
    for needed in [
        "process_cpu_seconds_total",
        "process_resident_memory_bytes",
        "deltabus_build_info",
        "deltabus_lag_records{pipeline=\"orders\",partition=\"0\"} 10",
    ] {
        assert!(body.contains(needed), "{needed}: {body}");
    }
    let health = tokio::task::spawn_blocking(move || (get("/health"), get("/ready"))).await.unwrap();
    assert!(health.0.starts_with("HTTP/1.1 200") && health.1.starts_with("HTTP/1.1 503"), "{health:?}");
    if let Ok(py) = std::env::var("DELTABUS_TEST_PYTHON") {
        let script = "import sys\nfrom prometheus_client.openmetrics.parser import text_string_to_metric_families\n\
                      fams = list(text_string_to_metric_families(sys.stdin.read()))\n\
                      names = [f.name for f in fams]\nassert len(names) == len(set(names)), names\nprint(len(fams))";
        let mut child = std::process::Command::new(&py)
            .arg("-c")
            .arg(script)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(body.as_bytes()).unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "the parser refused the exposition: {}", String::from_utf8_lossy(&out.stderr));
        let families: usize = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
        assert!(families >= 25, "{families} families");
    }
}

/// Shell completions and the manual page come from the command definitions.
#[test]
fn completions_and_man_page_are_generated() {
    let dir = tempfile::tempdir().unwrap();
    let out = deltabus(&["completions", "bash"]);
    assert!(out.status.success());
    let script = dir.path().join("deltabus.bash");
    std::fs::write(&script, &out.stdout).unwrap();
    let syntax = std::process::Command::new("bash").arg("-n").arg(&script).output().unwrap();
    assert!(syntax.status.success(), "{}", String::from_utf8_lossy(&syntax.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("--flush-interval"), "subcommand flags are completed");
    for shell in ["zsh", "fish"] {
        assert!(deltabus(&["completions", shell]).status.success(), "{shell}");
    }
    let man = deltabus(&["man"]);
    assert!(man.status.success());
    let text = String::from_utf8_lossy(&man.stdout);
    assert!(text.contains(".TH deltabus 1") && text.contains("ingest"), "{}", &text[..200.min(text.len())]);
}

/// The demo never loses events silently: it produces alongside the pipeline (the mock cluster
/// keeps only 5 MiB per partition) and checks that every event landed as a row or a dead letter.
#[test]
fn the_demo_lands_every_event() {
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("events");
    let out = deltabus(&["demo", "--records", "30000", "--table", table.to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("all 30000 events landed exactly once: 29880 rows + 120 dead letters"), "{text}");
}

/// One name per thing: `--evolve-schema` (alias `--merge-schema`), `--mode error-if-exists`
/// (alias `create`), `changes --from latest` as `tail --from latest`; `delete --dry-run`
/// counts and writes nothing.
#[test]
fn consistent_names_and_delete_dry_run() {
    let dir = tempfile::tempdir().unwrap();
    let t = dir.path().join("t");
    let ts = t.to_str().unwrap();
    assert!(crate::support::write_jsonl(&t, &[], "{\"id\":1}\n{\"id\":2}\n").status.success());
    assert!(crate::support::write_jsonl(&t, &["--evolve-schema"], "{\"id\":3,\"x\":\"a\"}\n").status.success());
    assert!(crate::support::write_jsonl(&t, &["--merge-schema"], "{\"id\":4,\"x\":\"b\"}\n").status.success());
    let out = crate::support::write_jsonl(&t, &["--mode", "error-if-exists"], "{\"id\":5}\n");
    assert_clean_failure(&out, "exists");
    let out = deltabus(&["changes", ts, "--from", "latest"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let rows: Vec<&str> = std::str::from_utf8(&out.stdout).unwrap().lines().collect();
    assert_eq!(rows.len(), 1, "only the newest commit: {rows:?}");
    assert!(rows[0].contains("\"id\":4"), "{rows:?}");
    let out = deltabus(&["delete", ts, "--where", "id <= 2", "--dry-run"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!((report["rowsDeleted"].as_u64(), report["dryRun"].as_bool()), (Some(2), Some(true)), "{report}");
    assert!(report["version"].is_null());
    let cat = deltabus(&["cat", ts]);
    assert_eq!(String::from_utf8_lossy(&cat.stdout).lines().count(), 4, "nothing was deleted");
}

/// Set-up mistakes get the fix in the error: an http:// S3 endpoint without
/// `aws_allow_http`; a line that is not JSON is named by line and column.
#[test]
fn setup_mistakes_name_the_fix() {
    let out = deltabus(&[
        "cat",
        "s3://bucket/t",
        "--storage-option",
        "aws_endpoint=http://127.0.0.1:9",
        "--storage-option",
        "aws_access_key_id=a",
        "--storage-option",
        "aws_secret_access_key=b",
        "--storage-option",
        "aws_region=us-east-1",
    ]);
    assert_clean_failure(&out, "http endpoint");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("aws_allow_http=true"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let dir = tempfile::tempdir().unwrap();
    let out = crate::support::write_jsonl(&dir.path().join("t"), &[], "{\"id\":2}\n{\"id\":\"x\"\n");
    assert_clean_failure(&out, "bad line");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("line 2, column 9: not JSON") && !err.contains("Json error"), "{err}");
}

/// With Kafka down, `ingest` says what it runs once at start and then reports the outage
/// once per kind of failure at a growing backoff (not dozens of lines a second): the lines it
/// prints carry how many reports of their kind were held back, and the test reads until the
/// held-back reports outnumber the lines printed (counted, not timed). No colour codes when
/// stderr is not a terminal.
#[test]
fn a_broker_that_is_down_is_reported_once_per_state_change() {
    use std::io::BufRead as _;
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("t");
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_deltabus"))
        .args(["ingest", "orders", table.to_str().unwrap(), "--brokers", "127.0.0.1:1", "--app-id", "orders"])
        .arg("--create")
        .env_remove("DELTABUS_LOG")
        .env_remove("RUST_LOG")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let held = |line: &str| -> u64 {
        let Some(at) = line.find("held=") else { return 0 };
        line[at + 5..].chars().take_while(char::is_ascii_digit).collect::<String>().parse().unwrap_or(0)
    };
    let mut err = String::new();
    let (mut warnings, mut held_back) = (0u64, 0u64);
    let reader = std::io::BufReader::new(child.stderr.take().unwrap());
    for line in reader.lines() {
        let line = line.unwrap();
        if line.contains("WARN") || line.contains("ERROR") {
            warnings += 1;
            held_back += held(&line);
        }
        err.push_str(&line);
        err.push('\n');
        // Enough to tell throttling from none: without it every report is a line (held=0).
        if held_back >= 20 && held_back > warnings {
            break;
        }
    }
    let killed = std::process::Command::new("kill").arg("-TERM").arg(child.id().to_string()).status().unwrap();
    assert!(killed.success());
    let _ = child.wait();
    assert!(!err.contains('\u{1b}'), "no ANSI colour off a terminal: {err}");
    assert!(err.contains("deltabus.started") && err.contains("pipeline.configured"), "{err}");
    assert!(err.contains("kafka topic orders on 127.0.0.1:1"), "{err}");
    assert!(warnings > 0, "the outage is reported: {err}");
    assert!(held_back > warnings, "{warnings} warning lines for {held_back} reports held back: {err}");
}

/// A `[kafka]` section gives every Kafka pipeline its brokers and client properties (a
/// pipeline's own keys win), with secrets still hidden by `config check`.
#[test]
fn kafka_defaults_are_written_once() {
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("c.toml");
    std::fs::write(
        &conf,
        "[kafka]\nbrokers = \"shared:9092\"\nproperties = { \"security.protocol\" = \"SASL_SSL\", \"sasl.password\" = \"hunter2\" }\n\
         [pipelines.a]\ntable = \"/tmp/a\"\n[pipelines.a.kafka]\ntopic = \"ta\"\n\
         [pipelines.b]\ntable = \"/tmp/b\"\n[pipelines.b.kafka]\ntopic = \"tb\"\nbrokers = \"own:9092\"\n",
    )
    .unwrap();
    let out = deltabus(&["--config", conf.to_str().unwrap(), "config", "check"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let checked: toml::Value = toml::from_str(&String::from_utf8_lossy(&out.stdout)).unwrap();
    let a = &checked["pipelines"]["a"]["kafka"];
    assert_eq!(a["brokers"].as_str(), Some("shared:9092"));
    assert_eq!(a["properties"]["security.protocol"].as_str(), Some("SASL_SSL"));
    assert_eq!(a["properties"]["sasl.password"].as_str(), Some("<redacted>"));
    assert_eq!(checked["pipelines"]["b"]["kafka"]["brokers"].as_str(), Some("own:9092"));
    assert!(!String::from_utf8_lossy(&out.stdout).contains("hunter2"));
}
