//! `deltabus write`: JSON lines in, one commit out.
//!
//! Records are decoded straight from their bytes into Arrow (`arrow_json`'s decoder, strict:
//! an unknown field is an error) against the table schema with its nullability (on tables
//! with variant columns each line is split and its variant fields encoded whole, as pushed
//! lines are: `PayloadDecoder`), written as
//! Parquet files with statistics, and committed together in one transaction. A record that
//! does not fit is reported with its line number and column, the files already written are
//! deleted, and nothing is committed. With an app id and txn version the write is idempotent:
//! a second run finds the txn in the table and reports `already_applied` without writing.

use std::collections::HashMap;
use std::sync::Arc;

use arrow::datatypes::SchemaRef;
use serde_json::json;
use tokio::io::AsyncBufRead;

use crate::decode::json_values::RecordRules;
use crate::delta::actions::{Action, Metadata};
use crate::delta::app_id::TxnAppId;
use crate::delta::arrow_schema::arrow_schema_strict;
use crate::delta::create::{infer_schema, merge_schema, new_table};
use crate::delta::schema::StructType;
use crate::delta::snapshot::Snapshot;
use crate::delta::transaction::{CommitOutcome, Operation, Transaction};
use crate::error::{Error, Result};
use crate::storage::{DataWriter, RetryPolicy, StagedCommit, Table, WriterConfig};

use super::write_lines::{LineReader, CHUNK_LINES, SAMPLE_LINES};

/// Whether the table may or must be created.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) enum WriteMode {
    /// Append, creating the table when it does not exist.
    Append,
    /// Create the table; fail if it exists.
    Create,
}

/// Options of a write.
#[derive(Debug, Clone)]
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) struct WriteOptions {
    pub mode: WriteMode,
    pub partition_by: Vec<String>,
    /// Clustering columns of a new table.
    pub cluster_by: Vec<String>,
    pub merge_schema: bool,
    /// Fields typed `variant` in a new table or when the schema evolves (or the column each
    /// whole line lands in); the table's own variant columns take any shape in any case.
    pub variants: crate::config::variants::Variants,
    /// Explicit schema for a new table (otherwise inferred).
    pub schema: Option<StructType>,
    /// Table properties for a new table.
    pub properties: HashMap<String, String>,
    /// Idempotency: `txn` (appId, version) committed with the data; the appId is used as given
    /// ([`TxnAppId::Named`]).
    pub txn: Option<(String, i64)>,
    pub retry: RetryPolicy,
    /// Overrides of the table's file size and codec.
    pub target_file_size: Option<u64>,
    pub compression: Option<crate::delta::properties::Codec>,
    /// Show the rows written so far on stderr.
    pub progress: bool,
}

impl Default for WriteOptions {
    fn default() -> Self {
        WriteOptions {
            mode: WriteMode::Append,
            partition_by: Vec::new(),
            cluster_by: Vec::new(),
            merge_schema: false,
            variants: Default::default(),
            schema: None,
            properties: HashMap::new(),
            txn: None,
            retry: RetryPolicy::default(),
            target_file_size: None,
            compression: None,
            progress: false,
        }
    }
}

/// What a write did.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) struct WriteReport {
    /// `None` when there was nothing to commit (empty input on an existing table).
    pub outcome: Option<CommitOutcome>,
    pub rows: u64,
    pub files: usize,
    pub bytes: i64,
    /// Table properties the write changed on an existing table.
    pub properties_set: Vec<String>,
}

