//! Producer ids for idempotent Kafka producers, claimed in blocks of [`BLOCK`] from
//! `_deltabus/kafka/producer-ids/<block>.json` in the root of the table of the first topic
//! (by name), put-if-absent: no two servers on the same tables, and no restart, hands out an
//! id twice. A block is claimed when the server hands out its first id and again whenever one
//! is used up; ids left in a block when the server stops are never used.
//!
//! A claim whose outcome is unknown (the store failed after it may have written) reads the
//! block back: it is ours only if it holds this server's claim token.

use tokio::sync::Mutex;

use crate::error::{Error, Result};
use crate::serve::routes::AppState;
use crate::storage::Table;

/// Ids per claimed block.
pub(crate) const BLOCK: i64 = 4096;
/// Where the blocks are claimed, in the home table's root.
pub(crate) const DIR: &str = "_deltabus/kafka/producer-ids";

/// The allocator.
pub(crate) struct ProducerIds {
    table: Table,
    token: String,
    /// The next id and the end of the block it is in.
    next: Mutex<Option<(i64, i64)>>,
}

/// The table producer ids are claimed in: the first topic's.
///
/// # Errors
/// No topic configured.
pub(crate) fn home_table(state: &AppState, config: &crate::config::kafka::ResolvedKafka) -> Result<Table> {
    let topic = config.topics.values().next().ok_or_else(|| {
        Error::InvalidArgument("server.kafka.topics: name at least one topic ([server.kafka.topics.<name>])".into())
    })?;
    state
        .tables
        .get(&topic.table)
        .map(|t| t.table.clone())
        .ok_or_else(|| Error::Internal(format!("topic table {:?} is not served", topic.table)))
}

fn block_path(block: i64) -> String {
    format!("{DIR}/{block:020}.json")
}

impl ProducerIds {
    pub(crate) fn new(table: Table) -> ProducerIds {
        ProducerIds { table, token: uuid::Uuid::new_v4().to_string(), next: Mutex::new(None) }
    }

    /// A producer id never handed out before.
    ///
    /// # Errors
    /// Storage errors while claiming a block.
    pub(crate) async fn next(&self) -> Result<i64> {
        let mut next = self.next.lock().await;
        if let Some((id, end)) = *next {
            if id < end {
                *next = Some((id + 1, end));
                return Ok(id);
            }
        }
        let block = self.claim().await?;
        let first = block * BLOCK;
        *next = Some((first + 1, first + BLOCK));
        tracing::info!(block, first, "kafka.producer_ids_claimed");
        Ok(first)
    }

    async fn claim(&self) -> Result<i64> {
        let listed = self.table.objects().list_files(DIR).await?;
        let highest = listed
            .iter()
            .filter_map(|f| f.path.rsplit('/').next()?.strip_suffix(".json")?.parse::<i64>().ok())
            .max()
            .unwrap_or(0);
        let body = serde_json::json!({"claimed_by": self.token, "block_size": BLOCK}).to_string();
        for block in (highest + 1..).take(64) {
            let path = block_path(block);
            match self.table.objects().create_file(&path, body.clone().into_bytes()).await {
                Ok(true) => return Ok(block),
                Ok(false) => {}
                Err(e) => match self.table.objects().read_bytes(&path).await {
                    Ok(read) if read == body.as_bytes() => return Ok(block),
                    Ok(_) => {}
                    Err(_) => return Err(e),
                },
            }
        }
        Err(Error::Internal("64 producer-id blocks in a row were claimed by others".into()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::StorageOptions;

    #[tokio::test]
    async fn ids_are_unique_across_allocators_and_restarts() {
        let dir = tempfile::tempdir().unwrap();
        let url = dir.path().to_str().unwrap();
        let open = || ProducerIds::new(Table::open_for_write(url, StorageOptions::default()).unwrap());
        let (a, b) = (open(), open());
        let mut seen = std::collections::HashSet::new();
        for _ in 0..3 {
            assert!(seen.insert(a.next().await.unwrap()));
            assert!(seen.insert(b.next().await.unwrap()));
        }
        drop((a, b));
        let c = open();
        let id = c.next().await.unwrap();
        assert!(seen.insert(id), "a restarted allocator claims a new block");
        assert_eq!(id % BLOCK, 0);
        assert!(seen.iter().all(|i| *i >= BLOCK));
    }
}
