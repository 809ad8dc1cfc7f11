//! The open micro-batch: decoded rows and dead letters per Kafka partition, with the offsets
//! they span. Synchronous; the pipeline task owns it.
//!
//! Data is kept per Kafka partition until the flush, so a revoked partition, or one whose
//! position another worker moved, can be dropped without touching the others. The estimated
//! file size for the flush policy is the buffered Arrow size times the compression ratio of
//! the previous flush (a quarter before the first).
//!
//! Decoded rows are packed ([`Packed`]) once the loose ones of all partitions pass
//! [`LOOSE_BYTES`], so a filling batch holds a fraction of its Arrow size; the flush policy
//! still decides on the Arrow size (the rows' size once decoded for the flush).

use std::collections::BTreeMap;

use arrow::array::RecordBatch;

use super::packed::Packed;
use crate::common::flush::BatchState;
use crate::common::record::DeadLetter;
use crate::error::Result;

/// Loose (decoded, not yet packed) Arrow bytes a buffer holds before it packs them.
const LOOSE_BYTES: u64 = 8 << 20;

/// One Kafka partition's part of the batch.
#[derive(Debug, Default)]
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) struct PartitionBatch {
    /// The first rows, packed, in order; `batches` follow them.
    pub packed: Vec<Packed>,
    /// The rows not packed (yet).
    pub batches: Vec<RecordBatch>,
    pub dead_letters: Vec<DeadLetter>,
    /// First and last offsets consumed into this batch (rows and dead letters).
    pub first_offset: i64,
    pub last_offset: i64,
    pub rows: u64,
    /// Raw payload bytes consumed.
    pub bytes: u64,
    /// Arrow memory held.
    pub arrow_bytes: u64,
    /// Timestamp of the last record (for lag in seconds).
    pub last_timestamp_ms: Option<i64>,
    /// Keyed ingestion: the offset of each row (in row order), and the keys deleted with the
    /// offsets of their records.
    pub row_offsets: Vec<i64>,
    pub deletes: Vec<(i64, String)>,
    /// The schema proposals (a new table's, or the table's grown by new fields) some of the
    /// batches were decoded in; the commit that carries the rows makes them real
    /// ([`crate::write::schema_change`]).
    pub proposals: Vec<std::sync::Arc<crate::delta::schema::StructType>>,
}

/// A partition's rows, one chunk at a time: a packed run, or the loose batches at the end.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Chunk<'a> {
    Packed(&'a Packed),
    Loose(&'a [RecordBatch]),
}

impl Chunk<'_> {
    /// The chunk's batches, unpacked.
    ///
    /// # Errors
    /// As [`Packed::unpack`].
    pub(crate) fn batches(&self) -> Result<Vec<RecordBatch>> {
        match self {
            Chunk::Packed(p) => p.unpack(),
            Chunk::Loose(b) => Ok(b.to_vec()),
        }
    }

    /// Rows in the chunk.
    pub(crate) fn rows(&self) -> usize {
        match self {
            Chunk::Packed(p) => p.rows(),
            Chunk::Loose(b) => b.iter().map(RecordBatch::num_rows).sum(),
        }
    }
}

impl crate::storage::RowChunks for [Chunk<'_>] {
    fn count(&self) -> usize {
        self.len()
    }

    fn chunk(&self, i: usize) -> Result<Vec<RecordBatch>> {
        self.get(i).ok_or_else(|| crate::error::Error::Internal(format!("no chunk {i}")))?.batches()
    }
}

