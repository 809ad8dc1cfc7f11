//! The key index of keyed tables [sync]: key → (data file, row position), so that a keyed flush
//! finds the rows its keys already have without reading the table.
//!
//! Contract:
//! - A key is its canonical string (`decode::keyed`), hashed with XXH3-128; rows whose key has a
//!   null column are never indexed (they are plain inserts and never matched).
//! - The index is a cache of the table, never the truth. It holds entries for files; an entry is
//!   live only while its file is active in the snapshot being planned and its row is not in that
//!   file's deletion vector (the caller checks both), so removes, DVs, compactions and foreign
//!   deletes need no index update. What the index must never miss is an active file: every
//!   active file it has not seen is indexed before a lookup ([`KeyIndex::has_file`]).
//! - Each file's keys are persisted once, as an immutable sidecar in the table root
//!   ([`sidecar_path`]), written by whoever indexed the file first. [`FileKeys`] is its format:
//!   entries sorted by hash, grouped in [`BUCKETS`] buckets by the hash's top byte, a CRC-32
//!   trailer; [`FileKeys::decode`] refuses anything damaged (the caller rebuilds from the data).
//! - Memory is bounded by bucket: a bucket is resident (all its entries, sorted) or evicted
//!   (reloaded from the sidecars' sections for it). Entries of files whose sidecar is not yet
//!   persisted stay resident. [`KeyIndex::evict_to`] drops least recently used buckets until the
//!   resident size is under the budget.

use std::collections::HashMap;
use std::ops::Range;

use twox_hash::{XxHash3_128, XxHash3_64};

/// Buckets of the index (by the top byte of the key hash).
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) const BUCKETS: usize = 256;
/// Resident bytes per entry.
pub(crate) const ENTRY_BYTES: u64 = std::mem::size_of::<Entry>() as u64;
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
    if bytes.len() % SIDECAR_ENTRY != 0 {
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

/// One resident entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Entry {
    hash: KeyHash,
    file: u32,
    row: u32,
}

#[derive(Debug, Default)]
struct Bucket {
    resident: bool,
    /// Resident: every entry but `recent`, sorted; evicted: entries of unpersisted files.
    entries: Vec<Entry>,
    /// Resident: entries added since the last merge (sorted when `sorted`), merged into
    /// `entries` once they outgrow a quarter of it, so adding a file costs its own entries,
    /// not the bucket's.
    recent: Vec<Entry>,
    sorted: bool,
    last_use: u64,
}

impl Bucket {
    /// Sorts what was added since the last lookup: merged into `entries` once it outgrows a
    /// quarter of them (runs of sorted files: the stable sort merges runs instead of sorting).
    fn settle(&mut self) {
        if self.sorted {
            return;
        }
        if self.recent.len() * 4 > self.entries.len() {
            self.entries.append(&mut self.recent);
            self.entries.sort();
        } else {
            self.recent.sort();
        }
        self.sorted = true;
    }
}

#[derive(Debug)]
struct FileSlot {
    path: String,
    /// Where its sidecar keeps each bucket; `None` until the sidecar is persisted.
    layout: Option<Layout>,
}

/// The in-memory index of one table and key.
#[derive(Debug)]
pub(crate) struct KeyIndex {
    pub columns: Vec<String>,
    pub fingerprint: u64,
    files: Vec<Option<FileSlot>>,
    by_path: HashMap<String, u32>,
    buckets: Vec<Bucket>,
    tick: u64,
}

impl KeyIndex {
    /// An empty index (every bucket resident and empty).
    pub(crate) fn new(columns: &[String]) -> KeyIndex {
        let buckets = (0..BUCKETS).map(|_| Bucket { resident: true, sorted: true, ..Bucket::default() }).collect();
        KeyIndex {
            columns: columns.to_vec(),
            fingerprint: columns_fingerprint(columns),
            files: Vec::new(),
            by_path: HashMap::new(),
            buckets,
            tick: 0,
        }
    }

