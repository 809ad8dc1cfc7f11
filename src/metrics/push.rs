//! Metrics of push ingest over HTTP: per table and producer, requests by outcome, rows and
//! bytes; per table, answer latency, commits, commit groups by what closed them, lost commit
//! races and rejections by reason;
//! the bytes requests hold against `server.max_buffered`.
//!
//! Producer ids come from clients, so their label is bounded: the first
//! [`MAX_PRODUCER_LABELS`] producers of a process are named, later ones count as `other`, and
//! requests without an id as `anonymous`.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

/// Producers named in labels before the rest count as `other`.
pub(crate) const MAX_PRODUCER_LABELS: usize = 1000;

const LATENCY_BUCKETS: [f64; 12] = [0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0];

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TableLabel {
    table: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ProducerLabels {
    table: String,
    producer: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OutcomeLabels {
    table: String,
    producer: String,
    outcome: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ClosedLabels {
    table: String,
    closed: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReasonLabels {
    table: String,
    reason: String,
}

/// The push families, registered once per registry.
#[derive(Debug)]
pub(crate) struct PushFamilies {
    requests: Family<OutcomeLabels, Counter>,
    rows: Family<ProducerLabels, Counter>,
    bytes: Family<ProducerLabels, Counter>,
    rejections: Family<ReasonLabels, Counter>,
    seconds: Family<TableLabel, Histogram, fn() -> Histogram>,
    commits: Family<TableLabel, Counter>,
    groups: Family<ClosedLabels, Counter>,
    conflicts: Family<TableLabel, Counter>,
    /// Bytes held by requests in flight.
    pub buffered_bytes: Gauge,
    named: Mutex<HashSet<String>>,
}

fn latency() -> Histogram {
    Histogram::new(LATENCY_BUCKETS)
}

impl PushFamilies {
    pub(super) fn register(r: &mut Registry) -> PushFamilies {
        let f = PushFamilies {
            requests: Family::default(),
            rows: Family::default(),
            bytes: Family::default(),
            rejections: Family::default(),
            seconds: Family::new_with_constructor(latency),
            commits: Family::default(),
            groups: Family::default(),
            conflicts: Family::default(),
            buffered_bytes: Gauge::default(),
            named: Mutex::new(HashSet::new()),
        };
        r.register("deltabus_push_requests", "Push requests answered, by outcome", f.requests.clone());
        r.register("deltabus_push_rows", "Rows committed from push requests", f.rows.clone());
        r.register("deltabus_push_bytes", "Body bytes of committed push requests", f.bytes.clone());
        r.register("deltabus_push_rejections", "Push requests refused, by reason", f.rejections.clone());
        r.register("deltabus_push_request_seconds", "Time from a push request to its answer", f.seconds.clone());
        r.register("deltabus_push_commits", "Group commits of pushed rows", f.commits.clone());
        r.register(
            "deltabus_push_groups",
            "Commit groups by what closed them: window, everyone (every recent producer in), size",
            f.groups.clone(),
        );
        r.register(
            "deltabus_push_commit_conflicts",
            "Group commits decided again after a lost race",
            f.conflicts.clone(),
        );
        r.register("deltabus_push_buffered_bytes", "Bytes held by push requests in flight", f.buffered_bytes.clone());
        f
    }

    fn producer_label(&self, producer: Option<&str>) -> String {
        let Some(p) = producer else { return "anonymous".into() };
        let mut named = self.named.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if named.contains(p) {
            return p.to_string();
        }
        if named.len() < MAX_PRODUCER_LABELS {
            named.insert(p.to_string());
            return p.to_string();
        }
        "other".into()
    }
}

/// One table's handles into the push families.
#[derive(Debug)]
pub(crate) struct PushMetrics {
    table: String,
    families: Arc<PushFamilies>,
    pub commits: Counter,
    pub conflicts: Counter,
}

impl PushMetrics {
    pub(super) fn new(table: &str, families: Arc<PushFamilies>) -> PushMetrics {
        let l = TableLabel { table: table.to_string() };
        let commits = families.commits.get_or_create(&l).clone();
        let conflicts = families.conflicts.get_or_create(&l).clone();
        PushMetrics { commits, conflicts, table: table.to_string(), families }
    }

    /// Counts an answered request: its outcome (`committed`, `already_committed`, `rejected`),
    /// and for a committed one its rows and bytes.
    pub(crate) fn answered(&self, producer: Option<&str>, outcome: &str, rows: u64, bytes: u64, seconds: f64) {
        let producer = self.families.producer_label(producer);
        let f = &self.families;
        let labels = OutcomeLabels { table: self.table.clone(), producer: producer.clone(), outcome: outcome.into() };
        f.requests.get_or_create(&labels).inc();
        if rows > 0 || bytes > 0 {
            let p = ProducerLabels { table: self.table.clone(), producer };
            f.rows.get_or_create(&p).inc_by(rows);
            f.bytes.get_or_create(&p).inc_by(bytes);
        }
        f.seconds.get_or_create(&TableLabel { table: self.table.clone() }).observe(seconds);
    }

    /// Counts a commit group by what closed it (`window`, `everyone`, `size`).
    pub(crate) fn group_closed(&self, closed: &str) {
        let labels = ClosedLabels { table: self.table.clone(), closed: closed.into() };
        self.families.groups.get_or_create(&labels).inc();
    }

    /// Counts a refused request by reason (`bad_line`, `too_large`, `unauthorized`, ...).
    pub(crate) fn rejected(&self, reason: &str) {
        let labels = ReasonLabels { table: self.table.clone(), reason: reason.into() };
        self.families.rejections.get_or_create(&labels).inc();
    }

    /// The gauge of bytes held by requests in flight (shared by every table).
    pub(crate) fn buffered(&self) -> &Gauge {
        &self.families.buffered_bytes
    }
}
