//! The shipped Grafana dashboard and Prometheus alert rules (`monitoring/`) query only metrics
//! the binary exports, and their PromQL parses (`promtool`, when installed: scripts/setup.sh
//! installs Debian's `prometheus` package where it can).

use std::collections::BTreeSet;
use std::path::Path;

use deltabus::common::flush::FlushReason;
use deltabus::metrics::Metrics;

/// Every sample name the exposition holds with each pipeline kind populated.
fn exported_names() -> BTreeSet<String> {
    let m = Metrics::default();
    let kafka = m.pipeline("orders");
    kafka.flushed(FlushReason::Latency, 0.1);
    kafka.high_watermarks(&std::collections::BTreeMap::from([(0, 10)]));
    kafka.position(0, 5, Some(0));
    m.pipeline("replica").source_lag(Some(3), 1, 0.5);
    m.render()
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(|l| l.split(['{', ' ']).next().unwrap().to_string())
        .collect()
}

/// The metric names an expression reads.
fn names_in(expr: &str) -> Vec<String> {
    let mut out = Vec::new();
    let bytes: Vec<char> = expr.chars().collect();
    let mut i = 0;
    while i < bytes.len() {
        let rest: String = bytes[i..].iter().collect();
        let starts = (rest.starts_with("deltabus_") || rest.starts_with("process_"))
            && (i == 0 || !(bytes[i - 1].is_alphanumeric() || bytes[i - 1] == '_'));
        if starts {
            let name: String = bytes[i..].iter().take_while(|c| c.is_alphanumeric() || **c == '_').collect();
            i += name.len();
            out.push(name);
        } else {
            i += 1;
        }
    }
    out
}

fn dashboard_exprs() -> Vec<String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("monitoring/grafana/dashboards/deltabus.json");
    let dash: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let exprs: Vec<String> = dash["panels"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|p| p["targets"].as_array().unwrap().iter().map(|t| t["expr"].as_str().unwrap().to_string()))
        .collect();
    assert!(exprs.len() >= 14);
    exprs
}

fn alert_exprs() -> Vec<String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("monitoring/alerts.yml");
    let text = std::fs::read_to_string(path).unwrap();
    text.lines().filter_map(|l| l.trim().strip_prefix("expr: ").map(str::to_string)).collect()
}

#[test]
fn dashboard_and_alerts_query_exported_metrics() {
    let exported = exported_names();
    for expr in dashboard_exprs().iter().chain(alert_exprs().iter()) {
        for name in names_in(expr) {
            assert!(exported.contains(&name), "{name} (in `{expr}`) is not exported; exported: {exported:?}");
        }
    }
    // What operators watch is on the dashboard.
    let all = dashboard_exprs().join("\n");
    for needed in [
        "deltabus_lag_records",
        "deltabus_lag_seconds",
        "deltabus_source_lag_versions",
        "deltabus_source_lag_seconds",
        "deltabus_commits_total",
        "deltabus_commit_conflicts_total",
        "deltabus_dead_letters_total",
        "deltabus_buffer_fill_ratio",
        "deltabus_flushes_total",
    ] {
        assert!(all.contains(needed), "the dashboard lacks {needed}");
    }
}

#[test]
fn promql_of_dashboard_and_alerts_parses() {
    let present = std::process::Command::new("promtool").arg("--version").output().is_ok();
    if !crate::support::required(
        present,
        "promtool is not installed",
        "scripts/setup.sh installs Debian's prometheus package as root",
    ) {
        return;
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = std::process::Command::new("promtool")
        .args(["check", "rules"])
        .arg(root.join("monitoring/alerts.yml"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stdout));
    // The dashboard's queries as recording rules: promtool parses each expression.
    let dir = tempfile::tempdir().unwrap();
    let mut rules = String::from("groups:\n  - name: dashboard\n    rules:\n");
    for (i, e) in dashboard_exprs().iter().enumerate() {
        let e = e.replace("$__rate_interval", "5m").replace('\'', "''");
        rules.push_str(&format!("      - record: dashboard:query_{i}\n        expr: '{e}'\n"));
    }
    let file = dir.path().join("dashboard-rules.yml");
    std::fs::write(&file, rules).unwrap();
    let out = std::process::Command::new("promtool").args(["check", "rules"]).arg(&file).output().unwrap();
    assert!(out.status.success(), "{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
}
