//! The key index's storage shell: catching the in-memory index up with a snapshot, loading
//! evicted buckets, and answering where a flush's keys live.
//!
//! Contract:
//! - One index per open [`Table`] handle (shared by its clones: a pipeline's flushes, a
//!   mirror's commits), for one key column list; another key list starts a new index.
//! - Before every lookup the index is caught up with the snapshot being planned: files no
//!   longer active are forgotten (their sidecars deleted, best effort) and every active file
//!   it has not seen is indexed, whoever wrote it — from its sidecar when one is there and
//!   whole, else from the file's key columns (counted as a rebuild; the sidecar is then
//!   written). So a lost index, a kill between a commit and a sidecar write, a foreign writer
//!   or a cleaned log all end in the same place: the index of exactly the active files.
//! - A store fault while reading a sidecar or a data file fails the lookup (the flush plans
//!   again); a missing or damaged sidecar is rebuilt. A sidecar write that fails leaves the
//!   file's entries pinned in memory and is retried by the next catch-up.
//! - Entries are filtered by the caller against the snapshot (active files, deletion vectors):
//!   see `key_index::index`.

use std::collections::HashMap;
use std::sync::Arc;

use futures::StreamExt;
use object_store::ObjectStoreExt;

use super::location::Table;
use crate::delta::actions::Add;
use crate::delta::row_keys::keys_of_batch;
use crate::delta::scan::RowFilter;
use crate::delta::snapshot::Snapshot;
use crate::error::{Error, Result};
use crate::key_index::index::KeyIndex;
use crate::key_index::sidecar::{decode_section, key_fingerprint, sidecar_path, FileKeys, KeyHash, Layout};

/// Files indexed (or bucket sections read) at once: enough to hide an object store's latency,
/// few enough that the files' keys in flight stay small beside the index (about 44 bytes a key
/// each while decoded).
const PARALLEL: usize = 4;

/// What an index did, cumulative over its life.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) struct IndexStats {
    /// Files indexed from their data (no sidecar, or a damaged one: a lost index, another
    /// writer's files, a sidecar write that failed): the rebuild count.
    pub files_from_data: u64,
    /// Files indexed from their sidecar.
    pub files_from_sidecars: u64,
    pub buckets_loaded: u64,
    pub buckets_evicted: u64,
    /// Files and entry bytes in memory after the last lookup.
    pub files: u64,
    pub resident_bytes: u64,
}

/// The index state a [`Table`] handle carries.
#[derive(Debug, Default)]
pub(crate) struct IndexState {
    index: Option<KeyIndex>,
    /// Sidecars not yet written: path → (bytes, layout).
    pending: HashMap<String, (bytes::Bytes, Layout)>,
    stats: IndexStats,
}

/// Shared by a table handle's clones.
pub(crate) type SharedIndex = Arc<tokio::sync::Mutex<IndexState>>;

/// Where a flush's keys live: for each active file holding some, (row, index into `keys`).
pub(crate) type Located<'s> = Vec<(&'s Add, Vec<(u64, usize)>)>;

