//! Followers of a table and what maintenance must keep for them.
//!
//! A follower (a change-feed consumer whose progress deltabus records: `tail --follower-id`,
//! `follow`, a `delta` source in `run`) registers the next source version it needs in
//! `_deltabus/followers/<id>.json` under the table root. The directory is hidden, so VACUUM
//! never touches it and other engines ignore it.
//!
//! What a follower at `next` needs: every commit from `next` on, a checkpoint at or before
//! `next - 1` to rebuild its snapshot, and every file those commits read for their changes
//! (data-changing removes with their deletion vectors, change-data files: the rows of a file
//! removed at `next` or later become delete rows) or copies (every add with its deletion
//! vector, `dataChange=false` adds of compactions included: a file mirror replays them). Files
//! that only a compaction removes are not needed. Log cleanup and VACUUM keep all of that
//! unless forced.
//!
//! A follower also checks its own health: when the oldest commit it has not processed is older
//! than what the table promises to keep (`delta.deletedFileRetentionDuration`, and
//! `delta.logRetentionDuration`), another engine's VACUUM or log cleanup may already have removed
//! what it needs. It warns at three quarters of that age and refuses at the full age.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::delta::actions::Action;
use crate::delta::dv::DeletionVectorDescriptor;
use crate::delta::properties::TableProperties;

/// The directory (under the table root) that holds follower registrations.
pub(crate) const FOLLOWERS_DIR: &str = "_deltabus/followers";

/// One registration: `_deltabus/followers/<id>.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct FollowerRecord {
    pub follower_id: String,
    /// The first source version the follower has not processed yet.
    pub next_version: u64,
    /// When the registration was written (ms since the epoch).
    pub updated_at: i64,
    /// What kind of follower: `tail`, `follow`, `kafka`, `run`, `kafka-group` (a Kafka
    /// consumer group's committed offset on one partition of a served topic).
    pub kind: String,
    /// A Kafka consumer group's committed offset (a feed position) and its metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offset: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<String>,
    /// When the registration stops counting (ms since the epoch): a consumer group's
    /// offsets are kept for the listener's `offsets_retention` after its last commit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<i64>,
}

impl FollowerRecord {
    /// Whether the registration has expired at `now_ms` (it then holds nothing back).
    pub(crate) fn expired(&self, now_ms: i64) -> bool {
        self.expires_at.is_some_and(|at| at <= now_ms)
    }
}

/// Follower ids are file names: letters, digits, `-`, `_` and `.`, not starting with `.`.
pub(crate) fn valid_follower_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 200
        && !id.starts_with('.')
        && id.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

/// The registration file of `id`, relative to the table root.
pub(crate) fn record_path(id: &str) -> String {
    format!("{FOLLOWERS_DIR}/{id}.json")
}

/// The lowest version any follower still needs at `now_ms` (expired registrations need
/// nothing), or `None` without such followers.
pub(crate) fn oldest_needed(records: &[FollowerRecord], now_ms: i64) -> Option<u64> {
    records.iter().filter(|r| !r.expired(now_ms)).map(|r| r.next_version).min()
}

/// The files a registered follower may still read or copy for a commit (paths as written in
/// the log): change data files, the data files and deletion vectors of every add (a file
/// mirror copies the `dataChange=false` adds of compactions too) and of data-changing removes
/// (their rows become delete rows). A compaction's removes are read by nobody.
pub(crate) fn commit_paths(actions: &[Action]) -> Vec<(&str, Option<&DeletionVectorDescriptor>)> {
    actions
        .iter()
        .filter_map(|a| match a {
            Action::Add(a) => Some((a.path.as_str(), a.deletion_vector.as_ref())),
            Action::Remove(r) if r.data_change => Some((r.path.as_str(), r.deletion_vector.as_ref())),
            Action::Cdc(c) => Some((c.path.as_str(), None)),
            _ => None,
        })
        .collect()
}

/// A follower's standing against the table's retention.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum PositionHealth {
    Fresh,
    /// Close to the limit: the message says how close.
    Warn(String),
    /// Past the limit: what it needs may already be gone.
    Stale(String),
}

