//! Following a table into another Delta table, the one way: `deltabus follow` and a `[delta]`
//! pipeline of `deltabus run` both call [`follow_into_table`], so a check, a sink choice or a
//! metric exists in one place.
//!
//! - The target must be another table (its own source would feed on itself).
//! - A group member delivers its slices into the target ([`GroupTableSink`], one `txn` per
//!   slice); otherwise the follower's sink is the change-row table ([`TableSink`]), the keyed
//!   mirror ([`MirrorSink`]) or the file mirror ([`FileMirror`], which refuses the options it
//!   cannot honour: row filters, skipping, batching).
//! - Every kind runs through the shared follower loops with the same metrics and fault riding.

use super::follow::{run_follower, FollowerReport};
use super::group::Member;
use super::group_follow::run_member;
use super::sink::file_mirror::FileMirror;
use super::sink::mirror::MirrorSink;
use super::sink::table::{GroupTableSink, TableSink};
use super::sink::ChangeSink;
use crate::common::follow::FollowerOptions;
use crate::error::{Error, Result};
use crate::metrics::PipelineMetrics;
use crate::storage::Table;

/// How the target follows the source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Target {
    /// The source's change rows appended, with `_change_type`, `_commit_version` and
    /// `_commit_timestamp`.
    ChangeRows,
    /// A copy of the source kept by these key columns (one `MERGE` per source commit).
    MirrorByKey(Vec<String>),
    /// A copy of the source by its files (data files and deletion vectors copied, commits
    /// replayed; rows keep their identity).
    MirrorByFiles,
}

impl Target {
    /// The target of `--mirror` with these key columns (none: by files), or of a plain follower.
    pub(crate) fn of(mirror: bool, keys: &[String]) -> Target {
        match (mirror, keys.is_empty()) {
            (false, _) => Target::ChangeRows,
            (true, true) => Target::MirrorByFiles,
            (true, false) => Target::MirrorByKey(keys.to_vec()),
        }
    }
}

/// What following did.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Followed {
    pub report: FollowerReport,
    /// Target commits made and rows written (or source rows applied, for a mirror).
    pub commits: u64,
    pub rows: u64,
    /// Files a file mirror copied.
    pub files_copied: Option<u64>,
    /// The `txn` appId holding the follower's position in the target.
    pub app_id: Option<String>,
}

impl Followed {
    /// What `follow` prints: the follower's report with the target commits and rows this run
    /// made (a commit another run had already landed is not counted).
    pub(crate) fn to_json(&self) -> serde_json::Value {
        let mut out = self.report.to_json();
        out["targetCommits"] = self.commits.into();
        out["rows"] = self.rows.into();
        if let Some(files) = self.files_copied {
            out["filesCopied"] = files.into();
        }
        if let Some(app) = &self.app_id {
            out["appId"] = app.clone().into();
        }
        out
    }
}

/// Refuses a target that is the source itself (it would feed on its own commits). Callers
/// that join a consumer group check it before joining, so that a refused follower leaves no
/// lease behind.
///
/// # Errors
/// [`Error::InvalidArgument`] naming the table.
pub(crate) fn refuse_own_target(source: &Table, target: &Table) -> Result<()> {
    if source.url() == target.url() {
        return Err(Error::InvalidArgument(format!(
            "{} is both the source and the target (follow into another table)",
            source.url()
        )));
    }
    Ok(())
}

/// Follows `source` into `target` as `follower_id` (or as `member` of a consumer group) until
/// `options` say it is done or `stop` resolves; `ready` is called once the sink is open.
///
/// # Errors
/// The target being the source; a file mirror with options it cannot honour; the follower
/// loops' and sinks' errors.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn follow_into_table(
    source: &Table,
    target: &Table,
    follower_id: &str,
    how: &Target,
    member: Option<&mut Member>,
    options: &FollowerOptions,
    metrics: Option<&PipelineMetrics>,
    ready: impl FnOnce(),
    stop: impl std::future::Future<Output = ()> + Send,
) -> Result<Followed> {
    refuse_own_target(source, target)?;
    let source_id = source.snapshot(None).await?.metadata.id;
    if let Some(member) = member {
        let mut sink = GroupTableSink::open(target, member.spec_group(), &source_id).await?;
        ready();
        let report = run_member(source, &mut sink, member, options, metrics, stop).await?;
        let (commits, rows) = sink.counts();
        return Ok(Followed { report, commits, rows, ..Followed::default() });
    }
    let (o, m) = (options, metrics);
    match how {
        Target::MirrorByFiles => {
            if let Some(why) = options.file_mirror_refusal() {
                return Err(Error::InvalidArgument(format!("a mirror without key columns: {why}")));
            }
            let sink = FileMirror::open(source, target, follower_id, &source_id).await?;
            let (report, sink) = follow_with(source, sink, o, m, ready, stop).await?;
            let rows = report.rows;
            Ok(Followed { report, commits: sink.commits, rows, files_copied: Some(sink.files), app_id: None })
        }
        Target::MirrorByKey(keys) => {
            let sink = MirrorSink::open(source, target, follower_id, &source_id, keys).await?;
            let (report, sink) = follow_with(source, sink, o, m, ready, stop).await?;
            Ok(Followed {
                report,
                commits: sink.commits,
                rows: sink.rows,
                files_copied: None,
                app_id: Some(sink.app_id()),
            })
        }
        Target::ChangeRows => {
            let sink = TableSink::open(target, follower_id, &source_id).await?;
            let (report, sink) = follow_with(source, sink, o, m, ready, stop).await?;
            Ok(Followed {
                report,
                commits: sink.commits,
                rows: sink.rows,
                files_copied: None,
                app_id: Some(sink.app_id()),
            })
        }
    }
}

/// Says the sink is open, then runs the single follower into it.
async fn follow_with<S: ChangeSink>(
    source: &Table,
    mut sink: S,
    options: &FollowerOptions,
    metrics: Option<&PipelineMetrics>,
    ready: impl FnOnce(),
    stop: impl std::future::Future<Output = ()> + Send,
) -> Result<(FollowerReport, S)> {
    ready();
    let report = run_follower(source, &mut sink, options, metrics, stop).await?;
    Ok((report, sink))
}
