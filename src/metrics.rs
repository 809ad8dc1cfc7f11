//! Prometheus metrics and health probes of `deltabus run`, served over plain HTTP.
//!
//! Pipelines update their [`PipelineMetrics`] with atomics (no lock on the record path); the
//! small per-partition lag table is behind a mutex touched once per poll and per scrape.
//! Endpoints: `GET /metrics` (text exposition format 0.0.4), `GET /health` (200 while the
//! process runs), `GET /ready` (200 once every pipeline has opened its table and received an
//! assignment, else 503). Everything else is 404. Metric names start with `deltabus_` and
//! carry a `pipeline` label.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use crate::common::flush::FlushReason;
use crate::error::{Error, Result};

const BUCKETS: [f64; 12] = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0];
const REASONS: [FlushReason; 6] = [
    FlushReason::Latency,
    FlushReason::Rows,
    FlushReason::Bytes,
    FlushReason::FileSize,
    FlushReason::Shutdown,
    FlushReason::Revoked,
];

/// Lag bookkeeping of one partition.
#[derive(Debug, Clone, Copy, Default)]
struct PartitionLag {
    high_watermark: Option<i64>,
    /// Next offset to commit (last committed + 1).
    position: Option<i64>,
    last_timestamp_ms: Option<i64>,
}

/// The metrics of one pipeline.
#[derive(Debug, Default)]
pub struct PipelineMetrics {
    pub records_in: AtomicU64,
    pub bytes_in: AtomicU64,
    pub dead_letters: AtomicU64,
    pub rows_committed: AtomicU64,
    pub commits: AtomicU64,
    pub conflicts: AtomicU64,
    /// Rows dropped because their partition was revoked or another worker moved it.
    pub rows_dropped: AtomicU64,
    /// Offsets skipped because the broker no longer held them (retention) when
    /// `fail_on_data_loss = false`.
    pub offsets_lost: AtomicU64,
    /// Assignments whose recorded position was past the partition's end (a recreated topic,
    /// or a broker reporting a lagging high watermark).
    pub positions_past_end: AtomicU64,
    /// Kafka client and consume errors (librdkafka retries them).
    pub kafka_errors: AtomicU64,
    /// Background compaction: OPTIMIZE commits and files rewritten.
    pub compaction_commits: AtomicU64,
    pub compacted_files: AtomicU64,
    pub buffer_bytes: AtomicU64,
    pub buffer_limit: AtomicU64,
    pub ready: AtomicBool,
    /// Delta sources: the last source version processed, versions behind the latest seen, and
    /// seconds behind.
    source: Mutex<Option<(Option<u64>, u64, f64)>>,
    flushes: [AtomicU64; 6],
    latency_buckets: [AtomicU64; 12],
    latency_count: AtomicU64,
    latency_sum_us: AtomicU64,
    lag: Mutex<BTreeMap<i32, PartitionLag>>,
}

impl PipelineMetrics {
    /// Counts a flush and its commit latency.
    pub fn flushed(&self, reason: FlushReason, seconds: f64) {
        if let Some(i) = REASONS.iter().position(|r| *r == reason) {
            self.flushes[i].fetch_add(1, Relaxed);
        }
        for (i, b) in BUCKETS.iter().enumerate() {
            if seconds <= *b {
                self.latency_buckets[i].fetch_add(1, Relaxed);
            }
        }
        self.latency_count.fetch_add(1, Relaxed);
        self.latency_sum_us.fetch_add((seconds * 1e6) as u64, Relaxed);
    }

    /// Records high watermarks from the client statistics.
    pub fn high_watermarks(&self, marks: &BTreeMap<i32, i64>) {
        if let Ok(mut lag) = self.lag.lock() {
            for (p, hw) in marks {
                lag.entry(*p).or_default().high_watermark = Some(*hw);
            }
        }
    }

    /// Records a partition's committed position (next offset) and its last record's time.
    pub fn position(&self, partition: i32, next_offset: i64, last_timestamp_ms: Option<i64>) {
        if let Ok(mut lag) = self.lag.lock() {
            let e = lag.entry(partition).or_default();
            e.position = Some(next_offset);
            e.last_timestamp_ms = last_timestamp_ms.or(e.last_timestamp_ms);
            e.high_watermark = e.high_watermark.map(|h| h.max(next_offset));
        }
    }

    /// Records a Delta source's position, versions behind and seconds behind.
    pub fn source_lag(&self, position: Option<u64>, versions_behind: u64, seconds_behind: f64) {
        if let Ok(mut s) = self.source.lock() {
            *s = Some((position, versions_behind, seconds_behind));
        }
    }

    /// Forgets partitions no longer assigned.
    pub fn forget(&self, partitions: &[i32]) {
        if let Ok(mut lag) = self.lag.lock() {
            for p in partitions {
                lag.remove(p);
            }
        }
    }

