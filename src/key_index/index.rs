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

use super::sidecar::sidecar_path;
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) use super::sidecar::{FileKeys, KeyHash, Layout, BUCKETS};

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
    /// Where each run of `entries` sharing the hash bits below the bucket byte starts (see
    /// [`sort_entries`]), so that a lookup searches a few dozen entries, not the bucket; empty
    /// for small or unsorted buckets.
    dir: Vec<u32>,
    /// Resident: entries added since the last merge (sorted when `sorted`), merged into
    /// `entries` once they outgrow a quarter of it, so adding a file costs its own entries,
    /// not the bucket's.
    recent: Vec<Entry>,
    sorted: bool,
    last_use: u64,
}

impl Bucket {
    /// Sorts what was added since the last lookup: merged into `entries` once it outgrows a
    /// quarter of them. `scratch` is reused memory for the sort.
    fn settle(&mut self, scratch: &mut Vec<Entry>) {
        if self.sorted {
            return;
        }
        if self.recent.len() * 4 > self.entries.len() {
            self.entries.append(&mut self.recent);
            self.dir = sort_entries(&mut self.entries, scratch);
        } else {
            sort_entries(&mut self.recent, scratch);
        }
        self.sorted = true;
    }

    /// The entries of `entries` whose hash is `h`.
    fn find(&self, h: KeyHash) -> &[Entry] {
        let (base, run) = match self.dir.get(sub_bucket(h)..sub_bucket(h) + 2) {
            Some(&[from, to]) => (from as usize, &self.entries[from as usize..to as usize]),
            _ => (0, &self.entries[..]),
        };
        let from = run.partition_point(|e| e.hash < h);
        let n = run[from..].iter().take_while(|e| e.hash == h).count();
        &self.entries[base + from..base + from + n]
    }
}

/// Bits of the hash below the bucket byte that split a bucket for sorting and lookups.
const SUB_BITS: u32 = 12;
/// Buckets smaller than this are sorted and searched whole.
const SMALL: usize = 1 << 13;

fn sub_bucket(h: KeyHash) -> usize {
    ((h.0 >> (56 - SUB_BITS)) & ((1 << SUB_BITS) - 1)) as usize
}

/// Sorts a bucket's entries and returns their directory (empty for a small bucket). Hashes
/// are uniform, so one counting pass on the bits below the bucket byte spreads them into
/// runs small enough to sort in cache: linear in practice, where a comparison sort of a
/// bucket loaded from many files' sorted sections is not. `scratch` is memory to reuse (it
/// ends up holding the old allocation).
fn sort_entries(v: &mut Vec<Entry>, scratch: &mut Vec<Entry>) -> Vec<u32> {
    if v.len() < SMALL {
        v.sort_unstable();
        return Vec::new();
    }
    let starts = directory(v);
    let mut next = starts.clone();
    scratch.clear();
    scratch.resize(v.len(), Entry { hash: KeyHash(0, 0), file: 0, row: 0 });
    for e in v.iter() {
        let at = &mut next[sub_bucket(e.hash)];
        scratch[*at as usize] = *e;
        *at += 1;
    }
    for w in starts.windows(2) {
        scratch[w[0] as usize..w[1] as usize].sort_unstable();
    }
    std::mem::swap(v, scratch);
    starts
}

