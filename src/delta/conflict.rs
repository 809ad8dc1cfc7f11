//! Conflict rules between a transaction T and each commit W that won the race for a version
//! T wanted (digest §10.3, Spark's `ConflictChecker`).
//!
//! What T read is recorded in a [`ReadSet`]; T's own actions are examined directly. The rules:
//! - a protocol or metadata change in W conflicts (T was planned against the old ones);
//! - W touching a domain T also touches conflicts;
//! - W writing a `txn` for an appId T writes or read conflicts, unless W already applied our
//!   version or a later one, which is [`Verdict::AlreadyApplied`];
//! - files W added in partitions T read conflict, unless T runs at WriteSerializable and W is a
//!   blind append (skipped entirely when T may downgrade to snapshot isolation, as
//!   `dataChange=false` rewrites can);
//! - W removing a file T read (same path and DV id: removed or given a new DV) conflicts;
//! - W and T removing the same path conflicts (DV ignored).
//!
//! Blind appends read nothing, so they never conflict with each other.

use std::collections::{HashMap, HashSet};

use super::actions::{Action, CommitInfo, PartitionValues};
use super::replay::FileKey;

/// Isolation level of a transaction (`commitInfo.isolationLevel`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) enum IsolationLevel {
    #[default]
    Serializable,
    WriteSerializable,
    SnapshotIsolation,
}

impl IsolationLevel {
    /// The name written in `commitInfo`.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            IsolationLevel::Serializable => "Serializable",
            IsolationLevel::WriteSerializable => "WriteSerializable",
            IsolationLevel::SnapshotIsolation => "SnapshotIsolation",
        }
    }
}

/// What a transaction read from its snapshot.
#[derive(Debug, Clone, Default, PartialEq)]
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) struct ReadSet {
    /// T scanned the whole table (any concurrent add may have been relevant).
    pub whole_table: bool,
    /// Partitions T read (partition values as in the log); relevant when not `whole_table`.
    pub partitions: Vec<PartitionValues>,
    /// Files T read, by reconciliation key.
    pub files: HashSet<FileKey>,
    /// AppIds whose txn version T read.
    pub app_ids: HashSet<String>,
}

impl ReadSet {
    /// A transaction that read nothing (a blind append).
    pub(crate) fn nothing() -> Self {
        ReadSet::default()
    }

    /// Whether nothing was read.
    pub(crate) fn is_empty(&self) -> bool {
        !self.whole_table && self.partitions.is_empty() && self.files.is_empty()
    }
}

/// The outcome of checking T against one winning commit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// T can be retried at a later version.
    Compatible,
    /// W already recorded T's appId at or past T's version.
    AlreadyApplied { app_id: String, version: i64 },
    /// T cannot commit; the reason names the rule.
    Conflict(String),
}

/// Whether T, given its actions, is a blind append: only data-changing adds (plus txns), and
/// nothing read.
pub(crate) fn is_blind_append(actions: &[Action], read: &ReadSet) -> bool {
    read.is_empty()
        && actions.iter().all(|a| {
            matches!(a, Action::Add(add) if add.data_change) || matches!(a, Action::Txn(_) | Action::CommitInfo(_))
        })
}

/// Whether T may be checked under snapshot isolation (Spark `canDowngradeToSnapshotIsolation`):
/// only file actions and none of them changes data, as in a compaction.
pub(crate) fn can_downgrade(actions: &[Action]) -> bool {
    actions.iter().all(|a| match a {
        Action::Add(x) => !x.data_change,
        Action::Remove(x) => !x.data_change,
        Action::CommitInfo(_) => true,
        Action::DomainMetadata(d) => d.domain == "delta.rowTracking",
        _ => false,
    })
}