impl WriteReport {
    /// The report as one JSON object (the `deltabus write` output).
    pub(crate) fn to_json(&self) -> serde_json::Value {
        match &self.outcome {
            None => json!({"outcome": "nothing_to_commit", "rows": 0}),
            Some(CommitOutcome::Committed { version }) if !self.properties_set.is_empty() => json!({
                "outcome": "committed", "version": version, "rows": self.rows, "files": self.files,
                "bytes": self.bytes, "propertiesSet": self.properties_set,
            }),
            Some(CommitOutcome::Committed { version }) => {
                json!({"outcome": "committed", "version": version, "rows": self.rows, "files": self.files, "bytes": self.bytes})
            }
            Some(CommitOutcome::AlreadyApplied { app_id, version }) => {
                json!({"outcome": "already_applied", "appId": app_id, "txnVersion": version})
            }
            Some(CommitOutcome::Conflict { version, reason }) => {
                json!({"outcome": "conflict", "version": version, "reason": reason})
            }
        }
    }
}

/// Reads JSON lines from `input` and commits them to `table` in one transaction.
///
/// # Errors
/// [`Error::InvalidArgument`] for a record that does not fit (naming line and column), a
/// schema change without `merge_schema`, or `Create` on an existing table; protocol and
/// storage errors as the committer reports them.
#[cfg(any(test, feature = "internal-api"))]
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) async fn write_json_lines<R: AsyncBufRead + Unpin>(
    table: &Table,
    input: R,
    opts: &WriteOptions,
) -> Result<WriteReport> {
    write_json_lines_until(table, input, opts, std::future::pending()).await
}

