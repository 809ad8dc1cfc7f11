//! The one retry budget table: how often each kind of retry happens before its error reaches
//! the caller. Every retry loop of the process takes its count from here and its waits from
//! [`crate::common::backoff`].
//!
//! | budget | retries of | where | waits |
//! |---|---|---|---|
//! | [`STORE_CALL`] = 4 | a harmless store call (GET, LIST, an overwriting PUT) on a transient fault | every table's store | 20 ms doubling: ≤ 0.3 s |
//! | [`COMMIT_PUTS`] = 50 | the commit PUT of one plan, past versions taken by compatible commits | the committer | 5 ms doubling to 0.5 s, jittered: ≤ 21.6 s |
//! | [`COMMIT_REPLANS`] = 10 | plans in a row whose commit lost (a conflict, its positions taken) | the exactly-once path | as above: ≤ 1.6 s in all between plans |
//! | [`RIDDEN_FAULTS`] = 20 | store faults of a writer whose caller cannot retry (a flush, dead letters, the follow loop, group heartbeats) | flushes, feed | 20 ms doubling to 1 s: ≤ 15.3 s |
//! | [`SCHEMA_CHANGES`] = 5 | schema proposals per decoded chunk before its records become dead letters | ingest | none |
//! | [`ICEBERG_COMMITS`] = 5 | Iceberg metadata commits lost to another writer | UniForm | 40 ms doubling: ≤ 0.6 s |
//! | [`SIDECAR_REBUILDS`] = 3 | key-index sidecars that vanish between catch-up and lookup | upserts | none |
//! | [`CATALOG_SYNCS`] = 8 | AWS Glue registrations that race another registrar | Glue | none |
//!
//! **Worst case, one commit of a Kafka flush** (the deepest nesting): `RIDDEN_FAULTS + 1` rounds
//! × `COMMIT_REPLANS` plans × `COMMIT_PUTS` PUTs = 10,500 commit PUTs (a conditional PUT is
//! sent once: its outcome is decided by reading the version back, each read with
//! `STORE_CALL + 1` sends), and at most 21 × (10 × 21.6 s + 1.6 s) + 15.3 s ≈ 76 min of waits
//! before the pipeline stops with the last error. It is reached only by 10,500 lost races or
//! faults in a row; one lost race costs one replan, one fault ≤ 1 s.
//! Writers whose caller retries on its own (a push producer, a command) ride no store fault:
//! their worst case is 10 × 50 PUTs and ≈ 3.6 min of waits.

/// Retries of a harmless store call after a transient fault.
pub(crate) const STORE_CALL: u32 = 4;

/// PUT attempts of one planned commit, the first included.
pub(crate) const COMMIT_PUTS: u32 = 50;

/// Plans in a row whose commit lost before the writer gives up.
pub(crate) const COMMIT_REPLANS: u32 = 10;

/// Store faults ridden out, with the fault backoff, by writers whose caller cannot retry.
pub(crate) const RIDDEN_FAULTS: u32 = 20;

/// Schema proposals tried per decoded chunk before its remaining records become dead letters.
pub(crate) const SCHEMA_CHANGES: u32 = 5;

/// Iceberg metadata commit attempts, the first included.
pub(crate) const ICEBERG_COMMITS: u32 = 5;

/// Rebuilds of vanished key-index sidecars per lookup.
pub(crate) const SIDECAR_REBUILDS: u32 = 3;

/// Rounds of reading and registering a table in AWS Glue while another registrar moves it.
pub(crate) const CATALOG_SYNCS: u32 = 8;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::common::backoff::FAULTS;
    use std::time::Duration;

    /// The figures of the table above, from the budgets and backoffs themselves.
    #[test]
    fn the_written_worst_case_is_the_budgets_worst_case() {
        let puts = (RIDDEN_FAULTS + 1) * COMMIT_REPLANS * COMMIT_PUTS;
        assert_eq!(puts, 10_500);
        let sum = |n: u32, f: &dyn Fn(u32) -> Duration| (0..n).map(f).sum::<Duration>();
        let commit = crate::common::backoff::COMMITS;
        let per_plan = sum(COMMIT_PUTS - 1, &|n| commit.delay(n));
        let between_plans = sum(COMMIT_REPLANS - 1, &|n| commit.delay(n));
        let faults = sum(RIDDEN_FAULTS, &|n| FAULTS.delay(n));
        assert_eq!(
            (per_plan.as_millis() / 100, between_plans.as_millis() / 100, faults.as_millis() / 100),
            (216, 16, 152)
        );
        let total = (per_plan * COMMIT_REPLANS + between_plans) * (RIDDEN_FAULTS + 1) + faults;
        assert_eq!(total.as_secs() / 60, 76);
        assert!(sum(STORE_CALL, &|n| FAULTS.delay(n)) <= Duration::from_millis(300));
    }
}
