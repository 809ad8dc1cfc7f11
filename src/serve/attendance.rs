//! When a commit group may close before its window ends: once nobody who has been sending can
//! add to it.
//!
//! A producer that waits for each answer (as exactly-once push producers do: the next
//! sequence follows the answer) cannot add a second request to a group it is in, so waiting
//! out the rest of the window once all of them have arrived only adds latency and caps each
//! producer at one request per window. A Kafka client keeps several produce requests in flight
//! on its connection (five for idempotent librdkafka and Java producers, each holding one
//! partition's batch for librdkafka), but sends them one after another as its partitions'
//! batches come due (librdkafka: one every linger time or so), so a connection counts once it
//! has a batch in the group, like a push producer; its next batches go to the next group,
//! which gathers while this one commits. Waiting for each connection's every slot instead made
//! each group wait for five batches sent a linger time apart: under a steady 40,000 records/s
//! from eight librdkafka producers, groups of 40 requests gathered for 25-30 ms, and the
//! acknowledged p99 swung between 62 and 331 ms from run to run (51-170 ms, and 69 ms or less
//! in six runs of eight, once a batch in the group counts). The window stays the most a request
//! waits for company.
//!
//! Contract:
//! - A sender is *recent* while its last request arrived within the horizon (four windows, at
//!   least a second). The group may close early when every recent sender is done: a push
//!   producer or a Kafka connection once it has a request in the group, and a connection
//!   without one while its batches handed over and not yet answered are as many as it has
//!   ever had ([`InFlight`]), wherever they wait (another table's group). No request without
//!   a sender may have arrived within the horizon (those cannot be
//!   told apart, so their groups run the full window), and someone must be present.
//! - With no recent sender the group runs its window (a push producer's first request is not
//!   a crowd); a new connection counts from its first batch (it is done once that batch is in
//!   the group).
//! - A closed connection is done (and forgotten at the next group).
//! - A sender gone quiet is done: a push producer or a connection not in the group (nor
//!   waiting), whose last request arrived or was answered [`quiet_after`] ago (a quarter of
//!   the window, 5 ms to 1 s). A producer that stopped, or one that sends less often than
//!   that, does not hold every group to the window for the horizon; nor does a connection with
//!   fewer batches in flight than its most that sends nothing more (a producer at the end of
//!   its records). Holding such connections to the window made every group of the producers'
//!   last records wait the whole window: eight flat-out librdkafka producers took 1.83-1.94 s
//!   for 400,000 records at a 100 ms window, 1.21-1.53 s without it.
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

/// How long a sender with nothing in the gathering group (a push producer) or a connection
/// not waiting stays expected after its last request arrived or was answered.
pub(crate) fn quiet_after(window: Duration) -> Duration {
    (window / 4).clamp(Duration::from_millis(5), Duration::from_secs(1))
}

/// Who has been sending to one table.
#[derive(Debug, Default)]
pub(crate) struct Attendance {
    last_seen: HashMap<Who, Seen>,
    last_anonymous: Option<Instant>,
    horizon: Duration,
    quiet: Duration,
}

/// A recent sender: when its last request arrived, when it was last active (a request
/// arrived or was answered), and its counters when it is a connection.
#[derive(Debug, Clone)]
struct Seen {
    arrived: Instant,
    active: Instant,
    connection: Option<Arc<InFlight>>,
    /// A connection with a batch in the group gathering (only in a [`Roll`]).
    in_group: bool,
}

/// The senders expected in the group now gathering: push producers not yet present, and
/// connections (kept, marked once present, so that a window running out can lower their most);
/// each with when it was last active.
#[derive(Debug)]
pub(crate) struct Roll {
    expected: HashMap<Who, Seen>,
    /// Who has a request in the group.
    members: Vec<Who>,
    present: usize,
    anonymous_recently: bool,
    quiet: Duration,
}

impl Attendance {
    /// Attendance for groups of `window`.
    pub(crate) fn new(window: Duration) -> Attendance {
        let horizon = (window * 4).max(Duration::from_secs(1));
        Attendance { horizon, quiet: quiet_after(window), ..Attendance::default() }
    }

    /// Records a request's arrival.
    pub(crate) fn arrived(&mut self, sender: &Sender<'_>, now: Instant) {
        let (who, connection) = match sender {
            Sender::Producer(id) => (Who::Producer((*id).to_string()), None),
            Sender::Connection(c) => (Who::Connection(c.id), Some(Arc::clone(c))),
            Sender::Anonymous => {
                self.last_anonymous = Some(now);
                return;
            }
        };
        self.last_seen.insert(who, Seen { arrived: now, active: now, connection, in_group: false });
    }

