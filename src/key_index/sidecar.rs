//! The key index's sidecar format [sync]: one immutable file per data file holding that
//! file's key hashes and row positions, and the names they go by.
//!
//! - A key's hash is XXH3-128 of its canonical string; the top byte picks one of [`BUCKETS`].
//! - A sidecar ([`FileKeys`]) holds the file's path, the key's fingerprint, its row count, a
//!   bucket table and the entries sorted by hash, and a CRC-32 trailer. [`FileKeys::decode`]
//!   refuses anything damaged with a one-line reason, never a panic; [`Layout`] locates one
//!   bucket's entries for a range read ([`decode_section`]).
//! - Sidecars live under [`INDEX_DIR`], named by a tag of their data file's path and the key's
//!   fingerprint ([`sidecar_path`]), so no two writers ever write different bytes to one name.

use std::ops::Range;

use twox_hash::{XxHash3_128, XxHash3_64};

/// Buckets of the index (by the top byte of the key hash).
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) const BUCKETS: usize = 256;
/// Where the sidecars live, relative to the table root.
pub(crate) const INDEX_DIR: &str = "_deltabus/key_index";

const MAGIC: &[u8; 4] = b"DBKI";
const FORMAT: u8 = 1;
/// Bytes per entry in a sidecar: hash (16) and row (4).
const SIDECAR_ENTRY: usize = 20;

/// A key's hash.
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct KeyHash(pub u64, pub u64);

impl KeyHash {
    /// The hash of a canonical key.
    pub(crate) fn of(key: &str) -> KeyHash {
        let h = XxHash3_128::oneshot(key.as_bytes());
        KeyHash((h >> 64) as u64, h as u64)
    }

    pub(crate) fn bucket(self) -> usize {
        (self.0 >> 56) as usize
    }
}

/// The fingerprint of a key column list (sidecars of another key are not used).
pub(crate) fn columns_fingerprint(columns: &[String]) -> u64 {
    XxHash3_64::oneshot(serde_json::to_string(columns).unwrap_or_default().as_bytes())
}

/// The fingerprint of the key `columns` of a table of `schema`: the column list's, and for a
/// key with a column that is neither an integer nor a string also the key spelling's version
/// (such keys are spelled to survive type widening, [`crate::delta::row_keys::key_value`];
/// sidecars hashed from the earlier spelling are rebuilt, never matched).
pub(crate) fn key_fingerprint(columns: &[String], schema: Option<&crate::delta::schema::StructType>) -> u64 {
    if schema.is_none_or(|s| crate::delta::row_keys::printed_as_rows(columns, s)) {
        return columns_fingerprint(columns);
    }
    let mut spelled = columns.to_vec();
    spelled.push("\u{0}keys widen".into());
    columns_fingerprint(&spelled)
}

/// The sidecar of data file `path` (as the log spells it) for the key with fingerprint
/// `columns`.
pub(crate) fn sidecar_path(path: &str, columns: u64) -> String {
    format!("{INDEX_DIR}/{}-{columns:016x}.keys", path_tag(path))
}

/// The part of a sidecar's name that names its data file.
pub(crate) fn path_tag(path: &str) -> String {
    format!("{:032x}", XxHash3_128::oneshot(path.as_bytes()))
}

/// The data-file tag of a sidecar at `rel` (relative to the root); `None` for other files.
pub(crate) fn sidecar_tag(rel: &str) -> Option<&str> {
    let name = rel.strip_prefix(INDEX_DIR)?.strip_prefix('/')?.strip_suffix(".keys")?;
    name.split_once('-').map(|(tag, _)| tag).filter(|t| t.len() == 32)
}

/// One data file's keys: the content of its sidecar.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) struct FileKeys {
    pub path: String,
    pub columns: u64,
    /// Rows in the file (keyed or not).
    pub rows: u64,
    /// (hash, row), sorted.
    pub entries: Vec<(KeyHash, u32)>,
}

