//! A `deltabus run` pipeline whose source is another Delta table: the follower loop
//! ([`crate::feed::follow`]) into the pipeline's table through the Delta-table sink, so each
//! source commit lands exactly once (`txn(<follower id>-<source table id>, version)`). The
//! follower registers its position on the source, reports versions and seconds behind in the
//! pipeline metrics, and stops when `stop` turns true (between commits, never inside one).

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

use tokio::sync::watch;

use super::runner::RunReport;
use crate::config::{PipelineSource, ResolvedPipeline};
use crate::error::{Error, Result};
use crate::feed::follow::run_follower;
use crate::feed::sink::table::TableSink;
use crate::metrics::PipelineMetrics;
use crate::storage::{StorageOptions, Table};

/// Runs the Delta-source pipeline `p` into `target` until `stop`.
///
/// # Errors
/// As [`run_follower`]; [`Error::Internal`] when `p` has no Delta source.
pub async fn run(
    p: ResolvedPipeline,
    target: Table,
    storage: StorageOptions,
    metrics: Arc<PipelineMetrics>,
    mut stop: watch::Receiver<bool>,
) -> Result<RunReport> {
    let PipelineSource::Delta(d) = &p.source else {
        return Err(Error::Internal(format!("pipeline {} has no Delta source", p.name)));
    };
    let source = Table::open(&d.source, storage)?;
    let source_id = source.snapshot(None).await?.metadata.id;
    let mut sink = TableSink::open(&target, &d.follower_id, &source_id).await?;
    metrics.ready.store(true, Relaxed);
    tracing::info!(pipeline = %p.name, source = %d.source, follower = %d.follower_id, "delta source following");
    let stopped = async move {
        let _ = stop.wait_for(|s| *s).await;
    };
    let report = run_follower(&source, &mut sink, &d.options, Some(&metrics), stopped).await?;
    Ok(RunReport { records: report.rows, rows_committed: sink.rows, dead_letters: 0, commits: sink.commits })
}
