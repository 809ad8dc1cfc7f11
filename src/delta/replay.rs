//! Log replay: folds a checkpoint and the commits after it into table state (digest §5).
//!
//! Replay runs forward (checkpoint, then commits in version order), so the same state can be
//! advanced one commit at a time by a tailer without a full replay. File actions are keyed by
//! `(path, deletion-vector unique id)`; within one commit, actions are unordered, so removes
//! are applied before adds and a commit that both adds and removes one key is invalid.

use std::collections::HashMap;

use super::actions::{Action, Add, DomainMetadata, Metadata, Protocol, Remove, Txn};
use crate::error::{Error, Result};

/// The reconciliation key of a file action.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FileKey {
    pub path: String,
    pub dv_id: Option<String>,
}

impl FileKey {
    /// The key of an add.
    pub fn of_add(a: &Add) -> FileKey {
        FileKey { path: a.path.clone(), dv_id: a.deletion_vector.as_ref().map(|d| d.unique_id()) }
    }

    /// The key of a remove.
    pub fn of_remove(r: &Remove) -> FileKey {
        FileKey { path: r.path.clone(), dv_id: r.deletion_vector.as_ref().map(|d| d.unique_id()) }
    }
}

/// Reconciled table state at one version, before validation into a snapshot.
#[derive(Debug, Clone, Default)]
pub struct TableState {
    /// The version of the last applied commit or checkpoint; `None` before any.
    pub version: Option<u64>,
    pub protocol: Option<Protocol>,
    pub metadata: Option<Metadata>,
    pub files: HashMap<FileKey, Add>,
    pub tombstones: HashMap<FileKey, Remove>,
    pub txns: HashMap<String, Txn>,
    pub domains: HashMap<String, DomainMetadata>,
}

impl TableState {
    /// Loads the actions of a checkpoint at `version` into an empty state.
    ///
    /// # Errors
    /// [`Error::InvalidLog`] when the checkpoint holds commit-only actions.
    pub fn apply_checkpoint(&mut self, version: u64, actions: Vec<Action>, file: &str) -> Result<()> {
        for action in actions {
            match action {
                Action::Protocol(p) => self.protocol = Some(p),
                Action::Metadata(m) => self.metadata = Some(m),
                Action::Add(a) => {
                    self.files.insert(FileKey::of_add(&a), a);
                }
                Action::Remove(r) => {
                    self.tombstones.insert(FileKey::of_remove(&r), r);
                }
                Action::Txn(t) => self.apply_txn(t),
                Action::DomainMetadata(d) => self.apply_domain(d),
                Action::CheckpointMetadata(_) | Action::Sidecar(_) => {}
                Action::CommitInfo(_) | Action::Cdc(_) => {
                    return Err(Error::invalid_log(file, "a checkpoint must not contain commitInfo or cdc"))
                }
            }
        }
        self.version = Some(version);
        Ok(())
    }

    /// Applies commit `version`, which must directly follow the current state.
    ///
    /// # Errors
    /// [`Error::InvalidLog`] when the commit is out of sequence or breaks the single-commit
    /// validity rules (two metaData, two protocol, two txns for one appId, add and remove of
    /// the same key, checkpoint-only actions).
    pub fn apply_commit(&mut self, version: u64, actions: &[Action], file: &str) -> Result<()> {
        self.apply_commit_owned(version, actions.to_vec(), file)
    }

