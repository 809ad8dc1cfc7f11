//! VACUUM and log cleanup.
//!
//! VACUUM first checks that deltabus may write the table (a reader-only client must not
//! vacuum, which is also what `vacuumProtocolCheck` demands), refuses a threshold below the
//! table's `delta.deletedFileRetentionDuration` unless forced, and then deletes files that no
//! live file and no unexpired tombstone references, DV files included, and that are older than
//! the threshold. The listing mode finds orphans of any origin (failed writes); the lite mode
//! only deletes files named by expired tombstones, without listing the table.
//!
//! Both keep what registered followers still need (see [`crate::beside::followers`]): log
//! cleanup keeps every commit from the slowest follower's next version on and a checkpoint
//! before it; VACUUM keeps every file those commits name. `ignore_followers` overrides that.

use std::collections::HashSet;
use std::time::Duration;

use serde_json::json;

use crate::beside::followers::oldest_needed;
use crate::delta::dv::DeletionVectorDescriptor;
use crate::delta::features::check_writable;
use crate::delta::log_segment::LogListing;
use crate::delta::paths::resolve_in_table;
use crate::delta::retention::{cutoff_ms, expired_log_files, vacuum_candidates};
use crate::error::{Error, Result};
use crate::storage::followers::{list_followers, needed_paths};
use crate::storage::Table;

/// VACUUM settings.
#[derive(Debug, Clone, Default)]
pub(crate) struct VacuumOptions {
    /// Defaults to the table's `delta.deletedFileRetentionDuration` (7 days).
    pub retention: Option<Duration>,
    pub dry_run: bool,
    /// Allow a retention below the table's.
    pub force: bool,
    /// Only files of expired tombstones (no listing).
    pub lite: bool,
    /// Delete what registered followers still need.
    pub ignore_followers: bool,
    /// Show progress over the files deleted on stderr.
    pub progress: bool,
}

/// What maintenance deleted (or would delete).
#[derive(Debug, Clone, Default)]
pub(crate) struct MaintenanceReport {
    pub dry_run: bool,
    pub files: Vec<String>,
    pub bytes: u64,
    /// The followers whose needs were kept, and the oldest version they need.
    pub followers: Vec<String>,
    pub kept_from_version: Option<u64>,
    /// VACUUM only: files no version names were kept unless older than this many hours.
    pub uncommitted_floor_hours: Option<u64>,
}

/// Files that no version of the log names (a write in flight, or a failed one) are deleted
/// only once older than this, whatever the retention (`--force` does not lower it): a running
/// writer's staged files survive any VACUUM.
pub(crate) const UNCOMMITTED_FLOOR: Duration = Duration::from_secs(24 * 3600);

impl MaintenanceReport {
    /// The command output.
    pub(crate) fn to_json(&self) -> serde_json::Value {
        let mut out = json!({"dryRun": self.dry_run, "numFiles": self.files.len(), "bytes": self.bytes, "files": self.files,
            "followers": self.followers, "keptFromVersion": self.kept_from_version});
        if let Some(hours) = self.uncommitted_floor_hours {
            out["uncommittedFilesKeptUnderHours"] = hours.into();
        }
        out
    }
}

/// The registered followers (ids) and consumer groups, and the oldest version they need, unless
/// ignored; expired registrations (consumer groups past their offsets' retention) count for
/// nothing.
async fn followers_needs(table: &Table, ignore: bool) -> Result<(Vec<String>, Option<u64>)> {
    if ignore {
        return Ok((Vec::new(), None));
    }
    let now = table.clock().now_ms();
    let records = list_followers(table).await?;
    let mut ids: Vec<String> = records.iter().filter(|r| !r.expired(now)).map(|r| r.follower_id.clone()).collect();
    let mut oldest = oldest_needed(&records, now);
    // Each consumer group's slowest slice counts like a follower.
    for g in crate::storage::groups::list_groups(table).await? {
        let slowest = g.slices.iter().map(|s| g.next_version(s)).min().unwrap_or(g.spec.start_version);
        ids.push(format!("group {}", g.group));
        oldest = Some(oldest.map_or(slowest, |o| o.min(slowest)));
    }
    Ok((ids, oldest))
}

/// The file of an optional deletion vector, relative to the root.
fn dv_file(d: Option<&DeletionVectorDescriptor>, table: &Table) -> Result<Option<String>> {
    d.map_or(Ok(None), |d| d.file_in_table(table.url()))
}

