//! How much room a string column's bytes get in the next batch a decoder builds [sync].
//!
//! Contract: [`TextRoom::room`] is what the column's rows took per row in the last batch
//! finished (see [`TextRoom::learn`]) plus an eighth, times the rows to come, and never more
//! than those rows' own bytes (a string's decoded bytes are at most its record's). Before any
//! batch it is 16 bytes a row. It only sizes a buffer: a wrong guess costs a reallocation,
//! never a value. Shared by every thread decoding for one table (relaxed atomics).
//!
//! Why: Arrow's string builder doubles its buffer from the first guess, so a column of
//! 150-byte values built from 16 bytes a row was copied six times per poll and ended up to
//! twice its size, the unused half counted in the batch's bytes.

use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

#[derive(Debug)]
pub(crate) struct TextRoom(AtomicUsize);

impl Default for TextRoom {
    fn default() -> Self {
        TextRoom(AtomicUsize::new(Self::FIRST_GUESS))
    }
}

impl TextRoom {
    const FIRST_GUESS: usize = 16;

    /// The room for `rows` rows whose records take `bytes` in all.
    pub(crate) fn room(&self, rows: usize, bytes: usize) -> usize {
        rows.saturating_mul(self.0.load(Relaxed)).min(bytes)
    }

    /// Remembers what `rows` rows took: `bytes` of string values.
    pub(crate) fn learn(&self, bytes: usize, rows: usize) {
        if rows > 0 {
            let per_row = bytes.div_ceil(rows);
            self.0.store(per_row.saturating_add(per_row / 8), Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::TextRoom;

    #[test]
    fn room_follows_the_last_batch_within_the_rows_bytes() {
        let r = TextRoom::default();
        assert_eq!(r.room(100, 1_000_000), 1600, "16 bytes a row at first");
        r.learn(60_000, 100);
        assert_eq!(r.room(1000, 10_000_000), 675_000, "600 a row and an eighth");
        assert_eq!(r.room(1000, 20_000), 20_000, "never past the rows' bytes");
        r.learn(0, 0);
        assert_eq!(r.room(1000, 10_000_000), 675_000, "nothing learned from no rows");
        r.learn(usize::MAX, 1);
        assert_eq!(r.room(usize::MAX, 5), 5, "no overflow");
    }
}
