//! What workers and the committer say to each other over the control topic, and the two
//! decisions made on it [sync, no I/O].
//!
//! Contract:
//! - A [`CommitRequest`] holds a worker's written files and, per partition, the `txn` version
//!   its batch continues (`base`, `None` when the table has none) and the last offset in it.
//! - [`select`] is the committer's rule, applied against the table as it is when the commit is
//!   attempted (and again after every lost race): a request is taken only if every partition's
//!   `base` equals the table's position, counting the requests taken before it. A duplicate, a
//!   zombie's request or one from before a rebalance continues nothing and is refused whole.
//! - [`verdict`] is the worker's reading of positions (from an answer or from the table): all
//!   at the request's last offsets means committed (by this request or an equal one); all
//!   still at `base` means undecided; anything else means refused, and the worker resumes
//!   from the table's positions. A refused request's files are never deleted (a committer
//!   re-reading the topic may still commit it when it continues the table); VACUUM takes
//!   them once no version names them.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::delta::actions::Add;

/// A record of the control topic: `{"request": {...}}` or `{"answers": {...}}` (externally
/// tagged: partition maps keep their integer keys).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) enum Control {
    Request(CommitRequest),
    Answers(Answers),
}

/// A worker's flush, for the committer to commit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) struct CommitRequest {
    /// Unique per flush; sent again unchanged when no answer comes.
    pub id: String,
    /// The sending worker (its group member name), for logs.
    pub worker: String,
    pub table: String,
    pub app_id: String,
    pub topic: String,
    pub partitions: BTreeMap<i32, Batch>,
    pub adds: Vec<Add>,
    pub rows: u64,
    pub bytes: i64,
    pub dead_letters: u64,
}

/// One partition's part of a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) struct Batch {
    /// The table's `txn` version this batch continues (`None`: the table has none).
    pub base: Option<i64>,
    /// The last offset in the batch: the partition's `txn` version once committed.
    pub last: i64,
}

/// The committer's answers after one commit (or after finding nothing to commit).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) struct Answers {
    pub committer: String,
    /// The version committed, when one was.
    pub version: Option<u64>,
    pub answers: Vec<Answer>,
}

/// What became of one request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) struct Answer {
    pub id: String,
    /// Its files are in `Answers::version`.
    pub committed: bool,
    /// The table's position of each of its partitions afterwards.
    pub positions: BTreeMap<i32, Option<i64>>,
}

/// The requests the committer takes, in order, and the positions once they are committed.
#[derive(Debug, Default, PartialEq)]
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) struct Selection {
    pub taken: Vec<usize>,
    /// Every requested partition's position after the commit of the taken requests.
    pub positions: BTreeMap<i32, Option<i64>>,
}

/// The committer's rule: which of `requests` (in arrival order) continue the table, whose
/// `txn` version of a partition `position` gives.
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) fn select(requests: &[CommitRequest], position: impl Fn(i32) -> Option<i64>) -> Selection {
    let mut s = Selection::default();
    for (i, r) in requests.iter().enumerate() {
        for p in r.partitions.keys() {
            s.positions.entry(*p).or_insert_with(|| position(*p));
        }
        if r.partitions.is_empty() || r.partitions.iter().any(|(p, b)| s.positions.get(p) != Some(&b.base)) {
            continue;
        }
        for (p, b) in &r.partitions {
            s.positions.insert(*p, Some(b.last));
        }
        s.taken.push(i);
    }
    s
}

/// What positions say about a request.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) enum Verdict {
    /// Every partition is at the request's last offset.
    Committed,
    /// Every partition is still at the request's base.
    Undecided,
    /// The table moved elsewhere: resume each partition after its position.
    Refused(BTreeMap<i32, Option<i64>>),
}

