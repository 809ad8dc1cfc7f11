//! [async] The dead-letter table: one row per letter (`reason`, `pipeline`, `topic`,
//! `partition`, `offset`, `timestamp`, `key`, `payload` as raw bytes), appended through the
//! commit path with one `txn` per position that records the letters (a Kafka partition's
//! `<app>.dead_letters-<topic>-<partition>`, a push producer's `deltabus-push:<id>`): letters
//! at or below that position are skipped, so a writer that dies between its dead letters and
//! its rows neither loses nor repeats a letter. Kafka pipelines and the push server write
//! their bad records here.

use std::collections::BTreeMap;
use std::sync::Arc;

use arrow::array::{
    ArrayRef, BinaryArray, Int32Array, Int64Array, RecordBatch, StringArray, TimestampMicrosecondArray,
};

use crate::common::record::DeadLetter;
use crate::delta::app_id::TxnAppId;
use crate::delta::arrow_schema::arrow_schema;
use crate::delta::create::new_table;
use crate::delta::schema::{DataType, PrimitiveType, StructField, StructType};
use crate::delta::snapshot::Snapshot;
use crate::error::{Error, Result};
use crate::storage::{append_plan, commit_exactly_once, Plan, Planner, RetryPolicy, Table};

/// The schema of a dead-letter table.
pub(crate) fn dead_letter_schema() -> StructType {
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

/// A letter, the position that records it (`None`: none, at least once) and its mark on that
/// position (a Kafka offset, a push sequence).
pub(crate) type MarkedLetter<'a> = (Option<TxnAppId>, i64, &'a DeadLetter);

/// Appends the letters not yet in the dead-letter `table` (created when missing) through the
/// commit path: a letter whose mark is at or below its position's `txn` is skipped, and each
/// position records the highest mark written, in the same commit as the rows; `parameter` goes
/// to `commitInfo.operationParameters`.
///
/// # Errors
/// Storage errors, or a dead-letter table that keeps conflicting: the main commit must not
/// happen then.
pub(crate) async fn append_letters(
    table: &Table,
    letters: Vec<MarkedLetter<'_>>,
    pipeline: &str,
    parameter: (&str, String),
) -> Result<()> {
    if letters.is_empty() {
        return Ok(());
    }
    let mut planner = LetterPlanner { table, letters, pipeline, parameter };
    commit_exactly_once(table, &mut None, &RetryPolicy::default(), &mut planner).await.map(|_| ())
}

struct LetterPlanner<'a> {
    table: &'a Table,
    letters: Vec<MarkedLetter<'a>>,
    pipeline: &'a str,
    parameter: (&'a str, String),
}

impl Planner for LetterPlanner<'_> {
    type Answer = ();

    async fn plan(&mut self, snapshot: Option<&Snapshot>) -> Result<Plan<()>> {
        let mut rows: Vec<&DeadLetter> = Vec::new();
        let mut positions: BTreeMap<TxnAppId, i64> = BTreeMap::new();
        for (app, mark, letter) in &self.letters {
            if let Some(app) = app {
                if snapshot.and_then(|s| app.version_in(s)).is_some_and(|done| done >= *mark) {
                    continue;
                }
                let v = positions.entry(app.clone()).or_insert(*mark);
                *v = (*v).max(*mark);
            }
            rows.push(letter);
        }
        if rows.is_empty() {
            return Ok(Plan::Nothing(()));
        }
        let batch = letters_batch(&rows, self.pipeline)?;
        let create = || new_table(dead_letter_schema(), &[], &Default::default());
        let parameters = [(self.parameter.0, self.parameter.1.clone())];
        let (txn, files) = append_plan(self.table, snapshot, create, None, &[batch], &parameters).await?;
        Ok(Plan::commit(txn, positions.into_iter().collect(), files, ()))
    }
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