impl TableKeys<'_> {
    /// The rows the index holds for each of `keys` (canonical keys) among `snapshot`'s active
    /// files, deletion vectors not applied. `budget` bounds the index's resident bytes.
    ///
    /// # Errors
    /// Storage and data errors while catching up (nothing is answered from a partial index).
    pub(crate) async fn locate<'s>(
        &self,
        snapshot: &'s Snapshot,
        columns: &[String],
        budget: u64,
        keys: &[&str],
    ) -> Result<(Located<'s>, IndexStats)> {
        let mut state = self.key_index.lock().await;
        let fingerprint = key_fingerprint(columns, Some(&snapshot.schema));
        if state.index.as_ref().is_none_or(|i| i.columns != columns || i.fingerprint != fingerprint) {
            state.index = Some(KeyIndex::new(columns, fingerprint));
            state.pending.clear();
        }
        let active: HashMap<&str, &'s Add> = snapshot.files().into_iter().map(|a| (a.path.as_str(), a)).collect();
        let hashes: Vec<KeyHash> = keys.iter().map(|k| KeyHash::of(k)).collect();
        let mut by_bucket: std::collections::BTreeMap<usize, Vec<usize>> = std::collections::BTreeMap::new();
        for (i, h) in hashes.iter().enumerate() {
            by_bucket.entry(h.bucket()).or_default().push(i);
        }
        // A sidecar gone between catch-up and load (another writer forgot its file) is rebuilt.
        let mut attempts = 0;
        let found = loop {
            let started = std::time::Instant::now();
            self.catch_up(&mut state, snapshot, &active, budget).await?;
            let caught_up = started.elapsed();
            if let Some(ix) = state.index.as_mut() {
                ix.settle(std::thread::available_parallelism().map_or(2, |n| n.get()));
            }
            let settled = started.elapsed();
            let found = self.lookup_by_bucket(&mut state, &hashes, &by_bucket, budget).await;
            tracing::debug!(
                keys = hashes.len(),
                catch_up_ms = caught_up.as_millis() as u64,
                settle_ms = (settled - caught_up).as_millis() as u64,
                lookup_ms = (started.elapsed() - settled).as_millis() as u64,
                "key_index.located"
            );
            match found {
                Ok(found) => break found,
                Err(Miss::Fault(e)) => return Err(e),
                Err(Miss::Gone(id)) => {
                    let ix = state.index.as_mut().ok_or_else(|| Error::Internal("no key index".into()))?;
                    let path = ix.path(id).unwrap_or_default().to_string();
                    attempts += 1;
                    if attempts > crate::common::retry::SIDECAR_REBUILDS {
                        return Err(Error::Internal(format!("the key index sidecar of {path} keeps vanishing")));
                    }
                    tracing::info!(file = %path, "key_index.sidecar_gone: indexing the file again");
                    ix.retain_files(|p| p != path);
                }
            }
        };
        let state = &mut *state;
        let ix = state.index.as_mut().ok_or_else(|| Error::Internal("no key index".into()))?;
        let mut by_file: HashMap<u32, Vec<(u64, usize)>> = HashMap::new();
        for (k, rows) in found.into_iter().enumerate() {
            for (file, row) in rows {
                by_file.entry(file).or_default().push((u64::from(row), k));
            }
        }
        let mut located: Located<'s> = Vec::with_capacity(by_file.len());
        for (file, rows) in by_file {
            let path = ix.path(file).ok_or_else(|| Error::Internal("a key index entry without its file".into()))?;
            let add = active.get(path).ok_or_else(|| Error::Internal(format!("key index holds inactive {path}")))?;
            located.push((add, rows));
        }
        located.sort_by(|a, b| a.0.path.cmp(&b.0.path));
        state.stats.files = ix.file_count() as u64;
        state.stats.resident_bytes =
            ix.resident_bytes() + state.pending.values().map(|(b, _)| b.len() as u64).sum::<u64>();
        Ok((located, state.stats))
    }

    /// Forgets inactive files and indexes every active file not yet indexed.
    /// Buckets are filled as files come in and evicted past `budget`, so a first catch-up over
    /// a large table holds at most the budget (and the files being read).
    async fn catch_up(
        &self,
        state: &mut IndexState,
        snapshot: &Snapshot,
        active: &HashMap<&str, &Add>,
        budget: u64,
    ) -> Result<()> {
        let ix = state.index.as_mut().ok_or_else(|| Error::Internal("no key index".into()))?;
        let fingerprint = ix.fingerprint;
        let gone = ix.retain_files(|p| active.contains_key(p));
        let gone_sidecars: Vec<String> = gone.iter().map(|p| sidecar_path(p, fingerprint)).collect();
        futures::stream::iter(gone_sidecars.into_iter().map(|s| async move { self.objects().delete_file(&s).await }))
            .buffer_unordered(PARALLEL)
            .for_each(|r| async {
                if let Err(e) = r {
                    tracing::debug!(error = %e, "key_index.sidecar_delete_failed: left for a later catch-up");
                }
            })
            .await;
        for p in &gone {
            state.pending.remove(p);
        }
        let mut new: Vec<Add> = active.values().filter(|a| !ix.has_file(&a.path)).map(|a| (*a).clone()).collect();
        new.sort_by(|a, b| a.path.cmp(&b.path));
        // The files' row counts, where their statistics give them: room for their keys at once,
        // when that fits the budget (else buckets are evicted as they fill anyway).
        // (Saturating: the counts are a table's claims, a hostile one's included.)
        let expected: u64 =
            new.iter().filter_map(|a| a.num_records().and_then(|n| u64::try_from(n).ok())).fold(0, u64::saturating_add);
        if new.len() > 1 && expected.saturating_mul(crate::key_index::index::ENTRY_BYTES) <= budget {
            ix.reserve(expected);
        }
        let columns = ix.columns.clone();
        let plan = self.data().scan_plan(snapshot).projected(&columns);
        let (plan, columns_ref) = (&plan, &columns);
        // Added as they come: at most PARALLEL files' keys are in flight beside the index.
        let mut indexed = std::pin::pin!(futures::stream::iter(
            new.into_iter().map(|add| async move { self.index_file(plan, columns_ref, fingerprint, &add).await }),
        )
        .buffered(PARALLEL));
        while let Some(next) = indexed.next().await {
            let (keys, layout, unwritten, from_data) = next?;
            if from_data {
                state.stats.files_from_data += 1;
                tracing::info!(file = %keys.path, "key_index.rebuilt: indexed from the file's data");
            } else {
                state.stats.files_from_sidecars += 1;
            }
            if let (Some(bytes), None) = (unwritten, &layout) {
                let (_, l) = keys.encode();
                state.pending.insert(keys.path.clone(), (bytes, l));
            }
            ix.add_file(&keys, layout);
            state.stats.buckets_evicted += ix.evict_to(budget) as u64;
        }
        // Sidecars whose write failed before: once more.
        let pending: Vec<(String, bytes::Bytes, Layout)> =
            state.pending.iter().map(|(p, (b, l))| (p.clone(), b.clone(), l.clone())).collect();
        for (path, bytes, layout) in pending {
            if self.objects().put_bytes(&sidecar_path(&path, fingerprint), bytes).await.is_ok() {
                ix.persisted(&path, layout);
                state.pending.remove(&path);
            }
        }
        Ok(())
    }

    /// One file's keys: from its sidecar, else from its data (then written as its sidecar).
    /// Returns (keys, layout when persisted, bytes when the write failed, from data).
    async fn index_file(
        &self,
        plan: &crate::delta::scan::ScanPlan,
        columns: &[String],
        fingerprint: u64,
        add: &Add,
    ) -> Result<(FileKeys, Option<Layout>, Option<bytes::Bytes>, bool)> {
        let sidecar = sidecar_path(&add.path, fingerprint);
        match self.store.get(&self.relative_path(&sidecar)).await {
            Ok(got) => {
                let bytes = got.bytes().await.map_err(|e| Error::storage(&sidecar, e))?;
                // Decoding is CPU work: off the runtime's threads, so files decode in parallel.
                let decoded = tokio::task::spawn_blocking(move || FileKeys::decode(&bytes))
                    .await
                    .map_err(|e| Error::Internal(format!("decoding a key index sidecar: {e}")))?;
                match decoded {
                    Ok((keys, layout)) if keys.path == add.path && keys.columns == fingerprint => {
                        return Ok((keys, Some(layout), None, false));
                    }
                    Ok(_) => tracing::warn!(file = %add.path, "key_index.sidecar_mismatch: rebuilding it"),
                    Err(why) => tracing::warn!(file = %add.path, %why, "key_index.sidecar_damaged: rebuilding it"),
                }
            }
            Err(object_store::Error::NotFound { .. }) => {}
            Err(e) => return Err(Error::storage(&sidecar, e)),
        }
        self.index_from_data(plan, columns, fingerprint, add).await
    }

    /// One file's keys read from its data and written as its sidecar (as [`Table::index_file`]
    /// answers them).
    async fn index_from_data(
        &self,
        plan: &crate::delta::scan::ScanPlan,
        columns: &[String],
        fingerprint: u64,
        add: &Add,
    ) -> Result<(FileKeys, Option<Layout>, Option<bytes::Bytes>, bool)> {
        let sidecar = sidecar_path(&add.path, fingerprint);
        let rows =
            self.data().read_rows(plan, &add.path, &add.partition_values, Some(add.size), RowFilter::All).await?;
        let (path, columns_owned) = (add.path.clone(), columns.to_vec());
        let (keys, (bytes, layout)) = tokio::task::spawn_blocking(move || {
            let keys: Vec<Option<String>> =
                rows.batches.iter().flat_map(|b| keys_of_batch(b, &columns_owned)).collect();
            let keys = FileKeys::from_keys(&path, fingerprint, keys.iter().map(Option::as_deref))
                .map_err(|e| Error::data_file(&path, e))?;
            let encoded = keys.encode();
            Ok::<_, Error>((keys, encoded))
        })
        .await
        .map_err(|e| Error::Internal(format!("indexing a data file's keys: {e}")))??;
        let bytes = bytes::Bytes::from(bytes);
        tracing::debug!(file = %add.path, entries = keys.entries.len(), "key_index.file_indexed from its data");
        match self.objects().put_bytes(&sidecar, bytes.clone()).await {
            Ok(()) => Ok((keys, Some(layout), None, true)),
            Err(e) => {
                tracing::warn!(file = %add.path, error = %e, "key_index.sidecar_write_failed: kept in memory");
                Ok((keys, None, Some(bytes), true))
            }
        }
    }

    /// Every (file id, row) of each hash, bucket by bucket: an evicted bucket is read back
    /// from its sidecar sections, looked up, and the index evicted to `budget` again before
    /// the next, so a lookup touching every bucket still holds about the budget.
    async fn lookup_by_bucket(
        &self,
        state: &mut IndexState,
        hashes: &[KeyHash],
        by_bucket: &std::collections::BTreeMap<usize, Vec<usize>>,
        budget: u64,
    ) -> std::result::Result<Vec<Vec<(u32, u32)>>, Miss> {
        let mut found = vec![Vec::new(); hashes.len()];
        let Some(ix) = state.index.as_mut() else { return Ok(found) };
        for (b, at) in by_bucket {
            if !ix.evicted([*b]).is_empty() {
                let read: Vec<std::result::Result<Section, Miss>> =
                    futures::stream::iter(ix.sections(*b).into_iter().map(|(id, sidecar, range)| async move {
                        let gone = || Miss::Gone(id);
                        let bytes = match self.store.get_range(&self.relative_path(&sidecar), range).await {
                            Ok(b) => b,
                            Err(object_store::Error::NotFound { .. }) => return Err(gone()),
                            Err(e) => return Err(Miss::Fault(Error::storage(&sidecar, e))),
                        };
                        decode_section(&bytes).map(|e| (id, e)).map_err(|_| gone())
                    }))
                    .buffer_unordered(PARALLEL)
                    .collect()
                    .await;
                let sections = read.into_iter().collect::<std::result::Result<Vec<_>, Miss>>()?;
                ix.load(*b, sections);
                state.stats.buckets_loaded += 1;
            }
            let wanted: Vec<KeyHash> = at.iter().map(|i| hashes[*i]).collect();
            for (i, rows) in at.iter().zip(ix.lookup(&wanted)) {
                found[*i] = rows;
            }
            state.stats.buckets_evicted += ix.evict_to(budget) as u64;
        }
        Ok(found)
    }
}

