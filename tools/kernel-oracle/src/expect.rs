//! `expect TABLE OUT_DIR`: the reference answers for one corpus table, as the files the
//! conformance tests compare against.
//!
//! - `meta.json`: `latest`, the status of each version from the oldest the log can rebuild
//!   (`ok`; `files-only: <why>` when the rows could not be read or are too large to keep;
//!   `unreadable` when no snapshot could be built), `cdf` (with `cdf_error` when the feed was refused), or `error: true` when the
//!   reference refuses the table altogether (`error.txt` then holds its message);
//! - `v<N>.files.json` and `v<N>.rows.jsonl` per version, `changes.jsonl` for the feed.
//!
//! Paths inside messages are written relative to the corpus (`<corpus>/table/...`) so the
//! answers do not depend on where the corpus was unpacked.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

use serde_json::{json, Map, Value};

use crate::read::Reader;

/// Rows of one version above this many bytes of JSON are not kept ("rows too large").
const MAX_ROWS_BYTES: usize = 4 << 20;

/// A writer that fails once more than `left` bytes were written to it.
struct Capped<W: Write> {
    inner: W,
    left: usize,
}

impl<W: Write> Write for Capped<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if buf.len() > self.left {
            self.left = 0;
            return Err(std::io::Error::other("rows too large"));
        }
        self.left -= buf.len();
        self.inner.write(buf)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// One line, at most 200 characters, with the corpus folder's absolute path replaced.
fn short(message: &str, corpus: &str) -> String {
    let line = message.lines().next().unwrap_or("").replace(corpus, "<corpus>");
    line.chars().take(200).collect()
}

fn write_file(path: &Path, bytes: &[u8]) -> Result<(), String> {
    std::fs::write(path, bytes).map_err(|e| format!("{}: {e}", path.display()))
}

pub fn write_answers(table: &Path, out: &Path) -> Result<(), String> {
    std::fs::create_dir_all(out).map_err(|e| format!("{}: {e}", out.display()))?;
    let dir = table.canonicalize().map_err(|e| format!("{}: {e}", table.display()))?;
    let corpus = dir.parent().map(|p| p.to_string_lossy().into_owned()).unwrap_or_default();
    let reader = Reader::open(&dir)?;
    let mut meta = Map::new();
    let latest = match reader.snapshot(None) {
        Ok(snapshot) => snapshot.version(),
        Err(e) => {
            write_file(&out.join("error.txt"), format!("error: {}\n", short(&e, &corpus)).as_bytes())?;
            meta.insert("error".into(), json!(true));
            meta.insert("versions".into(), json!({}));
            return write_file(&out.join("meta.json"), pretty(&Value::Object(meta)).as_bytes());
        }
    };
    let mut versions = BTreeMap::new();
    // Versions before the oldest one the log can rebuild (log cleanup removed them) are not
    // part of the table any more; later ones that fail are `unreadable`.
    let mut started = false;
    for version in 0..=latest {
        let listing = match reader.files(Some(version)) {
            Ok(listing) => listing,
            Err(_) if !started => continue,
            Err(_) => {
                versions.insert(version.to_string(), "unreadable".to_string());
                continue;
            }
        };
        started = true;
        write_file(&out.join(format!("v{version}.files.json")), listing.to_string().as_bytes())?;
        let rows_path = out.join(format!("v{version}.rows.jsonl"));
        let mut rows = Capped { inner: Vec::new(), left: MAX_ROWS_BYTES };
        let status = match reader.write_rows(Some(version), &mut rows) {
            Ok(_) => {
                write_file(&rows_path, &rows.inner)?;
                "ok".to_string()
            }
            Err(_) if rows.left == 0 => "files-only: rows too large".to_string(),
            Err(e) => format!("files-only: {}", short(&format!("error: {e}"), &corpus)),
        };
        versions.insert(version.to_string(), status);
    }
    let mut changes = Vec::new();
    match reader.write_changes(0, Some(latest), &mut changes) {
        Ok(_) => {
            write_file(&out.join("changes.jsonl"), &changes)?;
            meta.insert("cdf".into(), json!(true));
        }
        Err(e) => {
            meta.insert("cdf".into(), json!(false));
            meta.insert("cdf_error".into(), json!(short(&format!("error: {e}"), &corpus)));
        }
    }
    meta.insert("latest".into(), json!(latest));
    meta.insert("versions".into(), json!(versions));
    write_file(&out.join("meta.json"), pretty(&Value::Object(meta)).as_bytes())
}

fn pretty(value: &Value) -> String {
    let mut text = serde_json::to_string_pretty(value).unwrap_or_default();
    text.push('\n');
    text
}