/// Where a decoded sidecar keeps each bucket's entries (for reloading one bucket).
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) struct Layout {
    entries_at: u64,
    starts: Vec<u32>,
}

impl Layout {
    /// The byte range of bucket `b`'s entries in the sidecar.
    #[cfg_attr(feature = "internal-api", visibility::make(pub))]
    pub(crate) fn range(&self, b: usize) -> Range<u64> {
        let at = |i: usize| self.entries_at + u64::from(self.starts[i]) * SIDECAR_ENTRY as u64;
        at(b)..at(b + 1)
    }

    /// Whether bucket `b` has entries in this file.
    pub(crate) fn has(&self, b: usize) -> bool {
        self.starts[b] < self.starts[b + 1]
    }
}

impl FileKeys {
    /// The keys of a file's rows, in row order (`None` for a row without a full key).
    ///
    /// # Errors
    /// A file of more than `u32::MAX` rows.
    pub(crate) fn from_keys<'a>(
        path: &str,
        columns: u64,
        keys: impl IntoIterator<Item = Option<&'a str>>,
    ) -> Result<FileKeys, String> {
        let mut entries = Vec::new();
        let mut rows = 0u64;
        for key in keys {
            let row = u32::try_from(rows).map_err(|_| format!("{path}: too many rows for the key index"))?;
            if let Some(k) = key {
                entries.push((KeyHash::of(k), row));
            }
            rows += 1;
        }
        entries.sort_unstable();
        Ok(FileKeys { path: path.to_string(), columns, rows, entries })
    }

    fn starts(&self) -> Vec<u32> {
        let mut starts = vec![0u32; BUCKETS + 1];
        for (h, _) in &self.entries {
            starts[h.bucket() + 1] += 1;
        }
        for b in 0..BUCKETS {
            starts[b + 1] += starts[b];
        }
        starts
    }

    /// The sidecar bytes and their layout.
    #[cfg_attr(feature = "internal-api", visibility::make(pub))]
    pub(crate) fn encode(&self) -> (Vec<u8>, Layout) {
        let starts = self.starts();
        let mut out = Vec::with_capacity(30 + self.path.len() + 4 * starts.len() + SIDECAR_ENTRY * self.entries.len());
        out.extend_from_slice(MAGIC);
        out.push(FORMAT);
        out.extend_from_slice(&self.columns.to_le_bytes());
        out.extend_from_slice(&self.rows.to_le_bytes());
        out.extend_from_slice(&(self.path.len() as u32).to_le_bytes());
        out.extend_from_slice(self.path.as_bytes());
        for s in &starts {
            out.extend_from_slice(&s.to_le_bytes());
        }
        let entries_at = out.len() as u64;
        for (h, row) in &self.entries {
            out.extend_from_slice(&h.0.to_le_bytes());
            out.extend_from_slice(&h.1.to_le_bytes());
            out.extend_from_slice(&row.to_le_bytes());
        }
        out.extend_from_slice(&crc32fast::hash(&out).to_le_bytes());
        (out, Layout { entries_at, starts })
    }

    /// Decodes a sidecar.
    ///
    /// # Errors
    /// A one-line reason for anything that is not a whole, undamaged sidecar.
    #[cfg_attr(feature = "internal-api", visibility::make(pub))]
    pub(crate) fn decode(bytes: &[u8]) -> Result<(FileKeys, Layout), String> {
        let (body, crc) = bytes.split_at_checked(bytes.len().saturating_sub(4)).ok_or("empty")?;
        let crc = u32::from_le_bytes(crc.try_into().map_err(|_| "too short")?);
        if crc32fast::hash(body) != crc {
            return Err("checksum mismatch".into());
        }
        let mut r = Reader(body);
        if r.take(4)? != MAGIC || r.take(1)? != [FORMAT] {
            return Err("not a key index file of a known format".into());
        }
        let columns = r.u64()?;
        let rows = r.u64()?;
        let len = r.u32()? as usize;
        let path = std::str::from_utf8(r.take(len)?).map_err(|_| "path is not UTF-8")?.to_string();
        let starts = (0..=BUCKETS).map(|_| r.u32()).collect::<Result<Vec<_>, _>>()?;
        let entries_at = (body.len() - r.0.len()) as u64;
        let count = r.0.len() / SIDECAR_ENTRY;
        if r.0.len() % SIDECAR_ENTRY != 0 || starts[0] != 0 || starts[BUCKETS] as usize != count {
            return Err("entry count does not match its header".into());
        }
        let mut entries = Vec::with_capacity(count);
        for _ in 0..count {
            let h = KeyHash(r.u64()?, r.u64()?);
            let row = r.u32()?;
            if u64::from(row) >= rows || entries.last().is_some_and(|(p, _)| *p > h) {
                return Err("entries out of order or past the file's rows".into());
            }
            entries.push((h, row));
        }
        let keys = FileKeys { path, columns, rows, entries };
        if keys.starts() != starts {
            return Err("bucket table does not match the entries".into());
        }
        Ok((keys, Layout { entries_at, starts }))
    }
}

