//! The Delta-table sink of the change feed: every source commit's change rows are appended to a
//! target table in one target commit that also records `txn(appId, version)`, where the appId
//! is `<follower id>-<source table id>` and the version is the source commit's version. On
//! start the follower reads that txn from the target and resumes right after it, so a crash at
//! any point neither repeats nor skips a source commit: the rows and the position land in the
//! same put-if-absent commit or not at all.
//!
//! The target holds the source's columns plus `_change_type`, `_commit_version` and
//! `_commit_timestamp`; it is created on the first write. Source commits without row changes
//! (compaction, metadata-only) write nothing; their position is implied by the next one.

use super::ChangeSink;
use crate::delta::actions::Txn;
use crate::delta::create::new_table;
use crate::delta::schema::{DataType, PrimitiveType, StructField, StructType};
use crate::delta::snapshot::Snapshot;
use crate::delta::transaction::CommitOutcome;
use crate::error::{Error, Result};
use crate::feed::changes::CommitChanges;
use crate::storage::{append_rows, Table};

fn change_schema(source: &StructType) -> StructType {
    let mut fields = source.fields.clone();
    fields.push(StructField::new("_change_type", DataType::Primitive(PrimitiveType::String), true));
    fields.push(StructField::new("_commit_version", DataType::Primitive(PrimitiveType::Long), true));
    fields.push(StructField::new("_commit_timestamp", DataType::Primitive(PrimitiveType::Timestamp), true));
    StructType::new(fields)
}

/// The Delta-table sink.
pub struct TableSink {
    target: Table,
    snapshot: Option<Snapshot>,
    app_id: String,
    /// Target commits made and rows written.
    pub commits: u64,
    pub rows: u64,
}

impl TableSink {
    /// A sink into `target` for follower `follower_id` of the source table `source_table_id`.
    ///
    /// # Errors
    /// Target read errors other than "no table yet".
    pub async fn open(target: &Table, follower_id: &str, source_table_id: &str) -> Result<TableSink> {
        let app_id = crate::delta::app_id::TxnAppId::Follower {
            follower: follower_id.to_string(),
            source_table_id: source_table_id.to_string(),
        }
        .to_string();
        let snapshot = target.existing_snapshot().await?;
        Ok(TableSink { target: target.clone(), snapshot, app_id, commits: 0, rows: 0 })
    }

    async fn refresh(&mut self) -> Result<()> {
        match &mut self.snapshot {
            Some(s) => {
                self.target.update_snapshot(s).await?;
            }
            None => match self.target.snapshot(None).await {
                Ok(s) => self.snapshot = Some(s),
                Err(Error::NotATable { .. }) => {}
                Err(e) => return Err(e),
            },
        }
        Ok(())
    }

    /// The `txn` appId holding this follower's position.
    pub fn app_id(&self) -> &str {
        &self.app_id
    }
}

impl ChangeSink for TableSink {
    async fn position(&mut self) -> Result<Option<u64>> {
        Ok(self.snapshot.as_ref().and_then(|s| s.txn_version_kept(&self.app_id)).and_then(|v| u64::try_from(v).ok()))
    }

    async fn deliver(&mut self, source: &Snapshot, changes: &CommitChanges) -> Result<()> {
        if changes.rows() == 0 {
            return Ok(());
        }
        self.mark(source, changes).await
    }

    /// A commit of the rows (none for a mark) and the position's `txn`.
    async fn mark(&mut self, source: &Snapshot, changes: &CommitChanges) -> Result<()> {
        let schema = change_schema(&source.schema);
        let outcome = apply(&self.target, self.snapshot.as_ref(), &schema, changes, &self.app_id).await;
        if matches!(outcome, Ok(CommitOutcome::Committed { .. })) {
            self.commits += 1;
            self.rows += changes.rows();
        }
        // Catch up with the target whatever happened: after a lost answer or a conflict the
        // next attempt must see what landed (our own txn included).
        self.refresh().await?;
        match outcome? {
            CommitOutcome::Committed { .. } | CommitOutcome::AlreadyApplied { .. } => Ok(()),
            CommitOutcome::Conflict { version, reason } => Err(Error::CommitConflict { version, reason }),
        }
    }

    fn name(&self) -> &'static str {
        "table"
    }
}

async fn apply(
    target: &Table,
    snapshot: Option<&Snapshot>,
    schema: &StructType,
    changes: &CommitChanges,
    app_id: &str,
) -> Result<CommitOutcome> {
    if let Some(s) = snapshot {
        if s.schema.fields.iter().map(|f| &f.name).ne(schema.fields.iter().map(|f| &f.name)) {
            return Err(Error::unsupported(format!(
                "the source schema changed at version {}; the target table {} has the old one",
                changes.version,
                target.url()
            )));
        }
    }
    let txn = Txn {
        app_id: app_id.to_string(),
        version: changes.version as i64,
        last_updated: Some(target.clock().now_ms()),
    };
    let parameters = [("queryId", app_id.to_string()), ("epochId", changes.version.to_string())];
    let create = || new_table(schema.clone(), &[], &Default::default());
    append_rows(target, snapshot, create, &changes.batches, vec![txn], &parameters).await
}
