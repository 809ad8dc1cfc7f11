//! Where each assigned partition resumes, checked against what the broker still holds.
//!
//! - A recorded position (`txn` version v) resumes at v + 1, unless the broker deleted that
//!   offset already (retention ran before ingestion): then the pipeline stops with an error, or
//!   with `kafka.fail_on_data_loss = false` skips to the earliest offset held and counts the
//!   skipped offsets. A position past the end (a recreated topic, whose records up to the old
//!   position would count as ingested) is logged at ERROR and counted, not fatal: some brokers
//!   report a high watermark below offsets they already served.
//! - `start = "latest"` is resolved once and recorded in the table (a `txn` of the end offset
//!   minus one, in a commit of its own), so a later owner of the partition resumes there
//!   instead of at the then-latest offset, which would skip what the first owner consumed but
//!   did not commit.

use std::collections::BTreeMap;

use super::schema::TableSchema;
use crate::config::{KafkaPipeline, StartPosition};
use crate::delta::app_id::TxnAppId;
use crate::delta::snapshot::Snapshot;
use crate::delta::transaction::{Operation, Transaction};
use crate::error::{Error, Result};
use crate::metrics::PipelineMetrics;
use crate::source::kafka::stage::{KafkaSource, StartOffset};
use crate::storage::{commit_exactly_once, Plan, PlanFn, RetryPolicy, Table};

/// Where each of `parts`, just assigned, starts: its recorded position plus one (checked
/// against the broker's watermarks), else the configured start. `schema` is refreshed when a
/// `latest` start gets recorded.
///
/// # Errors
/// Storage and broker errors; data loss when `kafka.fail_on_data_loss` holds.
pub(crate) async fn resolve(
    source: &KafkaSource,
    table: &Table,
    schema: &mut TableSchema,
    cfg: &KafkaPipeline,
    metrics: &PipelineMetrics,
    parts: &[i32],
) -> Result<BTreeMap<i32, StartOffset>> {
    let topic = source.topic();
    let kafka = &cfg.kafka;
    let marks = source.watermarks(parts).await?;
    let recorded = |schema: &TableSchema| -> BTreeMap<i32, i64> {
        parts.iter().filter_map(|p| schema.position(&cfg.app_id, topic, *p).map(|v| (*p, v))).collect()
    };
    let mut known = recorded(schema);
    if matches!(kafka.start, StartPosition::Latest) {
        // Resolve "latest" once, in the table, so that the next owner resumes there.
        let ends: BTreeMap<i32, i64> =
            parts.iter().filter(|p| !known.contains_key(p)).filter_map(|p| marks.get(p).map(|m| (*p, m.1))).collect();
        if record_latest(table, schema.snapshot.as_ref(), &cfg.app_id, topic, &ends).await? {
            schema.refresh(table).await?;
            known = recorded(schema);
        }
    }
    let mut fresh = Vec::new();
    let mut positions = BTreeMap::new();
    for p in parts {
        let Some(v) = known.get(p) else {
            fresh.push(*p);
            continue;
        };
        let next = v + 1;
        let verdict = marks.get(p).map_or(Resume::At(next), |m| check(next, *m));
        let resume = match verdict {
            Resume::At(n) => n,
            Resume::Lost { lost, earliest } if !kafka.fail_on_data_loss => {
                tracing::error!(
                    partition = p,
                    lost,
                    earliest,
                    "data loss: the broker deleted records before ingestion; skipping them (fail_on_data_loss = false)"
                );
                metrics.offsets_lost.inc_by(u64::try_from(lost).unwrap_or(0));
                earliest
            }
            // Not fatal: some brokers report a high watermark below offsets they served.
            Resume::Ahead { next, end } => {
                tracing::error!(partition = p, next, end, "the table's position is past the partition's end: if the topic was recreated, its records up to the position count as ingested; ingest it under a new app_id");
                metrics.positions_past_end.inc_by(1);
                next
            }
            v => {
                return Err(data_loss_error(topic, *p, v).unwrap_or_else(|| Error::Internal("position verdict".into())))
            }
        };
        positions.insert(*p, StartOffset::At(resume));
    }
    let starts: BTreeMap<i32, StartOffset> = match &kafka.start {
        StartPosition::Earliest => fresh.iter().map(|p| (*p, StartOffset::Beginning)).collect(),
        // Only before the table exists (nothing to record the position in yet).
        StartPosition::Latest => fresh.iter().map(|p| (*p, StartOffset::End)).collect(),
        StartPosition::Offsets(map) => {
            fresh.iter().map(|p| (*p, map.get(p).map_or(StartOffset::Beginning, |o| StartOffset::At(*o)))).collect()
        }
        StartPosition::Timestamp(ts) if !fresh.is_empty() => source.offsets_for_timestamp(&fresh, *ts).await?,
        StartPosition::Timestamp(_) => BTreeMap::new(),
    };
    positions.extend(starts);
    Ok(positions)
}

