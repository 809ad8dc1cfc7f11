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

use arrow::array::RecordBatch;

use super::ChangeSink;
use crate::delta::actions::{Action, Metadata};
use crate::delta::app_id::TxnAppId;
use crate::delta::create::{add_columns, evolved_metadata, new_table};
use crate::delta::schema::{DataType, PrimitiveType, StructField, StructType};
use crate::delta::snapshot::Snapshot;
use crate::error::{Error, Result};
use crate::storage::change_cursor::CommitChanges;
use crate::storage::{append_plan, commit_exactly_once, Landed, Plan, Planner, RetryPolicy, Table};

fn change_schema(source: &StructType) -> StructType {
    let mut fields = source.fields.clone();
    fields.push(StructField::new("_change_type", DataType::Primitive(PrimitiveType::String), true));
    fields.push(StructField::new("_commit_version", DataType::Primitive(PrimitiveType::Long), true));
    fields.push(StructField::new("_commit_timestamp", DataType::Primitive(PrimitiveType::Timestamp), true));
    StructType::new(fields)
}

/// The Delta-table sink.
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) struct TableSink {
    target: Table,
    snapshot: Option<Snapshot>,
    app_id: TxnAppId,
    /// Target commits made and rows written.
    pub commits: u64,
    pub rows: u64,
}

impl TableSink {
    /// A sink into `target` for follower `follower_id` of the source table `source_table_id`.
    ///
    /// # Errors
    /// Target read errors other than "no table yet".
    #[cfg_attr(feature = "internal-api", visibility::make(pub))]
    pub(crate) async fn open(target: &Table, follower_id: &str, source_table_id: &str) -> Result<TableSink> {
        let app_id =
            TxnAppId::Follower { follower: follower_id.to_string(), source_table_id: source_table_id.to_string() };
        let snapshot = target.existing_snapshot().await?;
        Ok(TableSink { target: target.clone(), snapshot, app_id, commits: 0, rows: 0 })
    }

    /// The `txn` appId holding this follower's position.
    #[cfg_attr(feature = "internal-api", visibility::make(pub))]
    pub(crate) fn app_id(&self) -> String {
        self.app_id.to_string()
    }

    /// Appends `batches` with `positions` through the commit path; `None` when the target
    /// already held every position (nothing written). Positions already in the target are left
    /// out of the commit, with their rows (`slices` maps each position to its rows).
    async fn append(
        &mut self,
        schema: &StructType,
        version: u64,
        slices: Vec<(TxnAppId, Vec<RecordBatch>)>,
        query_id: &str,
    ) -> Result<Landed<u64>> {
        let v = i64::try_from(version).map_err(|e| Error::Internal(e.to_string()))?;
        let mut planner = AppendPlanner { target: &self.target, schema, version: v, slices, query_id };
        let landed =
            commit_exactly_once(&self.target, &mut self.snapshot, &RetryPolicy::default(), &mut planner).await?;
        if let Landed::Committed { answer, .. } = &landed {
            self.commits += 1;
            self.rows += answer;
        }
        Ok(landed)
    }
}

/// Change rows and the positions they carry, planned against the target as it is.
struct AppendPlanner<'a> {
    target: &'a Table,
    schema: &'a StructType,
    version: i64,
    slices: Vec<(TxnAppId, Vec<RecordBatch>)>,
    query_id: &'a str,
}

impl Planner for AppendPlanner<'_> {
    /// Rows committed.
    type Answer = u64;

    async fn plan(&mut self, snapshot: Option<&Snapshot>) -> Result<Plan<u64>> {
        let open: Vec<&(TxnAppId, Vec<RecordBatch>)> = self
            .slices
            .iter()
            .filter(|(app, _)| snapshot.and_then(|s| app.version_in(s)).is_none_or(|held| held < self.version))
            .collect();
        if open.is_empty() {
            return Ok(Plan::Nothing(0));
        }
        let batches: Vec<RecordBatch> = open.iter().flat_map(|(_, b)| b.iter().cloned()).collect();
        let rows = batches.iter().map(|b| b.num_rows() as u64).sum();
        let version = u64::try_from(self.version).unwrap_or_default();
        let evolved = evolve_target(self.target, snapshot, self.schema, version)?;
        let parameters = [("queryId", self.query_id.to_string()), ("epochId", version.to_string())];
        let create = || new_table(self.schema.clone(), &[], &Default::default());
        let (txn, files) = append_plan(self.target, snapshot, create, evolved, &batches, &parameters).await?;
        let positions = open.iter().map(|(app, _)| (app.clone(), self.version)).collect();
        Ok(Plan::commit(txn, positions, files, rows))
    }
}

