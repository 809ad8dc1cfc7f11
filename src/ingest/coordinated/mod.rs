//! Coordinated commits (`commit.mode = "coordinated"`): many workers, one committer per table.
//!
//! Workers write their Parquet files as in per-worker mode, then send a commit request (the
//! files with their statistics, each partition's offset range and the `txn` version it
//! continues) through a one-partition Kafka control topic. The member of the pipeline's
//! committer group that owns that partition is the committer: it combines the requests of
//! each interval into one commit with one `txn` per partition and answers on the same topic.
//! The table itself keeps it exactly once: a batch is committed only when it continues its
//! partition's `txn` version ([`messages::select`]), decided again after every lost race, so a
//! duplicate request, a zombie committer or a stale worker cannot add a row twice, and a
//! committer that dies at any point loses nothing (requests are re-read by the next one or
//! sent again by their workers).
//!
//! - [`messages`] [sync]: the control records and the two rules.
//! - [`client`]: the worker's side.
//! - [`committer`]: the committer's loop.

internal_mods!(client);
internal_mods!(committer);
internal_mods!(messages);
