//! Rewriting planned bins and committing each as an `OPTIMIZE` with `dataChange=false`.
//!
//! Each bin is read with its deletion vectors applied (so deleted rows are purged), written
//! through the same data writer as ingest (statistics included), and committed on its own with
//! the bin's inputs as the transaction's read set. The committer's rules then make the bin
//! abandon — its new files deleted — if any input (path and DV id) was removed or given a new
//! DV meanwhile, so a deleted row is never resurrected; concurrent blind appends never
//! conflict with it.

use std::sync::Arc;

use serde_json::json;

use super::planner::{plan, Bin, PlanConfig};
use crate::delta::actions::{Action, Remove};
use crate::delta::conflict::ReadSet;
use crate::delta::features::{check_writable, has_writer_feature, Feature};
use crate::delta::replay::FileKey;
use crate::delta::snapshot::Snapshot;
use crate::delta::transaction::{CommitOutcome, Operation, Transaction};
use crate::error::{Error, Result};
use crate::storage::{DataWriter, RetryPolicy, StagedCommit, Table, WriterConfig};

/// Options of a compaction run.
#[derive(Debug, Clone, Default)]
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) struct CompactOptions {
    pub plan: PlanConfig,
    /// Only partitions matching `column = value` pairs (logical column names).
    pub partitions: Option<Vec<(String, Option<String>)>>,
    pub dry_run: bool,
    pub retry: RetryPolicy,
    /// Show progress over bins on stderr (a bar on a terminal, periodic lines otherwise).
    pub progress: bool,
}

/// What a compaction run did (or, dry, would do).
#[derive(Debug, Clone, Default, PartialEq)]
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) struct CompactReport {
    pub bins: usize,
    pub files_in: usize,
    pub files_out: usize,
    pub bytes_in: i64,
    pub bytes_out: i64,
    pub rows: u64,
    pub dv_rows_purged: i64,
    pub versions: Vec<u64>,
    /// Bins abandoned because their inputs changed, with the reason.
    pub abandoned: Vec<String>,
    pub dry_run: bool,
}

impl CompactReport {
    /// The `deltabus compact` summary.
    pub(crate) fn to_json(&self) -> serde_json::Value {
        json!({
            "dryRun": self.dry_run, "bins": self.bins, "filesIn": self.files_in, "filesOut": self.files_out,
            "bytesIn": self.bytes_in, "bytesOut": self.bytes_out, "rows": self.rows,
            "dvRowsPurged": self.dv_rows_purged, "versions": self.versions, "abandoned": self.abandoned,
        })
    }
}

/// Compacts the table's latest snapshot.
///
/// # Errors
/// [`Error::Unsupported`] for tables deltabus may not rewrite (unwritable protocol, row
/// tracking, whose ids a rewrite would have to preserve); [`Error::InvalidArgument`] for a
/// predicate on non-partition columns; storage and data errors.
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) async fn compact(table: &Table, opts: &CompactOptions) -> Result<CompactReport> {
    let snapshot = table.snapshot(None).await?;
    check_writable(&snapshot.protocol, &snapshot.metadata)?;
    if has_writer_feature(&snapshot.protocol, Feature::RowTracking) {
        return Err(Error::unsupported("compaction of row-tracking tables (rewritten rows must keep their row ids)"));
    }
    let wanted = physical_predicate(&snapshot, opts.partitions.as_deref())?;
    let keep = |pv: &crate::delta::actions::PartitionValues| {
        wanted.iter().all(|(k, v)| pv.get(k).cloned().flatten().filter(|s| !s.is_empty()) == *v)
    };
    let mut cfg = opts.plan.clone();
    if let Some(t) = snapshot.properties.target_file_size {
        cfg.target_size = cfg.target_size.min(t).max(1);
    }
    let bins = plan(&snapshot.files(), &cfg, &keep);
    let mut report = CompactReport { bins: bins.len(), dry_run: opts.dry_run, ..CompactReport::default() };
    for bin in &bins {
        report.files_in += bin.files.len();
        report.bytes_in += bin.bytes();
        report.dv_rows_purged +=
            bin.files.iter().filter_map(|f| f.deletion_vector.as_ref()).map(|d| d.cardinality).sum::<i64>();
    }
    if opts.dry_run {
        // The rows a run would rewrite, from the files' statistics (live rows: minus DVs).
        report.rows = bins
            .iter()
            .flat_map(|b| &b.files)
            .map(|f| {
                let dv = f.deletion_vector.as_ref().map_or(0, |d| d.cardinality);
                u64::try_from(super::planner::num_records(f).unwrap_or(0) - dv).unwrap_or(0)
            })
            .sum();
        return Ok(report);
    }
    // Bins are independent (disjoint inputs, one commit each): rewrite one per core at a time.
    let parallel = std::thread::available_parallelism().map_or(2, |n| n.get());
    let snapshot = Arc::new(snapshot);
    let total = bins.len();
    let mut pending = bins.into_iter().enumerate();
    let mut running = tokio::task::JoinSet::new();
    let progress = if opts.progress {
        crate::common::progress::Progress::new("compact", "bins", Some(total as u64))
    } else {
        crate::common::progress::Progress::hidden()
    };
    loop {
        while running.len() < parallel {
            let Some((_, bin)) = pending.next() else { break };
            let (table, snapshot, cfg, opts) = (table.clone(), snapshot.clone(), cfg.clone(), opts.clone());
            running.spawn(async move { rewrite_bin(&table, &snapshot, &bin, &cfg, &opts).await });
        }
        let Some(done) = running.join_next().await else { break };
        let part = done.map_err(|e| Error::Internal(format!("compaction task: {e}")))??;
        progress.inc(1);
        report.versions.extend(part.versions);
        report.files_out += part.files_out;
        report.bytes_out += part.bytes_out;
        report.rows += part.rows;
        report.abandoned.extend(part.abandoned);
    }
    progress.finish();
    report.versions.sort_unstable();
    Ok(report)
}