table_view!(
    /// The key index of one table as writers use it: its catch-up with a snapshot, key lookups,
    /// sidecars of new files, a background warm-up (the index itself is shared by the handle's
    /// clones).
    TableKeys,
    /// The table's key index.
    keys
);

/// A background catch-up of a key index ([`TableKeys::warm`]), stopped when dropped.
#[derive(Debug)]
pub(crate) struct WarmUp(tokio::task::JoinHandle<()>);

impl Drop for WarmUp {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// One file's entries of one bucket.
type Section = (u32, Vec<(KeyHash, u32)>);

/// Why a bucket could not be loaded.
enum Miss {
    /// File `id`'s sidecar is gone or damaged.
    Gone(u32),
    Fault(Error),
}

impl TableKeys<'_> {
    /// Writes the sidecars of data files a keyed flush just wrote (before its commit, so that
    /// whoever indexes them next reads the sidecar, not the data). A sidecar that cannot be
    /// written is left to the next catch-up (which counts it as a rebuild).
    pub(crate) async fn prepare(&self, snapshot: &Snapshot, columns: &[String], adds: Vec<Add>) {
        let fingerprint = key_fingerprint(columns, Some(&snapshot.schema));
        let plan = self.data().scan_plan(snapshot).projected(columns);
        let plan = &plan;
        futures::stream::iter(adds.into_iter().map(|add| async move {
            // Just written: no sidecar to look for.
            if let Err(e) = self.index_from_data(plan, columns, fingerprint, &add).await {
                tracing::debug!(file = %add.path, error = %e, "key_index.prepare_failed: left for the next catch-up");
            }
        }))
        .buffer_unordered(PARALLEL)
        .collect::<Vec<()>>()
        .await;
    }

