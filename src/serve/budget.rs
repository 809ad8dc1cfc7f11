//! The room requests in flight take of `server.max_buffered`, and whether it runs short.
//!
//! Contract:
//! - Room is counted in bytes: a request takes its share before its bytes are read and holds
//!   it until it is answered (push: [`HOLD_FACTOR`](crate::config::server::HOLD_FACTOR) times
//!   its body; Kafka: see `kafka::frame`).
//! - [`memory_tight`] is true from when a server grants room that leaves less than half of
//!   its `max_buffered` free, until one grants room that leaves at least half. While it is,
//!   the binary returns freed memory to the system at once (else within 100 ms), and its
//!   runtime threads hand back, each time they go idle, the pages they kept whose blocks other
//!   threads freed (the allocator keeps them per thread until the thread allocates again),
//!   which put a server under overload 6–15 MiB past its bound. Doing both always costs
//!   5–10% more server CPU a row in faulting the pages in again, so they are done only when
//!   the bound is near.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use tokio::sync::{AcquireError, OwnedSemaphorePermit, Semaphore};

static TIGHT: AtomicBool = AtomicBool::new(false);

/// Whether a server in this process last granted room leaving less than half its
/// `max_buffered` free.
#[must_use]
pub fn memory_tight() -> bool {
    TIGHT.load(Ordering::Relaxed)
}

/// A server's `max_buffered`, shared by its push and Kafka requests.
#[derive(Debug)]
pub(crate) struct Budget {
    room: Arc<Semaphore>,
    bytes: usize,
}

impl Budget {
    /// A budget of `bytes` (at most what a semaphore counts).
    pub(crate) fn new(bytes: u64) -> Arc<Budget> {
        let bytes = usize::try_from(bytes).unwrap_or(usize::MAX).min(Semaphore::MAX_PERMITS);
        Arc::new(Budget { room: Arc::new(Semaphore::new(bytes)), bytes })
    }

    /// `bytes` of room now, or `None` when there is not that much free.
    pub(crate) fn try_take(&self, bytes: u64) -> Option<OwnedSemaphorePermit> {
        let room = self.room.clone().try_acquire_many_owned(permits(bytes)).ok()?;
        self.note();
        Some(room)
    }

    /// `bytes` of room, waited for (an error only if the semaphore were closed).
    pub(crate) async fn take(&self, bytes: u64) -> Result<OwnedSemaphorePermit, AcquireError> {
        let room = self.room.clone().acquire_many_owned(permits(bytes)).await?;
        self.note();
        Ok(room)
    }

    /// Whether less than half of the budget is free.
    fn tight(&self) -> bool {
        self.room.available_permits() < self.bytes / 2
    }

    fn note(&self) {
        TIGHT.store(self.tight(), Ordering::Relaxed);
    }
}

fn permits(bytes: u64) -> u32 {
    u32::try_from(bytes).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn tight_while_less_than_half_is_free() {
        let budget = Budget::new(1000);
        let small = budget.take(100).await.unwrap();
        assert!(!budget.tight(), "900 of 1000 free");
        let big = budget.try_take(500).unwrap();
        assert!(budget.tight(), "400 of 1000 free");
        assert!(budget.try_take(500).is_none(), "only 400 free");
        drop(big);
        assert!(!budget.tight(), "900 of 1000 free again");
        let again = budget.take(10).await.unwrap();
        assert!(!budget.tight(), "890 of 1000 free");
        drop((small, again));
    }
}