/// As [`write_json_lines`], giving up when `stop` resolves before the commit starts (SIGINT,
/// SIGTERM): the files written so far are deleted and nothing is committed. Once the commit
/// has started it is finished whatever `stop` says.
///
/// # Errors
/// As [`write_json_lines`]; an [`Error::Io`] of kind `Interrupted` when stopped.
pub(crate) async fn write_json_lines_until<R: AsyncBufRead + Unpin>(
    table: &Table,
    mut input: R,
    opts: &WriteOptions,
    stop: impl std::future::Future<Output = ()>,
) -> Result<WriteReport> {
    let existing = table.existing_snapshot().await?;
    if let (Some(s), Some((app, v))) = (&existing, &opts.txn) {
        if let Some(current) = TxnAppId::Named(app.clone()).version_in(s).filter(|c| c >= v) {
            let outcome = CommitOutcome::AlreadyApplied { app_id: app.clone(), version: current };
            return Ok(WriteReport { outcome: Some(outcome), rows: 0, files: 0, bytes: 0, properties_set: Vec::new() });
        }
    }
    if existing.is_some() && opts.mode == WriteMode::Create {
        return Err(Error::InvalidArgument(format!("table {} already exists (use --mode append)", table.url())));
    }
    let mut to_set = HashMap::new();
    if let Some(s) = &existing {
        crate::delta::features::check_writable(&s.protocol, &s.metadata)?;
        to_set = existing_table_options(s, opts)?;
    }
    let mut properties_set: Vec<String> = to_set.iter().map(|(k, v)| format!("{k}={v}")).collect();
    properties_set.sort();

    let mut reader = LineReader::default();
    let sample = reader.read_chunk(&mut input, SAMPLE_LINES).await?;
    let sample_lines: Vec<&str> = sample.lines()?;

    // The schema to write with, and the protocol/metadata actions the commit carries.
    let mut schema_actions: Vec<Action> = Vec::new();
    // The table as read, for the exactly-once commit's plans.
    let read = if opts.txn.is_some() { existing.clone() } else { None };
    let read_existed = existing.as_ref().map(|s| s.version);
    let snapshot = match existing {
        Some(s) => {
            opts.variants.check(&s.schema).map_err(Error::InvalidArgument)?;
            let incoming = if sample_lines.is_empty() { None } else { Some(inferred(&sample_lines, &opts.variants)?) };
            let merged = match incoming {
                Some(inc) => merge_schema(&s.schema, &inc)?,
                None => None,
            };
            if let Some(m) = merged.as_ref().filter(|_| !opts.merge_schema) {
                let new = crate::delta::create::added_fields(&s.schema, m);
                return Err(Error::InvalidArgument(format!(
                    "the records have columns not in the table schema: {} (use --evolve-schema to add them)",
                    new.join(", ")
                )));
            }
            let mut target = merged.unwrap_or_else(|| s.schema.clone());
            // Values only a wider type of their column holds widen it (type widening on).
            if opts.merge_schema && crate::delta::type_widening::enabled(&s.metadata.configuration) {
                let payloads: Vec<&[u8]> = sample_lines.iter().map(|l| l.as_bytes()).collect();
                if let Some(w) = crate::decode::widening::widened(&target, &[], &payloads, usize::MAX) {
                    target = w;
                }
            }
            let change = crate::write::schema_change::change(Some(&s), target, &Default::default())?;
            schema_actions.extend(change.actions);
            let snapshot = change.changed.unwrap_or(s);
            if to_set.is_empty() {
                snapshot
            } else {
                let mut metadata = snapshot.metadata.clone();
                metadata.configuration.extend(to_set);
                schema_actions.retain(|a| !matches!(a, Action::Metadata(_)));
                schema_actions.push(Action::Metadata(metadata.clone()));
                with_metadata(&snapshot, metadata)?
            }
        }
        None => {
            let schema = match &opts.schema {
                Some(s) => {
                    opts.variants.check(s).map_err(Error::InvalidArgument)?;
                    s.clone()
                }
                None if sample_lines.is_empty() && opts.variants.record().is_none() => {
                    return Err(Error::InvalidArgument(
                        "no records to infer a schema from (give --schema to create an empty table)".into(),
                    ))
                }
                None => inferred(&sample_lines, &opts.variants)?,
            };
            let (protocol, metadata) = new_table(schema, &opts.partition_by, &opts.properties)?;
            let (actions, created) = crate::delta::clustering::created(protocol, metadata, &opts.cluster_by)?;
            schema_actions.extend(actions);
            created
        }
    };
    let creating = read_existed.is_none();

    let mut config = WriterConfig::for_snapshot(&snapshot);
    if let Some(size) = opts.target_file_size {
        config.target_file_size = size;
    }
    if let Some(c) = opts.compression {
        config.compression = c;
    }
    let decode_schema: SchemaRef = Arc::new(arrow_schema_strict(&snapshot.schema));
    let rules = Arc::new(RecordRules::new(&decode_schema));
    // Variant columns: each line split and its variant fields encoded, as pushed lines are.
    let variant = |t: &arrow::datatypes::DataType| matches!(t, arrow::datatypes::DataType::Struct(f) if crate::delta::arrow_schema::is_variant(f));
    let variants = decode_schema.fields().iter().any(|f| variant(f.data_type())).then(|| {
        let decoder = crate::decode::json::PayloadDecoder::new(decode_schema.clone(), usize::MAX);
        Arc::new(match opts.variants.record() {
            Some(column) => decoder.with_record_variant(column),
            None => decoder,
        })
    });
    let mut writer = DataWriter::new(table, &snapshot, config)?;
    // Two stages on two cores: decoding (blocking threads) feeds Parquet encoding through a
    // small bounded channel, so memory stays at a few batches whatever the input size.
    let (tx, mut rx) = tokio::sync::mpsc::channel::<arrow::array::RecordBatch>(2);
    let producer = async move {
        let mut chunk = sample;
        while !chunk.is_empty() {
            let (schema, rules, variants) = (decode_schema.clone(), rules.clone(), variants.clone());
            let batch = tokio::task::spawn_blocking(move || match variants {
                Some(decoder) => chunk.decode_variants(&decoder),
                None => chunk.decode(&schema, &rules),
            })
            .await
            .map_err(|e| Error::Internal(format!("decoder task: {e}")))??;
            if tx.send(batch).await.is_err() {
                break; // the writer stopped on an error of its own
            }
            chunk = reader.read_chunk(&mut input, CHUNK_LINES).await?;
        }
        Ok::<(), Error>(())
    };
    let shown = if opts.progress {
        crate::common::progress::Progress::new("write", "rows", None)
    } else {
        crate::common::progress::Progress::hidden()
    };
    let consumer = async {
        let mut rows = 0u64;
        while let Some(batch) = rx.recv().await {
            rows += batch.num_rows() as u64;
            shown.inc(batch.num_rows() as u64);
            if let Err(e) = writer.write(&batch).await {
                rx.close();
                return Err(e);
            }
        }
        Ok(rows)
    };
    let joined = tokio::select! {
        both = async { tokio::join!(producer, consumer) } => Some(both),
        () = stop => None,
    };
    shown.finish();
    let rows = match joined {
        Some((Ok(()), Ok(rows))) => rows,
        Some((Err(e), _) | (_, Err(e))) => {
            writer.abort().await;
            return Err(e);
        }
        None => {
            writer.abort().await;
            return Err(Error::Io(std::io::Error::new(
                std::io::ErrorKind::Interrupted,
                "interrupted before the commit: nothing was committed and the files written were removed",
            )));
        }
    };
    let adds = writer.finish().await?;
    if rows == 0 && !creating && schema_actions.is_empty() && opts.txn.is_none() {
        // Empty or blank input on an existing table: no empty version.
        let mut staged = StagedCommit::new(table);
        staged.stage(adds.iter().map(|a| a.path.clone()));
        staged.discard().await;
        return Ok(WriteReport { outcome: None, rows: 0, files: 0, bytes: 0, properties_set: Vec::new() });
    }
    let files = adds.len();
    let bytes: i64 = adds.iter().map(|a| a.size).sum();
    let mut actions = schema_actions;
    actions.extend(adds.iter().cloned().map(Action::Add));
    let partition_by = serde_json::to_string(&snapshot.metadata.partition_columns).unwrap_or_default();
    let txn = Transaction::new(if creating { Operation::CreateTable } else { Operation::Write }, actions)
        .with_parameter("mode", if creating { "ErrorIfExists" } else { "Append" })
        .with_parameter("partitionBy", partition_by.clone())
        .with_metric("numFiles", files)
        .with_metric("numOutputRows", rows)
        .with_metric("numOutputBytes", bytes);
    let mut staged = StagedCommit::new(table);
    staged.stage_adds(&txn.actions);
    // A store that fails this check leaves nothing behind either: the write gives up whole.
    let missing = match table.first_missing(staged.files()).await {
        Ok(missing) => missing,
        Err(e) => {
            staged.discard().await;
            return Err(e);
        }
    };
    if let Some(gone) = missing {
        staged.discard().await;
        return Err(Error::Io(std::io::Error::new(
            std::io::ErrorKind::NotFound,
            format!("{gone}, written by this write, is gone before the commit (deleted by a VACUUM or by hand?): nothing was committed"),
        )));
    }
    if let Some((app_id, version)) = &opts.txn {
        let read = read.as_ref().filter(|_| !creating);
        let done = super::write_txn::commit_write(table, read, txn, opts.mode, (app_id, *version), &opts.retry).await;
        if !matches!(
            done,
            Ok(super::write_txn::TxnWrite { files_unused: false, .. }) | Err(Error::CommitUnknown { .. })
        ) {
            staged.discard().await;
        }
        let outcome = Some(done?.outcome);
        return Ok(WriteReport { outcome, rows, files, bytes, properties_set });
    }
    let outcome = match (creating, opts.mode) {
        // Parallel appends into a missing table: the losers of the creation race append.
        (true, WriteMode::Append) => {
            let ours = &snapshot;
            let actions: Vec<Action> = txn
                .actions
                .iter()
                .filter(|a| !matches!(a, Action::Protocol(_) | Action::Metadata(_)))
                .cloned()
                .collect();
            let append = |winner: &Snapshot| {
                let fits = winner.schema == ours.schema
                    && winner.metadata.partition_columns == ours.metadata.partition_columns
                    && crate::delta::features::check_writable(&winner.protocol, &winner.metadata).is_ok();
                fits.then(|| {
                    Transaction::new(Operation::Write, actions)
                        .with_parameter("mode", "Append")
                        .with_parameter("partitionBy", partition_by.clone())
                        .with_metric("numFiles", files)
                        .with_metric("numOutputRows", rows)
                        .with_metric("numOutputBytes", bytes)
                })
            };
            staged.create_or_append(&txn, &opts.retry, append).await?
        }
        (true, _) => staged.commit(None, &txn, &opts.retry).await?,
        (false, _) => staged.commit(Some(&snapshot), &txn, &opts.retry).await?,
    };
    Ok(WriteReport { outcome: Some(outcome), rows, files, bytes, properties_set })
}

