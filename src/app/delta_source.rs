//! A `deltabus run` pipeline whose source is another Delta table: followed into the
//! pipeline's table the one way `deltabus follow` does it ([`crate::feed::into_table`]), so each
//! source commit lands exactly once (`txn(<follower id>-<source table id>, version)`). The
//! follower registers its position on the source, reports versions and seconds behind in the
//! pipeline metrics, and stops when `stop` turns true (between commits, never inside one).
//! With `group`, the process is a member of a consumer group on the source (slices and their
//! positions, `feed::group_follow`); with `mirror`, the table is kept a copy of the source
//! (`feed::sink::mirror` by key, `feed::sink::file_mirror` by copying files).

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

use tokio::sync::watch;

use crate::config::{PipelineSource, ResolvedPipeline};
use crate::error::{Error, Result};
use crate::feed::group::Member;
use crate::feed::into_table::{follow_into_table, refuse_own_target, Target};
use crate::ingest::runner::RunReport;
use crate::metrics::PipelineMetrics;
use crate::storage::{StorageOptions, Table};

/// Runs the Delta-source pipeline `p` into `target` until `stop`.
///
/// # Errors
/// As [`run_follower`]; [`Error::Internal`] when `p` has no Delta source.
pub(crate) async fn run(
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
    let stopped = async move {
        let _ = stop.wait_for(|s| *s).await;
    };
    tracing::info!(pipeline = %p.name, source = %d.source, follower = %d.follower_id, "delta source following");
    let own = |e: Error| match e {
        Error::InvalidArgument(why) => Error::InvalidArgument(format!("pipeline {}: {why}", p.name)),
        e => e,
    };
    refuse_own_target(&source, &target).map_err(own)?;
    let mut member = match &d.group {
        Some(group) => Some(Member::join_from(&source, group.clone(), &d.options.start).await?),
        None => None,
    };
    let how = Target::of(d.mirror.is_some(), d.mirror.as_deref().unwrap_or_default());
    let ready = || metrics.ready.store(true, Relaxed);
    let followed = follow_into_table(
        &source,
        &target,
        &d.follower_id,
        &how,
        member.as_mut(),
        &d.options,
        Some(&metrics),
        ready,
        stopped,
    )
    .await
    .map_err(own)?;
    Ok(RunReport {
        records: followed.report.rows,
        rows_committed: followed.rows,
        dead_letters: 0,
        commits: followed.commits,
    })
}
