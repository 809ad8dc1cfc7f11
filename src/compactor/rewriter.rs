//! Rewriting planned bins and committing each as an `OPTIMIZE` with `dataChange=false`.
//!
//! Each bin is read with its deletion vectors applied (so deleted rows are purged), written
//! through the same data writer as ingest (statistics included), and committed on its own with
//! the bin's inputs as the transaction's read set. When an input was given a new DV meanwhile
//! (a keyed flush, a delete), the rows it newly deletes are carried onto the outputs as their
//! DVs (`remap`) and the bin commits against the new table, so neither the deletion nor the
//! compaction is lost; when an input was removed (or a deleted row came back), the bin is
//! abandoned — its new files deleted — so a deleted row is never resurrected. Concurrent blind
//! appends never conflict with it.
//!
//! On a clustered table a run clusters instead of bin-packing ([`super::cluster`]): each bin's
//! rows are written in the clustering order, its outputs name `clusteringProvider =
//! "deltabus"`, and a bin whose inputs changed meanwhile is abandoned (its rows moved, so
//! deletions made meanwhile cannot be carried over by position); the next run takes it again.

use std::sync::Arc;

use serde_json::json;

use super::planner::{plan, Bin, PlanConfig};
use crate::delta::actions::{Action, Add, Remove};
use crate::delta::conflict::ReadSet;
use crate::delta::features::{check_writable, has_writer_feature, Feature};
use crate::delta::replay::FileKey;
use crate::delta::snapshot::Snapshot;
use crate::delta::transaction::{CommitOutcome, Operation, Transaction};
use crate::error::{Error, Result};
use crate::storage::{DataWriter, RetryPolicy, StagedCommit, Table, WriterConfig};

/// Options of a compaction run.
#[derive(Debug, Clone, Default)]
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) struct CompactOptions {
    pub plan: PlanConfig,
    /// Only partitions matching `column = value` pairs (logical column names).
    pub partitions: Option<Vec<(String, Option<String>)>>,
    pub dry_run: bool,
    pub retry: RetryPolicy,
    /// Show progress over bins on stderr (a bar on a terminal, periodic lines otherwise).
    pub progress: bool,
    /// A keyed pipeline's key columns: the outputs' key index sidecars are written with them.
    pub key_columns: Option<Vec<String>>,
    /// Clustered tables: recluster every file, not only those not clustered yet.
    pub full: bool,
}

/// What a compaction run did (or, dry, would do).
#[derive(Debug, Clone, Default, PartialEq)]
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) struct CompactReport {
    pub bins: usize,
    pub files_in: usize,
    pub files_out: usize,
    pub bytes_in: i64,
    pub bytes_out: i64,
    pub rows: u64,
    pub dv_rows_purged: i64,
    pub versions: Vec<u64>,
    /// Bins abandoned because their inputs changed, with the reason.
    pub abandoned: Vec<String>,
    /// Bins committed with deletions made meanwhile carried onto their outputs.
    pub remapped_bins: usize,
    pub dry_run: bool,
    /// The run clustered (a clustered table's bins, written in clustering order).
    pub clustered: bool,
}

impl CompactReport {
    /// The `deltabus compact` summary.
    pub(crate) fn to_json(&self) -> serde_json::Value {
        json!({
            "dryRun": self.dry_run, "bins": self.bins, "filesIn": self.files_in, "filesOut": self.files_out,
            "bytesIn": self.bytes_in, "bytesOut": self.bytes_out, "rows": self.rows,
            "dvRowsPurged": self.dv_rows_purged, "versions": self.versions, "abandoned": self.abandoned,
            "remappedBins": self.remapped_bins, "clustered": self.clustered,
        })
    }
}

