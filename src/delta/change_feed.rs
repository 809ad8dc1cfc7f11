//! Row-level changes of one commit (digest §8): which files to read, which rows of them, and
//! what `_change_type` they carry.
//!
//! - A commit with any `cdc` action: its change-data files, labelled by their own
//!   `_change_type` column; its adds and removes are ignored.
//! - Otherwise, data-changing adds and removes: an add alone is an `insert` of its rows minus
//!   its own DV; a remove alone a `delete` of its rows minus its own DV; the same path added and
//!   removed (a DV update) deletes the rows the new DV adds and re-inserts the rows it drops.
//! - Commits whose file actions all have `dataChange=false` (compaction) yield nothing, as does
//!   a MERGE whose metrics report no inserted, updated or deleted target rows (as Spark).
//!
//! Reading the rows and materialising the change columns is the storage shell's part.

use std::collections::HashMap;

use super::actions::{Action, CommitInfo, PartitionValues};
use super::dv::DeletionVectorDescriptor;

/// The change type of rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ChangeType {
    Insert,
    Delete,
    /// Taken from the file's `_change_type` column (change-data files).
    FromFile,
}

impl ChangeType {
    /// The `_change_type` value.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            ChangeType::Insert => "insert",
            ChangeType::Delete => "delete",
            ChangeType::FromFile => "",
        }
    }
}

/// Which physical rows of a file to take.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum RowSelection {
    /// Every row except those in this DV (none when `None`).
    AllExcept(Option<DeletionVectorDescriptor>),
    /// Rows in `new` but not in `old` (`old` may be absent): newly deleted by a DV update.
    AddedBy { old: Option<DeletionVectorDescriptor>, new: DeletionVectorDescriptor },
    /// Rows in `old` but not in `new`: un-deleted by a DV update.
    DroppedBy { old: DeletionVectorDescriptor, new: Option<DeletionVectorDescriptor> },
}

/// One file to read for a commit's changes.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ChangeSource {
    /// The path as in the log.
    pub path: String,
    pub partition_values: PartitionValues,
    pub size: Option<i64>,
    /// The file's statistics JSON, when the log has them (for pruning by a row filter).
    pub stats: Option<String>,
    pub change_type: ChangeType,
    pub selection: RowSelection,
}

/// The files and rows that make up a commit's changes.
pub(crate) fn plan_changes(actions: &[Action]) -> Vec<ChangeSource> {
    if let Some(info) =
        actions.iter().find_map(|a| if let Action::CommitInfo(v) = a { Some(CommitInfo::from_value(v)) } else { None })
    {
        if merge_without_changes(&info) {
            return Vec::new();
        }
    }
    let cdc: Vec<ChangeSource> = actions
        .iter()
        .filter_map(|a| match a {
            Action::Cdc(c) => Some(ChangeSource {
                path: c.path.clone(),
                partition_values: c.partition_values.clone(),
                size: Some(c.size),
                stats: None,
                change_type: ChangeType::FromFile,
                selection: RowSelection::AllExcept(None),
            }),
            _ => None,
        })
        .collect();
    if !cdc.is_empty() {
        return cdc;
    }
    type Removed<'a> = (&'a PartitionValues, Option<i64>, Option<&'a DeletionVectorDescriptor>, Option<&'a String>);
    let mut removed: HashMap<&str, Removed<'_>> = HashMap::new();
    let empty = PartitionValues::new();
    for a in actions {
        if let Action::Remove(r) = a {
            if r.data_change {
                removed.insert(
                    r.path.as_str(),
                    (
                        r.partition_values.as_ref().unwrap_or(&empty),
                        r.size,
                        r.deletion_vector.as_ref(),
                        r.stats.as_ref(),
                    ),
                );
            }
        }
    }
    let mut out = Vec::new();
    for a in actions {
        let Action::Add(add) = a else { continue };
        if !add.data_change {
            continue;
        }
        match removed.remove(add.path.as_str()) {
            Some((_, _, old, _)) => {
                // A DV update of the same file: the difference of the two DVs.
                if let Some(new) = &add.deletion_vector {
                    out.push(ChangeSource {
                        path: add.path.clone(),
                        partition_values: add.partition_values.clone(),
                        size: Some(add.size),
                        stats: add.stats.clone(),
                        change_type: ChangeType::Delete,
                        selection: RowSelection::AddedBy { old: old.cloned(), new: new.clone() },
                    });
                }
                if let Some(old) = old {
                    out.push(ChangeSource {
                        path: add.path.clone(),
                        partition_values: add.partition_values.clone(),
                        size: Some(add.size),
                        stats: add.stats.clone(),
                        change_type: ChangeType::Insert,
                        selection: RowSelection::DroppedBy { old: old.clone(), new: add.deletion_vector.clone() },
                    });
                }
            }
            None => out.push(ChangeSource {
                path: add.path.clone(),
                partition_values: add.partition_values.clone(),
                size: Some(add.size),
                stats: add.stats.clone(),
                change_type: ChangeType::Insert,
                selection: RowSelection::AllExcept(add.deletion_vector.clone()),
            }),
        }
    }
    let mut rest: Vec<_> = removed.into_iter().collect();
    rest.sort_by(|a, b| a.0.cmp(b.0));
    for (path, (pv, size, dv, stats)) in rest {
        out.push(ChangeSource {
            path: path.to_string(),
            partition_values: pv.clone(),
            size,
            stats: stats.cloned(),
            change_type: ChangeType::Delete,
            selection: RowSelection::AllExcept(dv.cloned()),
        });
    }
    out
}