fn physical_predicate(
    s: &Snapshot,
    pairs: Option<&[(String, Option<String>)]>,
) -> Result<Vec<(String, Option<String>)>> {
    let mut out = Vec::new();
    for (col, value) in pairs.unwrap_or_default() {
        let field = s
            .metadata
            .partition_columns
            .iter()
            .find(|p| p.eq_ignore_ascii_case(col))
            .and_then(|p| s.schema.field(p))
            .ok_or_else(|| Error::InvalidArgument(format!("{col:?} is not a partition column")))?;
        out.push((field.physical_name(s.column_mapping()).to_string(), value.clone()));
    }
    Ok(out)
}

/// Rewrites and commits one bin; the returned report covers only its outputs.
async fn rewrite_bin(
    table: &Table,
    snapshot: &Snapshot,
    bin: &Bin,
    cfg: &PlanConfig,
    opts: &CompactOptions,
) -> Result<CompactReport> {
    let mut report = CompactReport::default();
    let plan = table.scan_plan(snapshot);
    let mut writer_cfg = WriterConfig::for_snapshot(snapshot);
    writer_cfg.target_file_size = cfg.target_size;
    let mut writer = DataWriter::new(table, snapshot, writer_cfg)?.rewriting();
    let mut rows = 0u64;
    for f in &bin.files {
        let read = match table.read_file(&plan, f).await {
            Ok(r) => r,
            Err(e) => {
                writer.abort().await;
                return Err(e);
            }
        };
        for batch in &read.batches {
            rows += batch.num_rows() as u64;
            if let Err(e) = writer.write(batch).await {
                writer.abort().await;
                return Err(e);
            }
        }
    }
    let mut adds = writer.finish().await?;
    for a in &mut adds {
        a.data_change = false;
    }
    let now = table.clock().now_ms();
    let removes = bin.files.iter().map(|f| {
        Action::Remove(Remove {
            path: f.path.clone(),
            deletion_timestamp: Some(now),
            data_change: false,
            extended_file_metadata: Some(true),
            partition_values: Some(f.partition_values.clone()),
            size: Some(f.size),
            stats: f.stats.clone(),
            tags: f.tags.clone(),
            deletion_vector: f.deletion_vector.clone(),
            base_row_id: f.base_row_id,
            default_row_commit_version: f.default_row_commit_version,
        })
    });
    let bytes_out: i64 = adds.iter().map(|a| a.size).sum();
    let mut actions: Vec<Action> = removes.collect();
    actions.extend(adds.iter().cloned().map(Action::Add));
    let predicate: Vec<String> =
        bin.partition_values.iter().map(|(k, v)| format!("{k} = {}", v.as_deref().unwrap_or("NULL"))).collect();
    let mut txn = Transaction::new(Operation::Optimize, actions)
        .with_parameter("predicate", serde_json::to_string(&predicate).unwrap_or_default())
        .with_parameter("targetSize", cfg.target_size.to_string())
        .with_metric("numRemovedFiles", bin.files.len())
        .with_metric("numAddedFiles", adds.len())
        .with_metric("numRemovedBytes", bin.bytes())
        .with_metric("numAddedBytes", bytes_out)
        .with_metric("numDeletionVectorsRemoved", bin.files.iter().filter(|f| f.deletion_vector.is_some()).count());
    txn.read = ReadSet { files: bin.files.iter().map(FileKey::of_add).collect(), ..ReadSet::default() };
    let mut staged = StagedCommit::new(table);
    staged.stage_adds(&txn.actions);
    match staged.commit(Some(snapshot), &txn, &opts.retry).await? {
        CommitOutcome::Committed { version } => {
            report.versions.push(version);
            report.files_out += adds.len();
            report.bytes_out += bytes_out;
            report.rows += rows;
        }
        CommitOutcome::Conflict { reason, .. } | CommitOutcome::AlreadyApplied { app_id: reason, .. } => {
            tracing::info!(reason = %reason, "compact.bin_abandoned");
            report.abandoned.push(reason);
        }
    }
    Ok(report)
}