    /// Records that the requests of a group's members were answered at `now`.
    pub(crate) fn answered(&mut self, roll: &Roll, now: Instant) {
        for who in &roll.members {
            if let Some(seen) = self.last_seen.get_mut(who) {
                seen.active = now;
            }
        }
    }

    /// The roll of a group opening at `now`, before its first request is recorded; forgets
    /// senders gone quiet.
    pub(crate) fn open(&mut self, now: Instant) -> Roll {
        let horizon = self.horizon;
        self.last_seen.retain(|_, seen| {
            now.saturating_duration_since(seen.arrived) <= horizon
                && !seen.connection.as_ref().is_some_and(|c| c.closed.load(Ordering::Acquire))
        });
        let anonymous_recently = self.last_anonymous.is_some_and(|t| now.saturating_duration_since(t) <= horizon);
        let expected = self.last_seen.iter().map(|(who, seen)| (who.clone(), seen.clone())).collect();
        Roll { expected, members: Vec::new(), present: 0, anonymous_recently, quiet: self.quiet }
    }
}

impl Roll {
    /// Marks `sender` present at `now` (each once), newcomers included.
    pub(crate) fn present(&mut self, sender: &Sender<'_>, now: Instant) {
        match sender {
            Sender::Producer(id) => {
                let who = Who::Producer((*id).to_string());
                if self.expected.remove(&who).is_some() {
                    self.present += 1;
                }
                self.members.push(who);
            }
            Sender::Connection(c) => {
                let who = Who::Connection(c.id);
                let seen = Seen { arrived: now, active: now, connection: Some(Arc::clone(c)), in_group: true };
                self.expected.insert(who.clone(), seen);
                self.present += 1;
                self.members.push(who);
            }
            Sender::Anonymous => {}
        }
    }

    /// The window ran out with connections not waiting: one that sent nothing more within it
    /// has as many batches in flight as it will for now, so that count becomes its most (a
    /// client whose load fell does not hold every later group to the window).
    pub(crate) fn ran_out(&self) {
        for c in self.expected.values().filter_map(|s| s.connection.as_ref()) {
            let handed = c.handed.load(Ordering::Acquire);
            if handed > 0 {
                c.most.fetch_min(handed, Ordering::AcqRel);
            }
        }
    }

    /// When an expected sender becomes quiet: its last activity plus the quiet time.
    fn quiet_at(&self, seen: &Seen) -> Instant {
        seen.active + self.quiet
    }

    /// Whether the group can close at `now`: every recent sender is done.
    pub(crate) fn complete(&self, now: Instant) -> bool {
        self.present > 0
            && !self.anonymous_recently
            && self.expected.values().all(|seen| {
                seen.in_group || seen.connection.as_ref().is_some_and(|c| c.waiting()) || now >= self.quiet_at(seen)
            })
    }

