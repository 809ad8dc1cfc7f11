//! What a commit must carry besides its actions, decided before any byte is written: whether
//! the table takes it at all (writable protocol, append-only), whether a `txn` in it is already
//! in the table, whether it needs an in-commit timestamp, and whether row tracking assigns
//! row ids (from which high-water mark). Pure: the committer in the storage shell calls it and
//! only moves bytes.
//!
//! Rules:
//! - Append-only tables (`delta.appendOnly`) refuse removes that change data; compaction's
//!   `dataChange=false` removes are allowed.
//! - In-commit timestamps apply when the table has them on, or when the commit's own metadata
//!   turns them on (a new table, or an upgrade).
//! - Row tracking applies per the protocol and metadata the commit will leave: the commit's
//!   own when it carries them, else the table's; `delta.rowTrackingSuspended` turns it off.
//! - Row ids start after the table's high-water mark, and after any higher mark a concurrent
//!   winner committed ([`CommitPlan::observe`]).

use super::actions::Action;
use super::features::{check_writable, has_writer_feature, Feature};
use super::properties::TableProperties;
use super::snapshot::Snapshot;
use super::transaction::{assign_row_tracking, row_id_high_water_mark, Transaction, ROW_TRACKING_DOMAIN};
use crate::error::{Error, Result};

/// How a transaction is committed on top of a snapshot (`None`: a new table).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CommitPlan {
    /// The version the transaction read (`None` for a new table).
    pub read_version: Option<u64>,
    pub in_commit_timestamps: bool,
    pub row_tracking: bool,
    /// The highest row id assigned so far, when row tracking applies.
    pub high_water_mark: Option<i64>,
}

/// The decision before the first attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Planned {
    Commit(CommitPlan),
    /// A `txn` of the transaction is already at or past its version in the table.
    AlreadyApplied {
        app_id: String,
        version: i64,
    },
}

/// Plans `txn` on `snapshot`.
///
/// # Errors
/// An invalid transaction; a protocol deltabus may not write; data removed from an
/// append-only table.
pub(crate) fn plan(snapshot: Option<&Snapshot>, txn: &Transaction) -> Result<Planned> {
    txn.validate()?;
    if let Some(s) = snapshot {
        check_writable(&s.protocol, &s.metadata)?;
        if s.properties.append_only && txn.actions.iter().any(|a| matches!(a, Action::Remove(r) if r.data_change)) {
            return Err(Error::unsupported("the table is append-only (delta.appendOnly=true): data cannot be removed"));
        }
        if let Some((app_id, version)) = txn.already_applied_in(s) {
            return Ok(Planned::AlreadyApplied { app_id, version });
        }
    }
    let protocol = txn.actions.iter().find_map(|a| if let Action::Protocol(p) = a { Some(p) } else { None });
    let metadata = txn.actions.iter().find_map(|a| if let Action::Metadata(m) = a { Some(m) } else { None });
    let own = metadata.map(|m| TableProperties::from_config(&m.configuration));
    let in_commit_timestamps = snapshot.is_some_and(|s| s.properties.enable_in_commit_timestamps)
        || own.as_ref().is_some_and(|p| p.enable_in_commit_timestamps);
    let suspended = match (&own, snapshot) {
        (Some(p), _) => p.row_tracking_suspended,
        (None, Some(s)) => s.properties.row_tracking_suspended,
        (None, None) => false,
    };
    let row_tracking = !suspended
        && protocol.or(snapshot.map(|s| &s.protocol)).is_some_and(|p| has_writer_feature(p, Feature::RowTracking));
    let high_water_mark = snapshot
        .and_then(|s| s.domains().get(ROW_TRACKING_DOMAIN).and_then(|d| row_id_high_water_mark(&d.configuration)));
    Ok(Planned::Commit(CommitPlan {
        read_version: snapshot.map(|s| s.version),
        in_commit_timestamps,
        row_tracking,
        high_water_mark,
    }))
}

impl CommitPlan {
    /// The commit file's bytes for an attempt at `version`.
    ///
    /// # Errors
    /// Actions that cannot take row ids; serialisation errors.
    pub(crate) fn bytes(&self, txn: &Transaction, version: u64, now_ms: i64, ict: Option<i64>) -> Result<Vec<u8>> {
        if !self.row_tracking {
            return txn.commit_bytes(self.read_version, now_ms, ict);
        }
        let actions = assign_row_tracking(&txn.actions, self.high_water_mark, version)?;
        Transaction { actions, ..txn.clone() }.commit_bytes(self.read_version, now_ms, ict)
    }