/// The verdict on a recorded position.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Resume {
    /// Resume at this offset.
    At(i64),
    /// The broker deleted `lost` offsets before they were ingested; its earliest is `earliest`.
    Lost { lost: i64, earliest: i64 },
    /// The next offset is past the broker's end: the topic was recreated or truncated.
    Ahead { next: i64, end: i64 },
}

/// Checks `next` (the offset after the recorded position) against the broker's `(low, high)`
/// watermarks.
pub(crate) fn check(next: i64, (low, high): (i64, i64)) -> Resume {
    if next < low {
        Resume::Lost { lost: low - next, earliest: low }
    } else if next > high {
        Resume::Ahead { next, end: high }
    } else {
        Resume::At(next)
    }
}

/// The error for data that cannot be ingested exactly.
pub(crate) fn data_loss_error(topic: &str, partition: i32, verdict: Resume) -> Option<Error> {
    match verdict {
        Resume::At(_) => None,
        Resume::Lost { lost, earliest } => Some(Error::Kafka(format!(
            "{topic}/{partition}: {lost} records after the table's position were deleted by the broker before ingestion (its earliest offset is {earliest}); set kafka.fail_on_data_loss = false to skip them"
        ))),
        Resume::Ahead { next, end } => Some(Error::Kafka(format!(
            "{topic}/{partition}: the table's position (next offset {next}) is past the partition's end ({end}): the topic was recreated or truncated; ingest it under a new app_id"
        ))),
    }
}

/// Records `ends` (partition → its end offset) as the positions of partitions that had none,
/// in one commit of `txn` actions. Returns whether the table existed to record them in.
///
/// # Errors
/// Storage errors; a commit that cannot be decided.
pub(crate) async fn record_latest(
    table: &Table,
    snapshot: Option<&crate::delta::snapshot::Snapshot>,
    app: &str,
    topic: &str,
    ends: &BTreeMap<i32, i64>,
) -> Result<bool> {
    record(table, snapshot, app, topic, ends, Some("latest")).await
}

/// Records `next` (partition → the next offset to read) as positions, in one commit of `txn`
/// actions only (a routed pipeline's state). Returns whether the table existed.
///
/// # Errors
/// Storage errors; a conflicting or undecidable commit.
pub(crate) async fn record_positions(
    table: &Table,
    snapshot: Option<&crate::delta::snapshot::Snapshot>,
    app: &str,
    topic: &str,
    next: &BTreeMap<i32, i64>,
) -> Result<bool> {
    record(table, snapshot, app, topic, next, None).await
}

async fn record(
    table: &Table,
    snapshot: Option<&crate::delta::snapshot::Snapshot>,
    app: &str,
    topic: &str,
    ends: &BTreeMap<i32, i64>,
    starting: Option<&str>,
) -> Result<bool> {
    if snapshot.is_none() {
        return Ok(false);
    }
    if ends.is_empty() {
        return Ok(true);
    }
    let ids: Vec<(TxnAppId, i64)> = ends
        .iter()
        .map(|(p, end)| (TxnAppId::KafkaPartition { app: app.into(), topic: topic.into(), partition: *p }, end - 1))
        .collect();
    // A position another owner recorded (or committed past) first is theirs to keep: the
    // caller re-reads the table and uses it.
    let positions = |s: &Snapshot| -> Vec<(TxnAppId, i64)> {
        ids.iter().filter(|(id, v)| id.version_in(s).is_none_or(|held| held < *v)).cloned().collect()
    };
    let plan = |s: Option<&Snapshot>| {
        let Some(s) = s else { return Ok(Plan::Nothing(false)) };
        let open = positions(s);
        if open.is_empty() {
            return Ok(Plan::Nothing(true));
        }
        let mut txn = Transaction::new(Operation::StreamingUpdate, Vec::new())
            .with_parameter("outputMode", "Append")
            .with_parameter("queryId", app)
            .with_metric("numOutputRows", 0);
        if let Some(s) = starting {
            txn = txn.with_parameter("startingOffsets", s);
        }
        Ok(Plan::commit(txn, open, Vec::new(), true))
    };
    let mut view = snapshot.cloned();
    Ok(commit_exactly_once(table, &mut view, &RetryPolicy::default(), &mut PlanFn(plan)).await?.answer())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_against_watermarks() {
        assert_eq!(check(10, (0, 20)), Resume::At(10));
        assert_eq!(check(20, (0, 20)), Resume::At(20), "caught up");
        assert_eq!(check(0, (0, 0)), Resume::At(0), "empty partition");
        assert_eq!(check(5, (8, 20)), Resume::Lost { lost: 3, earliest: 8 });
        assert_eq!(check(30, (0, 20)), Resume::Ahead { next: 30, end: 20 });
        assert!(data_loss_error("t", 1, check(5, (8, 20))).unwrap().to_string().contains("3 records"));
        assert!(data_loss_error("t", 1, check(10, (0, 20))).is_none());
    }
}
