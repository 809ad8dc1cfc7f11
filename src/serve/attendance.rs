//! When a commit group may close before its window ends: once every producer that has been
//! sending is already in it.
//!
//! A producer that waits for each answer (as exactly-once producers do: the next sequence
//! follows the answer) cannot add a second request to a group it is in, so waiting out the
//! rest of the window once all of them have arrived only adds latency and caps each producer
//! at one request per window. The window stays the most a request waits for company.
//!
//! Contract:
//! - A producer is *recent* while its last request arrived within the horizon (four windows,
//!   at least a second). The group may close early when it holds a request of every recent
//!   producer, and no request without a producer id arrived within the horizon (those cannot
//!   be told apart, so their groups run the full window).
//! - With no recent producer the group runs its window (a first request is not a crowd).
//! - Pure: times are passed in.

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

/// Who has been sending to one table.
#[derive(Debug, Default)]
pub(crate) struct Attendance {
    last_seen: HashMap<String, Instant>,
    last_anonymous: Option<Instant>,
    horizon: Duration,
}

/// The producers expected in the group now gathering.
#[derive(Debug)]
pub(crate) struct Roll {
    expected: HashSet<String>,
    present: usize,
    anonymous_recently: bool,
}

impl Attendance {
    /// Attendance for groups of `window`.
    pub(crate) fn new(window: Duration) -> Attendance {
        let horizon = (window * 4).max(Duration::from_secs(1));
        Attendance { horizon, ..Attendance::default() }
    }

    /// Records a request's arrival (`None`: a request without a producer id).
    pub(crate) fn arrived(&mut self, producer: Option<&str>, now: Instant) {
        match producer {
            Some(id) => {
                if let Some(t) = self.last_seen.get_mut(id) {
                    *t = now;
                } else {
                    self.last_seen.insert(id.to_string(), now);
                }
            }
            None => self.last_anonymous = Some(now),
        }
    }

    /// The roll of a group opening at `now`, before its first request is recorded; forgets
    /// producers gone quiet.
    pub(crate) fn open(&mut self, now: Instant) -> Roll {
        let horizon = self.horizon;
        self.last_seen.retain(|_, t| now.saturating_duration_since(*t) <= horizon);
        let anonymous_recently = self.last_anonymous.is_some_and(|t| now.saturating_duration_since(t) <= horizon);
        Roll { expected: self.last_seen.keys().cloned().collect(), present: 0, anonymous_recently }
    }
}

impl Roll {
    /// Marks `producer` present (each once).
    pub(crate) fn present(&mut self, producer: Option<&str>) {
        if let Some(id) = producer {
            if self.expected.remove(id) {
                self.present += 1;
            }
        }
    }

    /// Whether the group can close now: every recent producer is in it.
    pub(crate) fn complete(&self) -> bool {
        self.present > 0 && self.expected.is_empty() && !self.anonymous_recently
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const W: Duration = Duration::from_millis(100);

    #[test]
    fn a_group_closes_once_every_recent_producer_is_in_it() {
        let (mut a, t0) = (Attendance::new(W), Instant::now());
        for p in ["a", "b", "c"] {
            a.arrived(Some(p), t0);
        }
        let mut roll = a.open(t0 + W);
        for p in ["a", "b"] {
            a.arrived(Some(p), t0 + W);
            roll.present(Some(p));
        }
        roll.present(Some("a"));
        assert!(!roll.complete(), "c has not arrived; a counted once");
        roll.present(Some("new"));
        assert!(!roll.complete(), "a newcomer does not stand for c");
        roll.present(Some("c"));
        assert!(roll.complete());
    }

    #[test]
    fn quiet_producers_are_forgotten_after_the_horizon() {
        let (mut a, t0) = (Attendance::new(W), Instant::now());
        a.arrived(Some("gone"), t0);
        a.arrived(Some("here"), t0 + Duration::from_millis(900));
        let mut roll = a.open(t0 + Duration::from_millis(950));
        roll.present(Some("here"));
        assert!(!roll.complete(), "gone is forgotten only once past the horizon");
        let mut roll = a.open(t0 + Duration::from_millis(1500));
        roll.present(Some("here"));
        assert!(roll.complete(), "gone was last seen 1.5 s ago, past the 1 s horizon");
    }

    #[test]
    fn the_horizon_is_four_windows_when_longer_than_a_second() {
        let (mut a, t0) = (Attendance::new(Duration::from_millis(500)), Instant::now());
        a.arrived(Some("slow"), t0);
        a.arrived(Some("fast"), t0 + Duration::from_millis(1900));
        let mut roll = a.open(t0 + Duration::from_millis(1900));
        roll.present(Some("fast"));
        assert!(!roll.complete(), "slow was seen 1.9 s ago, within 2 s");
    }

    #[test]
    fn anonymous_requests_and_first_requests_run_the_full_window() {
        let (mut a, t0) = (Attendance::new(W), Instant::now());
        let roll = a.open(t0);
        assert!(!roll.complete(), "nobody present yet");
        a.arrived(Some("p"), t0);
        a.arrived(None, t0);
        let mut roll = a.open(t0 + W);
        roll.present(Some("p"));
        roll.present(None);
        assert!(!roll.complete(), "an anonymous producer may still be sending");
        let mut roll = a.open(t0 + Duration::from_secs(2));
        roll.present(Some("p"));
        assert!(!roll.complete(), "p is not recent any more: nobody expected, nobody waited for");
    }
}