impl PartitionBatch {
    /// The rows in order, chunk by chunk.
    pub(crate) fn chunks(&self) -> impl Iterator<Item = Chunk<'_>> {
        let loose = (!self.batches.is_empty()).then_some(Chunk::Loose(&self.batches));
        self.packed.iter().map(Chunk::Packed).chain(loose)
    }

    /// Every row, unpacked, in order.
    ///
    /// # Errors
    /// As [`Packed::unpack`].
    pub(crate) fn unpacked(&self) -> Result<Vec<RecordBatch>> {
        let mut out = Vec::new();
        for c in self.chunks() {
            out.extend(c.batches()?);
        }
        Ok(out)
    }

    /// Replaces each chunk's batches by what `f` makes of them, one chunk at a time (a packed
    /// chunk is packed again), so that no more than a chunk is ever unpacked. On an error the
    /// rows are left partly replaced: the caller drops the partition.
    ///
    /// # Errors
    /// `f`'s, and chunks that cannot be unpacked or packed again, as text.
    pub(crate) fn map_chunks(
        &mut self,
        mut f: impl FnMut(Vec<RecordBatch>) -> std::result::Result<Vec<RecordBatch>, String>,
    ) -> std::result::Result<(), String> {
        for p in &mut self.packed {
            let mapped = f(p.unpack().map_err(|e| e.to_string())?)?;
            *p = Packed::pack(&mapped).map_err(|e| e.to_string())?;
        }
        if !self.batches.is_empty() {
            self.batches = f(std::mem::take(&mut self.batches))?;
        }
        Ok(())
    }

    /// Packs the loose batches (each run of one schema on its own); a run Arrow IPC cannot
    /// write stays loose, and so does everything after it (order is kept).
    fn pack(&mut self) {
        while let Some(first) = self.batches.first() {
            let schema = first.schema();
            let run = self.batches.iter().take_while(|b| b.schema() == schema).count();
            match Packed::pack(&self.batches[..run]) {
                Ok(p) => {
                    self.packed.push(p);
                    self.batches.drain(..run);
                }
                Err(e) => {
                    tracing::debug!(error = %e, "rows kept unpacked");
                    return;
                }
            }
        }
    }
}

