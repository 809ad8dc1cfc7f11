//! A staged transaction: its actions, what it read, and the commit file for a given version.
//!
//! The committer (storage shell) owns the retry loop; everything it decides with is here:
//! whether the transaction is already applied in a snapshot, the commit bytes (commitInfo
//! first, with in-commit timestamp when the table enables it), and the single-commit validity
//! rules checked before anything is written.

use std::collections::{BTreeMap, HashSet};

use serde_json::{json, Map, Value};
use uuid::Uuid;

use super::actions::Action;
use super::conflict::{is_blind_append, IsolationLevel, ReadSet};
use super::replay::FileKey;
use super::snapshot::Snapshot;
use crate::error::{Error, Result};

/// The result of a commit attempt. A conflict is an outcome, not an error.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) enum CommitOutcome {
    /// The commit landed as this version.
    Committed { version: u64 },
    /// The table's txn for `app_id` is already at or past this transaction's: nothing written.
    AlreadyApplied { app_id: String, version: i64 },
    /// A concurrent commit makes this transaction invalid; it must be re-planned.
    Conflict { version: u64, reason: String },
}

/// What a commit does, as `commitInfo.operation` names it (the names Spark writes, so that
/// `DESCRIBE HISTORY` and change-feed readers read them as they read Spark's).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) enum Operation {
    /// A new table (with or without rows).
    CreateTable,
    /// A one-shot append (`deltabus write`, push groups).
    Write,
    /// A streaming append with source positions (Kafka flushes, followers, mirrors).
    StreamingUpdate,
    /// A keyed upsert: deletion vectors or rewrites plus new rows.
    Merge,
    /// Rows deleted by predicate.
    Delete,
    /// A `dataChange=false` rewrite (compaction).
    Optimize,
    /// A column changed (a mirror taking its source's schema).
    ChangeColumn,
    /// Table properties (and the protocol they need) set: UniForm turned on.
    SetTableProperties,
    /// The clustering columns changed (`ALTER TABLE ... CLUSTER BY`).
    ClusterBy,
}

impl Operation {
    /// The name written to `commitInfo.operation`.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Operation::CreateTable => "CREATE TABLE",
            Operation::Write => "WRITE",
            Operation::StreamingUpdate => "STREAMING UPDATE",
            Operation::Merge => "MERGE",
            Operation::Delete => "DELETE",
            Operation::Optimize => "OPTIMIZE",
            Operation::ChangeColumn => "CHANGE COLUMN",
            Operation::SetTableProperties => "SET TBLPROPERTIES",
            Operation::ClusterBy => "CLUSTER BY",
        }
    }
}

impl std::fmt::Display for Operation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A transaction ready to commit.
#[derive(Debug, Clone)]
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) struct Transaction {
    /// What the commit does (`commitInfo.operation`).
    pub operation: Operation,
    /// `commitInfo.operationParameters`.
    pub parameters: Map<String, Value>,
    /// `commitInfo.operationMetrics` (numbers as strings, as Spark writes them).
    pub metrics: BTreeMap<String, String>,
    /// Every action but `commitInfo`.
    pub actions: Vec<Action>,
    pub read: ReadSet,
    pub isolation: IsolationLevel,
    /// `commitInfo.txnId`.
    pub txn_id: Uuid,
}

impl Transaction {
    /// A new transaction.
    #[cfg_attr(feature = "internal-api", visibility::make(pub))]
    pub(crate) fn new(operation: Operation, actions: Vec<Action>) -> Self {
        Transaction {
            operation,
            parameters: Map::new(),
            metrics: BTreeMap::new(),
            actions,
            read: ReadSet::nothing(),
            isolation: IsolationLevel::Serializable,
            txn_id: Uuid::new_v4(),
        }
    }

    /// Sets an operation parameter.
    pub(crate) fn with_parameter(mut self, key: &str, value: impl Into<Value>) -> Self {
        self.parameters.insert(key.to_string(), value.into());
        self
    }

    /// Sets an operation metric.
    pub(crate) fn with_metric(mut self, key: &str, value: impl ToString) -> Self {
        self.metrics.insert(key.to_string(), value.to_string());
        self
    }

    /// Whether this is a blind append.
    pub(crate) fn is_blind_append(&self) -> bool {
        is_blind_append(&self.actions, &self.read)
    }