/// Decodes the entries of one bucket section (see [`Layout::range`]).
///
/// # Errors
/// A section whose length is not whole entries.
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) fn decode_section(bytes: &[u8]) -> Result<Vec<(KeyHash, u32)>, String> {
    if !bytes.len().is_multiple_of(SIDECAR_ENTRY) {
        return Err("a bucket section of partial entries".into());
    }
    let mut r = Reader(bytes);
    (0..bytes.len() / SIDECAR_ENTRY).map(|_| Ok((KeyHash(r.u64()?, r.u64()?), r.u32()?))).collect()
}

struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        let (head, rest) = self.0.split_at_checked(n).ok_or("truncated")?;
        self.0 = rest;
        Ok(head)
    }
    fn u32(&mut self) -> Result<u32, String> {
        Ok(u32::from_le_bytes(self.take(4)?.try_into().map_err(|_| "truncated")?))
    }
    fn u64(&mut self) -> Result<u64, String> {
        Ok(u64::from_le_bytes(self.take(8)?.try_into().map_err(|_| "truncated")?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(path: &str, ks: &[Option<&str>]) -> FileKeys {
        FileKeys::from_keys(path, 7, ks.iter().copied()).unwrap()
    }

    #[test]
    fn sidecars_round_trip_and_refuse_damage() {
        let k = keys("part=ü/a.parquet", &[Some("[1]"), None, Some("[\"ключ\"]"), Some("[3]")]);
        assert_eq!((k.rows, k.entries.len()), (4, 3));
        let (bytes, layout) = k.encode();
        let (back, l2) = FileKeys::decode(&bytes).unwrap();
        assert_eq!((back, l2.clone()), (k.clone(), layout));
        for (h, row) in &k.entries {
            let r = l2.range(h.bucket());
            let section = decode_section(&bytes[r.start as usize..r.end as usize]).unwrap();
            assert!(section.contains(&(*h, *row)));
        }
        for cut in [0, 1, 5, bytes.len() / 2, bytes.len() - 1] {
            assert!(FileKeys::decode(&bytes[..cut]).is_err(), "cut at {cut}");
        }
        for i in (0..bytes.len()).step_by(7) {
            let mut bad = bytes.clone();
            bad[i] ^= 0x40;
            assert!(FileKeys::decode(&bad).is_err(), "flip at {i}");
        }
    }

    #[test]
    fn sidecar_names_carry_their_file_tag() {
        let p = sidecar_path("x=ü/part-1.parquet", 0xab);
        assert_eq!(sidecar_tag(&p), Some(path_tag("x=ü/part-1.parquet").as_str()));
        assert_eq!(sidecar_tag("_deltabus/followers/a.json"), None);
        assert_eq!(sidecar_tag("_deltabus/key_index/zz.keys"), None);
    }
}
