//! `deltabus changes` and `deltabus tail`: the change feed on stdout as JSON lines.
//!
//! Each line is a row with the table's columns plus `_change_type`, `_commit_version` and
//! `_commit_timestamp`. `tail` follows new commits (polling `<v>.json` directly, with idle
//! backoff) until interrupted; with `--state-file` it records the last version whose rows were
//! fully written and flushed, and resumes after it.

use std::io::Write;
use std::path::Path;
use std::time::Duration;

use arrow::array::{Array, StructArray};
use serde::{Deserialize, Serialize};

use crate::delta::arrow_value::value_at;
use crate::error::{Error, Result};
use crate::ops::changes::{ChangeCursor, CommitChanges};
use crate::storage::Table;

/// Progress recorded by `tail --state-file`.
#[derive(Debug, Serialize, Deserialize)]
struct TailState {
    table: String,
    /// The last version whose changes were completely written.
    version: u64,
}

fn emit(out: &mut (dyn Write + Send), changes: &CommitChanges) -> Result<u64> {
    let mut rows = 0;
    for batch in &changes.batches {
        let rows_array = StructArray::from(batch.clone());
        for i in 0..rows_array.len() {
            serde_json::to_writer(&mut *out, &value_at(&rows_array, i)).map_err(|e| Error::Io(e.into()))?;
            out.write_all(b"\n")?;
            rows += 1;
        }
    }
    Ok(rows)
}

/// `changes <table> --from N [--to M]`.
///
/// # Errors
/// As [`ChangeCursor::poll`]; [`Error::MissingVersion`] when `--to` is past the latest version.
pub async fn changes(
    table: &Table,
    from: u64,
    to: Option<u64>,
    filter: Option<&str>,
    out: &mut (dyn Write + Send),
) -> Result<()> {
    let latest = table.latest_version().await?;
    let to = to.unwrap_or(latest);
    if to > latest {
        return Err(Error::MissingVersion { version: to, reason: format!("the latest version is {latest}") });
    }
    if from > to {
        return Err(Error::InvalidArgument(format!("--from {from} is after --to {to}")));
    }
    let mut cursor = ChangeCursor::open(table, from).await?.with_filter(parse_filter(filter)?);
    while cursor.next_version() <= to {
        match cursor.poll().await? {
            Some(c) => {
                emit(out, &c)?;
            }
            None => {
                return Err(Error::MissingVersion {
                    version: cursor.next_version(),
                    reason: "the commit file does not exist".into(),
                })
            }
        }
    }
    Ok(())
}

/// Where `tail` starts.
#[derive(Debug, Clone, Copy)]
pub enum TailStart {
    Version(u64),
    Latest,
}

/// `tail <table> --from N|latest [--state-file F]`: follows until Ctrl-C.
///
/// # Errors
/// As [`ChangeCursor::poll`], plus state-file I/O.
pub async fn tail(
    table: &Table,
    start: TailStart,
    poll: Duration,
    state_file: Option<&Path>,
    filter: Option<&str>,
    out: &mut (dyn Write + Send),
) -> Result<()> {
    let resumed = match state_file {
        Some(p) if p.exists() => {
            let state: TailState = serde_json::from_slice(&std::fs::read(p)?)
                .map_err(|e| Error::InvalidArgument(format!("state file {}: {e}", p.display())))?;
            if state.table != table.url() {
                return Err(Error::InvalidArgument(format!("state file {} belongs to {}", p.display(), state.table)));
            }
            Some(state.version + 1)
        }
        _ => None,
    };
    let from = match (resumed, start) {
        (Some(v), _) => v,
        (None, TailStart::Version(v)) => v,
        (None, TailStart::Latest) => table.latest_version().await? + 1,
    };
    let mut cursor = ChangeCursor::open(table, from).await?.with_filter(parse_filter(filter)?);
    let max_idle = poll.saturating_mul(10).max(poll);
    let mut wait = poll;
    loop {
        match cursor.poll().await? {
            Some(c) => {
                emit(out, &c)?;
                out.flush()?;
                if let Some(p) = state_file {
                    save_state(p, &TailState { table: table.url().to_string(), version: c.version })?;
                }
                tracing::debug!(version = c.version, "tail.emitted");
                wait = poll;
            }
            None => {
                tokio::select! {
                    _ = tokio::time::sleep(wait) => {}
                    _ = tokio::signal::ctrl_c() => return Ok(()),
                }
                // Idle backoff: poll less often while nothing happens, up to 10x the interval.
                wait = (wait + poll / 2).min(max_idle);
            }
        }
    }
}

fn parse_filter(filter: Option<&str>) -> Result<Option<crate::delta::predicate::Expr>> {
    filter
        .map(|f| crate::delta::predicate::parse(f).map_err(|e| Error::InvalidArgument(format!("--where: {e}"))))
        .transpose()
}

/// Writes the state atomically (temporary file, then rename).
fn save_state(path: &Path, state: &TailState) -> Result<()> {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, serde_json::to_vec(state).map_err(|e| Error::Internal(e.to_string()))?)?;
    std::fs::rename(&tmp, path)?;
    Ok(())
}
