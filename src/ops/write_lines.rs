//! `deltabus write`'s input: JSON lines read in chunks with their line numbers, and each
//! chunk decoded against the table schema; the first line that does not fit is an error
//! naming its line and column (or field).

use arrow::datatypes::SchemaRef;
use tokio::io::{AsyncBufRead, AsyncBufReadExt};

use crate::decode::json_values::{RecordRules, Verdict};
use crate::error::{Error, Result};

/// Records per decoded batch.
pub(super) const CHUNK_LINES: usize = 8192;
/// Records sampled for schema inference and merging.
pub(super) const SAMPLE_LINES: usize = 1000;

/// Reads the input in chunks of whole lines, remembering line numbers.
#[derive(Default)]
pub(super) struct LineReader {
    next_line: usize,
}

/// A run of input lines: their bytes and where each starts.
#[derive(Default)]
pub(super) struct Chunk {
    bytes: Vec<u8>,
    /// (start, end, 1-based line number) of each non-blank line.
    lines: Vec<(usize, usize, usize)>,
}

impl LineReader {
    pub(super) async fn read_chunk<R: AsyncBufRead + Unpin>(
        &mut self,
        input: &mut R,
        max_lines: usize,
    ) -> Result<Chunk> {
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
    pub(super) fn is_empty(&self) -> bool {
        self.lines.is_empty()
    }

    pub(super) fn lines(&self) -> Result<Vec<&str>> {
        self.lines
            .iter()
            .map(|(s, e, line)| {
                std::str::from_utf8(&self.bytes[*s..*e])
                    .map(str::trim)
                    .map_err(|_| Error::InvalidArgument(format!("line {line}: not valid UTF-8")))
            })
            .collect()
    }

    /// Checks every line against the column rules, respelling where a rule says so; the
    /// first value a column cannot hold exactly is an error naming its line and field.
    fn conform(&mut self, rules: &RecordRules) -> Result<()> {
        let mut respelled: Vec<(usize, Vec<u8>)> = Vec::new();
        for (i, (s, e, line)) in self.lines.iter().enumerate() {
            match rules.check(&self.bytes[*s..*e]) {
                Ok(Verdict::AsIs) => {}
                Ok(Verdict::Rewritten(bytes)) => respelled.push((i, bytes)),
                Err(why) => return Err(Error::InvalidArgument(format!("line {line}: {why}"))),
            }
        }
        if respelled.is_empty() {
            return Ok(());
        }
        let mut bytes = Vec::with_capacity(self.bytes.len());
        let mut lines = Vec::with_capacity(self.lines.len());
        let mut next = respelled.into_iter().peekable();
        for (i, (s, e, line)) in self.lines.iter().enumerate() {
            let start = bytes.len();
            match next.peek() {
                Some((j, _)) if *j == i => {
                    let (_, spelled) = next.next().unwrap_or_default();
                    bytes.extend_from_slice(&spelled);
                    bytes.push(b'\n');
                }
                _ => bytes.extend_from_slice(&self.bytes[*s..*e]),
            }
            lines.push((start, bytes.len(), *line));
        }
        self.bytes = bytes;
        self.lines = lines;
        Ok(())
    }

    /// Decodes the chunk; on failure, finds the first bad line for the message.
    pub(super) fn decode(mut self, schema: &SchemaRef, rules: &RecordRules) -> Result<arrow::array::RecordBatch> {
        self.conform(rules)?;
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

impl Chunk {
    /// Decodes the chunk into a table with variant columns; the first line that does not fit
    /// is an error naming its line and why.
    pub(super) fn decode_variants(
        self,
        decoder: &crate::decode::json::PayloadDecoder,
    ) -> Result<arrow::array::RecordBatch> {
        let records: Vec<crate::common::record::RawRecord<'_>> = self
            .lines
            .iter()
            .map(|(s, e, line)| crate::common::record::RawRecord {
                topic: "",
                partition: 0,
                offset: *line as i64,
                timestamp_ms: None,
                key: None,
                payload: Some(&self.bytes[*s..*e]),
            })
            .collect();
        let decoded = decoder.decode(&records);
        if let Some(bad) = decoded.dead_letters.iter().min_by_key(|d| d.offset) {
            return Err(Error::InvalidArgument(format!("line {}: {}", bad.offset, bad.reason)));
        }
        Ok(decoded.batch.unwrap_or_else(|| arrow::array::RecordBatch::new_empty(decoder.schema().clone())))
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
