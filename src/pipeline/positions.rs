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

use crate::delta::actions::{Action, Txn};
use crate::delta::app_id::TxnAppId;
use crate::delta::transaction::{CommitOutcome, Transaction};
use crate::error::{Error, Result};
use crate::storage::{RetryPolicy, StagedCommit, Table};

/// The verdict on a recorded position.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resume {
    /// Resume at this offset.
    At(i64),
    /// The broker deleted `lost` offsets before they were ingested; its earliest is `earliest`.
    Lost { lost: i64, earliest: i64 },
    /// The next offset is past the broker's end: the topic was recreated or truncated.
    Ahead { next: i64, end: i64 },
}

/// Checks `next` (the offset after the recorded position) against the broker's `(low, high)`
/// watermarks.
pub fn check(next: i64, (low, high): (i64, i64)) -> Resume {
    if next < low {
        Resume::Lost { lost: low - next, earliest: low }
    } else if next > high {
        Resume::Ahead { next, end: high }
    } else {
        Resume::At(next)
    }
}

/// The error for data that cannot be ingested exactly.
pub fn data_loss_error(topic: &str, partition: i32, verdict: Resume) -> Option<Error> {
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
pub async fn record_latest(
    table: &Table,
    snapshot: Option<&crate::delta::snapshot::Snapshot>,
    app: &str,
    topic: &str,
    ends: &BTreeMap<i32, i64>,
) -> Result<bool> {
    let Some(snapshot) = snapshot else { return Ok(false) };
    if ends.is_empty() {
        return Ok(true);
    }
    let now = chrono::Utc::now().timestamp_millis();
    let actions = ends
        .iter()
        .map(|(p, end)| {
            let id = TxnAppId::KafkaPartition { app: app.into(), topic: topic.into(), partition: *p };
            Action::Txn(Txn { app_id: id.to_string(), version: end - 1, last_updated: Some(now) })
        })
        .collect();
    let txn = Transaction::new("STREAMING UPDATE", actions)
        .with_parameter("outputMode", "Append")
        .with_parameter("queryId", app)
        .with_parameter("startingOffsets", "latest")
        .with_metric("numOutputRows", 0);
    match StagedCommit::new(table).commit(Some(snapshot), &txn, &RetryPolicy::default()).await? {
        // Already there: another owner recorded (or committed) a position first; the caller
        // re-reads the table and uses it.
        CommitOutcome::Committed { .. } | CommitOutcome::AlreadyApplied { .. } => Ok(true),
        CommitOutcome::Conflict { version, reason } => Err(Error::CommitConflict { version, reason }),
    }
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