/// Compacts the table's latest snapshot.
///
/// # Errors
/// [`Error::Unsupported`] for tables deltabus may not rewrite (unwritable protocol, row
/// tracking, whose ids a rewrite would have to preserve); [`Error::InvalidArgument`] for a
/// predicate on non-partition columns; storage and data errors.
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) async fn compact(table: &Table, opts: &CompactOptions) -> Result<CompactReport> {
    let snapshot = table.snapshot(None).await?;
    check_writable(&snapshot.protocol, &snapshot.metadata)?;
    if has_writer_feature(&snapshot.protocol, Feature::RowTracking) {
        return Err(Error::unsupported("compaction of row-tracking tables (rewritten rows must keep their row ids)"));
    }
    let wanted = physical_predicate(&snapshot, opts.partitions.as_deref())?;
    let keep = |pv: &crate::delta::actions::PartitionValues| {
        wanted.iter().all(|(k, v)| pv.get(k).cloned().flatten().filter(|s| !s.is_empty()) == *v)
    };
    let mut cfg = opts.plan.clone();
    if let Some(t) = snapshot.properties.target_file_size {
        cfg.target_size = cfg.target_size.min(t).max(1);
    }
    let clustering = crate::delta::clustering::physical_columns(&snapshot)?;
    let order: Option<Arc<Vec<Vec<String>>>> = (!clustering.is_empty()).then(|| {
        let names = crate::delta::clustering::logical_names(&snapshot.schema, snapshot.column_mapping(), &clustering);
        Arc::new(names.iter().map(|n| n.split('.').map(String::from).collect()).collect())
    });
    let bins = match &order {
        Some(_) => {
            let max = super::cluster::BIN_BYTES.max(cfg.target_size);
            super::cluster::plan(&snapshot.files(), opts.full, max, cfg.min_partition_candidates)
        }
        None => plan(&snapshot.files(), &cfg, &keep),
    };
    let mut report = CompactReport {
        bins: bins.len(),
        dry_run: opts.dry_run,
        clustered: order.is_some(),
        ..CompactReport::default()
    };
    for bin in &bins {
        report.files_in += bin.files.len();
        report.bytes_in += bin.bytes();
        report.dv_rows_purged += bin
            .files
            .iter()
            .filter_map(|f| f.deletion_vector.as_ref())
            .map(|d| d.cardinality)
            .fold(0, i64::saturating_add);
    }
    if opts.dry_run {
        // The rows a run would rewrite, from the files' statistics (live rows: minus DVs).
        report.rows = bins
            .iter()
            .flat_map(|b| &b.files)
            .map(|f| {
                let dv = f.deletion_vector.as_ref().map_or(0, |d| d.cardinality);
                u64::try_from(f.num_records().unwrap_or(0).saturating_sub(dv)).unwrap_or(0)
            })
            .fold(0, u64::saturating_add);
        return Ok(report);
    }
    // Bins are independent (disjoint inputs, one commit each): rewrite one per core at a time.
    let parallel = std::thread::available_parallelism().map_or(2, |n| n.get());
    let snapshot = Arc::new(snapshot);
    let total = bins.len();
    let mut pending = bins.into_iter().enumerate();
    let mut running = tokio::task::JoinSet::new();
    let progress = if opts.progress {
        crate::common::progress::Progress::new("compact", "bins", Some(total as u64))
    } else {
        crate::common::progress::Progress::hidden()
    };
    loop {
        while running.len() < parallel {
            let Some((_, bin)) = pending.next() else { break };
            let (table, snapshot, cfg, opts) = (table.clone(), snapshot.clone(), cfg.clone(), opts.clone());
            let order = order.clone();
            running.spawn(async move { rewrite_bin(&table, &snapshot, &bin, &cfg, &opts, order.as_deref()).await });
        }
        let Some(done) = running.join_next().await else { break };
        let part = done.map_err(|e| Error::Internal(format!("compaction task: {e}")))??;
        progress.inc(1);
        report.versions.extend(part.versions);
        report.files_out += part.files_out;
        report.bytes_out += part.bytes_out;
        report.rows += part.rows;
        report.abandoned.extend(part.abandoned);
        report.remapped_bins += part.remapped_bins;
    }
    progress.finish();
    report.versions.sort_unstable();
    Ok(report)
}

fn physical_predicate(
    s: &Snapshot,
    pairs: Option<&[(String, Option<String>)]>,
) -> Result<Vec<(String, Option<String>)>> {
    let mut out = Vec::new();
    for (col, value) in pairs.unwrap_or_default() {
        let field = s
            .metadata
            .partition_columns
            .iter()
            .find(|p| p.eq_ignore_ascii_case(col))
            .and_then(|p| s.schema.field(p))
            .ok_or_else(|| Error::InvalidArgument(format!("{col:?} is not a partition column")))?;
        out.push((field.physical_name(s.column_mapping()).to_string(), value.clone()));
    }
    Ok(out)
}