/// The worker's reading of the table's (or an answer's) positions for `request`.
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) fn verdict(request: &CommitRequest, position: impl Fn(i32) -> Option<i64>) -> Verdict {
    let now: BTreeMap<i32, Option<i64>> = request.partitions.keys().map(|p| (*p, position(*p))).collect();
    if request.partitions.iter().all(|(p, b)| now[p] == Some(b.last)) {
        Verdict::Committed
    } else if request.partitions.iter().all(|(p, b)| now[p] == b.base) {
        Verdict::Undecided
    } else {
        Verdict::Refused(now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(id: &str, parts: &[(i32, Option<i64>, i64)]) -> CommitRequest {
        CommitRequest {
            id: id.into(),
            worker: "w".into(),
            table: "t".into(),
            app_id: "a".into(),
            topic: "in".into(),
            partitions: parts.iter().map(|(p, base, last)| (*p, Batch { base: *base, last: *last })).collect(),
            adds: Vec::new(),
            rows: 1,
            bytes: 1,
            dead_letters: 0,
        }
    }

    fn table(positions: &[(i32, i64)]) -> impl Fn(i32) -> Option<i64> + '_ {
        move |p| positions.iter().find(|(q, _)| *q == p).map(|(_, v)| *v)
    }

    #[test]
    fn requests_that_continue_the_table_are_taken_and_chain() {
        let reqs =
            [req("a", &[(0, Some(9), 19), (1, None, 5)]), req("b", &[(0, Some(19), 29)]), req("c", &[(2, Some(3), 4)])];
        let s = select(&reqs, table(&[(0, 9), (2, 3)]));
        assert_eq!(s.taken, vec![0, 1, 2]);
        assert_eq!(s.positions, BTreeMap::from([(0, Some(29)), (1, Some(5)), (2, Some(4))]));
    }

    #[test]
    fn duplicates_zombies_and_stale_requests_are_refused_whole() {
        let reqs = [
            req("a", &[(0, Some(9), 19)]),
            // The same request sent again.
            req("a", &[(0, Some(9), 19)]),
            // A zombie's batch from before a rebalance: partition 0 is right, 1 is not.
            req("z", &[(1, Some(0), 7), (2, Some(4), 8)]),
            // A gap: starts past the table's position.
            req("g", &[(3, Some(12), 20)]),
            // A first batch when the table has a position already.
            req("n", &[(4, None, 3)]),
        ];
        let s = select(&reqs, table(&[(0, 9), (1, 3), (2, 4), (3, 10), (4, 0)]));
        assert_eq!(s.taken, vec![0]);
        assert_eq!(s.positions[&1], Some(3), "a refused request moves nothing");
        assert_eq!(s.positions[&2], Some(4));
    }

    #[test]
    fn two_first_batches_of_one_partition_take_only_the_first() {
        let reqs = [req("a", &[(0, None, 5)]), req("b", &[(0, None, 8)])];
        assert_eq!(select(&reqs, |_| None).taken, vec![0]);
    }

    #[test]
    fn verdicts_read_positions() {
        let r = req("a", &[(0, Some(9), 19), (1, None, 5)]);
        assert_eq!(verdict(&r, table(&[(0, 19), (1, 5)])), Verdict::Committed);
        assert_eq!(verdict(&r, table(&[(0, 9)])), Verdict::Undecided);
        let moved = verdict(&r, table(&[(0, 30)]));
        assert_eq!(moved, Verdict::Refused(BTreeMap::from([(0, Some(30)), (1, None)])));
        // Half done is refused: this request is all or nothing, so someone else committed.
        assert!(matches!(verdict(&r, table(&[(0, 19)])), Verdict::Refused(_)));
    }

    #[test]
    fn messages_round_trip_as_json() {
        let m = Control::Request(req("ü", &[(0, Some(9), 19), (12, None, 5)]));
        let text = serde_json::to_string(&m).unwrap();
        assert!(text.starts_with("{\"request\":{"), "{text}");
        assert_eq!(serde_json::from_str::<Control>(&text).unwrap(), m);
    }
}