    fn render(&self, name: &str, now_ms: i64, out: &mut String) {
        let l = format!("pipeline=\"{}\"", name.replace(['"', '\\', '\n'], "_"));
        let counters = [
            ("records_in_total", "Records consumed.", &self.records_in),
            ("bytes_in_total", "Payload bytes consumed.", &self.bytes_in),
            ("dead_letters_total", "Records sent to the dead-letter destination.", &self.dead_letters),
            ("rows_committed_total", "Rows (keyed pipelines: changes) committed to the table.", &self.rows_committed),
            ("commits_total", "Delta commits.", &self.commits),
            ("commit_conflicts_total", "Commits that lost to a concurrent writer.", &self.conflicts),
            ("rows_dropped_total", "Buffered rows dropped on revocation or a moved position.", &self.rows_dropped),
            (
                "offsets_lost_total",
                "Offsets the broker deleted before they were ingested (skipped).",
                &self.offsets_lost,
            ),
            (
                "positions_past_end_total",
                "Assigned partitions whose recorded position was past the partition's end.",
                &self.positions_past_end,
            ),
            ("kafka_errors_total", "Kafka client and consume errors (librdkafka retries them).", &self.kafka_errors),
            ("compaction_commits_total", "OPTIMIZE commits of the background compactor.", &self.compaction_commits),
            ("compacted_files_total", "Files rewritten by the background compactor.", &self.compacted_files),
        ];
        for (n, help, v) in counters {
            let _ = writeln!(out, "# HELP deltabus_{n} {help}\n# TYPE deltabus_{n} counter");
            let _ = writeln!(out, "deltabus_{n}{{{l}}} {}", v.load(Relaxed));
        }
        let _ =
            writeln!(out, "# HELP deltabus_flushes_total Flushes by reason.\n# TYPE deltabus_flushes_total counter");
        for (r, c) in REASONS.iter().zip(&self.flushes) {
            let _ = writeln!(out, "deltabus_flushes_total{{{l},reason=\"{}\"}} {}", r.as_str(), c.load(Relaxed));
        }
        let _ = writeln!(out, "# HELP deltabus_commit_seconds Write and commit time of a flush.\n# TYPE deltabus_commit_seconds histogram");
        for (b, c) in BUCKETS.iter().zip(&self.latency_buckets) {
            let _ = writeln!(out, "deltabus_commit_seconds_bucket{{{l},le=\"{b}\"}} {}", c.load(Relaxed));
        }
        let count = self.latency_count.load(Relaxed);
        let _ = writeln!(out, "deltabus_commit_seconds_bucket{{{l},le=\"+Inf\"}} {count}");
        let _ = writeln!(out, "deltabus_commit_seconds_sum{{{l}}} {}", self.latency_sum_us.load(Relaxed) as f64 / 1e6);
        let _ = writeln!(out, "deltabus_commit_seconds_count{{{l}}} {count}");
        let (used, limit) = (self.buffer_bytes.load(Relaxed), self.buffer_limit.load(Relaxed));
        let _ = writeln!(
            out,
            "# HELP deltabus_buffer_bytes Bytes buffered: the open batch and the one being flushed.\n# TYPE deltabus_buffer_bytes gauge"
        );
        let _ = writeln!(out, "deltabus_buffer_bytes{{{l}}} {used}");
        let fill = if limit == 0 { 0.0 } else { used as f64 / limit as f64 };
        let _ = writeln!(out, "# HELP deltabus_buffer_fill_ratio Buffered bytes over flush.max_bytes.\n# TYPE deltabus_buffer_fill_ratio gauge");
        let _ = writeln!(out, "deltabus_buffer_fill_ratio{{{l}}} {fill}");
        let _ = writeln!(out, "# HELP deltabus_lag_records Records in the partition not yet committed to the table.\n# TYPE deltabus_lag_records gauge");
        let lag = self.lag.lock().map(|g| g.clone()).unwrap_or_default();
        let mut seconds = String::new();
        for (p, e) in &lag {
            let (Some(hw), Some(pos)) = (e.high_watermark, e.position) else { continue };
            let behind = (hw - pos).max(0);
            let _ = writeln!(out, "deltabus_lag_records{{{l},partition=\"{p}\"}} {behind}");
            let secs = match (behind, e.last_timestamp_ms) {
                (0, _) | (_, None) => 0.0,
                (_, Some(ts)) => (now_ms - ts).max(0) as f64 / 1000.0,
            };
            let _ = writeln!(seconds, "deltabus_lag_seconds{{{l},partition=\"{p}\"}} {secs}");
        }
        let _ = writeln!(out, "# HELP deltabus_lag_seconds Age of the last committed record while behind.\n# TYPE deltabus_lag_seconds gauge");
        out.push_str(&seconds);
        if let Some((position, versions, secs)) = self.source.lock().ok().and_then(|g| *g) {
            let _ = writeln!(out, "# HELP deltabus_source_version Last source version processed by a Delta-source pipeline.\n# TYPE deltabus_source_version gauge");
            let _ = writeln!(out, "deltabus_source_version{{{l}}} {}", position.map_or(-1, |p| p as i64));
            let _ = writeln!(out, "# HELP deltabus_source_lag_versions Source commits not yet processed.\n# TYPE deltabus_source_lag_versions gauge");
            let _ = writeln!(out, "deltabus_source_lag_versions{{{l}}} {versions}");
            let _ = writeln!(out, "# HELP deltabus_source_lag_seconds Age of the commit being processed while behind.\n# TYPE deltabus_source_lag_seconds gauge");
            let _ = writeln!(out, "deltabus_source_lag_seconds{{{l}}} {secs}");
        }
    }
}