    /// The (appId, version) pairs this transaction records.
    pub(crate) fn txns(&self) -> impl Iterator<Item = (&str, i64)> {
        self.actions
            .iter()
            .filter_map(|a| if let Action::Txn(t) = a { Some((t.app_id.as_str(), t.version)) } else { None })
    }

    /// If the snapshot already holds one of our txns at or past our version, that txn.
    pub(crate) fn already_applied_in(&self, snapshot: &Snapshot) -> Option<(String, i64)> {
        self.txns().find_map(|(app, v)| match snapshot.txn_version(app) {
            Some(existing) if existing >= v => Some((app.to_string(), existing)),
            _ => None,
        })
    }

    /// Whether a commit's actions are this transaction's: its `commitInfo.txnId` is ours.
    /// After a lost answer (the PUT landed, the reply did not) this is how the committer
    /// recognises its own commit among the versions it finds.
    pub(crate) fn is_own_commit(&self, actions: &[Action]) -> bool {
        let ours = self.txn_id.to_string();
        actions.iter().any(|a| match a {
            Action::CommitInfo(info) => info.get("txnId").and_then(Value::as_str) == Some(ours.as_str()),
            _ => false,
        })
    }

    /// Checks the single-commit rules: at most one metaData and protocol, one txn per appId,
    /// one add and one remove per path, never an add and a remove of the same key, no
    /// checkpoint-only actions.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] naming the broken rule.
    pub(crate) fn validate(&self) -> Result<()> {
        let bad = |m: String| Err(Error::InvalidArgument(format!("invalid transaction: {m}")));
        let (mut meta, mut proto) = (0, 0);
        let mut apps = HashSet::new();
        let (mut adds, mut removes) = (HashSet::new(), HashSet::new());
        let (mut add_keys, mut remove_keys) = (HashSet::new(), HashSet::new());
        for a in &self.actions {
            match a {
                Action::Metadata(_) => meta += 1,
                Action::Protocol(_) => proto += 1,
                Action::Txn(t) if !apps.insert(t.app_id.as_str()) => {
                    return bad(format!("two txns for appId {:?}", t.app_id))
                }
                Action::Add(x) => {
                    if !adds.insert(x.path.as_str()) {
                        return bad(format!("two adds of {}", x.path));
                    }
                    add_keys.insert(FileKey::of_add(x));
                }
                Action::Remove(x) => {
                    if !removes.insert(x.path.as_str()) {
                        return bad(format!("two removes of {}", x.path));
                    }
                    remove_keys.insert(FileKey::of_remove(x));
                }
                Action::CommitInfo(_) | Action::CheckpointMetadata(_) | Action::Sidecar(_) => {
                    return bad(format!("{} is not a transaction action", a.key()))
                }
                _ => {}
            }
        }
        if meta > 1 || proto > 1 {
            return bad("more than one metaData or protocol".into());
        }
        if let Some(k) = add_keys.intersection(&remove_keys).next() {
            return bad(format!("{} is both added and removed with the same deletion vector", k.path));
        }
        Ok(())
    }

    /// The commit file content for `version`, read from snapshot version `read_version`.
    /// `in_commit_timestamp` is set when the table enables in-commit timestamps.
    ///
    /// # Errors
    /// Only if an action cannot be serialised.
    pub(crate) fn commit_bytes(
        &self,
        read_version: Option<u64>,
        now_ms: i64,
        in_commit_timestamp: Option<i64>,
    ) -> Result<Vec<u8>> {
        let mut info = Map::new();
        info.insert("timestamp".into(), json!(now_ms));
        if let Some(ict) = in_commit_timestamp {
            info.insert("inCommitTimestamp".into(), json!(ict));
        }
        info.insert("operation".into(), json!(self.operation.as_str()));
        info.insert("operationParameters".into(), Value::Object(self.parameters.clone()));
        if let Some(r) = read_version {
            info.insert("readVersion".into(), json!(r));
        }
        info.insert("isolationLevel".into(), json!(self.isolation.as_str()));
        info.insert("isBlindAppend".into(), json!(self.is_blind_append()));
        info.insert("operationMetrics".into(), json!(self.metrics));
        info.insert("engineInfo".into(), json!(crate::ENGINE_INFO));
        info.insert("txnId".into(), json!(self.txn_id.to_string()));
        let mut out = Action::CommitInfo(Value::Object(info)).to_json_line()?;
        for a in &self.actions {
            out.push('\n');
            match a {
                // A new table's metadata is created at its commit's time.
                Action::Metadata(m) if m.created_time.is_none() => {
                    let stamped =
                        Action::Metadata(crate::delta::actions::Metadata { created_time: Some(now_ms), ..m.clone() });
                    out.push_str(&stamped.to_json_line()?);
                }
                _ => out.push_str(&a.to_json_line()?),
            }
        }
        out.push('\n');
        Ok(out.into_bytes())
    }
}

