//! `deltabus delete --where`: removes matching rows in one `DELETE` commit.
//!
//! Files are first pruned by partition values and statistics; only files that may match are
//! read. Within a file, the physical row indexes of matching rows (not already deleted) are
//! collected. On tables with deletion vectors enabled (`delta.enableDeletionVectors=true`,
//! `deletionVectors` in the protocol) the new indexes are united with the file's DV and stored
//! in one `deletion_vector_<uuid>.bin` for the commit, and the file is recommitted as
//! `remove` (old DV) + `add` (same path, new DV, stats marked not tight). Otherwise the file is
//! rewritten without those rows (copy-on-write). On tables with the change data feed enabled
//! the deleted rows are also written as change data (`_change_data/`, `_change_type =
//! delete`), so feed readers get exactly them, also for copy-on-write deletes.

use serde_json::{json, Value};

use crate::delta::conflict::{IsolationLevel, ReadSet};
use crate::delta::features::{check_writable, has_reader_feature, Feature};
use crate::delta::predicate::parse;
use crate::delta::replay::FileKey;
use crate::delta::transaction::{CommitOutcome, Operation, Transaction};
use crate::error::{Error, Result};
use crate::storage::{RetryPolicy, StagedCommit, Table};
use crate::write::deletion::{change_data_actions, dv_actions, find_rows, rewrite_actions};

/// What a delete did.
#[derive(Debug, Clone, Default, PartialEq)]
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) struct DeleteReport {
    pub files_scanned: usize,
    pub files_skipped: usize,
    pub files_changed: usize,
    pub rows_deleted: u64,
    pub deletion_vectors: bool,
    pub version: Option<u64>,
    /// A dry run: what would be deleted; nothing was written.
    pub dry_run: bool,
}

/// How to delete.
#[derive(Debug, Clone, Default)]
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) struct DeleteOptions {
    pub retry: RetryPolicy,
    /// Find and count the matching rows and files; write nothing.
    pub dry_run: bool,
}

impl DeleteReport {
    /// The command output.
    pub(crate) fn to_json(&self) -> Value {
        json!({
            "version": self.version, "filesScanned": self.files_scanned, "filesSkipped": self.files_skipped,
            "filesChanged": self.files_changed, "rowsDeleted": self.rows_deleted,
            "mode": if self.deletion_vectors { "deletion-vectors" } else { "copy-on-write" },
            "dryRun": self.dry_run,
        })
    }
}

/// Deletes the rows matching `predicate`.
///
/// # Errors
/// [`Error::InvalidArgument`] for a predicate that does not parse or names unknown columns
/// (nothing is committed); [`Error::Unsupported`] for tables deltabus may not write or that
/// are append-only; [`Error::CommitConflict`] when a concurrent commit invalidates the delete.
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) async fn delete(table: &Table, predicate: &str, opts: &DeleteOptions) -> Result<DeleteReport> {
    let retry = &opts.retry;
    let expr = parse(predicate).map_err(|e| Error::InvalidArgument(format!("--where: {e}")))?;
    let snapshot = table.snapshot(None).await?;
    check_writable(&snapshot.protocol, &snapshot.metadata)?;
    if snapshot.properties.append_only {
        return Err(Error::unsupported("the table is append-only (delta.appendOnly=true)"));
    }
    for c in expr.columns() {
        if snapshot.schema.fields.iter().all(|f| !f.name.eq_ignore_ascii_case(c)) {
            return Err(Error::InvalidArgument(format!("--where: no column {c:?} in the table")));
        }
    }
    expr.check_types(&snapshot.schema).map_err(|e| Error::InvalidArgument(format!("--where: {e}")))?;
    let use_dvs =
        snapshot.properties.enable_deletion_vectors && has_reader_feature(&snapshot.protocol, Feature::DeletionVectors);
    let plan = table.data().scan_plan(&snapshot);
    let mut report = DeleteReport { deletion_vectors: use_dvs, dry_run: opts.dry_run, ..DeleteReport::default() };
    let found = find_rows(
        table,
        &plan,
        snapshot
            .files()
            .into_iter()
            .filter(|add| expr.may_match_in(&snapshot, &add.partition_values, add.stats.as_deref())),
        |batch| expr.evaluate(batch).map_err(|e| Error::InvalidArgument(format!("--where: {e}"))),
    )
    .await?;
    report.files_scanned = found.files_scanned;
    report.files_skipped = snapshot.files().len() - found.files_scanned;
    report.rows_deleted = found.rows();
    let (changes, found_rows) = (found.changes, found.rows);
    report.files_changed = changes.len();
    if changes.is_empty() || opts.dry_run {
        return Ok(report);
    }
    let now = table.clock().now_ms();
    let mut actions = Vec::new();
    let mut written: Vec<String> = Vec::new();
    let mut build = if use_dvs {
        dv_actions(table, &changes, now, &mut actions, &mut written).await
    } else {
        rewrite_actions(table, &snapshot, &plan, &changes, now, &mut actions, &mut written).await
    };
    if build.is_ok() && snapshot.properties.enable_change_data_feed {
        // The deleted rows as change data, so feed readers need not diff files.
        let rows = found_rows
            .into_iter()
            .flatten()
            .map(|b| {
                let n = b.num_rows();
                (b, vec!["delete"; n])
            })
            .collect();
        build = change_data_actions(table, &snapshot, rows, &mut actions, &mut written).await;
    }
    let mut staged = StagedCommit::new(table);
    staged.stage(written);
    if let Err(e) = build {
        staged.discard().await;
        return Err(e);
    }
    let mut txn = Transaction::new(Operation::Delete, actions)
        .with_parameter("predicate", serde_json::to_string(&vec![predicate]).unwrap_or_default())
        .with_metric("numDeletedRows", report.rows_deleted)
        .with_metric("numFilesScanned", report.files_scanned)
        .with_metric("numFilesSkipped", report.files_skipped)
        .with_metric(if use_dvs { "numDeletionVectorsAdded" } else { "numRemovedFiles" }, report.files_changed);
    // Blind appends running beside the delete do not invalidate it (WriteSerializable);
    // any change to a file it read does.
    txn.isolation = IsolationLevel::WriteSerializable;
    txn.read = ReadSet {
        whole_table: true,
        files: changes.iter().map(|(a, _, _)| FileKey::of_add(a)).collect(),
        ..ReadSet::default()
    };
    match staged.commit(Some(&snapshot), &txn, retry).await? {
        CommitOutcome::Committed { version } => {
            report.version = Some(version);
            Ok(report)
        }
        CommitOutcome::Conflict { version, reason } => Err(Error::CommitConflict { version, reason }),
        CommitOutcome::AlreadyApplied { .. } => Err(Error::Internal("a delete carries no txn".into())),
    }
}