    /// Catches this handle's key index up with `snapshot` (building it, sidecars included, on
    /// a table without one) and returns its figures.
    ///
    /// # Errors
    /// As a keyed flush's lookup.
    #[cfg_attr(feature = "internal-api", visibility::make(pub))]
    pub(crate) async fn build(&self, snapshot: &Snapshot, columns: &[String], budget: u64) -> Result<IndexStats> {
        Ok(self.locate(snapshot, columns, budget, &[]).await?.1)
    }

    /// Starts catching this handle's key index up with `snapshot` in the background (a keyed
    /// pipeline does while it consumes its first batch, so that the first flush does not load
    /// the whole index itself). The first lookup waits for it, then catches up what is left.
    /// A failure is only logged: the lookup retries it. Dropping the guard stops the work.
    pub(crate) fn warm(&self, snapshot: Snapshot, columns: Vec<String>, budget: u64) -> WarmUp {
        let table: Table = self.0.clone();
        WarmUp(tokio::spawn(async move {
            let started = std::time::Instant::now();
            match table.keys().build(&snapshot, &columns, budget).await {
                Ok(stats) => tracing::info!(
                    files = stats.files,
                    resident_bytes = stats.resident_bytes,
                    ms = started.elapsed().as_millis() as u64,
                    "key_index.warmed"
                ),
                Err(e) => tracing::info!(error = %e, "key_index.warm_failed: the first flush catches up"),
            }
        }))
    }

    /// What this handle's key index has done so far.
    pub(crate) async fn stats(&self) -> IndexStats {
        self.key_index.lock().await.stats
    }
}