/// The `delta.rowTracking` domain name.
pub(crate) const ROW_TRACKING_DOMAIN: &str = "delta.rowTracking";

/// The row-id high-water mark recorded in a domain configuration, if any.
pub(crate) fn row_id_high_water_mark(domain_configuration: &str) -> Option<i64> {
    serde_json::from_str::<Value>(domain_configuration).ok()?.get("rowIdHighWaterMark")?.as_i64()
}

/// Assigns row tracking to a transaction's new files for commit `version` (digest §9,
/// `rowTracking`): each add without a `baseRowId` gets the next range above `high_water_mark`
/// (sized by its `numRecords`) and `defaultRowCommitVersion = version`, and the
/// `delta.rowTracking` domain records the new high-water mark. Files that carry their row ids
/// (copied with them) keep them, and a mark the transaction carries is kept. Called again on every retry,
/// since a winning commit may have moved the mark.
///
/// # Errors
/// [`Error::InvalidArgument`] when a new file has no `numRecords` statistic.
pub(crate) fn assign_row_tracking(
    actions: &[Action],
    high_water_mark: Option<i64>,
    version: u64,
) -> Result<Vec<Action>> {
    let mut hwm = high_water_mark.unwrap_or(-1);
    let mut out = Vec::with_capacity(actions.len() + 1);
    let mut assigned = false;
    let mut given = None;
    for a in actions {
        match a {
            Action::Add(add) if add.base_row_id.is_none() => {
                let records = add
                    .stats
                    .as_deref()
                    .and_then(|s| serde_json::from_str::<Value>(s).ok())
                    .and_then(|v| v.get("numRecords").and_then(Value::as_i64))
                    .ok_or_else(|| Error::InvalidArgument(format!("row tracking needs numRecords for {}", add.path)))?;
                let mut add = add.clone();
                add.base_row_id = Some(hwm + 1);
                add.default_row_commit_version = Some(version as i64);
                hwm += records;
                assigned = true;
                out.push(Action::Add(add));
            }
            Action::DomainMetadata(d) if d.domain == ROW_TRACKING_DOMAIN => given = Some(d.clone()),
            other => out.push(other.clone()),
        }
    }
    if assigned {
        // A mark the transaction carries (files copied with their row ids) is kept if higher.
        let carried = given.as_ref().and_then(|d| row_id_high_water_mark(&d.configuration)).unwrap_or(-1);
        out.push(Action::DomainMetadata(super::actions::DomainMetadata {
            domain: ROW_TRACKING_DOMAIN.to_string(),
            configuration: json!({"rowIdHighWaterMark": hwm.max(carried)}).to_string(),
            removed: false,
        }));
    } else if let Some(d) = given {
        out.push(Action::DomainMetadata(d));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::delta::actions::{parse_commit, Add, Txn};

    fn add(path: &str) -> Action {
        Action::Add(Add {
            path: path.into(),
            partition_values: Default::default(),
            size: 1,
            modification_time: 1,
            data_change: true,
            stats: None,
            tags: None,
            deletion_vector: None,
            base_row_id: None,
            default_row_commit_version: None,
            clustering_provider: None,
        })
    }

    #[test]
    fn commit_info_comes_first_and_describes_the_write() {
        let t = Transaction::new(
            Operation::Write,
            vec![add("a"), Action::Txn(Txn { app_id: "x".into(), version: 3, last_updated: Some(9) })],
        )
        .with_parameter("mode", "Append")
        .with_metric("numFiles", 1);
        t.validate().unwrap();
        let bytes = t.commit_bytes(Some(4), 1000, Some(1001)).unwrap();
        let actions = parse_commit(&bytes, "c").unwrap();
        let Action::CommitInfo(info) = &actions[0] else { panic!("commitInfo is not first") };
        assert_eq!(info["operation"], "WRITE");
        assert_eq!(info["readVersion"], 4);
        assert_eq!(info["inCommitTimestamp"], 1001);
        assert_eq!(info["isBlindAppend"], true);
        assert_eq!(info["operationMetrics"]["numFiles"], "1");
        assert!(info["engineInfo"].as_str().unwrap().starts_with("deltabus/"));
        assert_eq!(actions.len(), 3);
    }

    #[test]
    fn row_tracking_assigns_ranges_and_the_high_water_mark() {
        let with_stats = |p: &str, n: i64| {
            let Action::Add(mut a) = add(p) else { unreachable!() };
            a.stats = Some(format!(r#"{{"numRecords":{n}}}"#));
            Action::Add(a)
        };
        let out = assign_row_tracking(&[with_stats("a", 10), with_stats("b", 5)], Some(99), 7).unwrap();
        let adds: Vec<&Add> = out.iter().filter_map(|a| if let Action::Add(x) = a { Some(x) } else { None }).collect();
        assert_eq!((adds[0].base_row_id, adds[1].base_row_id), (Some(100), Some(110)));
        assert_eq!(adds[0].default_row_commit_version, Some(7));
        let Some(Action::DomainMetadata(d)) = out.last() else { panic!("no domain") };
        assert_eq!(row_id_high_water_mark(&d.configuration), Some(114));
        assert!(assign_row_tracking(&[add("nostats")], None, 1).is_err());
        // Files copied with their row ids keep them, and the mark copied with them is kept.
        let mark = |m: i64| {
            Action::DomainMetadata(crate::delta::actions::DomainMetadata {
                domain: ROW_TRACKING_DOMAIN.into(),
                configuration: format!(r#"{{"rowIdHighWaterMark":{m}}}"#),
                removed: false,
            })
        };
        let Action::Add(mut copied) = with_stats("c", 3) else { unreachable!() };
        copied.base_row_id = Some(500);
        let out = assign_row_tracking(&[Action::Add(copied), mark(502)], Some(99), 8).unwrap();
        let Some(Action::Add(c)) = out.first() else { panic!("no add") };
        assert_eq!(c.base_row_id, Some(500));
        let Some(Action::DomainMetadata(d)) = out.last() else { panic!("no domain") };
        assert_eq!(row_id_high_water_mark(&d.configuration), Some(502));
        let out = assign_row_tracking(&[with_stats("d", 4), mark(50)], Some(99), 9).unwrap();
        let Some(Action::DomainMetadata(d)) = out.last() else { panic!("no domain") };
        assert_eq!(row_id_high_water_mark(&d.configuration), Some(103), "the higher mark wins");
        assert_eq!(out.iter().filter(|a| matches!(a, Action::DomainMetadata(_))).count(), 1);
    }

    #[test]
    fn own_commits_are_recognised_by_txn_id() {
        let t = Transaction::new(Operation::Write, vec![add("a")]);
        let mine = parse_commit(&t.commit_bytes(Some(1), 5, None).unwrap(), "c").unwrap();
        assert!(t.is_own_commit(&mine));
        let other = Transaction::new(Operation::Write, vec![add("a")]);
        let theirs = parse_commit(&other.commit_bytes(Some(1), 5, None).unwrap(), "c").unwrap();
        assert!(!t.is_own_commit(&theirs));
        assert!(!t.is_own_commit(&[add("a")]), "a commit without commitInfo is nobody's");
    }

    #[test]
    fn validation_rules() {
        assert!(Transaction::new(Operation::Write, vec![add("a"), add("a")]).validate().is_err());
        let txn = |v| Action::Txn(Txn { app_id: "x".into(), version: v, last_updated: None });
        assert!(Transaction::new(Operation::Write, vec![txn(1), txn(2)]).validate().is_err());
        let rm = Action::Remove(crate::delta::actions::Remove {
            path: "a".into(),
            deletion_timestamp: Some(1),
            data_change: true,
            extended_file_metadata: None,
            partition_values: None,
            size: None,
            stats: None,
            tags: None,
            deletion_vector: None,
            base_row_id: None,
            default_row_commit_version: None,
        });
        assert!(Transaction::new(Operation::Write, vec![add("a"), rm]).validate().is_err());
    }
}
