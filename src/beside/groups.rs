//! Consumer groups over a table's change feed: the records under `_deltabus/groups/<group>/`
//! and the rules every member applies to them (no I/O here).
//!
//! - `group.json`: the group's fixed shape, written once (put-if-absent) by its first member:
//!   the number of slices, the key columns that choose a row's slice (none: its place in the
//!   commit), and the version the group started at.
//! - `members/<member>.json`: a member's heartbeat (`expiresAt`); live members are the ones
//!   not expired.
//! - `slices/<slice>/<epoch>.json`: the slice's lease chain. Each record is created with
//!   put-if-absent at the next epoch, so two members can never both write epoch `e`: the
//!   holder renews by writing `e + 1`, a taker writes `e + 1` only after `e` expired (or was
//!   released, `expiresAt = 0`). A holder whose renewal finds `e + 1` taken has lost the slice.
//!   Each record carries the slice's next version as last recorded by its holder.
//! - Assignment: live members sorted by name, slice `s` to member `s mod n`. Every member
//!   computes the same assignment from the same listing; a member releases what is no longer
//!   its own and takes what is, once free.
//! - A row's slice: a stable hash (FNV-1a, 64 bit) of its key columns' JSON values, so one key
//!   always goes to the same slice; without key columns, of its file's path, so that a member
//!   reads only the files of its own slices.

use serde::{Deserialize, Serialize};

/// Where groups live under the table root.
pub(crate) const GROUPS_DIR: &str = "_deltabus/groups";

/// The slices of a new group unless given.
pub(crate) const DEFAULT_SLICES: u32 = 16;

/// `group.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) struct GroupSpec {
    pub slices: u32,
    #[serde(default)]
    pub key_columns: Vec<String>,
    /// The first version the group delivers (a slice without a recorded position starts here).
    pub start_version: u64,
    pub created_at: i64,
}

/// `members/<member>.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct MemberRecord {
    pub member: String,
    pub expires_at: i64,
}

/// `slices/<slice>/<epoch>.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Lease {
    pub member: String,
    /// A fresh id per record: how a writer whose answer was lost recognises its own record.
    pub token: String,
    /// 0 for a release.
    pub expires_at: i64,
    /// The first version the slice has not delivered, as its holder last recorded it.
    pub next_version: Option<u64>,
}

pub(crate) fn group_dir(group: &str) -> String {
    format!("{GROUPS_DIR}/{group}")
}

pub(crate) fn spec_path(group: &str) -> String {
    format!("{GROUPS_DIR}/{group}/group.json")
}

pub(crate) fn member_path(group: &str, member: &str) -> String {
    format!("{GROUPS_DIR}/{group}/members/{member}.json")
}

pub(crate) fn lease_path(group: &str, slice: u32, epoch: u64) -> String {
    format!("{GROUPS_DIR}/{group}/slices/{slice:05}/{epoch:020}.json")
}

/// A listed path under the group's directory, understood: `(slice, epoch)` for a lease record.
pub(crate) fn parse_lease_path(group: &str, path: &str) -> Option<(u32, u64)> {
    let rest = path.strip_prefix(&format!("{GROUPS_DIR}/{group}/slices/"))?;
    let (slice, file) = rest.split_once('/')?;
    let epoch = file.strip_suffix(".json")?;
    if slice.len() != 5 || epoch.len() != 20 {
        return None;
    }
    Some((slice.parse().ok()?, epoch.parse().ok()?))
}

/// The member a listed path belongs to, for a heartbeat record.
pub(crate) fn parse_member_path<'a>(group: &str, path: &'a str) -> Option<&'a str> {
    path.strip_prefix(&format!("{GROUPS_DIR}/{group}/members/"))?.strip_suffix(".json")
}

/// Slice `s` → the member that should hold it, for live `members` (any order).
pub(crate) fn assignment(members: &[String], slices: u32) -> Vec<Option<String>> {
    let mut sorted: Vec<&String> = members.iter().collect();
    sorted.sort();
    sorted.dedup();
    (0..slices as usize).map(|s| (!sorted.is_empty()).then(|| sorted[s % sorted.len()].clone())).collect()
}

