//! Prometheus metrics and health probes of the long-running commands.
//!
//! The metrics live in one `prometheus-client` registry: each metric is one family whose
//! samples carry a `pipeline` label (and `partition` or `reason` where they apply), so the
//! exposition has one `# HELP`/`# TYPE` per metric whatever the number of pipelines.
//! Pipelines hold [`PipelineMetrics`], handles into the families (atomic counters: no lock on
//! the record path); lag gauges are computed from the small per-partition table at scrape
//! time. Process metrics (`process_*`) and `deltabus_build_info` come from [`process`]; push
//! ingest's (`deltabus_push_*`, per table and producer) from [`push`]; the Kafka-protocol
//! listener's (`deltabus_kafka_*`) from [`kafka`].
//! The HTTP endpoint is in [`server`]: `GET /metrics` (OpenMetrics text), `GET /health`,
//! `GET /ready`. [`exposition`] reads such text back (for `deltabus top`).

internal_mods!(process);
internal_mods!(push);
internal_mods!(kafka);
internal_mods!(server);
internal_mods!(exposition);

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

use crate::common::flush::FlushReason;

#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) use server::serve;

const BUCKETS: [f64; 12] = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0];

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct PipelineLabel {
    pipeline: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct PartitionLabels {
    pipeline: String,
    partition: i32,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReasonLabels {
    pipeline: String,
    reason: String,
}

type Counters = Family<PipelineLabel, Counter>;
type FloatGauge = Gauge<f64, AtomicU64>;

fn commit_histogram() -> Histogram {
    Histogram::new(BUCKETS)
}

/// The metric families, registered once.
#[derive(Debug)]
struct Families {
    records_in: Counters,
    bytes_in: Counters,
    dead_letters: Counters,
    rows_committed: Counters,
    commits: Counters,
    conflicts: Counters,
    rows_dropped: Counters,
    offsets_lost: Counters,
    positions_past_end: Counters,
    kafka_errors: Counters,
    compaction_commits: Counters,
    compacted_files: Counters,
    compaction_abandoned: Counters,
    compaction_remapped: Counters,
    flushes: Family<ReasonLabels, Counter>,
    commit_seconds: Family<PipelineLabel, Histogram, fn() -> Histogram>,
    buffer_bytes: Family<PipelineLabel, Gauge>,
    buffer_fill: Family<PipelineLabel, FloatGauge>,
    lag_records: Family<PartitionLabels, Gauge>,
    lag_seconds: Family<PartitionLabels, FloatGauge>,
    source_version: Family<PipelineLabel, Gauge>,
    source_lag_versions: Family<PipelineLabel, Gauge>,
    source_lag_seconds: Family<PipelineLabel, FloatGauge>,
    index_resident: Family<PipelineLabel, Gauge>,
    index_files: Family<PipelineLabel, Gauge>,
    index_rebuilt: Counters,
    index_loads: Counters,
}

impl Families {
    fn register(registry: &mut Registry) -> Families {
        let f = Families {
            records_in: Counters::default(),
            bytes_in: Counters::default(),
            dead_letters: Counters::default(),
            rows_committed: Counters::default(),
            commits: Counters::default(),
            conflicts: Counters::default(),
            rows_dropped: Counters::default(),
            offsets_lost: Counters::default(),
            positions_past_end: Counters::default(),
            kafka_errors: Counters::default(),
            compaction_commits: Counters::default(),
            compacted_files: Counters::default(),
            compaction_abandoned: Counters::default(),
            compaction_remapped: Counters::default(),
            flushes: Family::default(),
            commit_seconds: Family::new_with_constructor(commit_histogram),
            buffer_bytes: Family::default(),
            buffer_fill: Family::default(),
            lag_records: Family::default(),
            lag_seconds: Family::default(),
            source_version: Family::default(),
            source_lag_versions: Family::default(),
            source_lag_seconds: Family::default(),
            index_resident: Family::default(),
            index_files: Family::default(),
            index_rebuilt: Counters::default(),
            index_loads: Counters::default(),
        };
        let r = registry;
        let counters: [(&str, &str, &Counters); 16] = [
            ("deltabus_records_in", "Records consumed (Delta sources: source rows)", &f.records_in),
            ("deltabus_bytes_in", "Payload bytes consumed", &f.bytes_in),
            ("deltabus_dead_letters", "Records sent to the dead-letter destination", &f.dead_letters),
            ("deltabus_rows_committed", "Rows (keyed pipelines: changes) committed", &f.rows_committed),
            ("deltabus_commits", "Delta commits", &f.commits),
            ("deltabus_commit_conflicts", "Commits that lost to a concurrent writer", &f.conflicts),
            ("deltabus_rows_dropped", "Buffered rows dropped on revocation or a moved position", &f.rows_dropped),
            ("deltabus_offsets_lost", "Offsets the broker deleted before ingestion (skipped)", &f.offsets_lost),
            (
                "deltabus_positions_past_end",
                "Assignments whose recorded position was past the partition's end",
                &f.positions_past_end,
            ),
            ("deltabus_kafka_errors", "Kafka client and consume errors (librdkafka retries them)", &f.kafka_errors),
            ("deltabus_compaction_commits", "OPTIMIZE commits of the background compactor", &f.compaction_commits),
            ("deltabus_compacted_files", "Files rewritten by the background compactor", &f.compacted_files),
            (
                "deltabus_compaction_abandoned_bins",
                "Background compaction bins given up because an input was removed meanwhile",
                &f.compaction_abandoned,
            ),
            (
                "deltabus_compaction_remapped_bins",
                "Background compaction bins committed with rows deleted meanwhile carried onto them",
                &f.compaction_remapped,
            ),
            (
                "deltabus_key_index_rebuilt_files",
                "Data files the key index read because no whole sidecar held their keys",
                &f.index_rebuilt,
            ),
            ("deltabus_key_index_bucket_loads", "Evicted key index buckets read back from sidecars", &f.index_loads),
        ];
        for (name, help, family) in counters {
            r.register(name, help, family.clone());
        }
        r.register("deltabus_flushes", "Flushes by reason", f.flushes.clone());
        r.register("deltabus_commit_seconds", "Time from a flush's start to its commit", f.commit_seconds.clone());
        r.register(
            "deltabus_buffer_bytes",
            "Bytes buffered: the open batch and the one being flushed",
            f.buffer_bytes.clone(),
        );
        r.register("deltabus_buffer_fill_ratio", "Buffered bytes over flush.max_bytes", f.buffer_fill.clone());
        r.register(
            "deltabus_lag_records",
            "Records in the partition not yet committed to the table",
            f.lag_records.clone(),
        );
        r.register("deltabus_lag_seconds", "Age of the last committed record while behind", f.lag_seconds.clone());
        r.register(
            "deltabus_source_version",
            "Last source version processed by a Delta-source pipeline",
            f.source_version.clone(),
        );
        r.register("deltabus_source_lag_versions", "Source commits not yet processed", f.source_lag_versions.clone());
        r.register(
            "deltabus_source_lag_seconds",
            "Age of the commit being processed while behind",
            f.source_lag_seconds.clone(),
        );
        r.register(
            "deltabus_key_index_resident_bytes",
            "Bytes of the key index in memory (bounded by upsert.index_memory)",
            f.index_resident.clone(),
        );
        r.register("deltabus_key_index_files", "Data files the key index covers", f.index_files.clone());
        f
    }
}

/// Lag bookkeeping of one partition.
#[derive(Debug, Clone, Copy, Default)]
struct PartitionLag {
    high_watermark: Option<i64>,
    /// Next offset to commit (last committed + 1).
    position: Option<i64>,
    last_timestamp_ms: Option<i64>,
}

/// One pipeline's handles into the families.
#[derive(Debug)]
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) struct PipelineMetrics {
    name: String,
    families: Arc<Families>,
    pub records_in: Counter,
    pub bytes_in: Counter,
    pub dead_letters: Counter,
    pub rows_committed: Counter,
    pub commits: Counter,
    pub conflicts: Counter,
    /// Rows dropped because their partition was revoked or another worker moved it.
    pub rows_dropped: Counter,
    /// Offsets skipped because the broker no longer held them (`fail_on_data_loss = false`).
    pub offsets_lost: Counter,
    /// Assignments whose recorded position was past the partition's end.
    pub positions_past_end: Counter,
    /// Kafka client and consume errors (librdkafka retries them).
    pub kafka_errors: Counter,
    pub compaction_commits: Counter,
    pub compacted_files: Counter,
    pub compaction_abandoned: Counter,
    pub compaction_remapped: Counter,
    pub buffer_bytes: AtomicU64,
    pub buffer_limit: AtomicU64,
    pub ready: AtomicBool,
    /// Delta sources: the last source version processed, versions and seconds behind.
    source: Mutex<Option<(Option<u64>, u64, f64)>>,
    lag: Mutex<BTreeMap<i32, PartitionLag>>,
    /// The key index's figures as last reported.
    key_index: Mutex<crate::storage::IndexStats>,
}

impl PipelineMetrics {
    fn new(name: &str, families: Arc<Families>) -> PipelineMetrics {
        let l = PipelineLabel { pipeline: name.to_string() };
        let c = |f: &Counters| f.get_or_create(&l).clone();
        PipelineMetrics {
            records_in: c(&families.records_in),
            bytes_in: c(&families.bytes_in),
            dead_letters: c(&families.dead_letters),
            rows_committed: c(&families.rows_committed),
            commits: c(&families.commits),
            conflicts: c(&families.conflicts),
            rows_dropped: c(&families.rows_dropped),
            offsets_lost: c(&families.offsets_lost),
            positions_past_end: c(&families.positions_past_end),
            kafka_errors: c(&families.kafka_errors),
            compaction_commits: c(&families.compaction_commits),
            compacted_files: c(&families.compacted_files),
            compaction_abandoned: c(&families.compaction_abandoned),
            compaction_remapped: c(&families.compaction_remapped),
            buffer_bytes: AtomicU64::new(0),
            buffer_limit: AtomicU64::new(0),
            ready: AtomicBool::new(false),
            source: Mutex::new(None),
            lag: Mutex::new(BTreeMap::new()),
            key_index: Mutex::new(crate::storage::IndexStats::default()),
            name: name.to_string(),
            families,
        }
    }

    fn label(&self) -> PipelineLabel {
        PipelineLabel { pipeline: self.name.clone() }
    }

    /// Counts a flush and its commit latency.
    #[cfg_attr(feature = "internal-api", visibility::make(pub))]
    pub(crate) fn flushed(&self, reason: FlushReason, seconds: f64) {
        let labels = ReasonLabels { pipeline: self.name.clone(), reason: reason.as_str().to_string() };
        self.families.flushes.get_or_create(&labels).inc();
        self.families.commit_seconds.get_or_create(&self.label()).observe(seconds);
    }

    /// Records high watermarks from the client statistics.
    #[cfg_attr(feature = "internal-api", visibility::make(pub))]
    pub(crate) fn high_watermarks(&self, marks: &BTreeMap<i32, i64>) {
        if let Ok(mut lag) = self.lag.lock() {
            for (p, hw) in marks {
                lag.entry(*p).or_default().high_watermark = Some(*hw);
            }
        }
    }

    /// Records a partition's committed position (next offset) and its last record's time.
    #[cfg_attr(feature = "internal-api", visibility::make(pub))]
    pub(crate) fn position(&self, partition: i32, next_offset: i64, last_timestamp_ms: Option<i64>) {
        if let Ok(mut lag) = self.lag.lock() {
            let e = lag.entry(partition).or_default();
            e.position = Some(next_offset);
            e.last_timestamp_ms = last_timestamp_ms.or(e.last_timestamp_ms);
            e.high_watermark = e.high_watermark.map(|h| h.max(next_offset));
        }
    }

    /// Records a Delta source's position, versions behind and seconds behind.
    #[cfg_attr(feature = "internal-api", visibility::make(pub))]
    pub(crate) fn source_lag(&self, position: Option<u64>, versions_behind: u64, seconds_behind: f64) {
        if let Ok(mut s) = self.source.lock() {
            *s = Some((position, versions_behind, seconds_behind));
        }
    }

    /// Records the key index's figures after a keyed flush (cumulative over its life).
    pub(crate) fn key_index(&self, now: crate::storage::IndexStats) {
        let Ok(mut last) = self.key_index.lock() else { return };
        let l = self.label();
        let f = &self.families;
        f.index_rebuilt.get_or_create(&l).inc_by(now.files_from_data.saturating_sub(last.files_from_data));
        f.index_loads.get_or_create(&l).inc_by(now.buckets_loaded.saturating_sub(last.buckets_loaded));
        f.index_resident.get_or_create(&l).set(i64::try_from(now.resident_bytes).unwrap_or(i64::MAX));
        f.index_files.get_or_create(&l).set(i64::try_from(now.files).unwrap_or(i64::MAX));
        *last = now;
    }

    /// Forgets partitions no longer assigned.
    pub(crate) fn forget(&self, partitions: &[i32]) {
        if let Ok(mut lag) = self.lag.lock() {
            for p in partitions {
                lag.remove(p);
                let labels = PartitionLabels { pipeline: self.name.clone(), partition: *p };
                self.families.lag_records.remove(&labels);
                self.families.lag_seconds.remove(&labels);
            }
        }
    }

    /// Sets the gauges computed from state: buffer fill, partition lag, source lag.
    fn refresh(&self, now_ms: i64) {
        let f = &self.families;
        let l = self.label();
        let (used, limit) = (self.buffer_bytes.load(Relaxed), self.buffer_limit.load(Relaxed));
        f.buffer_bytes.get_or_create(&l).set(i64::try_from(used).unwrap_or(i64::MAX));
        f.buffer_fill.get_or_create(&l).set(if limit == 0 { 0.0 } else { used as f64 / limit as f64 });
        let lag = self.lag.lock().map(|g| g.clone()).unwrap_or_default();
        for (p, e) in &lag {
            let (Some(hw), Some(pos)) = (e.high_watermark, e.position) else { continue };
            let behind = (hw - pos).max(0);
            let labels = PartitionLabels { pipeline: self.name.clone(), partition: *p };
            f.lag_records.get_or_create(&labels).set(behind);
            let secs = match (behind, e.last_timestamp_ms) {
                (0, _) | (_, None) => 0.0,
                (_, Some(ts)) => (now_ms - ts).max(0) as f64 / 1000.0,
            };
            f.lag_seconds.get_or_create(&labels).set(secs);
        }
        if let Some((position, versions, secs)) = self.source.lock().ok().and_then(|g| *g) {
            f.source_version.get_or_create(&l).set(position.map_or(-1, |p| i64::try_from(p).unwrap_or(i64::MAX)));
            f.source_lag_versions.get_or_create(&l).set(i64::try_from(versions).unwrap_or(i64::MAX));
            f.source_lag_seconds.get_or_create(&l).set(secs);
        }
    }
}

/// Every pipeline's metrics, the registry they live in, and the process's.
#[derive(Debug)]
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) struct Metrics {
    registry: Registry,
    families: Arc<Families>,
    pipelines: Mutex<BTreeMap<String, Arc<PipelineMetrics>>>,
    push: Arc<push::PushFamilies>,
    kafka: Arc<kafka::KafkaMetrics>,
    /// Reads "now" for lag and staleness gauges.
    pub clock: crate::common::clock::Clock,
}

