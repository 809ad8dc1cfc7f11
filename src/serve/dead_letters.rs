//! Bad lines of requests that ask for it (`?bad_lines=dead_letter`) into the table's
//! dead-letter table, committed before the rows' commit with one `txn` per producer at the
//! request's sequence: a retry after a crash between the two commits finds its letters
//! written and does not write them again. The rows are those of every dead-letter table
//! (`reason`, `pipeline` = `http`, `topic` = the server table's name, `offset` = the line
//! number, `key` = the producer id, `payload` = the line).

use super::group::Pending;
use crate::error::Result;
use crate::storage::Table;
use crate::write::dead_letters::append_letters;

/// Writes the bad lines of `taken` not yet in `table`.
///
/// # Errors
/// Storage errors, or a dead-letter table that keeps conflicting: the rows' commit must not
/// happen then.
pub(crate) async fn write(table: &Table, name: &str, taken: &[&Pending]) -> Result<()> {
    let letters = taken
        .iter()
        .flat_map(|p| {
            let (app, seq) = match &p.producer {
                Some(s) => (Some(s.app.clone()), s.last),
                None => (None, 0),
            };
            p.bad_lines.iter().map(move |l| (app.clone(), seq, l))
        })
        .collect();
    let door = super::group::door(taken.iter().copied());
    append_letters(table, letters, door, ("source", format!("{door}:{name}"))).await
}
