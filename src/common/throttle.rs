//! Repeated log lines, once per state change and then at a backoff.
//!
//! A broker that is down makes librdkafka, its error callback and every poll report the same
//! failure many times a second. [`LogThrottle::allow`] lets the first report of a kind through,
//! then one per backoff period (doubling from 1 s to 60 s) carrying how many were held back;
//! [`LogThrottle::recovered`] says whether a kind had failed since it was last fine, so the
//! caller can log the recovery once.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;

const FIRST_BACKOFF: Duration = Duration::from_secs(1);
const MAX_BACKOFF: Duration = Duration::from_secs(60);

#[derive(Debug)]
struct Kind {
    next: Instant,
    backoff: Duration,
    held: u64,
}

/// Per-kind throttling of repeated reports.
#[derive(Debug, Default)]
pub(crate) struct LogThrottle {
    kinds: Mutex<HashMap<String, Kind>>,
}

impl LogThrottle {
    /// Whether to log a report of `kind` now; `Some(n)` with the reports held back since the
    /// last one logged.
    pub(crate) fn allow(&self, kind: &str) -> Option<u64> {
        let now = Instant::now();
        let mut kinds = self.kinds.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        match kinds.get_mut(kind) {
            None => {
                kinds.insert(kind.to_string(), Kind { next: now + FIRST_BACKOFF, backoff: FIRST_BACKOFF, held: 0 });
                Some(0)
            }
            Some(k) if now >= k.next => {
                k.backoff = (k.backoff * 2).min(MAX_BACKOFF);
                k.next = now + k.backoff;
                Some(std::mem::take(&mut k.held))
            }
            Some(k) => {
                k.held += 1;
                None
            }
        }
    }

    /// Forgets `kind`; true when it had been reported (the caller logs the recovery once).
    pub(crate) fn recovered(&self, kind: &str) -> bool {
        self.kinds.lock().unwrap_or_else(std::sync::PoisonError::into_inner).remove(kind).is_some()
    }

    /// Forgets every kind.
    pub(crate) fn clear(&self) {
        self.kinds.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clear();
    }

    /// Whether any kind is currently failing.
    pub(crate) fn failing(&self) -> bool {
        !self.kinds.lock().unwrap_or_else(std::sync::PoisonError::into_inner).is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn repeats_are_held_back_at_a_growing_backoff() {
        let t = LogThrottle::default();
        assert_eq!(t.allow("down"), Some(0));
        for _ in 0..37 {
            assert_eq!(t.allow("down"), None, "38 a second become one line");
        }
        tokio::time::advance(Duration::from_secs(1)).await;
        assert_eq!(t.allow("down"), Some(37));
        tokio::time::advance(Duration::from_secs(1)).await;
        assert_eq!(t.allow("down"), None, "the backoff doubled to 2 s");
        tokio::time::advance(Duration::from_secs(1)).await;
        assert_eq!(t.allow("down"), Some(1));
        assert_eq!(t.allow("other"), Some(0), "kinds are separate");
        assert!(t.recovered("down"));
        assert!(!t.recovered("down"), "a recovery is reported once");
        assert_eq!(t.allow("down"), Some(0), "a new outage is logged at once");
    }
}
