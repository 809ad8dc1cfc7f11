//! The background compactor of a pipeline (`[pipelines.<name>.compaction] enabled = true`).
//!
//! Every `interval_ms` it plans the table with the compactor's planner, limited to partitions
//! holding at least `min_files` small files (Spark's auto compaction rule) or a file whose
//! deletion vector deletes more than `deleted_rows_ratio` of its rows (so a keyed pipeline's
//! deleted rows are purged under steady change), and rewrites them with `dataChange=false`
//! OPTIMIZE commits. Those commits never conflict with the pipeline's blind appends; rows a
//! keyed flush deletes in a bin's inputs meanwhile are carried onto its outputs; change feed
//! readers skip them. A keyed pipeline's compactor writes its outputs' key index sidecars. Failures are logged and retried at the next interval, except a
//! table the compactor may not rewrite (for example row tracking), which stops it for good.
//! The service aborts the task at shutdown: an interrupted rewrite leaves only unreferenced
//! files for vacuum, never a partial commit.

use std::sync::Arc;

use crate::compactor::planner::PlanConfig;
use crate::compactor::rewriter::{compact, CompactOptions};
use crate::config::ResolvedPipeline;
use crate::error::Error;
use crate::metrics::PipelineMetrics;
use crate::storage::Table;

/// Runs until aborted; with `only_while`, a round runs only while the flag is set (the
/// process is its table's committer: one compactor per table across the group).
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) async fn run(
    table: Table,
    cfg: ResolvedPipeline,
    metrics: Arc<PipelineMetrics>,
    only_while: Option<Arc<std::sync::atomic::AtomicBool>>,
) {
    let Some(c) = &cfg.compaction else { return };
    let mut plan =
        PlanConfig { min_partition_candidates: c.min_files, dv_ratio: c.deleted_rows_ratio, ..PlanConfig::default() };
    if let Some(t) = c.target_file_size {
        plan.target_size = t;
        plan.min_file_size = t;
    }
    let key_columns = cfg.upsert.as_ref().map(|u| u.key_columns.clone());
    let opts = CompactOptions { plan, key_columns, ..CompactOptions::default() };
    loop {
        tokio::time::sleep(c.interval).await;
        if only_while.as_ref().is_some_and(|f| !f.load(std::sync::atomic::Ordering::Acquire)) {
            continue;
        }
        match compact(&table, &opts).await {
            Ok(r) if r.bins > 0 => {
                metrics.compaction_commits.inc_by(r.versions.len() as u64);
                metrics.compacted_files.inc_by(r.files_in as u64);
                metrics.compaction_abandoned.inc_by(r.abandoned.len() as u64);
                metrics.compaction_remapped.inc_by(r.remapped_bins as u64);
                tracing::info!(pipeline = %cfg.name, files_in = r.files_in, files_out = r.files_out,
                    versions = ?r.versions, abandoned = r.abandoned.len(), remapped = r.remapped_bins, "auto compaction");
            }
            Ok(_) | Err(Error::NotATable { .. }) => {}
            Err(e @ Error::Unsupported { .. }) => {
                tracing::warn!(pipeline = %cfg.name, error = %e, "auto compaction stopped");
                return;
            }
            Err(e) => tracing::warn!(pipeline = %cfg.name, error = %e, "auto compaction failed; retrying later"),
        }
    }
}
