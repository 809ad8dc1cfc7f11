//! `_delta_log` file names (digest Appendix B) and the choice of files that make up a
//! snapshot: the newest complete checkpoint at or before the target version plus every
//! later commit, with no gaps.
//!
//! Input is a listing already fetched by the storage shell; nothing here does I/O. Names that
//! match no pattern (`.00000.json.crc`, temp files, `_commits/`) are ignored, never guessed at.

use std::collections::BTreeMap;

use crate::error::{Error, Result};

/// The kind of a checkpoint file.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum CheckpointKind {
    /// `%020d.checkpoint.parquet`
    Classic,
    /// `%020d.checkpoint.%010d.%010d.parquet` (part, total)
    MultiPart { part: u32, parts: u32 },
    /// `%020d.checkpoint.<uuid>.json|parquet`
    V2 { json: bool },
}

/// What a `_delta_log` entry is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum LogFileKind {
    Commit,
    Checkpoint(CheckpointKind),
    Compaction { end: u64 },
    Checksum,
}

/// A recognised `_delta_log` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LogFile {
    /// File name inside `_delta_log/`.
    pub name: String,
    pub version: u64,
    pub kind: LogFileKind,
    pub size: u64,
    /// Last modification time, ms since the epoch.
    pub modified_ms: i64,
}

fn digits(s: &str, n: usize) -> Option<u64> {
    (s.len() == n && s.bytes().all(|b| b.is_ascii_digit())).then(|| s.parse().ok()).flatten()
}

fn is_uuid(s: &str) -> bool {
    s.len() == 36 && s.bytes().all(|b| b.is_ascii_hexdigit() || b == b'-')
}

/// Parses a `_delta_log` file name; `None` for anything that is not a Delta log file.
pub(crate) fn parse_log_name(name: &str) -> Option<(u64, LogFileKind)> {
    let parts: Vec<&str> = name.split('.').collect();
    let version = digits(parts.first()?, 20)?;
    let kind = match parts.as_slice() {
        [_, "json"] => LogFileKind::Commit,
        [_, "crc"] => LogFileKind::Checksum,
        [_, "checkpoint", "parquet"] => LogFileKind::Checkpoint(CheckpointKind::Classic),
        [_, "checkpoint", part, parts, "parquet"] => {
            let part = u32::try_from(digits(part, 10)?).ok()?;
            let parts = u32::try_from(digits(parts, 10)?).ok()?;
            if part == 0 || part > parts {
                return None;
            }
            LogFileKind::Checkpoint(CheckpointKind::MultiPart { part, parts })
        }
        [_, "checkpoint", uuid, ext @ ("json" | "parquet")] if is_uuid(uuid) => {
            LogFileKind::Checkpoint(CheckpointKind::V2 { json: *ext == "json" })
        }
        [_, end, "compacted", "json"] => LogFileKind::Compaction { end: digits(end, 20)? },
        _ => return None,
    };
    Some((version, kind))
}

/// A complete checkpoint: all the files that make it up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Checkpoint {
    pub version: u64,
    pub files: Vec<LogFile>,
}

/// The files needed to reconstruct one version of a table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LogSegment {
    pub version: u64,
    pub checkpoint: Option<Checkpoint>,
    /// Commits after the checkpoint, ascending, contiguous up to `version`.
    pub commits: Vec<LogFile>,
}

/// Everything recognised in one listing, indexed by version.
#[derive(Debug, Clone, Default)]
pub(crate) struct LogListing {
    pub commits: BTreeMap<u64, LogFile>,
    pub checkpoints: BTreeMap<u64, Vec<LogFile>>,
}

impl LogListing {
    /// Indexes `(name, size, modified_ms)` entries of `_delta_log/`.
    pub(crate) fn new(entries: impl IntoIterator<Item = (String, u64, i64)>) -> Self {
        let mut listing = LogListing::default();
        for (name, size, modified_ms) in entries {
            let Some((version, kind)) = parse_log_name(&name) else {
                continue;
            };
            let file = LogFile { name, version, kind: kind.clone(), size, modified_ms };
            match kind {
                LogFileKind::Commit => {
                    listing.commits.insert(version, file);
                }
                LogFileKind::Checkpoint(_) => listing.checkpoints.entry(version).or_default().push(file),
                _ => {}
            }
        }
        listing
    }

