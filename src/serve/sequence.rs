//! [sync] Which requests of a group commit may land: producers' sequence numbers against the
//! table's `txn` versions.
//!
//! A producer's requests carry its id and a sequence number; the table records the last
//! sequence committed for each producer as a `txn` (appId `deltabus-push:<id>`, version = the
//! sequence), written in the same commit as the rows. A producer never seen by the table
//! starts at 0. Within one group the requests of a producer are taken in sequence order (two
//! requests sent over two connections may arrive in either order):
//! - at or below the table's sequence: already committed (answered, nothing written);
//! - the next expected sequence: taken, and the one after it becomes expected;
//! - the same sequence as one taken in this group (a retry racing its original): answered
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

/// One producer's state while its requests are decided: its id, the next expected sequence,
/// the table's sequence, and the last sequence taken with its request index.
type Producer<'a> = (&'a str, i64, Option<i64>, Option<(i64, usize)>);

/// Decides every request of a group: `producers[i]` is request `i`'s (id, sequence), `None`
/// for an anonymous one; `committed(id)` is the producer's sequence in the table. Returns the
/// verdicts in request order and, per producer taking part, the `txn` version to commit.
pub(crate) fn decide<'a>(
    producers: &[Option<(&'a str, i64)>],
    committed: impl Fn(&str) -> Option<i64>,
) -> (Vec<Verdict>, BTreeMap<&'a str, i64>) {
    let mut verdicts = vec![Verdict::Take; producers.len()];
    let mut order: Vec<usize> = (0..producers.len()).filter(|i| producers[*i].is_some()).collect();
    order.sort_by_key(|i| producers[*i].map(|(id, seq)| (id, seq, *i)));
    let mut txns = BTreeMap::new();
    let mut current: Option<Producer<'_>> = None;
    for i in order {
        let Some((id, seq)) = producers[i] else { continue };
        if current.as_ref().map(|s| s.0) != Some(id) {
            let done = committed(id);
            current = Some((id, done.map_or(0, |c| c + 1), done, None));
        }
        let Some((_, expected, done, last_taken)) = current.as_mut() else { continue };
        verdicts[i] = match (*done, *last_taken) {
            (Some(c), _) if seq <= c => Verdict::Already { committed: c },
            (_, Some((s, j))) if s == seq => Verdict::SameAs(j),
            _ if seq == *expected => {
                *expected += 1;
                *last_taken = Some((seq, i));
                txns.insert(id, seq);
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

    fn table(pairs: &'static [(&'static str, i64)]) -> impl Fn(&str) -> Option<i64> {
        move |id| pairs.iter().find(|(p, _)| *p == id).map(|(_, v)| *v)
    }

    #[test]
    fn next_sequences_are_taken_and_the_txn_is_the_last() {
        let (v, txns) = decide(&[Some(("a", 4)), Some(("b", 0)), None, Some(("a", 5))], table(&[("a", 3)]));
        assert_eq!(v, vec![Verdict::Take; 4]);
        assert_eq!(txns, BTreeMap::from([("a", 5), ("b", 0)]));
    }

    #[test]
    fn arrival_order_within_a_group_does_not_matter() {
        let (v, txns) = decide(&[Some(("a", 2)), Some(("a", 0)), Some(("a", 1))], table(&[]));
        assert_eq!(v, vec![Verdict::Take; 3]);
        assert_eq!(txns[&"a"], 2);
    }

    #[test]
    fn retries_of_committed_sequences_write_nothing() {
        let (v, txns) = decide(&[Some(("a", 3)), Some(("a", 1)), Some(("a", 4))], table(&[("a", 3)]));
        assert_eq!(v, vec![Verdict::Already { committed: 3 }, Verdict::Already { committed: 3 }, Verdict::Take]);
        assert_eq!(txns[&"a"], 4);
    }

    #[test]
    fn a_retry_racing_its_original_shares_its_outcome() {
        let (v, txns) = decide(&[Some(("a", 0)), Some(("a", 0)), Some(("a", 1))], table(&[]));
        assert_eq!(v, vec![Verdict::Take, Verdict::SameAs(0), Verdict::Take]);
        assert_eq!(txns[&"a"], 1);
    }

    #[test]
    fn gaps_name_the_expected_sequence_and_take_nothing_after_them() {
        let (v, txns) = decide(&[Some(("a", 7)), Some(("b", 1))], table(&[("a", 3)]));
        assert_eq!(v, vec![Verdict::Gap { expected: 4 }, Verdict::Gap { expected: 0 }]);
        assert!(txns.is_empty());
        let (v, _) = decide(&[Some(("a", 0)), Some(("a", 2))], table(&[]));
        assert_eq!(v, vec![Verdict::Take, Verdict::Gap { expected: 1 }]);
    }

    #[test]
    fn producer_ids_and_their_app_ids() {
        assert_eq!(producer_app_id("sensor-7").to_string(), "deltabus-push:sensor-7");
        assert!(check_producer_id("Zürich ☃ 1").is_ok());
        assert!(check_producer_id("").is_err() && check_producer_id("a\nb").is_err());
        assert!(check_producer_id(&"x".repeat(257)).is_err());
    }
}
