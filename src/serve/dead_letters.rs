//! Bad lines of requests that ask for it (`?bad_lines=dead_letter`) into the table's
//! dead-letter table, committed before the rows' commit with one `txn` per producer at the
//! request's sequence: a retry after a crash between the two commits finds its letters
//! written and does not write them again. The rows are those of every dead-letter table
//! (`reason`, `pipeline` = `http`, `topic` = the server table's name, `offset` = the line
//! number, `key` = the producer id, `payload` = the line).

use std::collections::BTreeMap;

use super::group::Pending;
use super::sequence::producer_app_id;
use crate::delta::actions::Txn;
use crate::delta::transaction::CommitOutcome;
use crate::error::{Error, Result};
use crate::pipeline::dead_letter::append_letters;
use crate::source::kafka::record::DeadLetter;
use crate::storage::Table;

/// Writes the bad lines of `taken` not yet in `table`.
///
/// # Errors
/// Storage errors, or a dead-letter table that keeps conflicting: the rows' commit must not
/// happen then.
pub async fn write(table: &Table, name: &str, taken: &[&Pending]) -> Result<()> {
    if taken.iter().all(|p| p.bad_lines.is_empty()) {
        return Ok(());
    }
    for _attempt in 0..10 {
        let snapshot = table.existing_snapshot().await?;
        let mut rows: Vec<&DeadLetter> = Vec::new();
        let mut txns: BTreeMap<String, i64> = BTreeMap::new();
        for p in taken.iter().filter(|p| !p.bad_lines.is_empty()) {
            if let Some((id, seq)) = &p.producer {
                let app = producer_app_id(id);
                if snapshot.as_ref().and_then(|s| s.txn_version(&app)).is_some_and(|done| done >= *seq) {
                    continue;
                }
                let v = txns.entry(app).or_insert(*seq);
                *v = (*v).max(*seq);
            }
            rows.extend(&p.bad_lines);
        }
        if rows.is_empty() {
            return Ok(());
        }
        let now = table.clock().now_ms();
        let txns = txns.into_iter().map(|(app_id, version)| Txn { app_id, version, last_updated: Some(now) }).collect();
        let source = ("source", format!("http:{name}"));
        let outcome = append_letters(table, snapshot.as_ref(), &rows, "http", txns, source).await?;
        if matches!(outcome, CommitOutcome::Committed { .. }) {
            return Ok(());
        }
    }
    Err(Error::CommitConflict { version: 0, reason: format!("dead-letter table {} kept conflicting", table.url()) })
}
