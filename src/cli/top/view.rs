//! What `deltabus top` shows, computed from two scrapes of one endpoint: a line per pipeline
//! (Kafka or Delta source), push table and Kafka-protocol topic with its rates over the
//! interval between the scrapes, and the process's own line. Pure: no I/O, no clock.

use std::collections::BTreeSet;

use crate::metrics::exposition::Sample;

/// One scrape of one endpoint.
#[derive(Debug, Clone, Default)]
pub(crate) struct Scrape {
    pub samples: Vec<Sample>,
}

/// One line of the view.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Line {
    /// `pipeline`, `push` (a push table) or `topic` (a Kafka-protocol topic).
    pub kind: &'static str,
    pub name: String,
    /// Records (pushed or produced rows) a second over the interval.
    pub records_per_second: f64,
    /// Rows committed since the process started.
    pub rows: f64,
    pub commits_per_second: f64,
    /// Kafka records or source versions not yet committed, and the age of the oldest.
    pub lag: String,
    pub dead_letters: f64,
    /// Mean flush-to-commit (pipelines) or request-to-answer (push, produce) time over the
    /// interval, in milliseconds; `None` when nothing completed in it.
    pub latency_ms: Option<f64>,
    /// Buffered bytes against the pipeline's bound (`flush.max_bytes`), percent.
    pub buffer_percent: Option<f64>,
}

/// The process's figures.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Process {
    pub resident_bytes: f64,
    pub cpu_percent: f64,
    pub version: String,
}

/// The lines of one endpoint: `before` is the previous scrape (rates are 0 without one),
/// `seconds` the time between the two.
pub(crate) fn lines(before: Option<&Scrape>, now: &Scrape, seconds: f64) -> Vec<Line> {
    let rate = |name: &str, key: &str, value: &str| -> f64 {
        let Some(b) = before else { return 0.0 };
        let delta = sum(&now.samples, name, key, value) - sum(&b.samples, name, key, value);
        if seconds > 0.0 {
            (delta / seconds).max(0.0)
        } else {
            0.0
        }
    };
    let mean_ms = |name: &str, key: &str, value: &str| -> Option<f64> {
        let (sum_now, count_now) = (
            sum(&now.samples, &format!("{name}_sum"), key, value),
            sum(&now.samples, &format!("{name}_count"), key, value),
        );
        let (sum_before, count_before) = before.map_or((0.0, 0.0), |b| {
            (sum(&b.samples, &format!("{name}_sum"), key, value), sum(&b.samples, &format!("{name}_count"), key, value))
        });
        let count = count_now - count_before;
        (count > 0.0).then(|| (sum_now - sum_before) / count * 1000.0)
    };
    let mut out = Vec::new();
    for name in names(&now.samples, "deltabus_records_in_total", "pipeline") {
        let n = name.as_str();
        // A pipeline whose source is a Delta table follows it: it counts its lag in versions.
        let follower = has(&now.samples, "deltabus_source_lag_versions", "pipeline", n);
        let lag = if follower {
            let versions = sum(&now.samples, "deltabus_source_lag_versions", "pipeline", n);
            let secs = max(&now.samples, "deltabus_source_lag_seconds", "pipeline", n);
            format!("{versions:.0} versions / {secs:.1} s")
        } else {
            let records = sum(&now.samples, "deltabus_lag_records", "pipeline", n);
            let secs = max(&now.samples, "deltabus_lag_seconds", "pipeline", n);
            format!("{records:.0} records / {secs:.1} s")
        };
        out.push(Line {
            kind: if follower { "follower" } else { "pipeline" },
            records_per_second: rate("deltabus_records_in_total", "pipeline", n),
            rows: sum(&now.samples, "deltabus_rows_committed_total", "pipeline", n),
            commits_per_second: rate("deltabus_commits_total", "pipeline", n),
            lag,
            dead_letters: sum(&now.samples, "deltabus_dead_letters_total", "pipeline", n),
            latency_ms: mean_ms("deltabus_commit_seconds", "pipeline", n),
            buffer_percent: has(&now.samples, "deltabus_buffer_fill_ratio", "pipeline", n)
                .then(|| max(&now.samples, "deltabus_buffer_fill_ratio", "pipeline", n) * 100.0),
            name,
        });
    }
    for name in names(&now.samples, "deltabus_push_requests_total", "table") {
        let n = name.as_str();
        out.push(Line {
            kind: "push",
            records_per_second: rate("deltabus_push_rows_total", "table", n),
            rows: sum(&now.samples, "deltabus_push_rows_total", "table", n),
            commits_per_second: rate("deltabus_push_commits_total", "table", n),
            lag: "-".into(),
            dead_letters: 0.0,
            latency_ms: mean_ms("deltabus_push_request_seconds", "table", n),
            buffer_percent: None,
            name,
        });
    }
    for name in names(&now.samples, "deltabus_kafka_produced_records_total", "topic") {
        let n = name.as_str();
        let lag = sum(&now.samples, "deltabus_kafka_fetch_lag_versions", "topic", n);
        out.push(Line {
            kind: "topic",
            records_per_second: rate("deltabus_kafka_produced_records_total", "topic", n),
            rows: sum(&now.samples, "deltabus_kafka_produced_records_total", "topic", n),
            commits_per_second: 0.0,
            lag: format!("{lag:.0} versions (fetch)"),
            dead_letters: 0.0,
            latency_ms: mean_ms("deltabus_kafka_produce_seconds", "topic", n),
            buffer_percent: None,
            name,
        });
    }
    out
}

