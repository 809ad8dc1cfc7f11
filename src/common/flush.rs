//! When to flush a micro-batch: a pure function of the batch's state and the time the caller
//! hands in (from the one clock), so tests never sleep.
//!
//! A batch flushes when its oldest record has waited `max_latency`, or when it holds
//! `max_rows` rows or `max_bytes` buffered bytes, or when one of its open files reached the
//! target file size. Shutdown and partition revocation flush (or drop) regardless; they are
//! decided by the caller and only named here.

use std::time::Duration;

/// Limits of one micro-batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlushPolicy {
    pub max_latency: Duration,
    pub max_rows: u64,
    pub max_bytes: u64,
    pub target_file_size: u64,
}

impl Default for FlushPolicy {
    fn default() -> Self {
        FlushPolicy {
            max_latency: Duration::from_secs(10),
            max_rows: 1_000_000,
            max_bytes: 256 << 20,
            target_file_size: 128 << 20,
        }
    }
}

/// What the batcher knows about the open batch.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BatchState {
    /// When the first record of the batch arrived (ms since the epoch); `None` when empty.
    pub first_record_ms: Option<i64>,
    pub rows: u64,
    pub bytes: u64,
    /// Bytes of the largest open data file.
    pub largest_file_bytes: u64,
}

/// Why a batch is flushed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlushReason {
    Latency,
    Rows,
    Bytes,
    FileSize,
    Shutdown,
    Revoked,
}

impl FlushReason {
    /// A bounded label for metrics and logs.
    pub fn as_str(self) -> &'static str {
        match self {
            FlushReason::Latency => "latency",
            FlushReason::Rows => "rows",
            FlushReason::Bytes => "bytes",
            FlushReason::FileSize => "file_size",
            FlushReason::Shutdown => "shutdown",
            FlushReason::Revoked => "revoked",
        }
    }
}

impl FlushPolicy {
    /// Whether the batch must be flushed at `now_ms`, and why. Empty batches never flush.
    pub fn decide(&self, state: &BatchState, now_ms: i64) -> Option<FlushReason> {
        let first = state.first_record_ms?;
        if state.rows >= self.max_rows {
            return Some(FlushReason::Rows);
        }
        if state.bytes >= self.max_bytes {
            return Some(FlushReason::Bytes);
        }
        if state.largest_file_bytes >= self.target_file_size {
            return Some(FlushReason::FileSize);
        }
        let waited = u128::try_from(now_ms.saturating_sub(first)).unwrap_or(0);
        (waited >= self.max_latency.as_millis()).then_some(FlushReason::Latency)
    }

    /// When the batch will be due by latency (ms since the epoch), for the batcher's timer.
    pub fn deadline_ms(&self, state: &BatchState) -> Option<i64> {
        let latency = i64::try_from(self.max_latency.as_millis()).unwrap_or(i64::MAX);
        state.first_record_ms.map(|f| f.saturating_add(latency))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy() -> FlushPolicy {
        FlushPolicy { max_latency: Duration::from_millis(500), max_rows: 100, max_bytes: 1000, target_file_size: 400 }
    }

    #[test]
    fn empty_batches_never_flush() {
        assert_eq!(policy().decide(&BatchState::default(), i64::MAX), None);
        assert_eq!(policy().deadline_ms(&BatchState::default()), None);
    }

    #[test]
    fn each_limit_flushes_with_its_reason() {
        let p = policy();
        let base = BatchState { first_record_ms: Some(1_000), rows: 1, bytes: 10, largest_file_bytes: 10 };
        assert_eq!(p.decide(&base, 1_499), None);
        assert_eq!(p.decide(&base, 1_500), Some(FlushReason::Latency));
        assert_eq!(p.deadline_ms(&base), Some(1_500));
        assert_eq!(p.decide(&BatchState { rows: 100, ..base.clone() }, 1_000), Some(FlushReason::Rows));
        assert_eq!(p.decide(&BatchState { bytes: 1000, ..base.clone() }, 1_000), Some(FlushReason::Bytes));
        assert_eq!(
            p.decide(&BatchState { largest_file_bytes: 400, ..base.clone() }, 1_000),
            Some(FlushReason::FileSize)
        );
        // A clock that goes backwards does not flush early.
        assert_eq!(p.decide(&base, 0), None);
    }
}