    /// Takes in a concurrent winner's commit: row ids continue after its high-water mark.
    pub(crate) fn observe(&mut self, winner: &[Action]) {
        for a in winner {
            if let Action::DomainMetadata(d) = a {
                if d.domain == ROW_TRACKING_DOMAIN {
                    self.high_water_mark = self.high_water_mark.max(row_id_high_water_mark(&d.configuration));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;
    use crate::delta::actions::{Add, DomainMetadata, Remove, Txn};
    use crate::delta::create::{infer_schema, new_table};
    use crate::delta::transaction::Operation;

    fn table(props: &[(&str, &str)]) -> Snapshot {
        let props: HashMap<String, String> = props.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        let (p, m) = new_table(infer_schema(&[r#"{"id":1}"#]).unwrap(), &[], &props).unwrap();
        Snapshot::for_new_table(p, m).unwrap()
    }

    fn remove(data_change: bool) -> Action {
        Action::Remove(Remove {
            path: "a.parquet".into(),
            deletion_timestamp: Some(1),
            data_change,
            extended_file_metadata: None,
            partition_values: None,
            size: None,
            stats: None,
            tags: None,
            deletion_vector: None,
            base_row_id: None,
            default_row_commit_version: None,
        })
    }

    fn commit(p: Planned) -> CommitPlan {
        match p {
            Planned::Commit(c) => c,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn append_only_tables_refuse_removes_that_change_data() {
        let t = table(&[("delta.appendOnly", "true")]);
        let e = plan(Some(&t), &Transaction::new(Operation::Delete, vec![remove(true)])).unwrap_err();
        assert!(e.to_string().contains("append-only"), "{e}");
        assert!(plan(Some(&t), &Transaction::new(Operation::Optimize, vec![remove(false)])).is_ok());
        assert!(plan(Some(&table(&[])), &Transaction::new(Operation::Delete, vec![remove(true)])).is_ok());
    }

    #[test]
    fn a_txn_already_in_the_table_is_not_committed_again() {
        let mut t = table(&[]);
        let txn = |v| Action::Txn(Txn { app_id: "app".into(), version: v, last_updated: None });
        t.apply_commit(1, vec![txn(5)], "00000000000000000001.json").unwrap();
        let planned = plan(Some(&t), &Transaction::new(Operation::Write, vec![txn(5)])).unwrap();
        assert_eq!(planned, Planned::AlreadyApplied { app_id: "app".into(), version: 5 });
        assert!(matches!(
            plan(Some(&t), &Transaction::new(Operation::Write, vec![txn(6)])).unwrap(),
            Planned::Commit(_)
        ));
    }

    #[test]
    fn in_commit_timestamps_follow_the_table_or_the_commits_own_metadata() {
        assert!(
            !commit(plan(Some(&table(&[])), &Transaction::new(Operation::Write, vec![])).unwrap()).in_commit_timestamps
        );
        let on = table(&[("delta.enableInCommitTimestamps", "true")]);
        assert!(commit(plan(Some(&on), &Transaction::new(Operation::Write, vec![])).unwrap()).in_commit_timestamps);
        // A new table whose metadata turns them on (spelled as Spark accepts it).
        let (p, m) = new_table(
            infer_schema(&[r#"{"id":1}"#]).unwrap(),
            &[],
            &HashMap::from([("delta.enableInCommitTimestamps".to_string(), "TRUE".to_string())]),
        )
        .unwrap();
        let create = Transaction::new(Operation::CreateTable, vec![Action::Protocol(p), Action::Metadata(m)]);
        let c = commit(plan(None, &create).unwrap());
        assert!(c.in_commit_timestamps && c.read_version.is_none());
    }

    #[test]
    fn row_tracking_follows_the_protocol_unless_suspended_and_continues_after_winners() {
        let on = table(&[("delta.enableRowTracking", "true")]);
        let c = commit(plan(Some(&on), &Transaction::new(Operation::Write, vec![])).unwrap());
        assert!(c.row_tracking);
        assert!(!commit(plan(Some(&table(&[])), &Transaction::new(Operation::Write, vec![])).unwrap()).row_tracking);
        let suspended = table(&[("delta.enableRowTracking", "true"), ("delta.rowTrackingSuspended", "true")]);
        assert!(!commit(plan(Some(&suspended), &Transaction::new(Operation::Write, vec![])).unwrap()).row_tracking);
        let mut c = c;
        let domain = |hwm: i64| {
            Action::DomainMetadata(DomainMetadata {
                domain: ROW_TRACKING_DOMAIN.into(),
                configuration: format!("{{\"rowIdHighWaterMark\":{hwm}}}"),
                removed: false,
            })
        };
        c.observe(&[domain(41)]);
        c.observe(&[domain(7)]);
        assert_eq!(c.high_water_mark, Some(41));
        let add = Action::Add(Add {
            path: "f.parquet".into(),
            partition_values: Default::default(),
            size: 1,
            modification_time: 1,
            data_change: true,
            stats: Some("{\"numRecords\":3}".into()),
            tags: None,
            deletion_vector: None,
            base_row_id: None,
            default_row_commit_version: None,
            clustering_provider: None,
        });
        let bytes = c.bytes(&Transaction::new(Operation::Write, vec![add]), 3, 1, None);
        let text = String::from_utf8(bytes.unwrap()).unwrap();
        assert!(text.contains("\"baseRowId\":42"), "{text}");
    }
}
