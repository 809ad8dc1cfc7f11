//! Crash points: named steps where a test makes the process die as if killed with -9, to
//! prove that every step of a commit can be interrupted without losing or duplicating a row.
//!
//! Disarmed unless [`arm`] is called (the binary does so from `DELTABUS_CRASH_AT`); a disarmed
//! [`hit`] costs one atomic load. The process aborts (no destructors, no buffered output
//! flushed), which is what kill -9 leaves behind.
//!
//! Points: `commit.before_put` (files staged, commit not sent), `commit.after_put` (the commit
//! PUT returned, its answer not yet used), `commit.before_checkpoint` (the commit landed, the
//! checkpoint not written), `checkpoint.before_last_checkpoint` (checkpoint parts written,
//! `_last_checkpoint` not), `follow.before_registration` (a follower delivered, its position
//! not registered on the source), `routed.between_tables` (a routed flush committed to one
//! table, not yet to the next or to the route state), `coordinated.request_sent` (a worker
//! sent its commit request, no answer yet), `coordinated.committed` (the committer's commit
//! landed, no answer sent), `coordinated.answered` (answers sent, the control offset not
//! committed), `push.files_written` (a push group's files written, its commit not sent),
//! `push.committed` (a push group's commit landed, no producer answered),
//! `commit.before_uniform` (a UniForm commit landed, its Iceberg metadata not written),
//! `uniform.before_metadata` (manifests written, the metadata file not),
//! `uniform.before_glue` (the Iceberg metadata written, the Glue pointer not moved).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

use crate::error::{Error, Result};

static ARMED: OnceLock<(String, u64)> = OnceLock::new();
static HITS: AtomicU64 = AtomicU64::new(0);

/// Every crash point's name.
pub(crate) const POINTS: &[&str] = &[
    "commit.before_put",
    "commit.after_put",
    "commit.before_checkpoint",
    "commit.before_uniform",
    "uniform.before_metadata",
    "uniform.before_glue",
    "checkpoint.before_last_checkpoint",
    "follow.before_registration",
    "routed.between_tables",
    "coordinated.request_sent",
    "coordinated.committed",
    "coordinated.answered",
    "push.files_written",
    "push.committed",
];

/// Arms one crash point: `name` (die at its first hit) or `name:n` (at its n-th hit).
///
/// # Errors
/// [`Error::InvalidArgument`] for an unknown point or a bad count.
pub(crate) fn arm(spec: &str) -> Result<()> {
    let (name, n) = match spec.split_once(':') {
        Some((name, n)) => {
            let n = n.parse::<u64>().ok().filter(|n| *n > 0);
            (
                name,
                n.ok_or_else(|| {
                    Error::InvalidArgument(format!("crash point {spec:?}: the count must be a positive integer"))
                })?,
            )
        }
        None => (spec, 1),
    };
    if !POINTS.contains(&name) {
        return Err(Error::InvalidArgument(format!("unknown crash point {name:?}; known: {}", POINTS.join(", "))));
    }
    let _ = ARMED.set((name.to_string(), n));
    Ok(())
}

/// Passes a crash point: aborts the process when it is the armed one's n-th hit.
pub(crate) fn hit(name: &str) {
    if let Some((armed, n)) = ARMED.get() {
        if armed == name && HITS.fetch_add(1, Ordering::SeqCst) + 1 == *n {
            crate::common::say(&format!("deltabus: crash point {name} reached; aborting"));
            std::process::abort();
        }
    }
}