/// Checks T (its `actions`, `read` set and isolation) against winning commit `winner`.
pub(crate) fn check(
    actions: &[Action],
    read: &ReadSet,
    isolation: IsolationLevel,
    winner: &[Action],
    winner_version: u64,
) -> Verdict {
    let at = |rule: &str| Verdict::Conflict(format!("{rule} (concurrent commit {winner_version})"));
    let isolation = if can_downgrade(actions) { IsolationLevel::SnapshotIsolation } else { isolation };

    // App transactions first: a winner that already applied our batch is not a conflict.
    let our_txns: HashMap<&str, i64> = actions
        .iter()
        .filter_map(|a| if let Action::Txn(t) = a { Some((t.app_id.as_str(), t.version)) } else { None })
        .collect();
    for a in winner {
        if let Action::Txn(w) = a {
            if let Some(&ours) = our_txns.get(w.app_id.as_str()) {
                if w.version >= ours {
                    return Verdict::AlreadyApplied { app_id: w.app_id.clone(), version: w.version };
                }
                return at(&format!("another writer committed for appId {:?}", w.app_id));
            }
            if read.app_ids.contains(&w.app_id) {
                return at(&format!("the txn version of appId {:?} changed", w.app_id));
            }
        }
    }
    if winner.iter().any(|a| matches!(a, Action::Protocol(_))) {
        return at("the table protocol changed");
    }
    if winner.iter().any(|a| matches!(a, Action::Metadata(_))) {
        return at("the table metadata changed");
    }
    let our_domains: HashSet<&str> = actions
        .iter()
        .filter_map(|a| if let Action::DomainMetadata(d) = a { Some(d.domain.as_str()) } else { None })
        .collect();
    for a in winner {
        if let Action::DomainMetadata(d) = a {
            if our_domains.contains(d.domain.as_str()) && d.domain != "delta.rowTracking" {
                return at(&format!("domain {:?} was changed concurrently", d.domain));
            }
        }
    }

    // Files added that T should have read.
    if isolation != IsolationLevel::SnapshotIsolation && !read.is_empty() {
        let winner_blind = winner.iter().find_map(|a| match a {
            Action::CommitInfo(v) => CommitInfo::from_value(v).is_blind_append,
            _ => None,
        }) == Some(true);
        let skip = isolation == IsolationLevel::WriteSerializable && winner_blind;
        if !skip {
            for a in winner {
                if let Action::Add(add) = a {
                    if add.data_change
                        && (read.whole_table
                            || read.partitions.iter().any(|p| same_partition(p, &add.partition_values)))
                    {
                        return at(&format!("file {} was added to data this transaction read", add.path));
                    }
                }
            }
        }
    }

    // Files T read that W removed or gave a new DV.
    let our_removes: HashSet<&str> =
        actions.iter().filter_map(|a| if let Action::Remove(r) = a { Some(r.path.as_str()) } else { None }).collect();
    for a in winner {
        if let Action::Remove(r) = a {
            if read.files.contains(&FileKey::of_remove(r)) {
                return at(&format!("file {} that this transaction read was removed or rewritten", r.path));
            }
            if read.whole_table && isolation != IsolationLevel::SnapshotIsolation && r.data_change {
                return at(&format!("file {} was deleted from data this transaction read", r.path));
            }
            if our_removes.contains(r.path.as_str()) {
                return at(&format!("file {} was removed by both transactions", r.path));
            }
        }
    }
    Verdict::Compatible
}

