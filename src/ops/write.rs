//! `deltabus write`: JSON lines in, one commit out.
//!
//! Records are decoded straight from their bytes into Arrow (`arrow_json`'s decoder, strict:
//! an unknown field is an error) against the table schema with its nullability, written as
//! Parquet files with statistics, and committed together in one transaction. A record that
//! does not fit is reported with its line number and column, the files already written are
//! deleted, and nothing is committed. With an app id and txn version the write is idempotent:
//! a second run finds the txn in the table and reports `already_applied` without writing.

use std::collections::HashMap;
use std::sync::Arc;

use arrow::datatypes::SchemaRef;
use serde_json::json;
use tokio::io::{AsyncBufRead, AsyncBufReadExt};

use crate::delta::actions::{Action, Metadata, Txn};
use crate::delta::arrow_schema::arrow_schema_strict;
use crate::delta::create::{infer_schema, merge_schema, new_table};
use crate::delta::schema::StructType;
use crate::delta::snapshot::Snapshot;
use crate::delta::transaction::{CommitOutcome, Transaction};
use crate::error::{Error, Result};
use crate::storage::{DataWriter, RetryPolicy, StagedCommit, Table, WriterConfig};

/// Records per decoded batch.
const CHUNK_LINES: usize = 8192;
/// Records sampled for schema inference and merging.
const SAMPLE_LINES: usize = 1000;

/// Whether the table may or must be created.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteMode {
    /// Append, creating the table when it does not exist.
    Append,
    /// Create the table; fail if it exists.
    Create,
}

/// Options of a write.
#[derive(Debug, Clone)]
pub struct WriteOptions {
    pub mode: WriteMode,
    pub partition_by: Vec<String>,
    pub merge_schema: bool,
    /// Explicit schema for a new table (otherwise inferred).
    pub schema: Option<StructType>,
    /// Table properties for a new table.
    pub properties: HashMap<String, String>,
    /// Idempotency: `txn` (appId, version) committed with the data.
    pub txn: Option<(String, i64)>,
    pub retry: RetryPolicy,
    /// Overrides of the table's file size and codec.
    pub target_file_size: Option<u64>,
    pub compression: Option<String>,
    /// Show the rows written so far on stderr.
    pub progress: bool,
}