/// Rows drawn from across `chunks` (evenly spaced rows of at most [`SAMPLE_CHUNKS`] evenly
/// spaced chunks, copied out of them): what a writer judges the columns' encodings from,
/// without unpacking the batch.
///
/// # Errors
/// As [`Packed::unpack`]; Arrow errors copying rows.
pub(crate) fn sample(chunks: &[Chunk<'_>]) -> Result<Vec<RecordBatch>> {
    let n = chunks.len();
    let picks = n.min(SAMPLE_CHUNKS);
    let mut out = Vec::new();
    for i in 0..picks {
        let chunk = &chunks[i * n / picks];
        let step = (chunk.rows() / SAMPLE_ROWS).max(1);
        for b in chunk.batches()? {
            let rows = arrow::array::UInt32Array::from_iter_values((0..b.num_rows()).step_by(step).map(|r| r as u32));
            out.push(
                arrow::compute::take_record_batch(&b, &rows)
                    .map_err(|e| crate::error::Error::Internal(format!("sampling rows: {e}")))?,
            );
        }
    }
    Ok(out)
}

/// Chunks, and rows of each, a flush copies to judge its columns by.
const SAMPLE_CHUNKS: usize = 16;
const SAMPLE_ROWS: usize = 512;

/// The open batch of a pipeline.
#[derive(Debug)]
pub(crate) struct Buffer {
    parts: BTreeMap<i32, PartitionBatch>,
    first_record_ms: Option<i64>,
    /// Parquet bytes per Arrow byte, from the last flush.
    ratio: f64,
    /// Arrow bytes of the loose batches of all partitions.
    loose: u64,
}

impl Default for Buffer {
    fn default() -> Self {
        Buffer { parts: BTreeMap::new(), first_record_ms: None, ratio: 0.25, loose: 0 }
    }
}

/// What was consumed from one partition in one poll.
#[derive(Debug)]
pub(crate) struct Consumed {
    pub partition: i32,
    pub batch: Option<RecordBatch>,
    pub dead_letters: Vec<DeadLetter>,
    pub first_offset: i64,
    pub last_offset: i64,
    pub bytes: u64,
    pub last_timestamp_ms: Option<i64>,
    /// Keyed ingestion: as in [`PartitionBatch`].
    pub row_offsets: Vec<i64>,
    pub deletes: Vec<(i64, String)>,
    /// The schema proposal `batch` was decoded in, if not the table's.
    pub proposal: Option<std::sync::Arc<crate::delta::schema::StructType>>,
}

impl Buffer {
    /// Adds what was consumed at `now_ms`.
    pub(crate) fn add(&mut self, c: Consumed, now_ms: i64) {
        self.first_record_ms.get_or_insert(now_ms);
        let part = self
            .parts
            .entry(c.partition)
            .or_insert_with(|| PartitionBatch { first_offset: c.first_offset, ..PartitionBatch::default() });
        part.last_offset = c.last_offset;
        part.bytes += c.bytes;
        part.last_timestamp_ms = c.last_timestamp_ms.or(part.last_timestamp_ms);
        part.dead_letters.extend(c.dead_letters);
        part.row_offsets.extend(c.row_offsets);
        part.rows += c.deletes.len() as u64;
        part.deletes.extend(c.deletes);
        if let Some(p) = c.proposal.filter(|p| part.proposals.last() != Some(p)) {
            part.proposals.push(p);
        }
        if let Some(b) = c.batch {
            let bytes = b.get_array_memory_size() as u64;
            part.rows += b.num_rows() as u64;
            part.arrow_bytes += bytes;
            part.batches.push(b);
            self.loose += bytes;
        }
        if self.loose >= LOOSE_BYTES {
            self.parts.values_mut().for_each(PartitionBatch::pack);
            self.loose = self.parts.values().flat_map(|p| &p.batches).map(|b| b.get_array_memory_size() as u64).sum();
        }
    }

    /// Drops a partition's data (revoked, or its position moved); returns its row count.
    pub(crate) fn drop_partition(&mut self, partition: i32) -> u64 {
        let rows = self.parts.remove(&partition).map_or(0, |p| p.rows);
        self.loose = self.parts.values().flat_map(|p| &p.batches).map(|b| b.get_array_memory_size() as u64).sum();
        if self.parts.is_empty() {
            self.first_record_ms = None;
        }
        rows
    }

    /// The state the flush policy decides on.
    pub(crate) fn state(&self) -> BatchState {
        let arrow: u64 = self.parts.values().map(|p| p.arrow_bytes).sum();
        BatchState {
            first_record_ms: self.first_record_ms,
            rows: self.parts.values().map(|p| p.rows).sum(),
            bytes: self.parts.values().map(|p| p.bytes).sum::<u64>().max(arrow),
            largest_file_bytes: (arrow as f64 * self.ratio) as u64,
        }
    }

    /// Whether nothing is buffered.
    pub(crate) fn is_empty(&self) -> bool {
        self.parts.is_empty()
    }

    /// Takes the batch out, leaving the buffer empty.
    pub(crate) fn take(&mut self) -> BTreeMap<i32, PartitionBatch> {
        self.first_record_ms = None;
        self.loose = 0;
        std::mem::take(&mut self.parts)
    }

    /// Records the compression ratio a flush achieved.
    pub(crate) fn observe_ratio(&mut self, arrow_bytes: u64, parquet_bytes: u64) {
        if arrow_bytes > 0 && parquet_bytes > 0 {
            self.ratio = (parquet_bytes as f64 / arrow_bytes as f64).clamp(0.01, 2.0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::Int64Array;
    use std::sync::Arc;

    fn consumed(partition: i32, first: i64, last: i64, rows: i64) -> Consumed {
        let batch = RecordBatch::try_from_iter([("id", Arc::new(Int64Array::from_iter_values(0..rows)) as _)]).unwrap();
        Consumed {
            partition,
            batch: Some(batch),
            dead_letters: vec![],
            first_offset: first,
            last_offset: last,
            bytes: 10 * rows as u64,
            last_timestamp_ms: Some(5),
            row_offsets: vec![],
            deletes: vec![],
            proposal: None,
        }
    }

    #[test]
    fn partitions_accumulate_and_drop_independently() {
        let mut b = Buffer::default();
        assert_eq!(b.state().first_record_ms, None);
        b.add(consumed(0, 0, 9, 10), 100);
        b.add(consumed(1, 50, 54, 5), 200);
        b.add(consumed(0, 10, 19, 10), 300);
        let s = b.state();
        assert_eq!((s.first_record_ms, s.rows), (Some(100), 25));
        assert!(s.bytes >= 250);
        assert_eq!(b.drop_partition(1), 5);
        let parts = b.take();
        assert_eq!(parts.len(), 1);
        assert_eq!((parts[&0].first_offset, parts[&0].last_offset, parts[&0].rows), (0, 19, 20));
        assert!(b.is_empty());
        assert_eq!(b.state().first_record_ms, None);
    }

    /// A poll of `rows` rows from `from`: an id, a user of 9,973 and a 200-byte note; with
    /// `extra`, one more column (a schema that grew).
    fn poll(partition: i32, from: i64, rows: i64, extra: bool) -> Consumed {
        use arrow::array::{ArrayRef, StringArray};
        let ids = (from..from + rows).collect::<Vec<_>>();
        let mut columns: Vec<(&str, ArrayRef)> = vec![
            ("id", Arc::new(Int64Array::from(ids.clone()))),
            ("user", Arc::new(StringArray::from_iter_values(ids.iter().map(|i| format!("usér-{}", i * 7919 % 9973))))),
            ("note", Arc::new(StringArray::from_iter_values(ids.iter().map(|i| format!("{i:0>200}"))))),
        ];
        if extra {
            columns.push(("more", Arc::new(Int64Array::from(ids.clone()))));
        }
        Consumed {
            batch: Some(RecordBatch::try_from_iter(columns).unwrap()),
            ..consumed(partition, from, from + rows - 1, 0)
        }
    }

    #[test]
    fn a_filling_batch_packs_its_rows_and_gives_them_back_in_order() {
        let mut b = Buffer::default();
        let mut sent: BTreeMap<i32, Vec<RecordBatch>> = BTreeMap::new();
        for i in 0..12i64 {
            for p in [0, 1] {
                let c = poll(p, i * 10_000, 10_000, p == 1 && i >= 5);
                sent.entry(p).or_default().extend(c.batch.clone());
                b.add(c, 100);
            }
        }
        let parts = b.take();
        let arrow: u64 = parts.values().map(|p| p.arrow_bytes).sum();
        let held: usize = parts.values().flat_map(|p| &p.packed).map(Packed::bytes).sum::<usize>()
            + parts.values().flat_map(|p| &p.batches).map(RecordBatch::get_array_memory_size).sum::<usize>();
        assert!(parts[&0].packed.len() >= 2 && parts[&1].packed.len() >= 2);
        assert!((held as u64) * 3 < arrow, "{held} bytes held for {arrow} Arrow bytes");
        for (p, part) in &parts {
            let back = part.unpacked().unwrap();
            let concat = |b: &[RecordBatch]| arrow::compute::concat_batches(&b[0].schema(), b).unwrap();
            // Partition 1 changed schema at poll 5: its rows come back in two schemas, in order.
            let split = if *p == 1 { 5 } else { 12 };
            let old: Vec<_> = back.iter().filter(|b| b.num_columns() == 3).cloned().collect();
            let new: Vec<_> = back.iter().filter(|b| b.num_columns() == 4).cloned().collect();
            assert_eq!(concat(&old), concat(&sent[p][..split]));
            if split < 12 {
                assert_eq!(concat(&new), concat(&sent[p][split..]));
                let first_new = back.iter().position(|b| b.num_columns() == 4).unwrap();
                assert!(back[first_new..].iter().all(|b| b.num_columns() == 4), "order kept");
            }
            assert_eq!(part.chunks().map(|c| c.rows()).sum::<usize>() as u64, part.rows);
        }
    }

    #[test]
    fn a_sample_of_the_chunks_judges_the_columns_as_all_rows_do() {
        let mut b = Buffer::default();
        for i in 0..40i64 {
            b.add(poll(i as i32 % 4, i * 25_000, 25_000, false), 100);
        }
        let parts = b.take();
        let chunks: Vec<Chunk<'_>> = parts.values().flat_map(PartitionBatch::chunks).collect();
        assert!(chunks.len() > SAMPLE_CHUNKS);
        let rows = chunks.iter().map(Chunk::rows).sum::<usize>();
        let sample = sample(&chunks).unwrap();
        assert!(sample.iter().map(RecordBatch::num_rows).sum::<usize>() < rows / 50);
        let all: Vec<RecordBatch> = parts.values().flat_map(|p| p.unpacked().unwrap()).collect();
        let judged = crate::storage::plain_columns_of_sample(&sample.iter().collect::<Vec<_>>(), rows);
        assert_eq!(judged, crate::storage::plain_columns_of_sample(&all.iter().collect::<Vec<_>>(), rows));
        assert_eq!(judged, ["id", "note"]);
    }

    #[test]
    fn dropping_the_last_partition_resets_the_latency_clock() {
        let mut b = Buffer::default();
        b.add(consumed(2, 0, 0, 1), 100);
        b.drop_partition(2);
        b.add(consumed(3, 0, 0, 1), 900);
        assert_eq!(b.state().first_record_ms, Some(900));
    }
}