/// Properties a write may change on an existing table: those that need no protocol change.
/// The schema of `lines` with `variants` applied (with a record variant, that column alone:
/// lines of any shape need no inference).
///
/// # Errors
/// As [`infer_schema`].
fn inferred(lines: &[&str], variants: &crate::config::variants::Variants) -> Result<StructType> {
    if variants.record().is_some() {
        return Ok(variants.applied(StructType::new(Vec::new())));
    }
    Ok(variants.applied(infer_schema(lines)?))
}

fn changeable(key: &str) -> bool {
    let k = key.to_ascii_lowercase();
    !(k.starts_with("delta.feature.")
        || k.starts_with("delta.enable")
        || k.starts_with("delta.columnmapping.")
        || k.starts_with("delta.minreaderversion")
        || k.starts_with("delta.minwriterversion")
        || k.starts_with("delta.universalformat.")
        || k == "delta.appendonly"
        || k == "delta.checkpointpolicy"
        || k.starts_with("delta.incommittimestamp")
        || k.starts_with("delta.rowtracking"))
}

/// Checks the options that shape a new table against an existing one: a different
/// `--partition-by` or `--schema` is refused; `--property` values the table already has are
/// fine, others are set when they need no protocol change and refused otherwise. Returns the
/// properties to set (canonical keys and values).
fn existing_table_options(s: &Snapshot, opts: &WriteOptions) -> Result<HashMap<String, String>> {
    if !opts.partition_by.is_empty() && opts.partition_by != s.metadata.partition_columns {
        return Err(Error::InvalidArgument(format!(
            "--partition-by {} cannot apply: the table exists and is partitioned by [{}] (partitioning is set when a table is created)",
            opts.partition_by.join(","),
            s.metadata.partition_columns.join(",")
        )));
    }
    crate::delta::clustering::check_configured(s, &opts.cluster_by, "--cluster-by")?;
    if opts.schema.as_ref().is_some_and(|schema| *schema != s.schema) {
        return Err(Error::InvalidArgument(
            "--schema cannot apply: the table exists with another schema (use --evolve-schema to add columns from the records)"
                .into(),
        ));
    }
    let wanted = crate::delta::properties::checked_properties(&opts.properties)?;
    let mut set = HashMap::new();
    for (key, value) in &wanted {
        let current = s.metadata.configuration.iter().find(|(k, _)| k.eq_ignore_ascii_case(key)).map(|(_, v)| v);
        if current.is_some_and(|c| c.eq_ignore_ascii_case(value)) {
            continue;
        }
        if !changeable(key) {
            return Err(Error::InvalidArgument(format!(
                "--property {key}={value} cannot apply to the existing table: it changes the table's protocol features (set it when the table is created)"
            )));
        }
        set.insert(key.clone(), value.clone());
    }
    Ok(set)
}

fn with_metadata(s: &Snapshot, metadata: Metadata) -> Result<Snapshot> {
    let mut state = s.state().clone();
    state.metadata = Some(metadata);
    Snapshot::new(state, s.checkpoint_version, 0)
}
