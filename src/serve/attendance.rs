//! When a commit group may close before its window ends: once nobody who has been sending can
//! add to it.
//!
//! A producer that waits for each answer (as exactly-once push producers do: the next
//! sequence follows the answer) cannot add a second request to a group it is in, so waiting
//! out the rest of the window once all of them have arrived only adds latency and caps each
//! producer at one request per window. A Kafka client keeps several produce requests in flight
//! on its connection (five for idempotent librdkafka and Java producers, each holding one
//! partition's batch for librdkafka): once a connection has as many batches waiting for
//! answers as it has ever had at once, it is waiting too. The window stays the most a request
//! waits for company.
//!
//! Contract:
//! - A sender is *recent* while its last request arrived within the horizon (four windows, at
//!   least a second). The group may close early when every recent sender is done: a push
//!   producer once it has a request in the group, a Kafka connection while its batches handed
//!   over and not yet answered are as many as it has ever had ([`InFlight`]), wherever they
//!   wait. No request without a sender may have arrived within the horizon (those cannot be
//!   told apart, so their groups run the full window), and someone must be present.
//! - With no recent sender the group runs its window (a push producer's first request is not
//!   a crowd); a new connection counts from its first batch (it is waiting once that batch is
//!   all it has in flight).
//! - A closed connection is done (and forgotten at the next group).
//! - A window that runs out lowers the most of each connection with batches in flight to
//!   what it has then ([`Roll::ran_out`]).
//! - Pure but for the connections' counters, which their requests move; times are passed in.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Who sent a request, as far as closing its group goes.
#[derive(Debug, Clone)]
pub(crate) enum Sender<'a> {
    /// A push producer (its id): one request at a time.
    Producer(&'a str),
    /// A Kafka connection: several requests in flight.
    Connection(&'a Arc<InFlight>),
    /// No producer id: cannot be told apart from others.
    Anonymous,
}

/// One Kafka connection's produce batches handed to committers and not yet answered, and the
/// most it has had at once. Shared by the connection and its batches' [`Handed`] guards.
#[derive(Debug)]
pub(crate) struct InFlight {
    id: u64,
    handed: AtomicUsize,
    most: AtomicUsize,
    closed: std::sync::atomic::AtomicBool,
}

static CONNECTIONS: AtomicUsize = AtomicUsize::new(0);

impl InFlight {
    /// The counters of a new connection.
    pub(crate) fn new() -> Arc<InFlight> {
        let id = CONNECTIONS.fetch_add(1, Ordering::Relaxed) as u64;
        Arc::new(InFlight {
            id,
            handed: AtomicUsize::new(0),
            most: AtomicUsize::new(0),
            closed: std::sync::atomic::AtomicBool::new(false),
        })
    }

    /// Counts one batch handed over until the guard is dropped (its request answered).
    pub(crate) fn hand(self: &Arc<Self>) -> Handed {
        let now = self.handed.fetch_add(1, Ordering::AcqRel) + 1;
        self.most.fetch_max(now, Ordering::AcqRel);
        Handed(self.clone())
    }

    /// Marks the connection closed: it sends nothing more.
    pub(crate) fn close(&self) {
        self.closed.store(true, Ordering::Release);
    }

    /// Whether the connection has as many batches waiting as it ever had (it is waiting for
    /// answers before it sends more), or is closed.
    pub(crate) fn waiting(&self) -> bool {
        if self.closed.load(Ordering::Acquire) {
            return true;
        }
        let handed = self.handed.load(Ordering::Acquire);
        handed > 0 && handed >= self.most.load(Ordering::Acquire)
    }
}

/// A batch handed to a committer by a Kafka connection, counted until dropped.
#[derive(Debug)]
pub(crate) struct Handed(Arc<InFlight>);

impl Handed {
    /// The connection's counters.
    pub(crate) fn connection(&self) -> &Arc<InFlight> {
        &self.0
    }
}

impl Drop for Handed {
    fn drop(&mut self) {
        self.0.handed.fetch_sub(1, Ordering::AcqRel);
    }
}

/// A recent sender's name in the attendance.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Who {
    Producer(String),
    Connection(u64),
}

/// Who has been sending to one table.
#[derive(Debug, Default)]
pub(crate) struct Attendance {
    last_seen: HashMap<Who, (Instant, Option<Arc<InFlight>>)>,
    last_anonymous: Option<Instant>,
    horizon: Duration,
}