    /// The newest version for which a commit or a complete checkpoint exists.
    pub(crate) fn latest_version(&self) -> Option<u64> {
        let c = self.commits.keys().next_back().copied();
        let k = self.checkpoints.keys().rev().find(|v| self.complete_checkpoint(**v).is_some()).copied();
        c.max(k)
    }

    /// The best complete checkpoint at exactly `version` (V2 > multi-part > classic, as Spark).
    pub(crate) fn complete_checkpoint(&self, version: u64) -> Option<Checkpoint> {
        let files = self.checkpoints.get(&version)?;
        if let Some(v2) = files.iter().find(|f| matches!(f.kind, LogFileKind::Checkpoint(CheckpointKind::V2 { .. }))) {
            return Some(Checkpoint { version, files: vec![v2.clone()] });
        }
        // Multi-part: some total whose parts 1..=n are all present.
        let mut by_total: BTreeMap<u32, Vec<&LogFile>> = BTreeMap::new();
        for f in files {
            if let LogFileKind::Checkpoint(CheckpointKind::MultiPart { parts, .. }) = f.kind {
                by_total.entry(parts).or_default().push(f);
            }
        }
        for (total, mut parts) in by_total.into_iter().rev() {
            parts.sort_by_key(|f| match f.kind {
                LogFileKind::Checkpoint(CheckpointKind::MultiPart { part, .. }) => part,
                _ => 0,
            });
            parts.dedup_by_key(|f| f.name.clone());
            if parts.len() == total as usize {
                return Some(Checkpoint { version, files: parts.into_iter().cloned().collect() });
            }
        }
        files
            .iter()
            .find(|f| f.kind == LogFileKind::Checkpoint(CheckpointKind::Classic))
            .map(|f| Checkpoint { version, files: vec![f.clone()] })
    }

    /// The oldest version whose state can be rebuilt from what is listed: 0 when every
    /// commit from 0 is there, else the oldest complete checkpoint with every commit after it.
    pub(crate) fn oldest_readable(&self) -> Option<u64> {
        let latest = self.latest_version()?;
        let contiguous_from = |start: u64| (start..=latest).all(|v| self.commits.contains_key(&v));
        if contiguous_from(0) {
            return Some(0);
        }
        self.checkpoints.keys().copied().find(|c| self.complete_checkpoint(*c).is_some() && contiguous_from(c + 1))
    }

    /// Chooses the files for `target` (the latest version when `None`).
    ///
    /// `skip_checkpoints` excludes checkpoint versions known to be unreadable, so the caller
    /// can fall back to an older one.
    ///
    /// # Errors
    /// [`Error::NotATable`] when nothing is listed; [`Error::MissingVersion`] when the target
    /// is beyond the log or a commit needed for it is missing.
    pub(crate) fn segment(&self, target: Option<u64>, skip_checkpoints: &[u64], location: &str) -> Result<LogSegment> {
        let latest = self.latest_version().ok_or_else(|| Error::NotATable { location: location.to_string() })?;
        let version = target.unwrap_or(latest);
        if version > latest {
            return Err(Error::MissingVersion { version, reason: format!("the latest version is {latest}") });
        }
        let checkpoint = self
            .checkpoints
            .range(..=version)
            .rev()
            .filter(|(v, _)| !skip_checkpoints.contains(v))
            .find_map(|(v, _)| self.complete_checkpoint(*v));
        let start = checkpoint.as_ref().map_or(0, |c| c.version + 1);
        let mut commits = Vec::new();
        for v in start..=version {
            match self.commits.get(&v) {
                Some(f) => commits.push(f.clone()),
                None => {
                    let oldest = match self.oldest_readable() {
                        Some(o) => format!("; the oldest version that can be read is {o}"),
                        None => String::new(),
                    };
                    let after = match &checkpoint {
                        Some(c) => format!("it is needed after the checkpoint at {}", c.version),
                        None => format!("no checkpoint at or before {version} covers it"),
                    };
                    // Name the version asked for when its own commit is gone, else the
                    // missing commit that stops the replay.
                    let (named, reason) = if v == version {
                        (v, format!("its commit file is absent and {after}{oldest}"))
                    } else if self.commits.contains_key(&version) {
                        (v, format!("version {version} cannot be rebuilt without it: {after} (removed by log cleanup?){oldest}"))
                    } else {
                        (
                            version,
                            format!("commits {v} to {version} are gone and {after} (removed by log cleanup?){oldest}"),
                        )
                    };
                    return Err(Error::MissingVersion { version: named, reason });
                }
            }
        }
        Ok(LogSegment { version, checkpoint, commits })
    }
}