    pub(crate) fn has_file(&self, path: &str) -> bool {
        self.by_path.contains_key(path)
    }

    /// Files indexed.
    pub(crate) fn file_count(&self) -> usize {
        self.by_path.len()
    }

    /// The path of file `id`, while it is indexed.
    pub(crate) fn path(&self, id: u32) -> Option<&str> {
        self.files.get(id as usize).and_then(Option::as_ref).map(|f| f.path.as_str())
    }

    /// Adds a file's keys; `layout` when its sidecar is persisted. Returns its id.
    pub(crate) fn add_file(&mut self, keys: &FileKeys, layout: Option<Layout>) -> u32 {
        let id = u32::try_from(self.files.len()).unwrap_or(u32::MAX);
        let persisted = layout.is_some();
        self.files.push(Some(FileSlot { path: keys.path.clone(), layout }));
        self.by_path.insert(keys.path.clone(), id);
        for (hash, row) in &keys.entries {
            let b = &mut self.buckets[hash.bucket()];
            // An evicted bucket reloads persisted files from their sidecars.
            let e = Entry { hash: *hash, file: id, row: *row };
            if b.resident {
                b.recent.push(e);
                b.sorted = false;
            } else if !persisted {
                b.entries.push(e);
            }
        }
        id
    }

    /// Records that file `path`'s sidecar is now persisted.
    pub(crate) fn persisted(&mut self, path: &str, layout: Layout) {
        if let Some(slot) = self.by_path.get(path).and_then(|id| self.files[*id as usize].as_mut()) {
            slot.layout = Some(layout);
        }
    }

    /// Forgets every file `keep` refuses (no longer active); returns their paths.
    pub(crate) fn retain_files(&mut self, mut keep: impl FnMut(&str) -> bool) -> Vec<String> {
        let gone: Vec<(String, u32)> =
            self.by_path.iter().filter(|(p, _)| !keep(p)).map(|(p, id)| (p.clone(), *id)).collect();
        if gone.is_empty() {
            return Vec::new();
        }
        for (p, id) in &gone {
            self.by_path.remove(p);
            self.files[*id as usize] = None;
        }
        let files = &self.files;
        for b in &mut self.buckets {
            b.entries.retain(|e| files[e.file as usize].is_some());
            b.recent.retain(|e| files[e.file as usize].is_some());
        }
        gone.into_iter().map(|(p, _)| p).collect()
    }

    /// Buckets among `buckets` that must be loaded before a lookup.
    pub(crate) fn evicted(&self, buckets: impl IntoIterator<Item = usize>) -> Vec<usize> {
        let mut out: Vec<usize> = buckets.into_iter().filter(|b| !self.buckets[*b].resident).collect();
        out.sort_unstable();
        out.dedup();
        out
    }

    /// The sidecar sections that hold bucket `b`: (file path, its sidecar path, byte range).
    pub(crate) fn sections(&self, b: usize) -> Vec<(u32, String, Range<u64>)> {
        self.files
            .iter()
            .enumerate()
            .filter_map(|(id, f)| {
                let f = f.as_ref()?;
                let layout = f.layout.as_ref().filter(|l| l.has(b))?;
                Some((id as u32, sidecar_path(&f.path, self.fingerprint), layout.range(b)))
            })
            .collect()
    }

    /// Makes bucket `b` resident with the entries read from its sections (file id, entries).
    /// Sections of files forgotten meanwhile are ignored.
    pub(crate) fn load(&mut self, b: usize, sections: Vec<(u32, Vec<(KeyHash, u32)>)>) {
        let files = &self.files;
        let bucket = &mut self.buckets[b];
        if bucket.resident {
            return;
        }
        for (id, entries) in sections {
            if files.get(id as usize).is_some_and(|f| f.as_ref().is_some_and(|f| f.layout.is_some())) {
                bucket.entries.extend(entries.into_iter().map(|(hash, row)| Entry { hash, file: id, row }));
            }
        }
        // A file persisted after the eviction is both kept and in its section: once is enough.
        // (Each section is sorted: the stable sort merges the runs.)
        bucket.entries.sort();
        bucket.entries.dedup();
        bucket.resident = true;
        bucket.sorted = true;
    }

