//! A `deltabus run` pipeline whose source is another Delta table: the follower loop
//! ([`crate::feed::follow`]) into the pipeline's table through the Delta-table sink, so each
//! source commit lands exactly once (`txn(<follower id>-<source table id>, version)`). The
//! follower registers its position on the source, reports versions and seconds behind in the
//! pipeline metrics, and stops when `stop` turns true (between commits, never inside one).
//! With `group`, the process is a member of a consumer group on the source (slices and their
//! positions, `feed::group_follow`); with `mirror`, the table is kept a copy of the source
//! (`feed::sink::mirror` by key, `feed::sink::file_mirror` by copying files).

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

use tokio::sync::watch;

use crate::common::follow::FollowerOptions;
use crate::config::{PipelineSource, ResolvedPipeline};
use crate::error::{Error, Result};
use crate::feed::follow::{run_follower, FollowerReport};
use crate::feed::group::Member;
use crate::feed::group_follow::run_member;
use crate::feed::sink::file_mirror::FileMirror;
use crate::feed::sink::mirror::MirrorSink;
use crate::feed::sink::table::{GroupTableSink, TableSink};
use crate::feed::sink::ChangeSink;
use crate::ingest::runner::RunReport;
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
    if source.url() == target.url() {
        return Err(Error::InvalidArgument(format!(
            "pipeline {}: {} is both the source and the target (delta.source must name another table)",
            p.name,
            source.url()
        )));
    }
    let source_id = source.snapshot(None).await?.metadata.id;
    let stopped = async move {
        let _ = stop.wait_for(|s| *s).await;
    };
    tracing::info!(pipeline = %p.name, source = %d.source, follower = %d.follower_id, "delta source following");
    if let Some(group) = &d.group {
        let mut member = Member::join_from(&source, group.clone(), &d.options.start).await?;
        let mut sink = GroupTableSink::open(&target, &group.group, &source_id).await?;
        metrics.ready.store(true, Relaxed);
        let report = run_member(&source, &mut sink, &mut member, &d.options, Some(&metrics), stopped).await?;
        let (commits, rows) = sink.counts();
        return Ok(RunReport { records: report.rows, rows_committed: rows, dead_letters: 0, commits });
    }
    let (o, m) = (&d.options, &metrics);
    match &d.mirror {
        Some(keys) if keys.is_empty() => {
            let sink = FileMirror::open(&source, &target, &d.follower_id, &source_id).await?;
            let (report, sink) = follow_into(&source, sink, o, m, stopped).await?;
            Ok(RunReport { records: report.rows, rows_committed: report.rows, dead_letters: 0, commits: sink.commits })
        }
        Some(keys) => {
            let sink = MirrorSink::open(&source, &target, &d.follower_id, &source_id, keys).await?;
            let (report, sink) = follow_into(&source, sink, o, m, stopped).await?;
            Ok(RunReport { records: report.rows, rows_committed: sink.rows, dead_letters: 0, commits: sink.commits })
        }
        None => {
            let sink = TableSink::open(&target, &d.follower_id, &source_id).await?;
            let (report, sink) = follow_into(&source, sink, o, m, stopped).await?;
            Ok(RunReport { records: report.rows, rows_committed: sink.rows, dead_letters: 0, commits: sink.commits })
        }
    }
}

/// Marks the pipeline ready and follows `source` into `sink` until `stop`.
async fn follow_into<S: ChangeSink>(
    source: &Table,
    mut sink: S,
    options: &FollowerOptions,
    metrics: &Arc<PipelineMetrics>,
    stop: impl std::future::Future<Output = ()> + Send,
) -> Result<(FollowerReport, S)> {
    metrics.ready.store(true, Relaxed);
    let report = run_follower(source, &mut sink, options, Some(metrics), stop).await?;
    Ok((report, sink))
}
