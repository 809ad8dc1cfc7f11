//! How a follower runs: where it starts without a recorded position, how often it polls,
//! what it delivers; a consumer-group member's settings. Shared by the configuration, the
//! command line and the follower loop.

use std::time::Duration;

use crate::delta::predicate::Expr;
use crate::error::{Error, Result};

/// Where a follower without a recorded position starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StartAt {
    Version(u64),
    /// The next commit to land.
    Latest,
    /// The latest version's rows as inserts, then every later commit.
    Snapshot,
    /// The first commit whose timestamp (in-commit timestamp, else commitInfo's) is at or
    /// after this time (ms since the epoch).
    Timestamp(i64),
}

/// A point in time as positions spell it: RFC 3339 (`2024-05-01T12:00:00Z`) or milliseconds
/// since the epoch; `None` for anything else.
pub(crate) fn parse_timestamp(t: &str) -> Option<i64> {
    let t = t.trim();
    t.parse::<i64>().ok().or_else(|| chrono::DateTime::parse_from_rfc3339(t).ok().map(|d| d.timestamp_millis()))
}

impl std::str::FromStr for StartAt {
    type Err = Error;
    fn from_str(s: &str) -> Result<StartAt> {
        match s {
            "latest" => Ok(StartAt::Latest),
            "snapshot" => Ok(StartAt::Snapshot),
            t if t.starts_with("timestamp:") => {
                parse_timestamp(&t["timestamp:".len()..]).map(StartAt::Timestamp).ok_or_else(|| {
                    Error::InvalidArgument(format!("start {s:?}: expected timestamp:<RFC 3339> or timestamp:<ms>"))
                })
            }
            v => v.parse().map(StartAt::Version).map_err(|_| {
                Error::InvalidArgument(format!(
                    "start {v:?}: expected a version, `latest`, `snapshot` or `timestamp:<time>`"
                ))
            }),
        }
    }
}

/// Follower settings.
#[derive(Debug, Clone)]
pub struct FollowerOptions {
    pub start: StartAt,
    pub poll: Duration,
    /// Stop once caught up.
    pub once: bool,
    /// Show the commits delivered on stderr (catch-up runs of the command line).
    pub progress: bool,
    pub filter: Option<Expr>,
    /// Registers the position on the source under this id.
    pub follower_id: Option<String>,
    /// Follow even when the position is older than the table's retention.
    pub allow_stale: bool,
    /// Skip commits missing from the log (loudly) instead of failing.
    pub skip_gaps: bool,
    /// Commits that delete or update rows deliver nothing (inserts only).
    pub skip_change_commits: bool,
    /// Delete rows are dropped.
    pub ignore_deletes: bool,
    /// Deliver consecutive ready commits together up to this many data files / Arrow bytes.
    pub max_files: Option<usize>,
    pub max_bytes: Option<u64>,
}

impl FollowerOptions {
    /// Why a mirror that copies files (one without key columns) cannot follow with these
    /// options: it replays every commit whole, so nothing may filter, drop or merge commits.
    pub fn file_mirror_refusal(&self) -> Option<&'static str> {
        if self.filter.is_some() {
            Some("a mirror without key columns copies whole files: --where does not apply")
        } else if self.skip_change_commits || self.ignore_deletes {
            Some("a mirror without key columns replays every commit: skip_change_commits and ignore_deletes do not apply")
        } else if self.max_files.is_some() || self.max_bytes.is_some() {
            Some("a mirror without key columns replays commits one by one: max_files and max_bytes do not apply")
        } else if self.skip_gaps {
            Some("a mirror without key columns needs every commit: skip_gaps does not apply")
        } else {
            None
        }
    }

    /// Defaults: from `start`, 1 s polls, following forever, no filter, unregistered.
    pub fn new(start: StartAt) -> FollowerOptions {
        FollowerOptions {
            start,
            poll: Duration::from_secs(1),
            once: false,
            progress: false,
            filter: None,
            follower_id: None,
            allow_stale: false,
            skip_gaps: false,
            skip_change_commits: false,
            ignore_deletes: false,
            max_files: None,
            max_bytes: None,
        }
    }
}

/// A consumer-group member's settings (`--group` and friends, `[delta]` `group`).
#[derive(Debug, Clone)]
pub struct GroupOptions {
    pub group: String,
    pub member: String,
    /// The slices of a new group (an existing group keeps its own; a different number given
    /// explicitly is an error).
    pub slices: Option<u32>,
    /// The key columns of a new group (likewise).
    pub key_columns: Vec<String>,
    pub lease: Duration,
}

impl GroupOptions {
    /// A member id unique to this process.
    pub fn default_member() -> String {
        let host = std::env::var("HOSTNAME").unwrap_or_default();
        let host: String = host.chars().filter(|c| c.is_ascii_alphanumeric() || *c == '-').take(40).collect();
        let unique = uuid::Uuid::new_v4().simple().to_string();
        if host.is_empty() {
            format!("m-{}-{}", std::process::id(), &unique[..8])
        } else {
            format!("{host}-{}-{}", std::process::id(), &unique[..8])
        }
    }
}