    /// As [`TableState::apply_commit`], consuming the actions (no copies of the adds).
    ///
    /// # Errors
    /// As [`TableState::apply_commit`].
    pub fn apply_commit_owned(&mut self, version: u64, actions: Vec<Action>, file: &str) -> Result<()> {
        let expected = self.version.map_or(0, |v| v + 1);
        if version != expected {
            return Err(Error::invalid_log(file, format!("commit {version} applied after version {:?}", self.version)));
        }
        let mut seen_meta = false;
        let mut seen_protocol = false;
        let mut seen_apps: Vec<&str> = Vec::new();
        for action in &actions {
            match action {
                Action::Remove(r) => {
                    let key = FileKey::of_remove(r);
                    self.files.remove(&key);
                    self.tombstones.insert(key, r.clone());
                }
                Action::Metadata(m) => {
                    if std::mem::replace(&mut seen_meta, true) {
                        return Err(Error::invalid_log(file, "more than one metaData action in a commit"));
                    }
                    self.metadata = Some(m.clone());
                }
                Action::Protocol(p) => {
                    if std::mem::replace(&mut seen_protocol, true) {
                        return Err(Error::invalid_log(file, "more than one protocol action in a commit"));
                    }
                    self.protocol = Some(p.clone());
                }
                Action::Txn(t) => {
                    if seen_apps.contains(&t.app_id.as_str()) {
                        return Err(Error::invalid_log(file, format!("two txn actions for appId {:?}", t.app_id)));
                    }
                    seen_apps.push(&t.app_id);
                    self.apply_txn(t.clone());
                }
                Action::DomainMetadata(d) => self.apply_domain(d.clone()),
                Action::CheckpointMetadata(_) | Action::Sidecar(_) => {
                    return Err(Error::invalid_log(
                        file,
                        "checkpointMetadata and sidecar actions are not allowed in commits",
                    ))
                }
                Action::Add(_) | Action::Cdc(_) | Action::CommitInfo(_) => {}
            }
        }
        for action in actions {
            if let Action::Add(mut add) = action {
                let key = FileKey::of_add(&add);
                if !self.tombstones.is_empty() {
                    self.tombstones.remove(&key);
                }
                // Live state never carries dataChange=true (Spark's InMemoryLogReplay).
                add.data_change = false;
                self.files.insert(key, add);
            }
        }
        self.version = Some(version);
        Ok(())
    }

    fn apply_txn(&mut self, t: Txn) {
        self.txns.insert(t.app_id.clone(), t);
    }

    fn apply_domain(&mut self, d: DomainMetadata) {
        if d.removed {
            self.domains.remove(&d.domain);
        } else {
            self.domains.insert(d.domain.clone(), d);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::delta::actions::parse_commit;

    fn commit(lines: &[&str]) -> Vec<Action> {
        parse_commit(lines.join("\n").as_bytes(), "test").unwrap()
    }

    const ADD_A: &str = r#"{"add":{"path":"a","partitionValues":{},"size":1,"modificationTime":1,"dataChange":true}}"#;
    const RM_A: &str = r#"{"remove":{"path":"a","deletionTimestamp":5,"dataChange":true}}"#;
    const ADD_A_DV: &str = r#"{"add":{"path":"a","partitionValues":{},"size":1,"modificationTime":1,"dataChange":true,"deletionVector":{"storageType":"i","pathOrInlineDv":"wi5b=000010000siXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L","sizeInBytes":40,"cardinality":6}}}"#;

    #[test]
    fn add_remove_and_dv_keys() {
        let mut s = TableState::default();
        s.apply_commit(0, &commit(&[ADD_A]), "0").unwrap();
        assert_eq!(s.files.len(), 1);
        // Replacing the DV: remove (path, none) + add (path, dv) in one commit.
        s.apply_commit(1, &commit(&[RM_A, ADD_A_DV]), "1").unwrap();
        assert_eq!(s.files.len(), 1);
        assert!(s.files.keys().next().unwrap().dv_id.is_some());
        assert_eq!(s.tombstones.len(), 1);
        // Removing the plain key again does not touch the DV'd file.
        s.apply_commit(2, &commit(&[RM_A]), "2").unwrap();
        assert_eq!(s.files.len(), 1);
        assert!(s.apply_commit(4, &[], "4").is_err(), "out of sequence");
    }

    #[test]
    fn txns_and_domains() {
        let mut s = TableState::default();
        s.apply_commit(
            0,
            &commit(&[
                r#"{"txn":{"appId":"x","version":3}}"#,
                r#"{"domainMetadata":{"domain":"d","configuration":"{}","removed":false}}"#,
            ]),
            "0",
        )
        .unwrap();
        s.apply_commit(
            1,
            &commit(&[
                r#"{"txn":{"appId":"x","version":7}}"#,
                r#"{"domainMetadata":{"domain":"d","configuration":"{}","removed":true}}"#,
            ]),
            "1",
        )
        .unwrap();
        assert_eq!(s.txns["x"].version, 7);
        assert!(s.domains.is_empty());
        let dup = commit(&[r#"{"txn":{"appId":"y","version":1}}"#, r#"{"txn":{"appId":"y","version":2}}"#]);
        assert!(s.apply_commit(2, &dup, "2").is_err());
    }
}
