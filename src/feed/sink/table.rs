//! The Delta-table sink of the change feed: every source commit's change rows are appended to a
//! target table in one target commit that also records `txn(appId, version)`, where the appId
//! is `<follower id>-<source table id>` and the version is the source commit's version. On
//! start the follower reads that txn from the target and resumes right after it, so a crash at
//! any point neither repeats nor skips a source commit: the rows and the position land in the
//! same put-if-absent commit or not at all.
//!
//! The target holds the source's columns plus `_change_type`, `_commit_version` and
//! `_commit_timestamp`; it is created on the first write. Columns the source adds (top level or
//! nested) are added to the target in the commit of the first rows that carry them; a change
//! the target cannot express (a column's type changed, a required column dropped) stops the
//! follower with a reason that names it. Source commits without row changes (compaction,
//! metadata-only) write nothing; their position is implied by the next one.

use super::ChangeSink;
use crate::delta::actions::{Metadata, Txn};
use crate::delta::create::{add_columns, new_table};
use crate::delta::schema::{ColumnMappingMode, DataType, PrimitiveType, StructField, StructType};
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
        Ok(self.snapshot.as_ref().and_then(|s| s.txn_version(&self.app_id)).and_then(|v| u64::try_from(v).ok()))
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

/// The schema change the target needs for the change rows of `schema` (source version
/// `version`): `None` when they fit; the target's metadata with the source's new columns
/// (nullable, nested ones too) when the source added columns; refused, naming the change and
/// what to do, when a copy that already holds rows cannot express it.
fn evolve_target(
    target: &Table,
    snapshot: Option<&Snapshot>,
    schema: &StructType,
    version: u64,
) -> Result<Option<Metadata>> {
    let Some(s) = snapshot else { return Ok(None) };
    let refuse = |why: String| {
        Error::InvalidArgument(format!(
            "the source's schema changed at version {version} in a way the target {} cannot take: {why}; follow into a new target (or recreate this one) to go on",
            target.url()
        ))
    };
    let Some(merged) = add_columns(&s.schema, schema).map_err(refuse)? else { return Ok(None) };
    if s.column_mapping() != ColumnMappingMode::None {
        return Err(refuse("new columns on a column-mapped target are not supported".into()));
    }
    tracing::info!(target = target.url(), version, "follow.target_schema_evolved");
    Ok(Some(Metadata { schema_string: merged.to_json(), ..s.metadata.clone() }))
}

async fn apply(
    target: &Table,
    snapshot: Option<&Snapshot>,
    schema: &StructType,
    changes: &CommitChanges,
    app_id: &str,
) -> Result<CommitOutcome> {
    let evolved = evolve_target(target, snapshot, schema, changes.version)?;
    let txn = Txn {
        app_id: app_id.to_string(),
        version: changes.version as i64,
        last_updated: Some(target.clock().now_ms()),
    };
    let parameters = [("queryId", app_id.to_string()), ("epochId", changes.version.to_string())];
    let create = || new_table(schema.clone(), &[], &Default::default());
    append_rows(target, snapshot, create, evolved, &changes.batches, vec![txn], &parameters).await
}

/// The Delta-table sink of a consumer group: each slice's position is its own `txn`
/// (`<group>.<slice>-<source table id>`), and one target commit carries the rows and the
/// `txn`s of every slice delivered together.
pub struct GroupTableSink {
    target: TableSink,
    group: String,
    source_table_id: String,
}

impl GroupTableSink {
    /// # Errors
    /// Target read errors other than "no table yet".
    pub async fn open(target: &Table, group: &str, source_table_id: &str) -> Result<GroupTableSink> {
        Ok(GroupTableSink {
            target: TableSink::open(target, group, source_table_id).await?,
            group: group.to_string(),
            source_table_id: source_table_id.to_string(),
        })
    }

    fn app_id(&self, slice: u32) -> String {
        crate::delta::app_id::TxnAppId::Follower {
            follower: format!("{}.{slice}", self.group),
            source_table_id: self.source_table_id.clone(),
        }
        .to_string()
    }

    /// Target commits made and rows written.
    pub fn counts(&self) -> (u64, u64) {
        (self.target.commits, self.target.rows)
    }
}

impl crate::feed::group_follow::SliceSink for GroupTableSink {
    async fn slice_position(&mut self, slice: u32) -> Result<Option<u64>> {
        self.target.refresh().await?;
        let app = self.app_id(slice);
        Ok(self
            .target
            .snapshot
            .as_ref()
            .and_then(|s| s.txn_version(&app))
            .and_then(|v| u64::try_from(v).ok())
            .map(|v| v + 1))
    }

    async fn deliver_slices(
        &mut self,
        source: &Snapshot,
        changes: &CommitChanges,
        slices: &std::collections::BTreeMap<u32, Vec<arrow::array::RecordBatch>>,
    ) -> Result<Vec<u32>> {
        let schema = change_schema(&source.schema);
        let version = i64::try_from(changes.version).map_err(|e| Error::Internal(e.to_string()))?;
        // A slice whose txn already holds this version was delivered (by us before a lost
        // answer, or by another holder): it is left out, and asked again after every outcome.
        for _ in 0..8 {
            let applied = |app: &str| {
                self.target.snapshot.as_ref().and_then(|s| s.txn_version(app)).is_some_and(|v| v >= version)
            };
            let open: Vec<u32> = slices.keys().copied().filter(|s| !applied(&self.app_id(*s))).collect();
            let batches: Vec<_> = open.iter().flat_map(|s| slices[s].iter().cloned()).collect();
            if batches.iter().all(|b| b.num_rows() == 0) {
                return Ok(Vec::new());
            }
            let now = self.target.target.clock().now_ms();
            let txns = open.iter().map(|s| Txn { app_id: self.app_id(*s), version, last_updated: Some(now) }).collect();
            let part = changes.with_batches(batches);
            let parameters = [("queryId", self.group.clone()), ("epochId", changes.version.to_string())];
            let create = || new_table(schema.clone(), &[], &Default::default());
            let evolved = evolve_target(&self.target.target, self.target.snapshot.as_ref(), &schema, changes.version)?;
            let outcome = append_rows(
                &self.target.target,
                self.target.snapshot.as_ref(),
                create,
                evolved,
                &part.batches,
                txns,
                &parameters,
            )
            .await;
            if matches!(outcome, Ok(CommitOutcome::Committed { .. })) {
                self.target.commits += 1;
                self.target.rows += part.rows();
            }
            self.target.refresh().await?;
            match outcome? {
                CommitOutcome::Committed { .. } => return Ok(Vec::new()),
                CommitOutcome::AlreadyApplied { .. } | CommitOutcome::Conflict { .. } => continue,
            }
        }
        Err(Error::CommitConflict {
            version: changes.version,
            reason: "the target kept moving under this group's delivery".into(),
        })
    }
}