impl ChangeSink for TableSink {
    async fn position(&mut self) -> Result<Option<u64>> {
        Ok(self.snapshot.as_ref().and_then(|s| self.app_id.version_in(s)).and_then(|v| u64::try_from(v).ok()))
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
        let query_id = self.app_id();
        let slices = vec![(self.app_id.clone(), changes.batches.clone())];
        self.append(&schema, changes.version, slices, &query_id).await.map(|_| ())
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
) -> Result<Option<(Vec<Action>, Snapshot)>> {
    let Some(s) = snapshot else { return Ok(None) };
    let refuse = |why: String| {
        Error::InvalidArgument(format!(
            "the source's schema changed at version {version} in a way the target {} cannot take: {why}; follow into a new target (or recreate this one) to go on",
            target.url()
        ))
    };
    // Columns the source widened are widened in the target too (type widening turned on there).
    let mut base = s.schema.clone();
    let widened = crate::delta::type_widening::widen_to(&mut base, schema);
    let merged = match add_columns(&base, schema).map_err(refuse)? {
        Some(m) => m,
        None if widened => base,
        None => return Ok(None),
    };
    tracing::info!(target = target.url(), version, "follow.target_schema_evolved");
    let evolved = evolved_metadata(&s.metadata, s.column_mapping(), merged);
    let mut schema = StructType::parse(&evolved.schema_string)?;
    // `apply` reads the type changes against the schema as it was.
    let mut metadata = Metadata { schema_string: s.metadata.schema_string.clone(), ..evolved };
    let mut actions = Vec::new();
    let mut protocol = s.protocol.clone();
    if let Some((widened, configuration)) =
        crate::delta::type_widening::apply(&s.protocol, &metadata, &mut schema).map_err(|e| refuse(e.to_string()))?
    {
        metadata.configuration = configuration;
        protocol = widened;
    }
    // New columns may need a feature of their type (variant, timestamp_ntz).
    protocol = crate::delta::features::upgraded_for(&protocol, &schema).unwrap_or(protocol);
    if protocol != s.protocol {
        actions.push(Action::Protocol(protocol.clone()));
    }
    metadata.schema_string = schema.to_json();
    actions.push(Action::Metadata(metadata.clone()));
    let changed = s.with_table(protocol, metadata)?;
    Ok(Some((actions, changed)))
}

/// The Delta-table sink of a consumer group: each slice's position is its own `txn`
/// (`<group>.<slice>-<source table id>`), and one target commit carries the rows and the
/// `txn`s of every slice delivered together.
pub(crate) struct GroupTableSink {
    target: TableSink,
    group: String,
    source_table_id: String,
}

impl GroupTableSink {
    /// # Errors
    /// Target read errors other than "no table yet".
    pub(crate) async fn open(target: &Table, group: &str, source_table_id: &str) -> Result<GroupTableSink> {
        Ok(GroupTableSink {
            target: TableSink::open(target, group, source_table_id).await?,
            group: group.to_string(),
            source_table_id: source_table_id.to_string(),
        })
    }

    fn app_id(&self, slice: u32) -> TxnAppId {
        TxnAppId::GroupSlice { group: self.group.clone(), slice, source_table_id: self.source_table_id.clone() }
    }

    /// Target commits made and rows written.
    pub(crate) fn counts(&self) -> (u64, u64) {
        (self.target.commits, self.target.rows)
    }
}

/// As a single follower the group is one follower named after it (its change rows and one
/// position); as members it delivers slices, each with its own position.
impl ChangeSink for GroupTableSink {
    async fn position(&mut self) -> Result<Option<u64>> {
        self.target.position().await
    }

    async fn deliver(&mut self, source: &Snapshot, changes: &CommitChanges) -> Result<()> {
        self.target.deliver(source, changes).await
    }

    async fn mark(&mut self, source: &Snapshot, changes: &CommitChanges) -> Result<()> {
        self.target.mark(source, changes).await
    }

    fn name(&self) -> &'static str {
        "table"
    }

    async fn slice_position(&mut self, slice: u32) -> Result<Option<u64>> {
        self.target.target.refresh(&mut self.target.snapshot).await?;
        let app = self.app_id(slice);
        Ok(self
            .target
            .snapshot
            .as_ref()
            .and_then(|s| app.version_in(s))
            .and_then(|v| u64::try_from(v).ok())
            .map(|v| v + 1))
    }

    /// Slices whose position in the target is already past this version were taken over by
    /// their next holder, which has delivered further: they are reported fenced and left out.
    /// A slice whose position is this version was delivered (by us before a lost answer, or by
    /// another holder) and is left out too.
    async fn deliver_slices(
        &mut self,
        source: &Snapshot,
        changes: &CommitChanges,
        slices: &std::collections::BTreeMap<u32, Vec<arrow::array::RecordBatch>>,
    ) -> Result<Vec<u32>> {
        let schema = change_schema(&source.schema);
        let version = i64::try_from(changes.version).map_err(|e| Error::Internal(e.to_string()))?;
        let owned: Vec<(u32, TxnAppId)> = slices.keys().map(|s| (*s, self.app_id(*s))).collect();
        // A commit without rows for any of these slices records nothing: their positions are
        // implied by the next delivery that has rows.
        if slices.values().flatten().any(|b| b.num_rows() > 0) {
            let parts = owned.iter().map(|(s, app)| (app.clone(), slices[s].clone())).collect();
            let group = self.group.clone();
            self.target.append(&schema, changes.version, parts, &group).await?;
        }
        let held = |app: &TxnAppId| self.target.snapshot.as_ref().and_then(|s| app.version_in(s));
        let fenced: Vec<u32> =
            owned.iter().filter(|(_, app)| held(app).is_some_and(|v| v > version)).map(|(s, _)| *s).collect();
        if !fenced.is_empty() {
            tracing::info!(?fenced, version = changes.version, "group.slice_fenced: taken over by their next holder");
        }
        Ok(fenced)
    }
}