/// The senders expected in the group now gathering: push producers not yet present (`None`),
/// and connections (done while waiting).
#[derive(Debug)]
pub(crate) struct Roll {
    expected: HashMap<Who, Option<Arc<InFlight>>>,
    present: usize,
    anonymous_recently: bool,
}

impl Attendance {
    /// Attendance for groups of `window`.
    pub(crate) fn new(window: Duration) -> Attendance {
        let horizon = (window * 4).max(Duration::from_secs(1));
        Attendance { horizon, ..Attendance::default() }
    }

    /// Records a request's arrival.
    pub(crate) fn arrived(&mut self, sender: &Sender<'_>, now: Instant) {
        match sender {
            Sender::Producer(id) => {
                if let Some(t) = self.last_seen.get_mut(&Who::Producer((*id).to_string())) {
                    t.0 = now;
                } else {
                    self.last_seen.insert(Who::Producer((*id).to_string()), (now, None));
                }
            }
            Sender::Connection(c) => {
                self.last_seen.insert(Who::Connection(c.id), (now, Some(Arc::clone(c))));
            }
            Sender::Anonymous => self.last_anonymous = Some(now),
        }
    }

    /// The roll of a group opening at `now`, before its first request is recorded; forgets
    /// senders gone quiet.
    pub(crate) fn open(&mut self, now: Instant) -> Roll {
        let horizon = self.horizon;
        self.last_seen.retain(|_, (t, c)| {
            now.saturating_duration_since(*t) <= horizon && !c.as_ref().is_some_and(|c| c.closed.load(Ordering::Acquire))
        });
        let anonymous_recently = self.last_anonymous.is_some_and(|t| now.saturating_duration_since(t) <= horizon);
        let expected = self.last_seen.iter().map(|(who, (_, c))| (who.clone(), c.clone())).collect();
        Roll { expected, present: 0, anonymous_recently }
    }
}

impl Roll {
    /// Marks `sender` present (each once). A connection stays expected (present or not, it is
    /// done only while waiting), newcomers included.
    pub(crate) fn present(&mut self, sender: &Sender<'_>) {
        match sender {
            Sender::Producer(id) => {
                if self.expected.remove(&Who::Producer((*id).to_string())).is_some() {
                    self.present += 1;
                }
            }
            Sender::Connection(c) => {
                self.expected.insert(Who::Connection(c.id), Some(Arc::clone(c)));
                self.present += 1;
            }
            Sender::Anonymous => {}
        }
    }

    /// The window ran out with connections not waiting: one that sent nothing more within it
    /// has as many batches in flight as it will for now, so that count becomes its most (a
    /// client whose load fell does not hold every later group to the window).
    pub(crate) fn ran_out(&self) {
        for c in self.expected.values().flatten() {
            let handed = c.handed.load(Ordering::Acquire);
            if handed > 0 {
                c.most.fetch_min(handed, Ordering::AcqRel);
            }
        }
    }