/// The commit file name of a version.
pub(crate) fn commit_name(version: u64) -> String {
    format!("{version:020}.json")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listing(names: &[&str]) -> LogListing {
        LogListing::new(names.iter().map(|n| (n.to_string(), 1, 0)))
    }

    #[test]
    fn names() {
        assert_eq!(parse_log_name("00000000000000000001.json"), Some((1, LogFileKind::Commit)));
        assert_eq!(parse_log_name(".00000000000000000001.json.crc"), None);
        assert_eq!(parse_log_name("00000000000000000001.json.tmp"), None);
        assert_eq!(parse_log_name("0001.json"), None);
        assert_eq!(
            parse_log_name("00000000000000000010.checkpoint.0000000001.0000000002.parquet"),
            Some((10, LogFileKind::Checkpoint(CheckpointKind::MultiPart { part: 1, parts: 2 })))
        );
        assert_eq!(
            parse_log_name("00000000000000000002.checkpoint.80a083e8-7026-4e79-81be-64bd76c43a11.json"),
            Some((2, LogFileKind::Checkpoint(CheckpointKind::V2 { json: true })))
        );
        assert_eq!(
            parse_log_name("00000000000000000004.00000000000000000006.compacted.json"),
            Some((4, LogFileKind::Compaction { end: 6 }))
        );
    }

    #[test]
    fn picks_newest_complete_checkpoint() {
        let l = listing(&[
            "00000000000000000000.json",
            "00000000000000000001.json",
            "00000000000000000001.checkpoint.parquet",
            "00000000000000000002.json",
            "00000000000000000002.checkpoint.0000000001.0000000002.parquet",
            "00000000000000000003.json",
        ]);
        let s = l.segment(None, &[], "t").unwrap();
        assert_eq!(s.version, 3);
        assert_eq!(s.checkpoint.as_ref().map(|c| c.version), Some(1), "multi-part at 2 is incomplete");
        assert_eq!(s.commits.iter().map(|c| c.version).collect::<Vec<_>>(), vec![2, 3]);
        let s = l.segment(Some(0), &[], "t").unwrap();
        assert!(s.checkpoint.is_none());
        let s = l.segment(None, &[1], "t").unwrap();
        assert_eq!(s.commits.len(), 4, "fallback replays from 0");
    }

    #[test]
    fn gaps_and_empty() {
        assert!(matches!(listing(&[]).segment(None, &[], "t"), Err(Error::NotATable { .. })));
        let l = listing(&["00000000000000000000.json", "00000000000000000002.json"]);
        // The missing commit is named, with the version it stops.
        match l.segment(None, &[], "t") {
            Err(Error::MissingVersion { version: 1, reason }) => {
                assert!(reason.contains("version 2 cannot be rebuilt"), "{reason}")
            }
            other => panic!("{other:?}"),
        }
        // Commits cleaned up below a checkpoint: the version asked for is named, with the
        // oldest one that can still be read.
        let cleaned = listing(&[
            "00000000000000000003.json",
            "00000000000000000004.checkpoint.parquet",
            "00000000000000000004.json",
            "00000000000000000005.json",
        ]);
        match cleaned.segment(Some(2), &[], "t") {
            Err(Error::MissingVersion { version: 2, reason }) => {
                assert!(reason.contains("commits 0 to 2 are gone") && reason.contains("can be read is 4"), "{reason}")
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(cleaned.oldest_readable(), Some(4));
        assert!(matches!(l.segment(Some(5), &[], "t"), Err(Error::MissingVersion { version: 5, .. })));
        let only_cp = listing(&["00000000000000000002.checkpoint.parquet"]);
        assert_eq!(only_cp.segment(None, &[], "t").unwrap().version, 2);
    }
}