    /// When to look again at a group that is not complete at `now`: once the next expected
    /// sender goes quiet, and at least every quiet time (a connection's batches answered by
    /// another table's group change nothing here).
    pub(crate) fn recheck(&self, now: Instant) -> Instant {
        // A sender's quiet time is at most a quiet time from now (it was active by now).
        let soonest = self.expected.values().map(|seen| self.quiet_at(seen)).filter(|t| *t > now).min();
        soonest.unwrap_or(now + self.quiet)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const W: Duration = Duration::from_millis(100);
    /// Well within the quiet time (25 ms at a 100 ms window).
    const SOON: Duration = Duration::from_millis(2);

    /// `c` hands a batch to the group gathering at `t`: counted in flight until dropped.
    fn sends(a: &mut Attendance, roll: &mut Roll, c: &Arc<InFlight>, t: Instant) -> Handed {
        let handed = c.hand();
        a.arrived(&Sender::Connection(c), t);
        roll.present(&Sender::Connection(c), t);
        handed
    }

    /// A group of `senders` at `at`, answered then.
    fn answered(a: &mut Attendance, senders: &[Sender<'_>], at: Instant) {
        let mut roll = a.open(at);
        for s in senders {
            a.arrived(s, at);
            roll.present(s, at);
        }
        a.answered(&roll, at);
    }

    #[test]
    fn a_group_closes_once_every_recent_producer_is_in_it() {
        let (mut a, t0) = (Attendance::new(W), Instant::now());
        answered(&mut a, &[Sender::Producer("a"), Sender::Producer("b"), Sender::Producer("c")], t0);
        let t = t0 + SOON;
        let mut roll = a.open(t);
        for p in ["a", "b"] {
            a.arrived(&Sender::Producer(p), t);
            roll.present(&Sender::Producer(p), t);
        }
        roll.present(&Sender::Producer("a"), t);
        assert!(!roll.complete(t), "c has not arrived; a counted once");
        roll.present(&Sender::Producer("new"), t);
        assert!(!roll.complete(t), "a newcomer does not stand for c");
        roll.present(&Sender::Producer("c"), t);
        assert!(roll.complete(t));
    }

    #[test]
    fn a_producer_gone_quiet_holds_no_group() {
        let (mut a, t0) = (Attendance::new(W), Instant::now());
        assert_eq!(quiet_after(W), Duration::from_millis(25));
        assert_eq!(quiet_after(Duration::from_millis(4)), Duration::from_millis(5));
        assert_eq!(quiet_after(Duration::from_secs(600)), Duration::from_secs(1));
        answered(&mut a, &[Sender::Producer("busy"), Sender::Producer("stopped")], t0);
        let t = t0 + SOON;
        let mut roll = a.open(t);
        roll.present(&Sender::Producer("busy"), t);
        assert!(!roll.complete(t), "stopped was answered 2 ms ago: it may send again");
        assert_eq!(roll.recheck(t), t0 + Duration::from_millis(25), "looked at again once it is quiet");
        assert!(!roll.complete(t0 + Duration::from_millis(24)));
        assert!(roll.complete(t0 + Duration::from_millis(25)), "quiet for 25 ms: done");
    }

    #[test]
    fn quiet_producers_are_forgotten_after_the_horizon() {
        let (mut a, t0) = (Attendance::new(W), Instant::now());
        a.arrived(&Sender::Producer("gone"), t0);
        let mut first = a.open(t0);
        first.present(&Sender::Producer("gone"), t0);
        a.answered(&first, t0 + Duration::from_millis(940));
        let t = t0 + Duration::from_millis(950);
        a.arrived(&Sender::Producer("here"), t);
        let mut roll = a.open(t);
        roll.present(&Sender::Producer("here"), t);
        assert!(!roll.complete(t), "gone is forgotten only once past the horizon, and was answered 10 ms ago");
        let t = t0 + Duration::from_millis(1500);
        let mut roll = a.open(t);
        roll.present(&Sender::Producer("here"), t);
        assert!(roll.complete(t), "gone was last seen 1.5 s ago, past the 1 s horizon");
    }

    #[test]
    fn the_horizon_is_four_windows_when_longer_than_a_second() {
        let w = Duration::from_millis(500);
        let (mut a, t0) = (Attendance::new(w), Instant::now());
        a.arrived(&Sender::Producer("slow"), t0);
        a.arrived(&Sender::Producer("fast"), t0 + Duration::from_millis(1900));
        let t = t0 + Duration::from_millis(1900);
        let roll = a.open(t);
        assert_eq!(roll.expected.len(), 2, "slow was seen 1.9 s ago, within 2 s");
        let roll = a.open(t0 + Duration::from_millis(2100));
        assert_eq!(roll.expected.len(), 1, "and forgotten past 2 s");
    }

    #[test]
    fn anonymous_requests_and_first_requests_run_the_full_window() {
        let (mut a, t0) = (Attendance::new(W), Instant::now());
        let roll = a.open(t0);
        assert!(!roll.complete(t0 + W), "nobody present yet");
        a.arrived(&Sender::Producer("p"), t0);
        a.arrived(&Sender::Anonymous, t0);
        let t = t0 + W;
        let mut roll = a.open(t);
        roll.present(&Sender::Producer("p"), t);
        roll.present(&Sender::Anonymous, t);
        assert!(!roll.complete(t + W), "an anonymous producer may still be sending");
        let t = t0 + Duration::from_secs(2);
        let mut roll = a.open(t);
        roll.present(&Sender::Producer("p"), t);
        assert!(!roll.complete(t + W), "p is not recent any more: nobody expected, nobody waited for");
    }

    #[test]
    fn a_kafka_connection_is_done_once_it_has_a_batch_in_the_group() {
        let (mut a, t0) = (Attendance::new(W), Instant::now());
        let (c, d) = (InFlight::new(), InFlight::new());
        // Both sent five batches at once before, answered at t0.
        let before: Vec<Handed> = (0..5).flat_map(|_| [c.hand(), d.hand()]).collect();
        answered(&mut a, &[Sender::Connection(&c), Sender::Connection(&d)], t0);
        drop(before);
        let t = t0 + SOON;
        let mut roll = a.open(t);
        let _c1 = sends(&mut a, &mut roll, &c, t);
        assert!(!c.waiting(), "1 of its 5 in flight");
        assert!(!roll.complete(t), "d was answered 2 ms ago and may send");
        let _d1 = sends(&mut a, &mut roll, &d, t);
        assert!(roll.complete(t), "both have a batch in the group: their next ones go to the next group");
    }

    #[test]
    fn a_connection_waiting_on_as_many_batches_as_it_ever_had_is_done() {
        let (mut a, t0) = (Attendance::new(W), Instant::now());
        let (c, p) = (InFlight::new(), Sender::Producer("p"));
        // Three batches once, then answered.
        drop((0..3).map(|_| c.hand()).collect::<Vec<_>>());
        answered(&mut a, &[Sender::Connection(&c), p.clone()], t0);
        let t = t0 + SOON;
        // The connection's batches wait in another table's group; p sends here.
        let mut roll = a.open(t);
        a.arrived(&p, t);
        roll.present(&p, t);
        let mut elsewhere: Vec<Handed> = (0..2).map(|_| c.hand()).collect();
        assert!(!roll.complete(t), "2 of 3 in flight, active 2 ms ago: it may send");
        elsewhere.push(c.hand());
        assert!(roll.complete(t), "3 of 3: it waits for answers before it sends more");
        elsewhere.pop();
        assert!(!roll.complete(t));
        // The window runs out with 2 in flight: 2 is its most from now on.
        roll.ran_out();
        assert!(roll.complete(t));
        drop(elsewhere);
        roll.ran_out();
        assert!(!c.waiting(), "an idle connection keeps its most");
        let _one = c.hand();
        assert!(!c.waiting(), "1 of 2");
        let _two = c.hand();
        assert!(c.waiting(), "a new most counts too");
    }

    #[test]
    fn a_connection_below_its_most_is_done_once_it_sends_nothing_more() {
        // A producer at the end of its records: 2 batches in flight (in another table's
        // group) of the 5 it used to have, and nothing in this one.
        let (mut a, t0) = (Attendance::new(W), Instant::now());
        let (ending, busy) = (InFlight::new(), InFlight::new());
        drop((0..5).map(|_| ending.hand()).collect::<Vec<_>>());
        answered(&mut a, &[Sender::Connection(&ending)], t0);
        let _last = (ending.hand(), ending.hand());
        let t = t0 + SOON;
        let mut roll = a.open(t);
        let _b = sends(&mut a, &mut roll, &busy, t);
        assert!(!ending.waiting(), "2 of 5: it may send more");
        assert!(!roll.complete(t0 + Duration::from_millis(24)));
        assert_eq!(roll.recheck(t), t0 + Duration::from_millis(25), "looked at again once it is quiet");
        assert!(roll.complete(t0 + Duration::from_millis(25)), "nothing more for 25 ms: done, not the window");
    }

    #[test]
    fn a_connection_with_nothing_in_flight_is_done_once_quiet() {
        let (mut a, t0) = (Attendance::new(W), Instant::now());
        let (busy, idle) = (InFlight::new(), InFlight::new());
        let held = (idle.hand(), idle.hand());
        answered(&mut a, &[Sender::Connection(&idle)], t0);
        drop(held);
        let t = t0 + SOON;
        let mut roll = a.open(t);
        let _b = sends(&mut a, &mut roll, &busy, t);
        assert!(!roll.complete(t), "idle was answered 2 ms ago: it may send again");
        assert_eq!(roll.recheck(t), t0 + Duration::from_millis(25));
        assert!(!roll.complete(t0 + Duration::from_millis(24)));
        assert!(roll.complete(t0 + Duration::from_millis(25)), "nothing in flight for 25 ms: done");
    }

    #[test]
    fn connections_and_push_producers_close_a_group_together() {
        let (mut a, t0) = (Attendance::new(W), Instant::now());
        let (c, quiet) = (InFlight::new(), InFlight::new());
        let _held = c.hand();
        a.arrived(&Sender::Connection(&c), t0);
        a.arrived(&Sender::Producer("p"), t0);
        let t = t0 + SOON;
        let mut roll = a.open(t);
        roll.present(&Sender::Connection(&c), t);
        assert!(!roll.complete(t), "p is recent and not here");
        roll.present(&Sender::Producer("p"), t);
        assert!(roll.complete(t));
        // A recent connection with nothing in flight holds the group until it is quiet.
        let _h = quiet.hand();
        a.arrived(&Sender::Connection(&quiet), t);
        drop(_h);
        let mut roll = a.open(t);
        roll.present(&Sender::Connection(&c), t);
        roll.present(&Sender::Producer("p"), t);
        assert!(!roll.complete(t), "the quiet connection may still send");
        quiet.close();
        assert!(roll.complete(t), "a closed connection sends nothing more");
        let mut roll = a.open(t);
        roll.present(&Sender::Producer("p"), t);
        assert!(roll.complete(t), "and is forgotten; c still waits");
    }
}