impl Default for Metrics {
    fn default() -> Self {
        let mut registry = Registry::default();
        let families = Arc::new(Families::register(&mut registry));
        process::register(&mut registry);
        let push = Arc::new(push::PushFamilies::register(&mut registry));
        let kafka = Arc::new(kafka::KafkaMetrics::register(&mut registry));
        Metrics { registry, families, pipelines: Mutex::new(BTreeMap::new()), push, kafka, clock: Default::default() }
    }
}

/// The process's shared metrics instances, for exporters that read them all
/// ([`Metrics::render_live`]); kept to the end, so that a last export after the commands
/// returned still has their figures.
static LIVE: Mutex<Vec<Arc<Metrics>>> = Mutex::new(Vec::new());

impl Metrics {
    /// A new instance for the process's commands to share, seen by [`Metrics::render_live`].
    #[cfg_attr(feature = "internal-api", visibility::make(pub))]
    pub(crate) fn shared() -> Arc<Metrics> {
        let m = Arc::new(Metrics::default());
        LIVE.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push(m.clone());
        m
    }

    /// An instance with a sample in every family (an exposition leaves empty families out):
    /// where the metrics reference and the OpenTelemetry bridge read the declared families.
    #[cfg_attr(feature = "internal-api", visibility::make(pub))]
    pub(crate) fn specimen() -> Metrics {
        let m = Metrics::default();
        let p = m.pipeline("specimen");
        p.flushed(FlushReason::Rows, 0.1);
        p.high_watermarks(&BTreeMap::from([(0, 1)]));
        p.position(0, 0, Some(0));
        p.source_lag(Some(1), 1, 1.0);
        p.key_index(crate::storage::IndexStats::default());
        let t = m.push_table("specimen");
        t.answered(Some("specimen"), "committed", 1, 1, 0.1);
        t.group_closed("window");
        t.rejected("bad_line");
        let k = m.kafka();
        k.request(kafka_protocol::messages::ApiKey::Produce);
        k.refused("bad_frame");
        k.produced("specimen", 1, 0.1);
        k.fetched("specimen", 1, 0);
        k.produce_failed("specimen", kafka_protocol::error::ResponseError::UnknownServerError);
        m
    }