fn merge_without_changes(info: &CommitInfo) -> bool {
    if info.operation.as_deref() != Some("MERGE") {
        return false;
    }
    let Some(m) = &info.operation_metrics else { return false };
    ["numTargetRowsInserted", "numTargetRowsUpdated", "numTargetRowsDeleted"]
        .iter()
        .all(|k| m.get(*k).is_some_and(|v| v.as_str() == Some("0") || v.as_i64() == Some(0)))
}

/// The commit's timestamp for `_commit_timestamp`: its in-commit timestamp when present,
/// else the commit file's modification time.
pub(crate) fn commit_timestamp(actions: &[Action], file_modified_ms: i64) -> i64 {
    actions
        .iter()
        .find_map(|a| if let Action::CommitInfo(v) = a { CommitInfo::from_value(v).in_commit_timestamp } else { None })
        .unwrap_or(file_modified_ms)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::delta::actions::parse_commit;

    fn plan(lines: &[&str]) -> Vec<ChangeSource> {
        plan_changes(&parse_commit(lines.join("\n").as_bytes(), "t").unwrap())
    }

    const DV: &str = r#""deletionVector":{"storageType":"u","pathOrInlineDv":"vBn[lx{q8@P<9BNH/isA","offset":1,"sizeInBytes":36,"cardinality":2}"#;

    #[test]
    fn appends_deletes_and_compaction() {
        let p = plan(&[r#"{"add":{"path":"a","partitionValues":{},"size":1,"modificationTime":1,"dataChange":true}}"#]);
        assert_eq!(p.len(), 1);
        assert_eq!(p[0].change_type, ChangeType::Insert);
        let p = plan(&[r#"{"remove":{"path":"a","dataChange":true}}"#]);
        assert_eq!(p[0].change_type, ChangeType::Delete);
        let p = plan(&[
            r#"{"remove":{"path":"a","dataChange":false}}"#,
            r#"{"add":{"path":"b","partitionValues":{},"size":1,"modificationTime":1,"dataChange":false}}"#,
        ]);
        assert!(p.is_empty(), "compaction emits nothing");
    }

    #[test]
    fn dv_updates_become_deletes_of_the_difference() {
        let add = format!(
            r#"{{"add":{{"path":"a","partitionValues":{{}},"size":1,"modificationTime":1,"dataChange":true,{DV}}}}}"#
        );
        let p = plan(&[r#"{"remove":{"path":"a","dataChange":true}}"#, &add]);
        assert_eq!(p.len(), 1);
        assert_eq!(p[0].change_type, ChangeType::Delete);
        assert!(matches!(&p[0].selection, RowSelection::AddedBy { old: None, .. }));
    }

    #[test]
    fn cdc_files_win_and_empty_merges_are_skipped() {
        let p = plan(&[
            r#"{"add":{"path":"a","partitionValues":{},"size":1,"modificationTime":1,"dataChange":true}}"#,
            r#"{"cdc":{"path":"_change_data/c.parquet","partitionValues":{},"size":3,"dataChange":false}}"#,
        ]);
        assert_eq!(p.len(), 1);
        assert_eq!(p[0].change_type, ChangeType::FromFile);
        let p = plan(&[
            r#"{"commitInfo":{"operation":"MERGE","operationMetrics":{"numTargetRowsInserted":"0","numTargetRowsUpdated":"0","numTargetRowsDeleted":"0"}}}"#,
            r#"{"add":{"path":"a","partitionValues":{},"size":1,"modificationTime":1,"dataChange":true}}"#,
        ]);
        assert!(p.is_empty());
    }
}