impl Default for WriteOptions {
    fn default() -> Self {
        WriteOptions {
            mode: WriteMode::Append,
            partition_by: Vec::new(),
            merge_schema: false,
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
pub struct WriteReport {
    /// `None` when there was nothing to commit (empty input on an existing table).
    pub outcome: Option<CommitOutcome>,
    pub rows: u64,
    pub files: usize,
    pub bytes: i64,
}

impl WriteReport {
    /// The report as one JSON object (the `deltabus write` output).
    pub fn to_json(&self) -> serde_json::Value {
        match &self.outcome {
            None => json!({"outcome": "nothing_to_commit", "rows": 0}),
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
pub async fn write_json_lines<R: AsyncBufRead + Unpin>(
    table: &Table,
    mut input: R,
    opts: &WriteOptions,
) -> Result<WriteReport> {
    let existing = match table.snapshot(None).await {
        Ok(s) => Some(s),
        Err(Error::NotATable { .. }) => None,
        Err(e) => return Err(e),
    };
    if let (Some(s), Some((app, v))) = (&existing, &opts.txn) {
        if let Some(current) = s.txn_version(app).filter(|c| c >= v) {
            let outcome = CommitOutcome::AlreadyApplied { app_id: app.clone(), version: current };
            return Ok(WriteReport { outcome: Some(outcome), rows: 0, files: 0, bytes: 0 });
        }
    }
    if existing.is_some() && opts.mode == WriteMode::Create {
        return Err(Error::InvalidArgument(format!("table {} already exists (use --mode append)", table.url())));
    }
    if let Some(s) = &existing {
        crate::delta::features::check_writable(&s.protocol, &s.metadata)?;
    }

    let mut reader = LineReader::default();
    let sample = reader.read_chunk(&mut input, SAMPLE_LINES).await?;
    let sample_lines: Vec<&str> = sample.lines();

    // The schema to write with, and the protocol/metadata actions the commit carries.
    let mut schema_actions: Vec<Action> = Vec::new();
    let snapshot = match existing {
        Some(s) => {
            let incoming = if sample_lines.is_empty() { None } else { Some(infer_schema(&sample_lines)?) };
            let merged = match incoming {
                Some(inc) => merge_schema(&s.schema, &inc)?,
                None => None,
            };
            match merged {
                Some(_) if !opts.merge_schema => {
                    let new: Vec<String> = merged
                        .iter()
                        .flat_map(|m| {
                            m.fields.iter().filter(|f| s.schema.field(&f.name).is_none()).map(|f| f.name.clone())
                        })
                        .collect();
                    return Err(Error::InvalidArgument(format!(
                        "the records have columns not in the table schema: {} (use --merge-schema to add them)",
                        new.join(", ")
                    )));
                }
                Some(m) => {
                    if s.column_mapping() != crate::delta::schema::ColumnMappingMode::None {
                        return Err(Error::unsupported("schema evolution on a column-mapped table"));
                    }
                    let metadata = Metadata { schema_string: m.to_json(), ..s.metadata.clone() };
                    schema_actions.push(Action::Metadata(metadata.clone()));
                    with_metadata(&s, metadata)?
                }
                None => s,
            }
        }
        None => {
            let schema = match &opts.schema {
                Some(s) => s.clone(),
                None if sample_lines.is_empty() => {
                    return Err(Error::InvalidArgument(
                        "no records to infer a schema from (give --schema to create an empty table)".into(),
                    ))
                }
                None => infer_schema(&sample_lines)?,
            };
            let (protocol, metadata) = new_table(schema, &opts.partition_by, &opts.properties)?;
            schema_actions.push(Action::Protocol(protocol.clone()));
            schema_actions.push(Action::Metadata(metadata.clone()));
            Snapshot::for_new_table(protocol, metadata)?
        }
    };
    let creating = schema_actions.iter().any(|a| matches!(a, Action::Protocol(_)));

    let mut config = WriterConfig::for_snapshot(&snapshot);
    if let Some(size) = opts.target_file_size {
        config.target_file_size = size;
    }
    if let Some(c) = &opts.compression {
        config.compression = c.clone();
    }
    let decode_schema: SchemaRef = Arc::new(arrow_schema_strict(&snapshot.schema));
    let mut writer = DataWriter::new(table, &snapshot, config)?;
    // Two stages on two cores: decoding (blocking threads) feeds Parquet encoding through a
    // small bounded channel, so memory stays at a few batches whatever the input size.
    let (tx, mut rx) = tokio::sync::mpsc::channel::<arrow::array::RecordBatch>(2);
    let producer = async move {
        let mut chunk = sample;
        while !chunk.is_empty() {
            let schema = decode_schema.clone();
            let batch = tokio::task::spawn_blocking(move || chunk.decode(&schema))
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
    let (produced, consumed) = tokio::join!(producer, consumer);
    shown.finish();
    let rows = match (produced, consumed) {
        (Ok(()), Ok(rows)) => rows,
        (Err(e), _) | (_, Err(e)) => {
            writer.abort().await;
            return Err(e);
        }
    };
    let adds = writer.finish().await?;
    if rows == 0 && !creating && schema_actions.is_empty() && opts.txn.is_none() {
        // Empty or blank input on an existing table: no empty version.
        let mut staged = StagedCommit::new(table);
        staged.stage(adds.iter().map(|a| a.path.clone()));
        staged.discard().await;
        return Ok(WriteReport { outcome: None, rows: 0, files: 0, bytes: 0 });
    }
    let files = adds.len();
    let bytes: i64 = adds.iter().map(|a| a.size).sum();
    let mut actions = schema_actions;
    actions.extend(adds.iter().cloned().map(Action::Add));
    if let Some((app_id, version)) = &opts.txn {
        actions.push(Action::Txn(Txn {
            app_id: app_id.clone(),
            version: *version,
            last_updated: Some(table.clock().now_ms()),
        }));
    }
    let partition_by = serde_json::to_string(&snapshot.metadata.partition_columns).unwrap_or_default();
    let txn = Transaction::new(if creating { "CREATE TABLE" } else { "WRITE" }, actions)
        .with_parameter("mode", if creating { "ErrorIfExists" } else { "Append" })
        .with_parameter("partitionBy", partition_by)
        .with_metric("numFiles", files)
        .with_metric("numOutputRows", rows)
        .with_metric("numOutputBytes", bytes);
    let base = if creating { None } else { Some(&snapshot) };
    let mut staged = StagedCommit::new(table);
    staged.stage_adds(&txn.actions);
    let outcome = staged.commit(base, &txn, &opts.retry).await?;
    Ok(WriteReport { outcome: Some(outcome), rows, files, bytes })
}

fn with_metadata(s: &Snapshot, metadata: Metadata) -> Result<Snapshot> {
    let mut state = s.state().clone();
    state.metadata = Some(metadata);
    Snapshot::new(state, s.checkpoint_version, 0)
}

/// Reads the input in chunks of whole lines, remembering line numbers.
#[derive(Default)]
struct LineReader {
    next_line: usize,
}

/// A run of input lines: their bytes and where each starts.
#[derive(Default)]
struct Chunk {
    bytes: Vec<u8>,
    /// (start, end, 1-based line number) of each non-blank line.
    lines: Vec<(usize, usize, usize)>,
}

impl LineReader {
    async fn read_chunk<R: AsyncBufRead + Unpin>(&mut self, input: &mut R, max_lines: usize) -> Result<Chunk> {
        let mut chunk = Chunk::default();
        while chunk.lines.len() < max_lines {
            let start = chunk.bytes.len();
            let n = input.read_until(b'\n', &mut chunk.bytes).await?;
            if n == 0 {
                break;
            }
            self.next_line += 1;
            let line = &chunk.bytes[start..];
            if line.iter().all(u8::is_ascii_whitespace) {
                chunk.bytes.truncate(start);
                continue;
            }
            chunk.lines.push((start, chunk.bytes.len(), self.next_line));
        }
        Ok(chunk)
    }
}

impl Chunk {
    fn is_empty(&self) -> bool {
        self.lines.is_empty()
    }

    fn lines(&self) -> Vec<&str> {
        self.lines.iter().filter_map(|(s, e, _)| std::str::from_utf8(&self.bytes[*s..*e]).ok()).map(str::trim).collect()
    }

    /// Decodes the chunk; on failure, finds the first bad line for the message.
    fn decode(&self, schema: &SchemaRef) -> Result<arrow::array::RecordBatch> {
        match decode_bytes(schema, &self.bytes) {
            Ok(Some(b)) => Ok(b),
            Ok(None) => Ok(arrow::array::RecordBatch::new_empty(schema.clone())),
            Err(whole) => {
                for (s, e, line) in &self.lines {
                    let bytes = &self.bytes[*s..*e];
                    if std::str::from_utf8(bytes).is_err() {
                        return Err(Error::InvalidArgument(format!("line {line}: not valid UTF-8")));
                    }
                    if let Err(err) = decode_bytes(schema, bytes) {
                        return Err(Error::InvalidArgument(format!("line {line}: {}", describe(&err))));
                    }
                }
                Err(Error::InvalidArgument(format!("records do not fit the table schema: {}", describe(&whole))))
            }
        }
    }
}

fn decode_bytes(
    schema: &SchemaRef,
    bytes: &[u8],
) -> std::result::Result<Option<arrow::array::RecordBatch>, arrow::error::ArrowError> {
    let mut decoder = arrow_json::ReaderBuilder::new(schema.clone())
        .with_strict_mode(true)
        .with_batch_size(CHUNK_LINES + SAMPLE_LINES)
        .build_decoder()?;
    let mut buf = bytes;
    while !buf.is_empty() {
        let n = decoder.decode(buf)?;
        if n == 0 {
            break;
        }
        buf = &buf[n..];
    }
    decoder.flush()
}

/// Makes arrow-json's messages name the column plainly.
fn describe(e: &arrow::error::ArrowError) -> String {
    let text = e.to_string();
    let text = text.strip_prefix("Json error: ").unwrap_or(&text).to_string();
    if let Some(rest) = text.strip_prefix("column '") {
        if let Some((col, _)) = rest.split_once('\'') {
            return format!("column {col:?} is not in the table schema");
        }
    }
    text
}