    /// The exposition of every instance made by [`Metrics::shared`].
    pub(crate) fn render_live() -> String {
        let live: Vec<Arc<Metrics>> = LIVE.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone();
        live.iter().map(|m| m.render()).collect()
    }

    /// The metrics of a pipeline (created on first use).
    #[cfg_attr(feature = "internal-api", visibility::make(pub))]
    pub(crate) fn pipeline(&self, name: &str) -> Arc<PipelineMetrics> {
        let mut map = self.pipelines.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        map.entry(name.to_string())
            .or_insert_with(|| Arc::new(PipelineMetrics::new(name, self.families.clone())))
            .clone()
    }

    /// The push-ingest metrics of a server table.
    pub(crate) fn push_table(&self, table: &str) -> Arc<push::PushMetrics> {
        Arc::new(push::PushMetrics::new(table, self.push.clone()))
    }

    /// The Kafka-protocol listener's metrics.
    pub(crate) fn kafka(&self) -> &kafka::KafkaMetrics {
        &self.kafka
    }

    fn all(&self) -> Vec<Arc<PipelineMetrics>> {
        let map = self.pipelines.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        map.values().cloned().collect()
    }

    /// The exposition (OpenMetrics text).
    #[cfg_attr(feature = "internal-api", visibility::make(pub))]
    pub(crate) fn render(&self) -> String {
        let now = self.clock.now_ms();
        for m in self.all() {
            m.refresh(now);
        }
        let mut out = String::new();
        if prometheus_client::encoding::text::encode(&mut out, &self.registry).is_err() {
            out = "# EOF\n".into();
        }
        out
    }