/// Rewrites and commits one bin (its rows in the clustering order of `order`, logical paths,
/// when the table is clustered); the returned report covers only its outputs.
async fn rewrite_bin(
    table: &Table,
    snapshot: &Snapshot,
    bin: &Bin,
    cfg: &PlanConfig,
    opts: &CompactOptions,
    order: Option<&Vec<Vec<String>>>,
) -> Result<CompactReport> {
    let mut report = CompactReport::default();
    let mut writer_cfg = WriterConfig::for_snapshot(snapshot);
    writer_cfg.target_file_size = cfg.target_size;
    let mut writer = DataWriter::new(table, snapshot, writer_cfg)?.rewriting();
    let written = match order {
        None => copy_bin(table, snapshot, bin, &mut writer).await,
        Some(columns) => cluster_bin(table, snapshot, bin, columns, &mut writer).await,
    };
    let (rows, live) = match written {
        Ok(w) => w,
        Err(e) => {
            writer.abort().await;
            return Err(e);
        }
    };
    let mut adds = writer.finish().await?;
    for a in &mut adds {
        a.data_change = false;
        a.clustering_provider = order.map(|_| super::cluster::PROVIDER.to_string());
    }
    let mut staged = StagedCommit::new(table);
    staged.stage(adds.iter().map(|a| a.path.clone()));
    if let Some(keys) = &opts.key_columns {
        table.keys().prepare(snapshot, keys, adds.clone()).await;
    }
    let now = table.clock().now_ms();
    let bytes_out: i64 = adds.iter().map(|a| a.size).sum();
    let mut txn = optimize_txn(bin, &bin.files, adds.clone(), cfg, now, 0);
    let mut fresh: Option<Snapshot> = None;
    let mut remapped = false;
    for attempt in 0.. {
        let base = fresh.as_ref().unwrap_or(snapshot);
        let reason = match staged.try_commit(Some(base), &txn, &opts.retry).await {
            Ok(CommitOutcome::Committed { version }) => {
                report.versions.push(version);
                report.files_out += adds.len();
                report.bytes_out += bytes_out;
                report.rows += rows;
                report.remapped_bins += usize::from(remapped);
                return Ok(report);
            }
            Ok(CommitOutcome::Conflict { reason, .. } | CommitOutcome::AlreadyApplied { app_id: reason, .. }) => reason,
            Err(e) => return Err(e),
        };
        // Inputs given more deleted rows meanwhile: those deletions are carried onto the
        // outputs and the bin commits against the new table; anything else abandons it.
        let carried = if attempt < MAX_REMAPS && order.is_none() {
            match table.snapshot(None).await {
                Ok(s) => {
                    let mut dv_files = Vec::new();
                    let carried = carry(table, &s, bin, &live, &adds, cfg, now, &mut dv_files).await;
                    staged.stage(dv_files);
                    match carried {
                        Ok(Some(t)) => Some((s, t)),
                        Ok(None) => None,
                        Err(e) => {
                            staged.discard().await;
                            return Err(e);
                        }
                    }
                }
                Err(e) => {
                    staged.discard().await;
                    return Err(e);
                }
            }
        } else {
            None
        };
        match carried {
            Some((s, t)) => {
                tracing::info!(reason = %reason, "compact.bin_remapped: deletions made meanwhile carried onto the outputs");
                (fresh, txn, remapped) = (Some(s), t, true);
            }
            None => {
                tracing::info!(reason = %reason, "compact.bin_abandoned");
                staged.discard().await;
                report.abandoned.push(reason);
                return Ok(report);
            }
        }
    }
    Ok(report)
}

/// Writes the bin's live rows in their order: the rows written, and each input's live rows.
async fn copy_bin(table: &Table, snapshot: &Snapshot, bin: &Bin, writer: &mut DataWriter) -> Result<(u64, Vec<u64>)> {
    let plan = table.data().scan_plan(snapshot);
    let mut live: Vec<u64> = Vec::with_capacity(bin.files.len());
    for f in &bin.files {
        let read = table.data().read_file(&plan, f).await?;
        let mut n = 0u64;
        for batch in &read.batches {
            n += batch.num_rows() as u64;
            writer.write(batch).await?;
        }
        live.push(n);
    }
    Ok((live.iter().sum(), live))
}

/// Writes the bin's live rows in clustering order (all of them held while they are ordered:
/// bins are bounded by [`super::cluster::BIN_BYTES`]), in slices so files roll at the target.
async fn cluster_bin(
    table: &Table,
    snapshot: &Snapshot,
    bin: &Bin,
    columns: &[Vec<String>],
    writer: &mut DataWriter,
) -> Result<(u64, Vec<u64>)> {
    const SLICE: usize = 1024;
    let plan = table.data().scan_plan(snapshot);
    let mut batches = Vec::new();
    let mut live: Vec<u64> = Vec::with_capacity(bin.files.len());
    for f in &bin.files {
        let read = table.data().read_file(&plan, f).await?;
        live.push(read.batches.iter().map(|b| b.num_rows() as u64).sum());
        batches.extend(read.batches);
    }
    let Some(first) = batches.first() else { return Ok((0, live)) };
    let all = arrow::compute::concat_batches(&first.schema(), &batches)
        .map_err(|e| Error::Internal(format!("joining a clustering bin: {e}")))?;
    drop(batches);
    let ordered = super::cluster::ordered(&all, columns)?;
    drop(all);
    let mut at = 0;
    while at < ordered.num_rows() {
        let n = SLICE.min(ordered.num_rows() - at);
        writer.write(&ordered.slice(at, n)).await?;
        at += n;
    }
    Ok((live.iter().sum(), live))
}

/// Conflicts a bin rides out by carrying deletions over before it gives up.
const MAX_REMAPS: usize = 8;