fn same_partition(a: &PartitionValues, b: &PartitionValues) -> bool {
    let norm = |v: Option<&Option<String>>| v.cloned().flatten().filter(|s| !s.is_empty());
    a.keys().chain(b.keys()).all(|k| norm(a.get(k)) == norm(b.get(k)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::delta::actions::parse_commit;

    fn acts(lines: &[&str]) -> Vec<Action> {
        parse_commit(lines.join("\n").as_bytes(), "t").unwrap()
    }

    const APPEND_P1: &str =
        r#"{"add":{"path":"p=1/new","partitionValues":{"p":"1"},"size":1,"modificationTime":1,"dataChange":true}}"#;
    const APPEND_P2: &str =
        r#"{"add":{"path":"p=2/new2","partitionValues":{"p":"2"},"size":1,"modificationTime":1,"dataChange":true}}"#;
    const BLIND_INFO: &str = r#"{"commitInfo":{"isBlindAppend":true}}"#;
    const RM_A: &str = r#"{"remove":{"path":"a","deletionTimestamp":1,"dataChange":true}}"#;
    const RM_A_REWRITE: &str = r#"{"remove":{"path":"a","deletionTimestamp":1,"dataChange":false}}"#;
    const ADD_C_REWRITE: &str =
        r#"{"add":{"path":"c","partitionValues":{},"size":1,"modificationTime":1,"dataChange":false}}"#;
    const RM_B_REWRITE: &str = r#"{"remove":{"path":"b","deletionTimestamp":1,"dataChange":false}}"#;
    const TXN_APP5: &str = r#"{"txn":{"appId":"app","version":5}}"#;
    const TXN_APP7: &str = r#"{"txn":{"appId":"app","version":7}}"#;
    const METADATA: &str = r#"{"metaData":{"id":"t","format":{"provider":"parquet","options":{}},"schemaString":"{}","partitionColumns":[],"configuration":{}}}"#;
    const PROTOCOL: &str = r#"{"protocol":{"minReaderVersion":1,"minWriterVersion":2}}"#;
    const DV_UPDATE_A: [&str; 2] = [
        r#"{"remove":{"path":"a","deletionTimestamp":1,"dataChange":true}}"#,
        r#"{"add":{"path":"a","partitionValues":{},"size":1,"modificationTime":1,"dataChange":true,"deletionVector":{"storageType":"i","pathOrInlineDv":"wi5b=000010000siXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L","sizeInBytes":40,"cardinality":6}}}"#,
    ];

    fn compaction_of_a_b() -> (Vec<Action>, ReadSet) {
        let actions = acts(&[RM_A_REWRITE, RM_B_REWRITE, ADD_C_REWRITE]);
        let read = ReadSet {
            files: [FileKey { path: "a".into(), dv_id: None }, FileKey { path: "b".into(), dv_id: None }]
                .into_iter()
                .collect(),
            ..ReadSet::default()
        };
        (actions, read)
    }

    fn delete_in_p1() -> (Vec<Action>, ReadSet) {
        let read = ReadSet {
            partitions: vec![[("p".to_string(), Some("1".to_string()))].into_iter().collect()],
            files: [FileKey { path: "a".into(), dv_id: None }].into_iter().collect(),
            ..ReadSet::default()
        };
        (acts(&[RM_A]), read)
    }

    fn is_conflict(v: &Verdict) -> bool {
        matches!(v, Verdict::Conflict(_))
    }

    #[test]
    fn blind_appends_never_conflict() {
        let ours = acts(&[APPEND_P1]);
        assert!(is_blind_append(&ours, &ReadSet::nothing()));
        for winner in
            [acts(&[BLIND_INFO, APPEND_P1]), acts(&[APPEND_P2]), acts(&[RM_A]), acts(&[RM_A_REWRITE, ADD_C_REWRITE])]
        {
            assert_eq!(
                check(&ours, &ReadSet::nothing(), IsolationLevel::Serializable, &winner, 1),
                Verdict::Compatible
            );
        }
    }

    #[test]
    fn same_app_id_conflicts_or_is_already_applied() {
        let ours = acts(&[TXN_APP5, APPEND_P1]);
        let later = check(&ours, &ReadSet::nothing(), IsolationLevel::Serializable, &acts(&[TXN_APP7, APPEND_P1]), 3);
        assert_eq!(later, Verdict::AlreadyApplied { app_id: "app".into(), version: 7 });
        let same = check(&ours, &ReadSet::nothing(), IsolationLevel::Serializable, &acts(&[TXN_APP5]), 3);
        assert_eq!(same, Verdict::AlreadyApplied { app_id: "app".into(), version: 5 });
        let ours7 = acts(&[TXN_APP7, APPEND_P1]);
        assert!(is_conflict(&check(&ours7, &ReadSet::nothing(), IsolationLevel::Serializable, &acts(&[TXN_APP5]), 3)));
        let other_app = acts(&[r#"{"txn":{"appId":"other","version":9}}"#]);
        assert_eq!(check(&ours, &ReadSet::nothing(), IsolationLevel::Serializable, &other_app, 3), Verdict::Compatible);
    }

    #[test]
    fn protocol_and_metadata_changes_conflict() {
        let ours = acts(&[APPEND_P1]);
        assert!(is_conflict(&check(&ours, &ReadSet::nothing(), IsolationLevel::Serializable, &acts(&[METADATA]), 1)));
        assert!(is_conflict(&check(&ours, &ReadSet::nothing(), IsolationLevel::Serializable, &acts(&[PROTOCOL]), 1)));
    }

    #[test]
    fn compaction_matrix() {
        let (ours, read) = compaction_of_a_b();
        assert!(can_downgrade(&ours));
        // vs blind appends and unrelated rewrites: fine.
        assert_eq!(check(&ours, &read, IsolationLevel::Serializable, &acts(&[APPEND_P1]), 1), Verdict::Compatible);
        let unrelated = acts(&[r#"{"remove":{"path":"z","deletionTimestamp":1,"dataChange":true}}"#]);
        assert_eq!(check(&ours, &read, IsolationLevel::Serializable, &unrelated, 1), Verdict::Compatible);
        // An input was deleted, given a new DV, or compacted by someone else: abandon.
        assert!(is_conflict(&check(&ours, &read, IsolationLevel::Serializable, &acts(&[RM_A]), 1)));
        assert!(is_conflict(&check(&ours, &read, IsolationLevel::Serializable, &acts(&DV_UPDATE_A), 1)));
        assert!(is_conflict(&check(
            &ours,
            &read,
            IsolationLevel::Serializable,
            &acts(&[RM_A_REWRITE, ADD_C_REWRITE]),
            1
        )));
    }

    #[test]
    fn delete_matrix() {
        let (ours, read) = delete_in_p1();
        // A concurrent append into the partition the delete read conflicts under Serializable...
        assert!(is_conflict(&check(&ours, &read, IsolationLevel::Serializable, &acts(&[APPEND_P1]), 1)));
        // ...but not a blind append under WriteSerializable, nor an append elsewhere.
        assert_eq!(
            check(&ours, &read, IsolationLevel::WriteSerializable, &acts(&[BLIND_INFO, APPEND_P1]), 1),
            Verdict::Compatible
        );
        assert_eq!(check(&ours, &read, IsolationLevel::Serializable, &acts(&[APPEND_P2]), 1), Verdict::Compatible);
        // DV update or delete vs a concurrent removal of the same file.
        assert!(is_conflict(&check(
            &ours,
            &read,
            IsolationLevel::Serializable,
            &acts(&[RM_A_REWRITE, ADD_C_REWRITE]),
            1
        )));
        assert!(is_conflict(&check(&acts(&DV_UPDATE_A), &read, IsolationLevel::Serializable, &acts(&[RM_A]), 1)));
        // A compaction of files the delete did not touch is fine.
        assert_eq!(
            check(&ours, &read, IsolationLevel::Serializable, &acts(&[RM_B_REWRITE, ADD_C_REWRITE]), 1),
            Verdict::Compatible
        );
    }

    #[test]
    fn same_domain_conflicts() {
        let d = r#"{"domainMetadata":{"domain":"app.cfg","configuration":"{}","removed":false}}"#;
        assert!(is_conflict(&check(&acts(&[d]), &ReadSet::nothing(), IsolationLevel::Serializable, &acts(&[d]), 1)));
        let rt = r#"{"domainMetadata":{"domain":"delta.rowTracking","configuration":"{}","removed":false}}"#;
        assert_eq!(
            check(&acts(&[rt, APPEND_P1]), &ReadSet::nothing(), IsolationLevel::Serializable, &acts(&[rt]), 1),
            Verdict::Compatible
        );
    }
}
