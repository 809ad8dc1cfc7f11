//! Which Kafka partitions this member owns, and from which offset each accepts records.
//! Synchronous; the consume loop ([`super::runner`]) owns it.
//!
//! Rules:
//! - A partition is owned from its assignment (at the position its table records, or the
//!   configured start) until its revocation; records of partitions not owned are ignored.
//! - Records below a partition's `accept_from` are already in the table (or were consumed
//!   into the open batch) and are ignored: a second line of defence behind the seek.
//! - A partition that must start again (another worker committed it, or its flush was
//!   aborted) gets a pending seek; until librdkafka accepts the seek, none of its records are
//!   taken (they belong to the old position).
//! - `stop_at_end`: the end each partition had when it was assigned; the run ends when every
//!   owned partition was consumed up to it.

use std::collections::BTreeMap;

use crate::source::kafka::stage::StartOffset;

/// A partition this member owns.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Owned {
    /// A seek not yet accepted by librdkafka.
    seek: Option<i64>,
    /// Offsets below this are already in the table or the open batch.
    accept_from: i64,
}

/// The partitions owned, with `stop_at_end`'s ends when it is on.
#[derive(Debug, Default)]
pub(crate) struct Ownership {
    owned: BTreeMap<i32, Owned>,
    ends: Option<BTreeMap<i32, i64>>,
}

impl Ownership {
    /// `stop_at_end`: ends are recorded at assignment.
    pub(super) fn new(stop_at_end: bool) -> Ownership {
        Ownership { owned: BTreeMap::new(), ends: stop_at_end.then(BTreeMap::new) }
    }

    /// Whether the run stops at the partitions' ends.
    pub(super) fn stops_at_end(&self) -> bool {
        self.ends.is_some()
    }

    /// Takes `positions` (where each assigned partition starts); `marks` are the partitions'
    /// (low, high) watermarks when known, which place `Beginning` and `End` starts.
    pub(super) fn assign(&mut self, positions: &BTreeMap<i32, StartOffset>, marks: &BTreeMap<i32, (i64, i64)>) {
        if let Some(ends) = self.ends.as_mut() {
            ends.extend(marks.iter().map(|(p, (_, high))| (*p, *high)));
        }
        for (p, o) in positions {
            let accept_from = match o {
                StartOffset::At(n) => *n,
                StartOffset::End => marks.get(p).map_or(0, |m| m.1),
                StartOffset::Beginning => marks.get(p).map_or(0, |m| m.0),
            };
            self.owned.insert(*p, Owned { seek: None, accept_from });
        }
    }

    /// Forgets `parts` (revoked).
    pub(super) fn revoke(&mut self, parts: &[i32]) {
        for p in parts {
            self.owned.remove(p);
        }
    }

    /// Every partition owned.
    pub(super) fn partitions(&self) -> Vec<i32> {
        self.owned.keys().copied().collect()
    }

    pub(super) fn is_empty(&self) -> bool {
        self.owned.is_empty()
    }

    pub(super) fn owns(&self, partition: i32) -> bool {
        self.owned.contains_key(&partition)
    }

    /// Whether a record at `offset` of `partition` is taken.
    pub(super) fn accepts(&self, partition: i32, offset: i64) -> bool {
        self.owned.get(&partition).is_some_and(|o| o.seek.is_none() && offset >= o.accept_from)
    }

    /// Records up to `last` of `partition` were taken.
    pub(super) fn consumed(&mut self, partition: i32, last: i64) {
        if let Some(o) = self.owned.get_mut(&partition) {
            o.accept_from = o.accept_from.max(last + 1);
        }
    }

    /// `partition` starts again at `next` (a seek is pending until [`Ownership::retry_seeks`]
    /// gets it accepted). Ignored for a partition not owned.
    pub(super) fn restart(&mut self, partition: i32, next: i64) {
        if let Some(o) = self.owned.get_mut(&partition) {
            o.seek = Some(next);
            o.accept_from = next;
        }
    }

