//! The open micro-batch: decoded rows and dead letters per Kafka partition, with the offsets
//! they span. Synchronous; the pipeline task owns it.
//!
//! Data is kept per Kafka partition until the flush, so a revoked partition, or one whose
//! position another worker moved, can be dropped without touching the others. The estimated
//! file size for the flush policy is the buffered Arrow size times the compression ratio of
//! the previous flush (a quarter before the first).

use std::collections::BTreeMap;

use arrow::array::RecordBatch;

use crate::common::flush::BatchState;
use crate::common::record::DeadLetter;

/// One Kafka partition's part of the batch.
#[derive(Debug, Default)]
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) struct PartitionBatch {
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

/// The open batch of a pipeline.
#[derive(Debug)]
pub(crate) struct Buffer {
    parts: BTreeMap<i32, PartitionBatch>,
    first_record_ms: Option<i64>,
    /// Parquet bytes per Arrow byte, from the last flush.
    ratio: f64,
}

impl Default for Buffer {
    fn default() -> Self {
        Buffer { parts: BTreeMap::new(), first_record_ms: None, ratio: 0.25 }
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
            part.rows += b.num_rows() as u64;
            part.arrow_bytes += b.get_array_memory_size() as u64;
            part.batches.push(b);
        }
    }

    /// Drops a partition's data (revoked, or its position moved); returns its row count.
    pub(crate) fn drop_partition(&mut self, partition: i32) -> u64 {
        let rows = self.parts.remove(&partition).map_or(0, |p| p.rows);
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

    #[test]
    fn dropping_the_last_partition_resets_the_latency_clock() {
        let mut b = Buffer::default();
        b.add(consumed(2, 0, 0, 1), 100);
        b.drop_partition(2);
        b.add(consumed(3, 0, 0, 1), 900);
        assert_eq!(b.state().first_record_ms, Some(900));
    }
}