    /// Whether every pipeline is ready.
    pub(crate) fn ready(&self) -> bool {
        let all = self.all();
        !all.is_empty() && all.iter().all(|m| m.ready.load(Relaxed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exposition_has_counters_histogram_and_lag() {
        let m = Metrics::default();
        let p = m.pipeline("orders");
        p.records_in.inc_by(7);
        p.flushed(FlushReason::Rows, 0.02);
        p.high_watermarks(&BTreeMap::from([(0, 100)]));
        p.position(0, 90, Some(0));
        let text = m.render();
        assert!(text.contains("deltabus_records_in_total{pipeline=\"orders\"} 7"), "{text}");
        assert!(text.contains("deltabus_flushes_total{pipeline=\"orders\",reason=\"rows\"} 1"), "{text}");
        assert!(text.contains("deltabus_commit_seconds_bucket{le=\"0.025\",pipeline=\"orders\"} 1"), "{text}");
        assert!(text.contains("deltabus_commit_seconds_bucket{le=\"0.01\",pipeline=\"orders\"} 0"), "{text}");
        assert!(text.contains("deltabus_lag_records{pipeline=\"orders\",partition=\"0\"} 10"), "{text}");
        assert!(!text.contains("deltabus_source_lag_versions{"), "no Delta source, no source lag");
        p.source_lag(Some(41), 3, 2.5);
        let text = m.render();
        assert!(text.contains("deltabus_source_version{pipeline=\"orders\"} 41"), "{text}");
        assert!(text.contains("deltabus_source_lag_versions{pipeline=\"orders\"} 3"));
        assert!(text.contains("deltabus_source_lag_seconds{pipeline=\"orders\"} 2.5"));
        assert!(!m.ready());
        p.ready.store(true, Relaxed);
        assert!(m.ready());
    }

    #[test]
    fn two_pipelines_share_one_family_per_metric() {
        let m = Metrics::default();
        m.pipeline("a").records_in.inc_by(1);
        m.pipeline("b").records_in.inc_by(2);
        let text = m.render();
        assert_eq!(text.matches("# TYPE deltabus_records_in counter").count(), 1, "{text}");
        assert!(text.contains("deltabus_records_in_total{pipeline=\"a\"} 1"));
        assert!(text.contains("deltabus_records_in_total{pipeline=\"b\"} 2"));
        assert!(text.contains("deltabus_build_info"), "{text}");
        assert!(text.trim_end().ends_with("# EOF"));
    }
}