/// Runs VACUUM.
///
/// # Errors
/// [`Error::Unsupported`] when deltabus may not write the table; [`Error::InvalidArgument`] for
/// a retention below the table's without `force`; storage errors.
pub(crate) async fn vacuum(table: &Table, opts: &VacuumOptions) -> Result<MaintenanceReport> {
    let snapshot = table.snapshot(None).await?;
    check_writable(&snapshot.protocol, &snapshot.metadata)?;
    let table_retention = snapshot.properties.deleted_file_retention;
    let retention = opts.retention.unwrap_or(table_retention);
    // A dry run deletes nothing: it may look below the retention without --force.
    if retention < table_retention && !opts.force && !opts.dry_run {
        return Err(Error::InvalidArgument(format!(
            "retention {} is below the table's delta.deletedFileRetentionDuration ({}); readers of older versions could lose files (use --force)",
            humantime::format_duration(retention),
            humantime::format_duration(table_retention)
        )));
    }
    let now = table.clock().now_ms();
    let cutoff = cutoff_ms(now, retention);
    // What the log references is kept however it is spelled: relative, encoded or absolute
    // inside the root (reading absolute paths needs a flag; keeping them does not). A path
    // that cannot be placed in the table refuses the whole VACUUM: what it names is unknown.
    let rel = |p: &str| resolve_in_table(p, table.url(), true).map(Some);
    let mut keep: HashSet<String> = HashSet::new();
    for a in snapshot.files() {
        keep.extend(rel(&a.path)?);
        keep.extend(dv_file(a.deletion_vector.as_ref(), table)?);
    }
    let tombstones = &snapshot.state().tombstones;
    for r in tombstones.values().filter(|r| r.deletion_timestamp.unwrap_or(0) >= cutoff) {
        keep.extend(rel(&r.path)?);
        keep.extend(dv_file(r.deletion_vector.as_ref(), table)?);
    }
    let (followers, kept_from) = followers_needs(table, opts.ignore_followers).await?;
    if let Some(from) = kept_from.filter(|f| *f <= snapshot.version) {
        let needed = needed_paths(table, from, snapshot.version).await.map_err(|e| {
            Error::InvalidArgument(format!(
                "a registered follower needs version {from} onwards, which cannot be read ({e}); remove the follower (`deltabus followers <table> --remove <id>`) or pass --ignore-followers"
            ))
        })?;
        keep.extend(needed);
    }
    let candidates: Vec<(String, u64)> = if opts.lite {
        let mut out = Vec::new();
        for r in tombstones.values().filter(|r| r.deletion_timestamp.unwrap_or(0) < cutoff) {
            for p in rel(&r.path)?.into_iter().chain(dv_file(r.deletion_vector.as_ref(), table)?) {
                if keep.contains(&p) {
                    continue;
                }
                if let Ok(Some(size)) = table.objects().file_size(&p).await {
                    out.push((p, size));
                }
            }
        }
        out.sort();
        out.dedup();
        out
    } else {
        let files: Vec<(String, u64, i64)> =
            table.objects().list_files("").await?.into_iter().map(|f| (f.path, f.size, f.modified_ms)).collect();
        // A UniForm table's Iceberg metadata: what it references stays.
        let iceberg: Vec<String> = files
            .iter()
            .filter(|(p, _, _)| p.starts_with(&format!("{}/", crate::iceberg::METADATA_DIR)))
            .map(|(p, _, _)| p.clone())
            .collect();
        if !iceberg.is_empty()
            && iceberg.iter().any(|p| p.ends_with(crate::iceberg::VERSION_HINT) || p.ends_with(".metadata.json"))
        {
            keep.extend(table.uniform().iceberg_referenced(&iceberg).await);
        }
        // Paths some version named (removed since): the retention applies. Any other file may
        // belong to a write in flight: the floor applies too.
        let mut named: HashSet<String> = HashSet::new();
        for r in tombstones.values() {
            named.extend(rel(&r.path)?);
            named.extend(dv_file(r.deletion_vector.as_ref(), table)?);
        }
        let floor = cutoff_ms(now, UNCOMMITTED_FLOOR).min(cutoff);
        let mut out: Vec<(String, u64)> = vacuum_candidates(&files, &keep, cutoff)
            .into_iter()
            .filter(|(p, _, modified)| named.contains(p) || *modified < floor)
            .filter(|(p, _, _)| !leaves_root_locally(table, p))
            .map(|(p, s, _)| (p.clone(), *s))
            .collect();
        // Key index sidecars of files no longer live (past the floor: a flush in flight writes
        // them before its commit); only live files are ever indexed.
        let tags: HashSet<String> =
            snapshot.files().iter().map(|a| crate::key_index::sidecar::path_tag(&a.path)).collect();
        out.extend(
            files
                .iter()
                .filter(|(p, _, modified)| {
                    crate::key_index::sidecar::sidecar_tag(p).is_some_and(|t| !tags.contains(t)) && *modified < floor
                })
                .map(|(p, s, _)| (p.clone(), *s)),
        );
        out
    };
    let mut report = delete_all(table, candidates, opts.dry_run, opts.progress).await?;
    report.followers = followers;
    report.kept_from_version = kept_from;
    if !opts.lite {
        report.uncommitted_floor_hours = Some(UNCOMMITTED_FLOOR.as_secs() / 3600);
    }
    Ok(report)
}

