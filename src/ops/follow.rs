//! A Delta-table sink for the change feed: every source commit's change rows are appended to a
//! target table in one target commit that also records `txn(appId, version)`, where the appId
//! is `<follower id>-<source table id>` and the version is the source commit's version. On
//! start the follower reads that txn from the target and resumes right after it, so a crash at
//! any point neither repeats nor skips a source commit: the rows and the position land in the
//! same put-if-absent commit or not at all.
//!
//! The target holds the source's columns plus `_change_type`, `_commit_version` and
//! `_commit_timestamp`; it is created on the first write. Source commits without row changes
//! (compaction, metadata-only) write nothing; their position is implied by the next one.

use std::time::Duration;

use serde_json::json;

use super::changes::{ChangeCursor, CommitChanges};
use super::create::new_table;
use crate::delta::actions::{Action, Txn};
use crate::delta::schema::{DataType, PrimitiveType, StructField, StructType};
use crate::delta::snapshot::Snapshot;
use crate::delta::transaction::{CommitOutcome, Transaction};
use crate::error::{Error, Result};
use crate::storage::{DataWriter, RetryPolicy, Table, WriterConfig};

/// Follower settings.
#[derive(Debug, Clone)]
pub struct FollowOptions {
    pub follower_id: String,
    /// Where to start when the target has no position for this follower.
    pub from: u64,
    pub poll: Duration,
    /// Stop once caught up instead of following.
    pub once: bool,
}

/// What a follower run did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FollowReport {
    pub app_id: String,
    pub source_commits: u64,
    pub target_commits: u64,
    pub rows: u64,
    /// The last source version applied to the target.
    pub position: Option<u64>,
}

impl FollowReport {
    /// The command output.
    pub fn to_json(&self) -> serde_json::Value {
        json!({"appId": self.app_id, "sourceCommits": self.source_commits, "targetCommits": self.target_commits, "rows": self.rows, "position": self.position})
    }
}

fn change_schema(source: &StructType) -> StructType {
    let mut fields = source.fields.clone();
    fields.push(StructField::new("_change_type", DataType::Primitive(PrimitiveType::String), true));
    fields.push(StructField::new("_commit_version", DataType::Primitive(PrimitiveType::Long), true));
    fields.push(StructField::new("_commit_timestamp", DataType::Primitive(PrimitiveType::Timestamp), true));
    StructType::new(fields)
}

/// Follows `source` into `target` until caught up (`once`) or interrupted.
///
/// # Errors
/// Source read errors (including a vacuumed commit), target protocol errors, a source schema
/// change the target does not have, and [`Error::CommitConflict`] when another process
/// follows with the same follower id.
pub async fn follow(source: &Table, target: &Table, opts: &FollowOptions) -> Result<FollowReport> {
    let source_id = source.snapshot(None).await?.metadata.id;
    let app_id =
        crate::pipeline::app_id::TxnAppId::Follower { follower: opts.follower_id.clone(), source_table_id: source_id }
            .to_string();
    let mut target_snapshot = match target.snapshot(None).await {
        Ok(s) => Some(s),
        Err(Error::NotATable { .. }) => None,
        Err(e) => return Err(e),
    };
    let position = target_snapshot.as_ref().and_then(|s| s.txn_version(&app_id)).and_then(|v| u64::try_from(v).ok());
    let start = position.map_or(opts.from, |p| p + 1);
    let mut report = FollowReport { app_id: app_id.clone(), position, ..FollowReport::default() };
    let mut cursor = ChangeCursor::open(source, start).await?;
    loop {
        let Some(changes) = cursor.poll().await? else {
            if opts.once {
                return Ok(report);
            }
            tokio::select! {
                _ = tokio::time::sleep(opts.poll) => continue,
                _ = tokio::signal::ctrl_c() => return Ok(report),
            }
        };
        report.source_commits += 1;
        if changes.batches.iter().all(|b| b.num_rows() == 0) {
            continue;
        }
        let schema = cursor
            .snapshot()
            .map(|s| change_schema(&s.schema))
            .ok_or_else(|| Error::Internal("cursor without snapshot".into()))?;
        let outcome = apply(target, target_snapshot.as_ref(), &schema, &changes, &app_id).await?;
        match outcome {
            CommitOutcome::Committed { .. } | CommitOutcome::AlreadyApplied { .. } => {
                if matches!(outcome, CommitOutcome::Committed { .. }) {
                    report.target_commits += 1;
                    report.rows += changes.batches.iter().map(|b| b.num_rows() as u64).sum::<u64>();
                }
                report.position = Some(changes.version);
                match &mut target_snapshot {
                    Some(s) => {
                        target.update_snapshot(s).await?;
                    }
                    None => target_snapshot = Some(target.snapshot(None).await?),
                }
            }
            CommitOutcome::Conflict { version, reason } => return Err(Error::CommitConflict { version, reason }),
        }
    }
}

async fn apply(
    target: &Table,
    snapshot: Option<&Snapshot>,
    schema: &StructType,
    changes: &CommitChanges,
    app_id: &str,
) -> Result<CommitOutcome> {
    let mut actions = Vec::new();
    let created;
    let write_snapshot = match snapshot {
        Some(s) => {
            if s.schema.fields.iter().map(|f| &f.name).ne(schema.fields.iter().map(|f| &f.name)) {
                return Err(Error::unsupported(format!(
                    "the source schema changed at version {}; the target table {} has the old one",
                    changes.version,
                    target.url()
                )));
            }
            s
        }
        None => {
            let (protocol, metadata) = new_table(schema.clone(), &[], &Default::default())?;
            actions.push(Action::Protocol(protocol.clone()));
            actions.push(Action::Metadata(metadata.clone()));
            created = Snapshot::for_new_table(protocol, metadata)?;
            &created
        }
    };
    let mut writer = DataWriter::new(target, write_snapshot, WriterConfig::for_snapshot(write_snapshot))?;
    for b in &changes.batches {
        if let Err(e) = writer.write(b).await {
            writer.abort().await;
            return Err(e);
        }
    }
    let adds = writer.finish().await?;
    let rows: usize = changes.batches.iter().map(|b| b.num_rows()).sum();
    actions.extend(adds.iter().cloned().map(Action::Add));
    actions.push(Action::Txn(Txn {
        app_id: app_id.to_string(),
        version: changes.version as i64,
        last_updated: Some(chrono::Utc::now().timestamp_millis()),
    }));
    let txn = Transaction::new(if snapshot.is_none() { "CREATE TABLE" } else { "STREAMING UPDATE" }, actions)
        .with_parameter("outputMode", "Append")
        .with_parameter("queryId", app_id)
        .with_parameter("epochId", changes.version.to_string())
        .with_metric("numAddedFiles", adds.len())
        .with_metric("numOutputRows", rows);
    let outcome = target.commit(snapshot, &txn, &RetryPolicy::default()).await?;
    if !matches!(outcome, CommitOutcome::Committed { .. }) {
        target.delete_uncommitted(&adds.iter().map(|a| a.path.clone()).collect::<Vec<_>>()).await;
    }
    Ok(outcome)
}