/// All pipelines' metrics.
#[derive(Debug, Default)]
pub struct Metrics {
    pipelines: Mutex<BTreeMap<String, Arc<PipelineMetrics>>>,
    /// Reads "now" for lag and staleness gauges.
    pub clock: crate::common::clock::Clock,
}

impl Metrics {
    /// The metrics of a pipeline (created on first use).
    pub fn pipeline(&self, name: &str) -> Arc<PipelineMetrics> {
        let mut map = self.pipelines.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        map.entry(name.to_string()).or_default().clone()
    }

    fn all(&self) -> Vec<(String, Arc<PipelineMetrics>)> {
        let map = self.pipelines.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        map.iter().map(|(k, v)| (k.clone(), v.clone())).collect()
    }

    /// The exposition text.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let now = self.clock.now_ms();
        for (name, m) in self.all() {
            m.render(&name, now, &mut out);
        }
        out
    }

    /// Whether every pipeline is ready.
    pub fn ready(&self) -> bool {
        let all = self.all();
        !all.is_empty() && all.iter().all(|(_, m)| m.ready.load(Relaxed))
    }
}

/// Binds the endpoint (so a bad address fails at start-up) and serves it until dropped.
///
/// # Errors
/// [`Error::Io`] when the address cannot be bound.
pub async fn serve(addr: &str, metrics: Arc<Metrics>) -> Result<tokio::task::JoinHandle<()>> {
    let listener = TcpListener::bind(addr)
        .await
        .map_err(|e| Error::Io(std::io::Error::new(e.kind(), format!("metrics endpoint {addr}: {e}"))))?;
    tracing::info!(addr, "metrics endpoint listening");
    Ok(tokio::spawn(async move {
        loop {
            let Ok((mut conn, _)) = listener.accept().await else { continue };
            let metrics = metrics.clone();
            tokio::spawn(async move {
                let mut buf = vec![0u8; 4096];
                let n = match tokio::time::timeout(std::time::Duration::from_secs(5), conn.read(&mut buf)).await {
                    Ok(Ok(n)) => n,
                    _ => return,
                };
                let request = String::from_utf8_lossy(&buf[..n]);
                let path = request.split_whitespace().nth(1).unwrap_or("");
                let (status, body, kind) = match path {
                    "/metrics" => ("200 OK", metrics.render(), "text/plain; version=0.0.4"),
                    "/health" => ("200 OK", "ok\n".to_string(), "text/plain"),
                    "/ready" if metrics.ready() => ("200 OK", "ready\n".to_string(), "text/plain"),
                    "/ready" => ("503 Service Unavailable", "not ready\n".to_string(), "text/plain"),
                    _ => ("404 Not Found", "not found\n".to_string(), "text/plain"),
                };
                let head = format!(
                    "HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                    body.len()
                );
                let _ = conn.write_all(head.as_bytes()).await;
                let _ = conn.write_all(body.as_bytes()).await;
                let _ = conn.shutdown().await;
            });
        }
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exposition_has_counters_histogram_and_lag() {
        let m = Metrics::default();
        let p = m.pipeline("orders");
        p.records_in.fetch_add(7, Relaxed);
        p.flushed(FlushReason::Rows, 0.02);
        p.high_watermarks(&BTreeMap::from([(0, 100)]));
        p.position(0, 90, Some(0));
        let text = m.render();
        assert!(text.contains("deltabus_records_in_total{pipeline=\"orders\"} 7"), "{text}");
        assert!(text.contains("deltabus_flushes_total{pipeline=\"orders\",reason=\"rows\"} 1"));
        assert!(text.contains("deltabus_commit_seconds_bucket{pipeline=\"orders\",le=\"0.025\"} 1"));
        assert!(text.contains("deltabus_commit_seconds_bucket{pipeline=\"orders\",le=\"0.01\"} 0"));
        assert!(text.contains("deltabus_lag_records{pipeline=\"orders\",partition=\"0\"} 10"));
        assert!(!text.contains("deltabus_source_lag_versions"), "no Delta source, no source lag");
        p.source_lag(Some(41), 3, 2.5);
        let text = m.render();
        assert!(text.contains("deltabus_source_version{pipeline=\"orders\"} 41"), "{text}");
        assert!(text.contains("deltabus_source_lag_versions{pipeline=\"orders\"} 3"));
        assert!(text.contains("deltabus_source_lag_seconds{pipeline=\"orders\"} 2.5"));
        assert!(!m.ready());
        p.ready.store(true, Relaxed);
        assert!(m.ready());
    }
}