    /// Whether the group can close now: every recent sender is done.
    pub(crate) fn complete(&self) -> bool {
        self.present > 0
            && !self.anonymous_recently
            && self.expected.values().all(|c| c.as_ref().is_some_and(|c| c.waiting()))
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
            a.arrived(&Sender::Producer(p), t0);
        }
        let mut roll = a.open(t0 + W);
        for p in ["a", "b"] {
            a.arrived(&Sender::Producer(p), t0 + W);
            roll.present(&Sender::Producer(p));
        }
        roll.present(&Sender::Producer("a"));
        assert!(!roll.complete(), "c has not arrived; a counted once");
        roll.present(&Sender::Producer("new"));
        assert!(!roll.complete(), "a newcomer does not stand for c");
        roll.present(&Sender::Producer("c"));
        assert!(roll.complete());
    }

    #[test]
    fn quiet_producers_are_forgotten_after_the_horizon() {
        let (mut a, t0) = (Attendance::new(W), Instant::now());
        a.arrived(&Sender::Producer("gone"), t0);
        a.arrived(&Sender::Producer("here"), t0 + Duration::from_millis(900));
        let mut roll = a.open(t0 + Duration::from_millis(950));
        roll.present(&Sender::Producer("here"));
        assert!(!roll.complete(), "gone is forgotten only once past the horizon");
        let mut roll = a.open(t0 + Duration::from_millis(1500));
        roll.present(&Sender::Producer("here"));
        assert!(roll.complete(), "gone was last seen 1.5 s ago, past the 1 s horizon");
    }

    #[test]
    fn the_horizon_is_four_windows_when_longer_than_a_second() {
        let (mut a, t0) = (Attendance::new(Duration::from_millis(500)), Instant::now());
        a.arrived(&Sender::Producer("slow"), t0);
        a.arrived(&Sender::Producer("fast"), t0 + Duration::from_millis(1900));
        let mut roll = a.open(t0 + Duration::from_millis(1900));
        roll.present(&Sender::Producer("fast"));
        assert!(!roll.complete(), "slow was seen 1.9 s ago, within 2 s");
    }

    #[test]
    fn anonymous_requests_and_first_requests_run_the_full_window() {
        let (mut a, t0) = (Attendance::new(W), Instant::now());
        let roll = a.open(t0);
        assert!(!roll.complete(), "nobody present yet");
        a.arrived(&Sender::Producer("p"), t0);
        a.arrived(&Sender::Anonymous, t0);
        let mut roll = a.open(t0 + W);
        roll.present(&Sender::Producer("p"));
        roll.present(&Sender::Anonymous);
        assert!(!roll.complete(), "an anonymous producer may still be sending");
        let mut roll = a.open(t0 + Duration::from_secs(2));
        roll.present(&Sender::Producer("p"));
        assert!(!roll.complete(), "p is not recent any more: nobody expected, nobody waited for");
    }

    #[test]
    fn a_kafka_connection_is_done_once_it_waits_on_as_many_batches_as_it_ever_had() {
        let (mut a, t0) = (Attendance::new(W), Instant::now());
        let c = InFlight::new();
        // It once had three batches in flight.
        let first: Vec<Handed> = (0..3).map(|_| c.hand()).collect();
        a.arrived(&Sender::Connection(&c), t0);
        drop(first);
        assert!(!c.waiting(), "nothing handed: an idle connection may send at any time");
        let mut roll = a.open(t0 + W);
        let mut now: Vec<Handed> = Vec::new();
        for n in 1..=3 {
            now.push(c.hand());
            a.arrived(&Sender::Connection(&c), t0 + W);
            roll.present(&Sender::Connection(&c));
            assert_eq!(roll.complete(), n == 3, "{n} of its 3 batches in flight");
        }
        // One answered (by another table's group): it may send again.
        now.pop();
        assert!(!roll.complete());
        now.push(c.hand());
        now.push(c.hand());
        assert!(roll.complete(), "a new most: 4 of 4");
        now.pop();
        assert!(!roll.complete(), "3 of a most of 4");
        // The window runs out with 3 in flight: 3 is its most from now on.
        roll.ran_out();
        assert!(roll.complete());
        drop(now);
        roll.ran_out();
        assert!(!c.waiting(), "an idle connection keeps its most");
        let _one = c.hand();
        assert!(!c.waiting(), "1 of 3");
    }

    #[test]
    fn connections_and_push_producers_close_a_group_together() {
        let (mut a, t0) = (Attendance::new(W), Instant::now());
        let (c, quiet) = (InFlight::new(), InFlight::new());
        let _held = c.hand();
        a.arrived(&Sender::Connection(&c), t0);
        a.arrived(&Sender::Producer("p"), t0);
        let mut roll = a.open(t0 + W);
        roll.present(&Sender::Connection(&c));
        assert!(!roll.complete(), "p is recent and not here");
        roll.present(&Sender::Producer("p"));
        assert!(roll.complete());
        // A recent connection with nothing in flight holds the group to its window.
        let _h = quiet.hand();
        a.arrived(&Sender::Connection(&quiet), t0 + W);
        drop(_h);
        let mut roll = a.open(t0 + W);
        roll.present(&Sender::Connection(&c));
        roll.present(&Sender::Producer("p"));
        assert!(!roll.complete(), "the quiet connection may still send");
        quiet.close();
        assert!(roll.complete(), "a closed connection sends nothing more");
        let mut roll = a.open(t0 + W);
        roll.present(&Sender::Producer("p"));
        assert!(roll.complete(), "and is forgotten; c still waits");
    }
}
