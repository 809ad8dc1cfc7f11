//! Dead-letter destinations: where records that cannot be decoded go, with why.
//!
//! - **Delta table**: one row per letter (`reason`, `pipeline`, `topic`, `partition`,
//!   `offset`, `timestamp`, `key`, `payload` as raw bytes). Written in the same cadence as
//!   the main table and committed *before* it with its own `txn` per partition (appId
//!   `<app_id>.dead_letters-<topic>-<partition>`); letters at or below that txn are skipped,
//!   so a crash between the two commits neither loses nor repeats a letter.
//! - **Kafka topic**: the raw payload with the original key, and the coordinates and reason
//!   in `deltabus.*` headers; every send is acknowledged before the main commit (at least
//!   once: a crash between the two re-sends the batch's letters).

use std::collections::BTreeMap;
use std::sync::Arc;

use arrow::array::{
    ArrayRef, BinaryArray, Int32Array, Int64Array, RecordBatch, StringArray, TimestampMicrosecondArray,
};

use crate::delta::actions::Txn;
use crate::delta::app_id::TxnAppId;
use crate::delta::arrow_schema::arrow_schema;
use crate::delta::create::new_table;
use crate::delta::schema::{DataType, PrimitiveType, StructField, StructType};
use crate::delta::transaction::CommitOutcome;
use crate::error::{Error, Result};
use crate::source::kafka::dead_letter_topic::DeadLetterTopic;
use crate::source::kafka::record::DeadLetter;
use crate::storage::{append_rows, Table};

/// Where a pipeline's dead letters go.
pub enum DeadLetterSink {
    /// Logged and counted only.
    Discard,
    Table {
        table: Table,
        app_id: String,
        pipeline: String,
    },
    Topic(DeadLetterTopic),
}

/// The schema of a dead-letter table.
pub fn dead_letter_schema() -> StructType {
    let p = |t| DataType::Primitive(t);
    StructType::new(vec![
        StructField::new("reason", p(PrimitiveType::String), false),
        StructField::new("pipeline", p(PrimitiveType::String), true),
        StructField::new("topic", p(PrimitiveType::String), false),
        StructField::new("partition", p(PrimitiveType::Integer), false),
        StructField::new("offset", p(PrimitiveType::Long), false),
        StructField::new("timestamp", p(PrimitiveType::Timestamp), true),
        StructField::new("key", p(PrimitiveType::Binary), true),
        StructField::new("payload", p(PrimitiveType::Binary), true),
    ])
}

impl DeadLetterSink {
    /// Sends the letters, grouped by partition, before the main table's commit. A no-op
    /// without letters.
    ///
    /// # Errors
    /// Storage or broker errors: the main commit must not happen then.
    pub async fn deliver(&self, topic: &str, letters: &BTreeMap<i32, Vec<DeadLetter>>) -> Result<()> {
        if letters.values().all(Vec::is_empty) {
            return Ok(());
        }
        match self {
            DeadLetterSink::Discard => Ok(()),
            DeadLetterSink::Table { table, app_id, pipeline } => {
                to_table(table, app_id, pipeline, topic, letters).await
            }
            DeadLetterSink::Topic(dlq) => dlq.send(letters.values().flatten()).await,
        }
    }
}

async fn to_table(
    table: &Table,
    app_id: &str,
    pipeline: &str,
    topic: &str,
    letters: &BTreeMap<i32, Vec<DeadLetter>>,
) -> Result<()> {
    for _attempt in 0..10 {
        let snapshot = table.existing_snapshot().await?;
        let mut rows: Vec<&DeadLetter> = Vec::new();
        let mut txns = Vec::new();
        for (p, ls) in letters {
            let id =
                TxnAppId::KafkaPartition { app: format!("{app_id}.dead_letters"), topic: topic.into(), partition: *p };
            let done = snapshot.as_ref().and_then(|s| id.version_in(s)).unwrap_or(-1);
            let app = id.to_string();
            let fresh: Vec<&DeadLetter> = ls.iter().filter(|l| l.offset > done).collect();
            if let Some(last) = fresh.last() {
                txns.push(Txn { app_id: app, version: last.offset, last_updated: Some(table.clock().now_ms()) });
                rows.extend(fresh);
            }
        }
        if rows.is_empty() {
            return Ok(());
        }
        let query = ("queryId", format!("{app_id}.dead_letters"));
        let outcome = append_letters(table, snapshot.as_ref(), &rows, pipeline, txns, query).await?;
        if matches!(outcome, CommitOutcome::Committed { .. }) {
            return Ok(());
        }
        // Another worker wrote some of these letters, or created the table: re-read and retry.
    }
    Err(Error::CommitConflict { version: 0, reason: format!("dead-letter table {} kept conflicting", table.url()) })
}

/// Appends `rows` to a dead-letter table as read in `snapshot` (created when `None`) with
/// `txns`, in one commit; `parameter` goes to `commitInfo.operationParameters`.
///
/// # Errors
/// As [`append_rows`].
pub async fn append_letters(
    table: &Table,
    snapshot: Option<&crate::delta::snapshot::Snapshot>,
    rows: &[&DeadLetter],
    pipeline: &str,
    txns: Vec<Txn>,
    parameter: (&str, String),
) -> Result<CommitOutcome> {
    let batch = letters_batch(rows, pipeline)?;
    let create = || new_table(dead_letter_schema(), &[], &Default::default());
    append_rows(table, snapshot, create, None, &[batch], txns, &[parameter]).await
}

/// The rows of a dead-letter table for `rows`, with `pipeline` in its column.
fn letters_batch(rows: &[&DeadLetter], pipeline: &str) -> Result<RecordBatch> {
    let columns: Vec<ArrayRef> = vec![
        Arc::new(rows.iter().map(|l| Some(l.reason.as_str())).collect::<StringArray>()),
        Arc::new(rows.iter().map(|_| Some(pipeline)).collect::<StringArray>()),
        Arc::new(rows.iter().map(|l| Some(l.topic.as_str())).collect::<StringArray>()),
        Arc::new(rows.iter().map(|l| Some(l.partition)).collect::<Int32Array>()),
        Arc::new(rows.iter().map(|l| Some(l.offset)).collect::<Int64Array>()),
        Arc::new(
            rows.iter()
                .map(|l| l.timestamp_ms.and_then(|t| t.checked_mul(1000)))
                .collect::<TimestampMicrosecondArray>()
                .with_timezone("UTC"),
        ),
        Arc::new(rows.iter().map(|l| l.key.as_deref()).collect::<BinaryArray>()),
        Arc::new(rows.iter().map(|l| l.payload.as_deref()).collect::<BinaryArray>()),
    ];
    RecordBatch::try_new(Arc::new(arrow_schema(&dead_letter_schema())), columns)
        .map_err(|e| Error::Internal(format!("dead-letter rows: {e}")))
}