/// The `OPTIMIZE` of `bin`: `inputs` (the inputs as the table holds them now) removed,
/// `adds` added, with the inputs as the read set.
fn optimize_txn(bin: &Bin, inputs: &[Add], adds: Vec<Add>, cfg: &PlanConfig, now: i64, remapped: usize) -> Transaction {
    let removes = inputs.iter().map(|f| {
        Action::Remove(Remove {
            path: f.path.clone(),
            deletion_timestamp: Some(now),
            data_change: false,
            extended_file_metadata: Some(true),
            partition_values: Some(f.partition_values.clone()),
            size: Some(f.size),
            stats: f.stats.clone(),
            tags: f.tags.clone(),
            deletion_vector: f.deletion_vector.clone(),
            base_row_id: f.base_row_id,
            default_row_commit_version: f.default_row_commit_version,
        })
    });
    let bytes_out: i64 = adds.iter().map(|a| a.size).sum();
    let added = adds.len();
    let mut actions: Vec<Action> = removes.collect();
    actions.extend(adds.into_iter().map(Action::Add));
    let predicate: Vec<String> =
        bin.partition_values.iter().map(|(k, v)| format!("{k} = {}", v.as_deref().unwrap_or("NULL"))).collect();
    let mut txn = Transaction::new(Operation::Optimize, actions)
        .with_parameter("predicate", serde_json::to_string(&predicate).unwrap_or_default())
        .with_parameter("targetSize", cfg.target_size.to_string())
        .with_metric("numRemovedFiles", inputs.len())
        .with_metric("numAddedFiles", added)
        .with_metric("numRemovedBytes", bin.bytes())
        .with_metric("numAddedBytes", bytes_out)
        .with_metric("numDeletionVectorsRemoved", inputs.iter().filter(|f| f.deletion_vector.is_some()).count());
    if remapped > 0 {
        txn = txn.with_metric("numDeletionVectorsRemapped", remapped);
    }
    txn.read = ReadSet { files: inputs.iter().map(FileKey::of_add).collect(), ..ReadSet::default() };
    txn
}

/// The bin's commit against `now` with the rows its inputs lost since the rewrite read them
/// deleted in its outputs; `None` when that cannot be (an input removed, nothing new deleted,
/// a row undeleted). DV files written go to `written`.
#[allow(clippy::too_many_arguments)]
async fn carry(
    table: &Table,
    now: &Snapshot,
    bin: &Bin,
    live: &[u64],
    adds: &[Add],
    cfg: &PlanConfig,
    at: i64,
    written: &mut Vec<String>,
) -> Result<Option<Transaction>> {
    let files = now.files();
    let current: Option<Vec<Add>> =
        bin.files.iter().map(|f| files.iter().find(|a| a.path == f.path).map(|a| (*a).clone())).collect();
    let Some(current) = current else { return Ok(None) };
    let unique = |a: &Add| a.deletion_vector.as_ref().map(|d| d.unique_id());
    if bin.files.iter().zip(&current).all(|(f, c)| unique(f) == unique(c)) {
        return Ok(None);
    }
    let mut inputs = Vec::with_capacity(current.len());
    let mut dvs = Vec::with_capacity(current.len());
    for ((f, c), n) in bin.files.iter().zip(&current).zip(live) {
        let read_dv = match &f.deletion_vector {
            Some(d) => table.data().load_dv(d).await?,
            None => roaring::RoaringTreemap::new(),
        };
        inputs.push(super::remap::Input { live: *n, read_dv });
        dvs.push(match &c.deletion_vector {
            Some(d) => table.data().load_dv(d).await?,
            None => roaring::RoaringTreemap::new(),
        });
    }
    let outputs: Option<Vec<u64>> = adds.iter().map(|a| a.num_records().and_then(|n| u64::try_from(n).ok())).collect();
    let Some(outputs) = outputs else { return Ok(None) };
    let bitmaps = match super::remap::remap(&inputs, &dvs, &outputs) {
        Ok(b) => b,
        Err(why) => {
            tracing::info!(%why, "compact.remap_refused");
            return Ok(None);
        }
    };
    let changed: Vec<usize> = (0..bitmaps.len()).filter(|i| !bitmaps[*i].is_empty()).collect();
    let wanted: Vec<roaring::RoaringTreemap> = changed.iter().map(|i| bitmaps[*i].clone()).collect();
    let descriptors = crate::write::deletion::dv_descriptors(table, &wanted, written).await?;
    let mut out = adds.to_vec();
    for (i, d) in changed.iter().zip(descriptors) {
        out[*i].deletion_vector = Some(d);
        out[*i].stats = out[*i].stats.as_deref().map(crate::write::deletion::loose_stats);
    }
    Ok(Some(optimize_txn(bin, &current, out, cfg, at, changed.len())))
}