    /// Every (file id, row) the index holds for each hash (all of whose buckets are resident).
    pub(crate) fn lookup(&mut self, hashes: &[KeyHash]) -> Vec<Vec<(u32, u32)>> {
        self.tick += 1;
        let tick = self.tick;
        hashes
            .iter()
            .map(|h| {
                let b = &mut self.buckets[h.bucket()];
                debug_assert!(b.resident, "lookup in an evicted bucket");
                b.settle();
                b.last_use = tick;
                let run = |v: &[Entry]| {
                    let from = v.partition_point(|e| e.hash < *h);
                    v[from..].iter().take_while(|e| e.hash == *h).map(|e| (e.file, e.row)).collect::<Vec<_>>()
                };
                let mut found = run(&b.entries);
                found.extend(run(&b.recent));
                found
            })
            .collect()
    }

    /// Sorts every resident bucket's new entries, on up to `threads` threads (a first lookup
    /// after a large catch-up would otherwise sort bucket by bucket on one).
    pub(crate) fn settle(&mut self, threads: usize) {
        let per = BUCKETS.div_ceil(threads.max(1));
        std::thread::scope(|scope| {
            for chunk in self.buckets.chunks_mut(per) {
                scope.spawn(move || chunk.iter_mut().filter(|b| b.resident).for_each(Bucket::settle));
            }
        });
    }

    /// Bytes of entries in memory.
    pub(crate) fn resident_bytes(&self) -> u64 {
        self.buckets.iter().map(|b| (b.entries.len() + b.recent.len()) as u64).sum::<u64>() * ENTRY_BYTES
    }

