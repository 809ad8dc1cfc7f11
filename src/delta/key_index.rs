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

#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) use super::key_sidecar::{decode_section, FileKeys, KeyHash, Layout, BUCKETS};
use super::key_sidecar::{columns_fingerprint, sidecar_path};

/// Resident bytes per entry.
pub(crate) const ENTRY_BYTES: u64 = std::mem::size_of::<Entry>() as u64;
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