/// The process line: resident memory, CPU over the interval and the version.
pub(crate) fn process(before: Option<&Scrape>, now: &Scrape, seconds: f64) -> Process {
    let cpu =
        |s: &Scrape| s.samples.iter().filter(|x| x.name == "process_cpu_seconds_total").map(|x| x.value).sum::<f64>();
    let cpu_percent = match before {
        Some(b) if seconds > 0.0 => ((cpu(now) - cpu(b)) / seconds * 100.0).max(0.0),
        _ => 0.0,
    };
    let resident_bytes =
        now.samples.iter().find(|s| s.name == "process_resident_memory_bytes").map_or(0.0, |s| s.value);
    let version = now
        .samples
        .iter()
        .find(|s| s.name == "deltabus_build_info")
        .and_then(|s| s.label("version"))
        .unwrap_or("?")
        .to_string();
    Process { resident_bytes, cpu_percent, version }
}

/// The distinct values of label `key` on metric `name`.
fn names(samples: &[Sample], name: &str, key: &str) -> BTreeSet<String> {
    samples.iter().filter(|s| s.name == name).filter_map(|s| s.label(key)).map(str::to_string).collect()
}

fn matching<'a>(samples: &'a [Sample], name: &'a str, key: &'a str, value: &'a str) -> impl Iterator<Item = f64> + 'a {
    samples.iter().filter(move |s| s.name == name && s.label(key) == Some(value)).map(|s| s.value)
}

fn sum(samples: &[Sample], name: &str, key: &str, value: &str) -> f64 {
    matching(samples, name, key, value).sum()
}

fn max(samples: &[Sample], name: &str, key: &str, value: &str) -> f64 {
    matching(samples, name, key, value).fold(0.0, f64::max)
}

fn has(samples: &[Sample], name: &str, key: &str, value: &str) -> bool {
    matching(samples, name, key, value).next().is_some()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::exposition::parse;

    #[test]
    fn rates_lag_and_latency_over_the_interval() {
        let before = Scrape {
            samples: parse(
                "deltabus_records_in_total{pipeline=\"orders\"} 100\ndeltabus_commits_total{pipeline=\"orders\"} 1\n\
                 deltabus_commit_seconds_sum{pipeline=\"orders\"} 0.5\ndeltabus_commit_seconds_count{pipeline=\"orders\"} 1\n\
                 process_cpu_seconds_total 10\n",
            ),
        };
        let now = Scrape {
            samples: parse(
                "deltabus_records_in_total{pipeline=\"orders\"} 300\ndeltabus_commits_total{pipeline=\"orders\"} 3\n\
                 deltabus_rows_committed_total{pipeline=\"orders\"} 250\n\
                 deltabus_commit_seconds_sum{pipeline=\"orders\"} 0.9\ndeltabus_commit_seconds_count{pipeline=\"orders\"} 3\n\
                 deltabus_lag_records{pipeline=\"orders\",partition=\"0\"} 7\ndeltabus_lag_records{pipeline=\"orders\",partition=\"1\"} 5\n\
                 deltabus_lag_seconds{pipeline=\"orders\",partition=\"1\"} 2.5\ndeltabus_buffer_fill_ratio{pipeline=\"orders\"} 0.25\n\
                 deltabus_dead_letters_total{pipeline=\"orders\"} 2\n\
                 deltabus_records_in_total{pipeline=\"mirror-1\"} 9\n\
                 deltabus_source_lag_versions{pipeline=\"mirror-1\"} 2\n\
                 deltabus_source_lag_seconds{pipeline=\"mirror-1\"} 1.5\n\
                 deltabus_push_requests_total{table=\"events\",producer=\"p\",outcome=\"committed\"} 4\n\
                 deltabus_push_rows_total{table=\"events\",producer=\"p\"} 40\n\
                 process_cpu_seconds_total 11\nprocess_resident_memory_bytes 1048576\n\
                 deltabus_build_info{version=\"1.2.3\"} 1\n",
            ),
        };
        let got = lines(Some(&before), &now, 2.0);
        assert_eq!(got.len(), 3);
        let p = &got[1];
        assert_eq!((p.kind, p.name.as_str()), ("pipeline", "orders"));
        assert_eq!((p.records_per_second, p.commits_per_second, p.rows, p.dead_letters), (100.0, 1.0, 250.0, 2.0));
        assert_eq!(p.lag, "12 records / 2.5 s");
        assert!((p.latency_ms.unwrap() - 200.0).abs() < 1e-9, "{p:?}");
        assert_eq!(p.buffer_percent, Some(25.0));
        // A pipeline with a Delta source is a follower, its lag in versions.
        assert_eq!(
            (got[0].kind, got[0].name.as_str(), got[0].lag.as_str()),
            ("follower", "mirror-1", "2 versions / 1.5 s")
        );
        assert_eq!(got[0].buffer_percent, None, "a follower buffers no batch");
        // A series new since the last scrape counts from zero.
        assert_eq!((got[2].kind, got[2].rows, got[2].records_per_second), ("push", 40.0, 20.0));
        let proc = process(Some(&before), &now, 2.0);
        assert_eq!(proc, Process { resident_bytes: 1048576.0, cpu_percent: 50.0, version: "1.2.3".into() });
        // A first scrape has no rates yet.
        assert_eq!(lines(None, &now, 0.0)[1].records_per_second, 0.0);
    }
}
