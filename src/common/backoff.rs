//! The one backoff: exponentially growing, capped waits between attempts, for every retry in
//! the process (store faults, registry outages, commit races, dead-letter delivery).
//!
//! Attempt `n` (counted from 0) waits `base · 2ⁿ`, never more than `cap`; [`Backoff::jittered`]
//! draws the wait uniformly below that ("full jitter"), for callers racing each other.

use std::time::Duration;

/// Waits growing from `base` to `cap`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Backoff {
    pub base: Duration,
    pub cap: Duration,
}

/// Transient store or sink faults: 20 ms, doubling, at most 1 s.
pub(crate) const FAULTS: Backoff = Backoff { base: Duration::from_millis(20), cap: Duration::from_secs(1) };

/// Commit races (a version taken, a plan lost): 5 ms, doubling, at most 0.5 s, jittered.
pub(crate) const COMMITS: Backoff = Backoff { base: Duration::from_millis(5), cap: Duration::from_millis(500) };

/// An unreachable service (a schema registry): 1 s, doubling, at most 30 s.
pub(crate) const OUTAGES: Backoff = Backoff { base: Duration::from_secs(1), cap: Duration::from_secs(30) };

impl Backoff {
    /// The wait before retry `attempt` (0: the first retry).
    pub(crate) fn delay(&self, attempt: u32) -> Duration {
        self.base.saturating_mul(1u32 << attempt.min(16)).min(self.cap)
    }

    /// A uniformly drawn wait below [`Backoff::delay`], so that racing callers spread out.
    pub(crate) fn jittered(&self, attempt: u32) -> Duration {
        let nanos = u64::try_from(self.delay(attempt).as_nanos()).unwrap_or(u64::MAX);
        // The commit's own randomness source: no extra dependency.
        let r = uuid::Uuid::new_v4().as_u128() as u64;
        Duration::from_nanos(if nanos == 0 { 0 } else { r % nanos })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_double_up_to_the_cap() {
        let ms = |n| FAULTS.delay(n).as_millis();
        assert_eq!([ms(0), ms(1), ms(2), ms(5), ms(6), ms(40)], [20, 40, 80, 640, 1000, 1000]);
        assert_eq!(OUTAGES.delay(0), Duration::from_secs(1));
        assert_eq!(OUTAGES.delay(10), Duration::from_secs(30));
        for n in 0..20 {
            assert!(FAULTS.jittered(n) < FAULTS.delay(n));
        }
        let none = Backoff { base: Duration::ZERO, cap: Duration::ZERO };
        assert_eq!(none.jittered(3), Duration::ZERO);
    }
}
