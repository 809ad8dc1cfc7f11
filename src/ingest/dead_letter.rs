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

use crate::common::record::DeadLetter;
use crate::delta::app_id::TxnAppId;
use crate::error::Result;
use crate::source::kafka::dead_letter_topic::DeadLetterTopic;
use crate::storage::Table;
use crate::write::dead_letters::append_letters;

/// Where a pipeline's dead letters go.
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) enum DeadLetterSink {
    /// Logged and counted only.
    Discard,
    Table {
        table: Table,
        app_id: String,
        pipeline: String,
    },
    Topic(DeadLetterTopic),
}

impl DeadLetterSink {
    /// Sends the letters, grouped by partition, before the main table's commit. A no-op
    /// without letters.
    ///
    /// # Errors
    /// Storage or broker errors: the main commit must not happen then.
    pub(crate) async fn deliver(&self, topic: &str, letters: &BTreeMap<i32, Vec<DeadLetter>>) -> Result<()> {
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
    let marked = letters
        .iter()
        .flat_map(|(p, ls)| {
            let id = TxnAppId::DeadLetters { app: app_id.into(), topic: topic.into(), partition: *p };
            ls.iter().map(move |l| (Some(id.clone()), l.offset, l))
        })
        .collect();
    let query = ("queryId", format!("{app_id}.dead_letters"));
    append_letters(table, marked, pipeline, query).await
}
