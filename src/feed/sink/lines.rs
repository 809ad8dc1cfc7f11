//! The JSON-lines sink: one line per change row (the table's columns plus `_change_type`,
//! `_commit_version`, `_commit_timestamp`) on stdout or appended to a file.
//!
//! With a state file, the position is saved (atomically: temporary file, then rename) after
//! each commit's lines are flushed, together with the output file's length at that point. On
//! restart a file output is truncated back to that length before anything is appended, so a
//! crash between writing and saving neither repeats nor skips a commit. Stdout cannot be
//! truncated: after a crash in that window a pipe sees the last commit again, recognisable by
//! its `_commit_version`.

use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Seek, Write};
use std::path::PathBuf;

use arrow::array::{Array, StructArray};
use serde::{Deserialize, Serialize};

use super::ChangeSink;
use crate::delta::json_rows::JsonRows;
use crate::delta::snapshot::Snapshot;
use crate::error::{Error, Result};
use crate::storage::change_cursor::CommitChanges;

/// What the state file holds.
#[derive(Debug, Serialize, Deserialize)]
struct LinesState {
    table: String,
    /// The last version whose changes were completely written (none yet: only the output's
    /// length before the first commit is recorded).
    version: Option<u64>,
    /// The output file's length after that version (file outputs only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    output_len: Option<u64>,
}

enum Output<'a> {
    Stream(&'a mut (dyn Write + Send)),
    File(BufWriter<File>),
}

/// The JSON-lines sink.
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) struct LinesSink<'a> {
    out: Output<'a>,
    table: String,
    state_file: Option<PathBuf>,
    /// Rows written.
    pub rows: u64,
}

impl<'a> LinesSink<'a> {
    /// Lines to `out` (stdout, or any writer).
    #[cfg_attr(feature = "internal-api", visibility::make(pub))]
    pub(crate) fn stream(out: &'a mut (dyn Write + Send), table: &str, state_file: Option<PathBuf>) -> LinesSink<'a> {
        LinesSink { out: Output::Stream(out), table: table.to_string(), state_file, rows: 0 }
    }

    /// Lines appended to the file at `path`; with a state file, the file is first truncated to
    /// the length recorded with the last saved position.
    ///
    /// # Errors
    /// File I/O and an unreadable or foreign state file.
    pub(crate) fn file(path: &std::path::Path, table: &str, state_file: Option<PathBuf>) -> Result<LinesSink<'a>> {
        let mut file = OpenOptions::new()
            .create(true)
            .write(true)
            .truncate(false)
            .open(path)
            .map_err(|e| Error::Io(std::io::Error::new(e.kind(), format!("--output {}: {e}", path.display()))))?;
        let current = file.metadata()?.len();
        let len = match &state_file {
            Some(p) => match load_state(p, table)? {
                Some(LinesState { output_len: Some(len), .. }) => len.min(current),
                // First start: remember where this follower's lines begin.
                _ => {
                    save_state(p, &LinesState { table: table.to_string(), version: None, output_len: Some(current) })?;
                    current
                }
            },
            None => current,
        };
        file.set_len(len)?;
        file.seek(std::io::SeekFrom::Start(len))?;
        Ok(LinesSink { out: Output::File(BufWriter::new(file)), table: table.to_string(), state_file, rows: 0 })
    }

    fn writer(&mut self) -> &mut dyn Write {
        match &mut self.out {
            Output::Stream(w) => w,
            Output::File(f) => f,
        }
    }
}

fn load_state(path: &std::path::Path, table: &str) -> Result<Option<LinesState>> {
    if !path.exists() {
        return Ok(None);
    }
    let state: LinesState = serde_json::from_slice(&std::fs::read(path)?)
        .map_err(|e| Error::InvalidArgument(format!("state file {}: {e}", path.display())))?;
    if state.table != table {
        return Err(Error::InvalidArgument(format!("state file {} belongs to {}", path.display(), state.table)));
    }
    Ok(Some(state))
}

fn save_state(path: &std::path::Path, state: &LinesState) -> Result<()> {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, serde_json::to_vec(state).map_err(|e| Error::Internal(e.to_string()))?)?;
    std::fs::rename(&tmp, path)?;
    Ok(())
}

/// Writes one commit's rows as JSON lines; returns the number of rows.
///
/// # Errors
/// Output I/O.
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) fn write_lines(out: &mut dyn Write, changes: &CommitChanges) -> Result<u64> {
    let mut rows = 0;
    for batch in &changes.batches {
        let rows_array = StructArray::from(batch.clone());
        let json = JsonRows::new(&rows_array);
        let mut text = Vec::with_capacity(64 << 10);
        for i in 0..rows_array.len() {
            json.write(i, &mut text);
            text.push(b'\n');
            rows += 1;
            if text.len() >= 60 << 10 {
                out.write_all(&text)?;
                text.clear();
            }
        }
        out.write_all(&text)?;
    }
    Ok(rows)
}

/// In a consumer group, lines carry no position of their own (the trait's default slice
/// methods): the slices' positions are the group's lease records (at least once: a new holder
/// repeats what came after the last one).
impl ChangeSink for LinesSink<'_> {
    async fn position(&mut self) -> Result<Option<u64>> {
        let table = self.table.clone();
        Ok(self.state_file.as_deref().map(|p| load_state(p, &table)).transpose()?.flatten().and_then(|s| s.version))
    }

    async fn deliver(&mut self, _source: &Snapshot, changes: &CommitChanges) -> Result<()> {
        let out = self.writer();
        let rows = write_lines(out, changes)?;
        out.flush()?;
        self.rows += rows;
        let output_len = match &mut self.out {
            Output::File(f) => Some(f.get_mut().stream_position()?),
            Output::Stream(_) => None,
        };
        if let Some(path) = &self.state_file {
            save_state(path, &LinesState { table: self.table.clone(), version: Some(changes.version), output_len })?;
        }
        Ok(())
    }

    async fn mark(&mut self, source: &Snapshot, changes: &CommitChanges) -> Result<()> {
        self.deliver(source, changes).await
    }

    fn name(&self) -> &'static str {
        "lines"
    }
}