/// The directory of sorted entries (as [`sort_entries`] returns it); for unsorted ones, where
/// each run would start once sorted.
fn directory(v: &[Entry]) -> Vec<u32> {
    if v.len() < SMALL {
        return Vec::new();
    }
    let mut starts = vec![0u32; (1 << SUB_BITS) + 1];
    for e in v {
        starts[sub_bucket(e.hash) + 1] += 1;
    }
    for i in 0..1 << SUB_BITS {
        starts[i + 1] += starts[i];
    }
    starts
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
    /// An empty index (every bucket resident and empty) of the key `columns` whose sidecars
    /// carry `fingerprint` ([`super::sidecar::key_fingerprint`]).
    pub(crate) fn new(columns: &[String], fingerprint: u64) -> KeyIndex {
        let buckets = (0..BUCKETS).map(|_| Bucket { resident: true, sorted: true, ..Bucket::default() }).collect();
        KeyIndex {
            columns: columns.to_vec(),
            fingerprint,
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
        // Entries are sorted by hash, so each bucket's are one run.
        for run in keys.entries.chunk_by(|a, b| a.0.bucket() == b.0.bucket()) {
            let b = &mut self.buckets[run[0].0.bucket()];
            let entries = run.iter().map(|(hash, row)| Entry { hash: *hash, file: id, row: *row });
            // An evicted bucket reloads persisted files from their sidecars.
            if b.resident {
                b.recent.extend(entries);
                b.sorted = false;
            } else if !persisted {
                b.entries.extend(entries);
            }
        }
        id
    }

    /// Makes room for about `entries` more entries spread over the resident buckets (a first
    /// catch-up over a large table then grows no bucket step by step).
    pub(crate) fn reserve(&mut self, entries: u64) {
        let per = usize::try_from(entries / BUCKETS as u64 + entries / BUCKETS as u64 / 16 + 16).unwrap_or(0);
        for b in self.buckets.iter_mut().filter(|b| b.resident) {
            b.recent.reserve(per);
        }
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
            if b.resident {
                b.dir = directory(&b.entries);
            }
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
        sort_entries(&mut bucket.entries, &mut Vec::new());
        bucket.entries.dedup();
        bucket.dir = directory(&bucket.entries);
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
                b.settle(&mut Vec::new());
                b.last_use = tick;
                let from = b.recent.partition_point(|e| e.hash < *h);
                let recent = b.recent[from..].iter().take_while(|e| e.hash == *h);
                b.find(*h).iter().chain(recent).map(|e| (e.file, e.row)).collect()
            })
            .collect()
    }

    /// Sorts every resident bucket's new entries, on up to `threads` threads (a first lookup
    /// after a large catch-up would otherwise sort bucket by bucket on one).
    pub(crate) fn settle(&mut self, threads: usize) {
        let per = BUCKETS.div_ceil(threads.max(1));
        std::thread::scope(|scope| {
            for chunk in self.buckets.chunks_mut(per) {
                scope.spawn(move || {
                    let mut scratch = Vec::new();
                    chunk.iter_mut().filter(|b| b.resident).for_each(|b| b.settle(&mut scratch));
                });
            }
        });
    }

    /// Bytes of entries in memory.
    pub(crate) fn resident_bytes(&self) -> u64 {
        self.buckets
            .iter()
            .map(|b| (b.entries.len() + b.recent.len()) as u64 * ENTRY_BYTES + 4 * b.dir.len() as u64)
            .sum()
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
            resident -= (before - bucket.entries.len() as u64) * ENTRY_BYTES + 4 * bucket.dir.len() as u64;
            bucket.dir = Vec::new();
            evicted += 1;
        }
        evicted
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key_index::sidecar::decode_section;

    fn keys(path: &str, ks: &[Option<&str>]) -> FileKeys {
        FileKeys::from_keys(path, 7, ks.iter().copied()).unwrap()
    }

    #[test]
    fn lookups_find_every_row_of_a_key_and_forget_removed_files() {
        let mut ix =
            KeyIndex::new(&["id".to_string()], crate::key_index::sidecar::columns_fingerprint(&["id".to_string()]));
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
        let mut ix =
            KeyIndex::new(&["id".to_string()], crate::key_index::sidecar::columns_fingerprint(&["id".to_string()]));
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
        let mut next = crate::delta::test_rng::xorshift(0x9E37_79B9_7F4A_7C15u64);
        for _round in 0..20 {
            let mut ix =
                KeyIndex::new(&["id".to_string()], crate::key_index::sidecar::columns_fingerprint(&["id".to_string()]));
            let mut model: Vec<(String, Vec<String>)> = Vec::new();
            let mut sidecars: HashMap<String, Vec<u8>> = HashMap::new();
            for step in 0..60 {
                match next() % 5 {
                    0 | 1 => {
                        let path = format!("f{step}");
                        let keys: Vec<String> = (0..next() % 40).map(|_| format!("[{}]", next() % 200)).collect();
                        let fk = keys_of(&path, &keys);
                        let layout = (!next().is_multiple_of(4)).then(|| {
                            let (bytes, layout) = fk.encode();
                            sidecars.insert(path.clone(), bytes);
                            layout
                        });
                        ix.add_file(&fk, layout);
                        model.push((path, keys));
                    }
                    2 => {
                        let drop = next().is_multiple_of(3).then(|| model.first().map(|m| m.0.clone())).flatten();
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
                            ks.iter()
                                .enumerate()
                                .filter(|(_, k)| KeyHash::of(k) == *h)
                                .map(|(r, _)| (p.clone(), r as u32))
                        })
                        .collect();
                    want.sort();
                    assert_eq!(got, want);
                }
            }
        }
    }

    /// The counting sort agrees with a comparison sort, duplicates and skewed runs included.
    #[test]
    fn bucket_sort_matches_a_comparison_sort() {
        let mut next = crate::delta::test_rng::xorshift(0x2545_F491_4F6C_DD1Du64);
        for len in [0usize, 1, 100, 8191, 8192, 50_000] {
            let mut v: Vec<Entry> = (0..len)
                .map(|i| {
                    // A few hashes repeat (rows of one key in several files), some cluster.
                    let hi = if i % 7 == 0 { 0x00ab_cdef_0000_0000 } else { next() >> 8 };
                    Entry { hash: KeyHash(hi, next() % 50), file: (next() % 5) as u32, row: (next() % 3) as u32 }
                })
                .collect();
            let mut want = v.clone();
            want.sort();
            let dir = sort_entries(&mut v, &mut Vec::new());
            assert_eq!(v, want, "{len} entries");
            assert_eq!(dir, directory(&v), "{len} entries");
            // Every entry is found through the directory, with every entry of its hash.
            let b = Bucket { resident: true, entries: v.clone(), dir, sorted: true, ..Bucket::default() };
            for e in v.iter().step_by(97) {
                let found = b.find(e.hash);
                assert!(found.contains(e) && found.iter().all(|f| f.hash == e.hash));
                assert_eq!(found.len(), v.iter().filter(|f| f.hash == e.hash).count());
            }
        }
    }

    fn keys_of(path: &str, keys: &[String]) -> FileKeys {
        FileKeys::from_keys(path, 7, keys.iter().map(|k| Some(k.as_str()))).unwrap()
    }
}
