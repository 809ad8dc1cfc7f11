//! The one clock. Every reading of wall time in deltabus — commit and file timestamps, flush
//! deadlines, retention cutoffs, staleness, registrations — goes through a [`Clock`], which
//! travels with the storage options of every table ([`crate::storage::StorageOptions`]) and
//! is handed to the pipeline runner.
//!
//! - [`Clock::System`]: the system's wall clock (what deltabus runs on).
//! - [`Clock::tokio`]: wall time that moves with tokio's clock. Under tokio's paused time
//!   (`tokio::time::pause`) it stands still until the test advances it, so tests of deadlines,
//!   backoffs and staleness run in no real time and never race.
//! - [`Clock::manual`]: a settable reading for synchronous tests.
//!
//! Durations between two moments (flush timings, throttles) are measured with
//! `tokio::time::Instant`, which follows the same paused time.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

/// A source of wall time, in milliseconds since the epoch.
#[derive(Debug, Clone, Default)]
pub enum Clock {
    #[default]
    System,
    /// `start_ms` at tokio's `start`, advancing with tokio's clock.
    Tokio { start_ms: i64, start: tokio::time::Instant },
    /// A reading set by the test.
    Manual(Arc<AtomicI64>),
}

impl Clock {
    /// Wall time following tokio's clock from now on (needs a tokio runtime).
    pub fn tokio() -> Clock {
        Clock::Tokio { start_ms: chrono::Utc::now().timestamp_millis(), start: tokio::time::Instant::now() }
    }

    /// A clock reading `ms` until [`Clock::set`] or [`Clock::advance`] moves it.
    pub fn manual(ms: i64) -> Clock {
        Clock::Manual(Arc::new(AtomicI64::new(ms)))
    }

    /// Now, in milliseconds since the epoch.
    pub fn now_ms(&self) -> i64 {
        match self {
            Clock::System => chrono::Utc::now().timestamp_millis(),
            Clock::Tokio { start_ms, start } => {
                start_ms.saturating_add(i64::try_from(start.elapsed().as_millis()).unwrap_or(i64::MAX))
            }
            Clock::Manual(ms) => ms.load(Ordering::Relaxed),
        }
    }

    /// Sets a manual clock (other clocks ignore it).
    pub fn set(&self, ms: i64) {
        if let Clock::Manual(now) = self {
            now.store(ms, Ordering::Relaxed);
        }
    }

    /// Moves a manual clock forward (other clocks ignore it).
    pub fn advance(&self, ms: i64) {
        if let Clock::Manual(now) = self {
            now.fetch_add(ms, Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manual_clocks_move_only_when_told() {
        let c = Clock::manual(1_000);
        assert_eq!(c.now_ms(), 1_000);
        c.advance(500);
        assert_eq!(c.clone().now_ms(), 1_500, "clones share the reading");
        c.set(7);
        assert_eq!(c.now_ms(), 7);
    }

    #[tokio::test(start_paused = true)]
    async fn tokio_clocks_follow_paused_time() {
        let c = Clock::tokio();
        let t0 = c.now_ms();
        tokio::time::advance(std::time::Duration::from_secs(3600)).await;
        assert_eq!(c.now_ms() - t0, 3_600_000);
    }
}
