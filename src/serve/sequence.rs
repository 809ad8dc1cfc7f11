//! [sync] Which requests of a group commit may land: producers' sequence numbers against the
//! table's `txn` versions.
//!
//! A producer's requests carry a sequence range (`first..=last`); the table records the last
//! sequence committed for each producer as a `txn` (its appId: [`Sequenced::app`]), written
//! in the same commit as the rows. A push request is one sequence (`first == last`); a Kafka
//! batch of n records from base sequence b at epoch e is `e << 32 | b ..= e << 32 | (b+n-1)`.
//! A producer never seen by the table starts at 0. Within one group the requests of a
//! producer are taken in sequence order (two requests sent over two connections may arrive in
//! either order):
//! - ending at or below the table's sequence: already committed (answered, nothing written);
//! - starting at the next expected sequence, or a restart (a Kafka epoch's first batch) above
//!   every sequence seen: taken, and the one after its last becomes expected;
//! - starting where one taken in this group starts (a retry racing its original): answered
//!   with the original's outcome;
//! - anything else: a gap, answered with the expected sequence.
//!
//! Requests without a producer are always taken (at-least-once: a retry writes again).

use std::collections::BTreeMap;

use crate::delta::app_id::TxnAppId;

/// The `txn` appId of a push producer (`deltabus-push:<id>`).
pub(crate) fn producer_app_id(producer: &str) -> TxnAppId {
    TxnAppId::PushProducer { producer: producer.to_string() }
}

/// A request's producer and sequence range.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) struct Sequenced {
    /// Whose position the table records.
    pub app: TxnAppId,
    /// `app` as written in the table (the group's key for the producer).
    pub key: String,
    pub first: i64,
    pub last: i64,
    /// The first request of a new run (a Kafka epoch's sequence 0): taken above any
    /// committed sequence, not only right after it.
    pub restarts: bool,
}

impl Sequenced {
    /// A push producer's request `seq`.
    pub(crate) fn push(producer: &str, seq: i64) -> Sequenced {
        Sequenced::range(producer_app_id(producer), seq, seq, false)
    }

    pub(crate) fn range(app: TxnAppId, first: i64, last: i64, restarts: bool) -> Sequenced {
        Sequenced { key: app.to_string(), app, first, last, restarts }
    }
}

/// Why a producer id is refused, if it is: 1 to 256 bytes of UTF-8 without control characters.
pub(crate) fn check_producer_id(id: &str) -> Result<(), String> {
    if id.is_empty() || id.len() > 256 {
        return Err("Producer-Id must be 1 to 256 bytes".into());
    }
    if id.chars().any(char::is_control) {
        return Err("Producer-Id must not hold control characters".into());
    }
    Ok(())
}

/// What happens to one request of a group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// It lands in this commit.
    Take,
    /// The table already holds it (or a later sequence of its producer).
    Already { committed: i64 },
    /// A retry of request `index` of the same group: it shares that request's outcome.
    SameAs(usize),
    /// Out of order: the producer's next sequence is `expected`.
    Gap { expected: i64 },
}

/// One producer's state while its requests are decided: the next expected sequence, the
/// table's sequence, and the first sequence of the last request taken with its index.
type Producer = (i64, Option<i64>, Option<(i64, usize)>);