/// For a local table: whether `rel` reaches outside the root through a symbolic link (the
/// local listing follows links; VACUUM must never delete through one).
fn leaves_root_locally(table: &Table, rel: &str) -> bool {
    let Some(root) =
        url::Url::parse(table.url()).ok().filter(|u| u.scheme() == "file").and_then(|u| u.to_file_path().ok())
    else {
        return false;
    };
    let mut at = root.clone();
    for seg in rel.split('/').filter(|s| !s.is_empty()) {
        at.push(seg);
        match std::fs::symlink_metadata(&at) {
            Ok(m) if m.file_type().is_symlink() => {
                tracing::warn!(path = rel, "vacuum.skipped: reached through a symbolic link");
                return true;
            }
            Ok(_) => {}
            // A name the listing spells differently: no link was seen on the way.
            Err(_) => return false,
        }
    }
    false
}

/// Deletes expired log files that no retained checkpoint needs.
///
/// # Errors
/// Storage errors.
pub(crate) async fn cleanup_log(table: &Table, dry_run: bool, ignore_followers: bool) -> Result<MaintenanceReport> {
    let snapshot = table.snapshot(None).await?;
    check_writable(&snapshot.protocol, &snapshot.metadata)?;
    let now = table.clock().now_ms();
    let cutoff = cutoff_ms(now, snapshot.properties.log_retention);
    // Files directly in `_delta_log` (not in `_sidecars/` or other folders).
    let entries: Vec<(String, u64, i64)> = table
        .objects()
        .list_files("_delta_log")
        .await?
        .into_iter()
        .filter_map(|f| {
            let name = f.path.strip_prefix("_delta_log/")?;
            (!name.contains('/')).then(|| (name.to_string(), f.size, f.modified_ms))
        })
        .collect();
    let sizes: std::collections::HashMap<String, u64> = entries.iter().map(|(n, s, _)| (n.clone(), *s)).collect();
    let others: Vec<(String, i64)> = entries.iter().map(|(n, _, t)| (n.clone(), *t)).collect();
    let listing = LogListing::new(entries);
    let (followers, kept_from) = followers_needs(table, ignore_followers).await?;
    let expired = expired_log_files(&listing, &others, cutoff, kept_from);
    let candidates =
        expired.into_iter().map(|n| (format!("_delta_log/{n}"), sizes.get(&n).copied().unwrap_or(0))).collect();
    let mut report = delete_all(table, candidates, dry_run, false).await?;
    report.followers = followers;
    report.kept_from_version = kept_from;
    Ok(report)
}

async fn delete_all(
    table: &Table,
    candidates: Vec<(String, u64)>,
    dry_run: bool,
    progress: bool,
) -> Result<MaintenanceReport> {
    use crate::common::progress::Progress;
    let mut report = MaintenanceReport { dry_run, ..MaintenanceReport::default() };
    let shown = if progress && !dry_run {
        Progress::new("deleting", "files", Some(candidates.len() as u64))
    } else {
        Progress::hidden()
    };
    for (rel, size) in candidates {
        if !dry_run {
            table.objects().delete_file(&rel).await?;
            shown.inc(1);
        }
        report.bytes += size;
        report.files.push(rel);
    }
    shown.finish();
    Ok(report)
}
