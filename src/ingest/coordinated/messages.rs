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
//!   A request whose rows create the table or grow its schema ([`SchemaRequest`]: the rows'
//!   commit carries the change, [`crate::write::schema_change`]) is taken only when the table's
//!   schema is still the one it was planned against, and only one such request per commit;
//!   while there is no table only a request creating it is taken. The others are refused, and
//!   their workers consume the rows again against the table as it then is.
//! - [`verdict`] is the worker's reading of positions (from an answer or from the table): all
//!   at the request's last offsets means committed (by this request or an equal one); all
//!   still at `base` means undecided; anything else means refused, and the worker resumes
//!   from the table's positions. A refused request's files are never deleted (a committer
//!   re-reading the topic may still commit it when it continues the table); VACUUM takes
//!   them once no version names them.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::delta::actions::{Add, Metadata, Protocol};

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
    /// The schema change the files were written under, for the commit to carry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema: Option<Box<SchemaRequest>>,
}

/// A request's schema change: the table created, or its schema grown, by the rows' commit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) struct SchemaRequest {
    /// The table's schema string the change was planned against (`None`: there was no table).
    pub from: Option<String>,
    /// Creating the table: its protocol.
    pub protocol: Option<Protocol>,
    pub metadata: Metadata,
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
/// `txn` version of a partition `position` gives and whose schema string is `schema` (`None`:
/// there is no table).
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) fn select(
    requests: &[CommitRequest],
    schema: Option<&str>,
    position: impl Fn(i32) -> Option<i64>,
) -> Selection {
    let mut s = Selection::default();
    let mut changed = false;
    for (i, r) in requests.iter().enumerate() {
        for p in r.partitions.keys() {
            s.positions.entry(*p).or_insert_with(|| position(*p));
        }
        if r.partitions.is_empty() || r.partitions.iter().any(|(p, b)| s.positions.get(p) != Some(&b.base)) {
            continue;
        }
        let fits = match &r.schema {
            Some(c) => !changed && c.from.as_deref() == schema && (schema.is_some() || c.protocol.is_some()),
            None => schema.is_some(),
        };
        if !fits {
            continue;
        }
        changed |= r.schema.is_some();
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
            schema: None,
        }
    }

    fn table(positions: &[(i32, i64)]) -> impl Fn(i32) -> Option<i64> + '_ {
        move |p| positions.iter().find(|(q, _)| *q == p).map(|(_, v)| *v)
    }

    #[test]
    fn requests_that_continue_the_table_are_taken_and_chain() {
        let reqs =
            [req("a", &[(0, Some(9), 19), (1, None, 5)]), req("b", &[(0, Some(19), 29)]), req("c", &[(2, Some(3), 4)])];
        let s = select(&reqs, Some("s"), table(&[(0, 9), (2, 3)]));
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
        let s = select(&reqs, Some("s"), table(&[(0, 9), (1, 3), (2, 4), (3, 10), (4, 0)]));
        assert_eq!(s.taken, vec![0]);
        assert_eq!(s.positions[&1], Some(3), "a refused request moves nothing");
        assert_eq!(s.positions[&2], Some(4));
    }

    #[test]
    fn two_first_batches_of_one_partition_take_only_the_first() {
        let reqs = [req("a", &[(0, None, 5)]), req("b", &[(0, None, 8)])];
        let mut creating = reqs.clone();
        creating[0].schema = Some(Box::new(schema(None, true)));
        creating[1].schema = Some(Box::new(schema(None, true)));
        assert_eq!(select(&creating, None, |_| None).taken, vec![0]);
        assert_eq!(select(&reqs, Some("s"), |_| None).taken, vec![0]);
    }

    fn schema(from: Option<&str>, creating: bool) -> SchemaRequest {
        let (protocol, metadata) = crate::delta::create::new_table(
            crate::delta::schema::StructType::parse(
                r#"{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}}]}"#,
            )
            .unwrap(),
            &[],
            &Default::default(),
        )
        .unwrap();
        SchemaRequest { from: from.map(String::from), protocol: creating.then_some(protocol), metadata }
    }

    #[test]
    fn schema_changes_are_taken_one_per_commit_and_only_against_the_schema_they_grow() {
        let mut reqs = [
            req("stale", &[(0, Some(9), 19)]),
            req("grows", &[(1, Some(4), 8)]),
            req("also", &[(2, Some(5), 9)]),
            req("plain", &[(3, Some(1), 2)]),
        ];
        reqs[0].schema = Some(Box::new(schema(Some("old"), false)));
        reqs[1].schema = Some(Box::new(schema(Some("s"), false)));
        reqs[2].schema = Some(Box::new(schema(Some("s"), false)));
        let positions = table(&[(0, 9), (1, 4), (2, 5), (3, 1)]);
        assert_eq!(select(&reqs, Some("s"), &positions).taken, vec![1, 3]);
        // No table: only a request creating it, and nothing that needs a table.
        reqs[3].partitions = BTreeMap::from([(3, Batch { base: None, last: 2 })]);
        reqs[1].schema = Some(Box::new(schema(None, true)));
        reqs[1].partitions = BTreeMap::from([(1, Batch { base: None, last: 8 })]);
        assert_eq!(select(&reqs, None, |_| None).taken, vec![1]);
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