/// Decides every request of a group: `requests[i]` is request `i`'s producer and range, `None`
/// for an anonymous one; `committed(app)` is the producer's sequence in the table. Returns the
/// verdicts in request order and, per producer taking part, the `txn` version to commit.
pub(crate) fn decide(
    requests: &[Option<&Sequenced>],
    committed: impl Fn(&TxnAppId) -> Option<i64>,
) -> (Vec<Verdict>, BTreeMap<TxnAppId, i64>) {
    let mut verdicts = vec![Verdict::Take; requests.len()];
    let mut order: Vec<usize> = (0..requests.len()).filter(|i| requests[*i].is_some()).collect();
    order.sort_by_key(|i| requests[*i].map(|r| (r.key.as_str(), r.first, *i)));
    let mut txns = BTreeMap::new();
    let mut current: Option<(&str, Producer)> = None;
    for i in order {
        let Some(r) = requests[i] else { continue };
        if current.as_ref().map(|s| s.0) != Some(r.key.as_str()) {
            let done = committed(&r.app);
            current = Some((r.key.as_str(), (done.map_or(0, |c| c + 1), done, None)));
        }
        let Some((_, (expected, done, last_taken))) = current.as_mut() else { continue };
        verdicts[i] = match (*done, *last_taken) {
            (Some(c), _) if r.last <= c => Verdict::Already { committed: c },
            (_, Some((first, j))) if first == r.first => Verdict::SameAs(j),
            _ if r.first <= r.last && (r.first == *expected || (r.restarts && r.first > *expected)) => {
                *expected = r.last + 1;
                *last_taken = Some((r.first, i));
                txns.insert(r.app.clone(), r.last);
                Verdict::Take
            }
            _ => Verdict::Gap { expected: *expected },
        };
    }
    (verdicts, txns)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(pairs: &'static [(&'static str, i64)]) -> impl Fn(&TxnAppId) -> Option<i64> {
        move |app| pairs.iter().find(|(p, _)| producer_app_id(p) == *app).map(|(_, v)| *v)
    }

    /// Push requests: (producer, sequence) pairs.
    fn decide_push(
        requests: &[Option<(&str, i64)>],
        committed: impl Fn(&TxnAppId) -> Option<i64>,
    ) -> (Vec<Verdict>, BTreeMap<String, i64>) {
        let owned: Vec<Option<Sequenced>> = requests.iter().map(|r| r.map(|(id, s)| Sequenced::push(id, s))).collect();
        let refs: Vec<Option<&Sequenced>> = owned.iter().map(Option::as_ref).collect();
        let (v, txns) = decide(&refs, committed);
        let txns = txns
            .into_iter()
            .map(|(app, v)| (app.to_string().trim_start_matches("deltabus-push:").to_string(), v))
            .collect();
        (v, txns)
    }

    #[test]
    fn next_sequences_are_taken_and_the_txn_is_the_last() {
        let (v, txns) = decide_push(&[Some(("a", 4)), Some(("b", 0)), None, Some(("a", 5))], table(&[("a", 3)]));
        assert_eq!(v, vec![Verdict::Take; 4]);
        assert_eq!(txns, BTreeMap::from([("a".to_string(), 5), ("b".to_string(), 0)]));
    }

    #[test]
    fn arrival_order_within_a_group_does_not_matter() {
        let (v, txns) = decide_push(&[Some(("a", 2)), Some(("a", 0)), Some(("a", 1))], table(&[]));
        assert_eq!(v, vec![Verdict::Take; 3]);
        assert_eq!(txns["a"], 2);
    }

    #[test]
    fn retries_of_committed_sequences_write_nothing() {
        let (v, txns) = decide_push(&[Some(("a", 3)), Some(("a", 1)), Some(("a", 4))], table(&[("a", 3)]));
        assert_eq!(v, vec![Verdict::Already { committed: 3 }, Verdict::Already { committed: 3 }, Verdict::Take]);
        assert_eq!(txns["a"], 4);
    }

    #[test]
    fn a_retry_racing_its_original_shares_its_outcome() {
        let (v, txns) = decide_push(&[Some(("a", 0)), Some(("a", 0)), Some(("a", 1))], table(&[]));
        assert_eq!(v, vec![Verdict::Take, Verdict::SameAs(0), Verdict::Take]);
        assert_eq!(txns["a"], 1);
    }

    #[test]
    fn gaps_name_the_expected_sequence_and_take_nothing_after_them() {
        let (v, txns) = decide_push(&[Some(("a", 7)), Some(("b", 1))], table(&[("a", 3)]));
        assert_eq!(v, vec![Verdict::Gap { expected: 4 }, Verdict::Gap { expected: 0 }]);
        assert!(txns.is_empty());
        let (v, _) = decide_push(&[Some(("a", 0)), Some(("a", 2))], table(&[]));
        assert_eq!(v, vec![Verdict::Take, Verdict::Gap { expected: 1 }]);
    }

    #[test]
    fn kafka_batches_are_ranges_and_a_new_epoch_restarts_at_zero() {
        let app = TxnAppId::KafkaProducer { producer_id: 7, topic: "t".into(), partition: 0 };
        let batch = |epoch: i64, base: i64, n: i64| {
            Sequenced::range(app.clone(), epoch << 32 | base, epoch << 32 | (base + n - 1), base == 0)
        };
        let committed = (1_i64 << 32) | 9;
        let at = |c: Option<i64>| move |_: &TxnAppId| c;
        // The next batch, then one that follows it in the same group.
        let (b1, b2) = (batch(1, 10, 5), batch(1, 15, 2));
        let (v, txns) = decide(&[Some(&b2), Some(&b1)], at(Some(committed)));
        assert_eq!(v, vec![Verdict::Take, Verdict::Take]);
        assert_eq!(txns[&app], (1 << 32) | 16);
        // A retried batch, one that overlaps the committed ones, one that skips ahead.
        let (dup, overlap, skip) = (batch(1, 5, 5), batch(1, 8, 4), batch(1, 11, 1));
        let (v, _) = decide(&[Some(&dup), Some(&overlap), Some(&skip)], at(Some(committed)));
        assert_eq!(v[0], Verdict::Already { committed });
        assert_eq!(v[1], Verdict::Gap { expected: committed + 1 });
        assert_eq!(v[2], Verdict::Gap { expected: committed + 1 });
        // A bumped epoch starts over at 0; an older epoch's batch is below the table's.
        let (bumped, stale) = (batch(2, 0, 3), batch(0, 20, 1));
        let (v, txns) = decide(&[Some(&bumped), Some(&stale)], at(Some(committed)));
        assert_eq!(v, vec![Verdict::Take, Verdict::Already { committed }]);
        assert_eq!(txns[&app], (2 << 32) | 2);
        // A new epoch that does not start at 0 is a gap; a fresh producer starts at 0.
        let late = Sequenced::range(app.clone(), 2 << 32 | 4, 2 << 32 | 4, false);
        assert_eq!(decide(&[Some(&late)], at(Some(committed))).0, vec![Verdict::Gap { expected: committed + 1 }]);
        assert_eq!(decide(&[Some(&batch(0, 0, 4))], at(None)).0, vec![Verdict::Take]);
    }

    #[test]
    fn producer_ids_and_their_app_ids() {
        assert_eq!(producer_app_id("sensor-7").to_string(), "deltabus-push:sensor-7");
        assert!(check_producer_id("Zürich ☃ 1").is_ok());
        assert!(check_producer_id("").is_err() && check_producer_id("a\nb").is_err());
        assert!(check_producer_id(&"x".repeat(257)).is_err());
    }
}