    /// Evicts least recently used buckets until the resident size is at most `budget` (entries
    /// of unpersisted files stay). Returns the buckets evicted.
    pub(crate) fn evict_to(&mut self, budget: u64) -> usize {
        let mut evicted = 0;
        let mut resident = self.resident_bytes();
        let mut order: Vec<usize> = (0..BUCKETS).filter(|b| self.buckets[*b].resident).collect();
        order.sort_by_key(|b| self.buckets[*b].last_use);
        for b in order {
            if resident <= budget {
                break;
            }
            let files = &self.files;
            let bucket = &mut self.buckets[b];
            bucket.entries.append(&mut bucket.recent);
            bucket.recent.shrink_to_fit();
            let before = bucket.entries.len() as u64;
            bucket.entries.retain(|e| files[e.file as usize].as_ref().is_some_and(|f| f.layout.is_none()));
            bucket.entries.shrink_to_fit();
            bucket.resident = false;
            resident -= (before - bucket.entries.len() as u64) * ENTRY_BYTES;
            evicted += 1;
        }
        evicted
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

    #[test]
    fn lookups_find_every_row_of_a_key_and_forget_removed_files() {
        let mut ix = KeyIndex::new(&["id".to_string()]);
        let a = ix.add_file(&keys("a", &[Some("[1]"), Some("[2]")]), None);
        let b = ix.add_file(&keys("b", &[Some("[2]"), None, Some("[3]")]), None);
        let h = |k: &str| KeyHash::of(k);
        let mut got = ix.lookup(&[h("[2]"), h("[9]")]);
        got[0].sort_unstable();
        assert_eq!(got, vec![vec![(a, 1), (b, 0)], vec![]]);
        assert_eq!(ix.retain_files(|p| p != "a"), vec!["a".to_string()]);
        assert_eq!(ix.lookup(&[h("[2]"), h("[1]")]), vec![vec![(b, 0)], vec![]]);
        assert!(!ix.has_file("a") && ix.has_file("b"));
    }

    #[test]
    fn eviction_keeps_unpersisted_entries_and_reloads_the_rest() {
        let mut ix = KeyIndex::new(&["id".to_string()]);
        let all: Vec<String> = (0..2000).map(|i| format!("[{i}]")).collect();
        let persisted = keys("p", &all[..1000].iter().map(|s| Some(s.as_str())).collect::<Vec<_>>());
        let (bytes, layout) = persisted.encode();
        let p = ix.add_file(&persisted, Some(layout));
        let u = ix.add_file(&keys("u", &all[1000..].iter().map(|s| Some(s.as_str())).collect::<Vec<_>>()), None);
        assert_eq!(ix.resident_bytes(), 2000 * ENTRY_BYTES);
        assert_eq!(ix.evict_to(0), BUCKETS);
        assert_eq!(ix.resident_bytes(), 1000 * ENTRY_BYTES, "unpersisted entries stay");
        let wanted = [KeyHash::of("[5]"), KeyHash::of("[1500]")];
        for b in ix.evicted(wanted.iter().map(|h| h.bucket())) {
            let sections = ix
                .sections(b)
                .into_iter()
                .map(|(id, _, r)| (id, decode_section(&bytes[r.start as usize..r.end as usize]).unwrap()))
                .collect();
            ix.load(b, sections);
        }
        assert_eq!(ix.lookup(&wanted), vec![vec![(p, 5)], vec![(u, 500)]]);
    }

    /// Random adds, forgets, evictions and reloads against a plain model: a lookup always
    /// answers exactly the (file, row) pairs of the files still indexed.
    #[test]
    fn random_histories_answer_like_a_model() {
        let mut seed = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for _round in 0..20 {
            let mut ix = KeyIndex::new(&["id".to_string()]);
            let mut model: Vec<(String, Vec<String>)> = Vec::new();
            let mut sidecars: HashMap<String, Vec<u8>> = HashMap::new();
            for step in 0..60 {
                match next() % 5 {
                    0 | 1 => {
                        let path = format!("f{step}");
                        let keys: Vec<String> = (0..next() % 40).map(|_| format!("[{}]", next() % 200)).collect();
                        let fk = keys_of(&path, &keys);
                        let layout = (next() % 4 != 0).then(|| {
                            let (bytes, layout) = fk.encode();
                            sidecars.insert(path.clone(), bytes);
                            layout
                        });
                        ix.add_file(&fk, layout);
                        model.push((path, keys));
                    }
                    2 => {
                        let drop = (next() % 3 == 0).then(|| model.first().map(|m| m.0.clone())).flatten();
                        ix.retain_files(|p| Some(p.to_string()) != drop);
                        model.retain(|m| Some(&m.0) != drop.as_ref());
                    }
                    _ => {
                        ix.evict_to(next() % 2000);
                    }
                }
                let wanted: Vec<KeyHash> = (0..10).map(|_| KeyHash::of(&format!("[{}]", next() % 200))).collect();
                for b in ix.evicted(wanted.iter().map(|h| h.bucket())) {
                    let sections = ix
                        .sections(b)
                        .into_iter()
                        .map(|(id, _, r)| {
                            let bytes = &sidecars[ix.path(id).unwrap()];
                            (id, decode_section(&bytes[r.start as usize..r.end as usize]).unwrap())
                        })
                        .collect();
                    ix.load(b, sections);
                }
                for (h, got) in wanted.iter().zip(ix.lookup(&wanted)) {
                    let mut got: Vec<(String, u32)> =
                        got.into_iter().map(|(f, r)| (ix.path(f).unwrap().to_string(), r)).collect();
                    got.sort();
                    let mut want: Vec<(String, u32)> = model
                        .iter()
                        .flat_map(|(p, ks)| {
                            ks.iter().enumerate().filter(|(_, k)| KeyHash::of(k) == *h).map(|(r, _)| (p.clone(), r as u32))
                        })
                        .collect();
                    want.sort();
                    assert_eq!(got, want);
                }
            }
        }
    }

    fn keys_of(path: &str, keys: &[String]) -> FileKeys {
        FileKeys::from_keys(path, 7, keys.iter().map(|k| Some(k.as_str()))).unwrap()
    }
}