/// Judges a follower whose oldest unprocessed commit was written at `oldest_unprocessed_ms`
/// (`None` when it is caught up).
pub(crate) fn position_health(
    oldest_unprocessed_ms: Option<i64>,
    now_ms: i64,
    version: u64,
    props: &TableProperties,
) -> PositionHealth {
    let Some(ts) = oldest_unprocessed_ms else { return PositionHealth::Fresh };
    let age = Duration::from_millis(u64::try_from(now_ms.saturating_sub(ts)).unwrap_or(0));
    let (limit, what) = if props.deleted_file_retention <= props.log_retention {
        (props.deleted_file_retention, "delta.deletedFileRetentionDuration")
    } else {
        (props.log_retention, "delta.logRetentionDuration")
    };
    let hours = |d: Duration| d.as_secs_f64() / 3600.0;
    if age >= limit {
        PositionHealth::Stale(format!(
            "version {version} was committed {:.1}h ago, beyond the table's {what} ({:.1}h): another engine's VACUUM or log cleanup may already have removed what this follower needs",
            hours(age),
            hours(limit)
        ))
    } else if age >= limit.mul_f64(0.75) {
        PositionHealth::Warn(format!(
            "version {version} was committed {:.1}h ago, {:.0}% of the table's {what} ({:.1}h)",
            hours(age),
            100.0 * age.as_secs_f64() / limit.as_secs_f64().max(1.0),
            hours(limit)
        ))
    } else {
        PositionHealth::Fresh
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(id: &str, next: u64) -> FollowerRecord {
        FollowerRecord {
            follower_id: id.into(),
            next_version: next,
            updated_at: 0,
            kind: "tail".into(),
            offset: None,
            metadata: None,
            expires_at: None,
        }
    }

    #[test]
    fn ids_are_safe_file_names() {
        assert!(valid_follower_id("replica-1.eu_west"));
        for bad in ["", "..", ".hidden", "a/b", "a b", "x\\y", "é"] {
            assert!(!valid_follower_id(bad), "{bad}");
        }
        assert_eq!(record_path("r1"), "_deltabus/followers/r1.json");
        assert!(crate::delta::retention::is_hidden(&record_path("r1")));
    }

    #[test]
    fn the_slowest_follower_bounds_maintenance() {
        assert_eq!(oldest_needed(&[], 0), None);
        assert_eq!(oldest_needed(&[record("a", 9), record("b", 4), record("c", 12)], 0), Some(4));
        // An expired registration (a consumer group gone quiet) holds nothing back.
        let quiet = FollowerRecord { expires_at: Some(100), ..record("g", 1) };
        assert_eq!(oldest_needed(&[record("a", 9), quiet.clone()], 99), Some(1));
        assert_eq!(oldest_needed(&[record("a", 9), quiet.clone()], 100), Some(9));
        assert_eq!(oldest_needed(&[quiet], 100), None);
    }

    #[test]
    fn records_round_trip_as_camel_case_json() {
        let r = record("a", 7);
        let text = serde_json::to_string(&r).unwrap();
        assert!(text.contains("\"nextVersion\":7"), "{text}");
        assert_eq!(serde_json::from_str::<FollowerRecord>(&text).unwrap(), r);
    }

    #[test]
    fn health_warns_then_refuses() {
        let props = TableProperties::from_config(&std::collections::HashMap::new());
        let day = 86_400_000;
        let now = 100 * day;
        assert_eq!(position_health(None, now, 3, &props), PositionHealth::Fresh);
        assert_eq!(position_health(Some(now - day), now, 3, &props), PositionHealth::Fresh);
        // Defaults: files are kept 7 days, logs 30: the files bound the follower.
        let warn = position_health(Some(now - 6 * day), now, 3, &props);
        assert!(matches!(&warn, PositionHealth::Warn(m) if m.contains("deletedFileRetentionDuration")), "{warn:?}");
        let stale = position_health(Some(now - 8 * day), now, 3, &props);
        assert!(matches!(&stale, PositionHealth::Stale(m) if m.contains("version 3")), "{stale:?}");
    }
}