/// What a member may do about a slice whose newest lease record is `latest` (at `epoch`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum LeaseState {
    /// Nobody ever held it: take epoch 0.
    Free,
    /// Held by `me` until `expires_at`.
    Mine { epoch: u64 },
    /// Held by another member until it expires.
    Taken { member: String, expires_at: i64 },
    /// Expired or released at `epoch`: take `epoch + 1`.
    Expired { epoch: u64 },
}

pub(crate) fn lease_state(latest: Option<(u64, &Lease)>, me: &str, now_ms: i64) -> LeaseState {
    match latest {
        None => LeaseState::Free,
        Some((epoch, l)) if l.expires_at <= now_ms => LeaseState::Expired { epoch },
        Some((epoch, l)) if l.member == me => LeaseState::Mine { epoch },
        Some((_, l)) => LeaseState::Taken { member: l.member.clone(), expires_at: l.expires_at },
    }
}

/// FNV-1a over `bytes`, continuing from `hash`.
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) fn fnv1a(mut hash: u64, bytes: &[u8]) -> u64 {
    for b in bytes {
        hash ^= u64::from(*b);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    hash
}

/// The FNV-1a offset basis.
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) const FNV_START: u64 = 0xcbf2_9ce4_8422_2325;

/// The slice of a hash.
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) fn slice_of(hash: u64, slices: u32) -> u32 {
    (hash % u64::from(slices.max(1))) as u32
}

/// The slice of every row of the file at `path` (as the log names it), for a group without
/// keys: a member reads only its slices' files.
pub(crate) fn slice_of_path(path: &str, slices: u32) -> u32 {
    slice_of(fnv1a(FNV_START, path.as_bytes()), slices)
}

/// Group and member names are file names: letters, digits, `-`, `_` and `.` (not first).
pub(crate) fn valid_name(name: &str) -> bool {
    super::followers::valid_follower_id(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lease(member: &str, expires_at: i64) -> Lease {
        Lease { member: member.into(), token: "t".into(), expires_at, next_version: None }
    }

    #[test]
    fn every_member_computes_the_same_even_assignment() {
        let a = assignment(&["b".into(), "a".into(), "c".into()], 16);
        let b = assignment(&["c".into(), "b".into(), "a".into(), "a".into()], 16);
        assert_eq!(a, b);
        for m in ["a", "b", "c"] {
            let n = a.iter().filter(|x| x.as_deref() == Some(m)).count();
            assert!((5..=6).contains(&n), "{m}: {n}");
        }
        assert!(assignment(&[], 4).iter().all(Option::is_none));
    }

    #[test]
    fn a_lease_is_taken_only_once_expired_or_released() {
        let now = 1000;
        assert_eq!(lease_state(None, "a", now), LeaseState::Free);
        assert_eq!(lease_state(Some((3, &lease("a", 2000))), "a", now), LeaseState::Mine { epoch: 3 });
        assert_eq!(
            lease_state(Some((3, &lease("b", 2000))), "a", now),
            LeaseState::Taken { member: "b".into(), expires_at: 2000 }
        );
        assert_eq!(lease_state(Some((3, &lease("b", 1000))), "a", now), LeaseState::Expired { epoch: 3 });
        // Our own expired lease is not ours any more: another member may have taken it.
        assert_eq!(lease_state(Some((4, &lease("a", 0))), "a", now), LeaseState::Expired { epoch: 4 });
    }

    #[test]
    fn paths_round_trip() {
        let p = lease_path("g.1", 7, 42);
        assert_eq!(parse_lease_path("g.1", &p), Some((7, 42)));
        assert_eq!(parse_lease_path("g", &p), None);
        assert_eq!(parse_member_path("g", &member_path("g", "m-1")), Some("m-1"));
    }

    #[test]
    fn slices_are_stable_and_spread() {
        let mut counts = [0u32; 16];
        for file in 0..16_000 {
            counts[slice_of_path(&format!("part-{file:05}-{}.parquet", file * 7919), 16) as usize] += 1;
        }
        assert!(counts.iter().all(|c| (800..1200).contains(c)), "{counts:?}");
        assert_eq!(slice_of(fnv1a(FNV_START, b"\"k1\""), 16), slice_of(fnv1a(FNV_START, b"\"k1\""), 16));
        // Pinned: a slice must not change between releases, or a key would move.
        assert_eq!(fnv1a(FNV_START, b"a"), 0xaf63_dc4c_8601_ec8c);
    }
}