    /// Whether a seek waits for librdkafka.
    pub(super) fn seeks_pending(&self) -> bool {
        self.owned.values().any(|o| o.seek.is_some())
    }

    /// Tries every pending seek with `seek`; the accepted ones are done.
    pub(super) fn retry_seeks<E: std::fmt::Display>(&mut self, mut seek: impl FnMut(i32, i64) -> Result<(), E>) {
        for (p, o) in self.owned.iter_mut() {
            if let Some(target) = o.seek {
                match seek(*p, target) {
                    Ok(()) => o.seek = None,
                    Err(e) => tracing::debug!(partition = p, error = %e, "seek not accepted yet"),
                }
            }
        }
    }

    /// `stop_at_end`: every owned partition consumed up to the end it had when assigned.
    pub(super) fn reached_the_end(&self) -> bool {
        let Some(ends) = &self.ends else { return false };
        !self.owned.is_empty()
            && self.owned.iter().all(|(p, o)| o.seek.is_none() && ends.get(p).is_some_and(|end| o.accept_from >= *end))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(pairs: &[(i32, i64)]) -> BTreeMap<i32, StartOffset> {
        pairs.iter().map(|(p, n)| (*p, StartOffset::At(*n))).collect()
    }

    #[test]
    fn only_owned_partitions_from_their_position_are_taken() {
        let mut o = Ownership::new(false);
        o.assign(&at(&[(0, 10), (1, 0)]), &BTreeMap::new());
        assert!(!o.accepts(0, 9), "below the table's position");
        assert!(o.accepts(0, 10) && o.accepts(1, 0));
        assert!(!o.accepts(2, 100), "not owned");
        o.consumed(0, 14);
        assert!(!o.accepts(0, 14) && o.accepts(0, 15), "consumed records are not taken twice");
        o.consumed(0, 3);
        assert!(!o.accepts(0, 14), "an older poll never moves the position back");
        o.revoke(&[0]);
        assert!(!o.accepts(0, 100) && !o.owns(0), "revoked");
        assert_eq!(o.partitions(), vec![1]);
    }

    #[test]
    fn a_restarted_partition_takes_nothing_until_its_seek_is_accepted() {
        let mut o = Ownership::new(false);
        o.assign(&at(&[(0, 0)]), &BTreeMap::new());
        o.consumed(0, 50);
        o.restart(0, 20);
        assert!(o.seeks_pending());
        assert!(!o.accepts(0, 51) && !o.accepts(0, 20), "records of the old position are refused");
        o.retry_seeks(|_, _| Err("not yet"));
        assert!(o.seeks_pending() && !o.accepts(0, 20));
        let mut asked = Vec::new();
        o.retry_seeks(|p, n| {
            asked.push((p, n));
            Ok::<(), String>(())
        });
        assert_eq!(asked, vec![(0, 20)]);
        assert!(!o.seeks_pending() && o.accepts(0, 20) && !o.accepts(0, 19));
        o.restart(7, 3);
        assert!(!o.owns(7), "restarting a partition not owned does not take it");
    }

    #[test]
    fn starts_at_the_beginning_or_end_are_placed_by_the_watermarks() {
        let mut o = Ownership::new(true);
        let positions = BTreeMap::from([(0, StartOffset::Beginning), (1, StartOffset::End), (2, StartOffset::At(7))]);
        let marks = BTreeMap::from([(0, (5, 9)), (1, (0, 4)), (2, (0, 8))]);
        o.assign(&positions, &marks);
        assert!(!o.accepts(0, 4) && o.accepts(0, 5));
        assert!(!o.accepts(1, 3) && o.accepts(1, 4));
        assert!(!o.reached_the_end());
        o.consumed(0, 8);
        o.consumed(2, 7);
        assert!(o.reached_the_end(), "partition 1 was at its end from the start");
        o.restart(2, 6);
        assert!(!o.reached_the_end(), "a pending seek is not the end");
        assert!(!Ownership::new(false).reached_the_end() && !Ownership::new(true).reached_the_end());
    }
}
