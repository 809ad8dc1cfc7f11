//! The change feed: a table's log, tailed from a version, delivered exactly once.
//!
//! One tailed commit walks down these floors: the storage shell's change cursor
//! ([`crate::storage::change_cursor`]) reads the commit's row-level changes (through its
//! change reader and the protocol core's change-feed rules), the [`follow`] loop hands them to a [`sink`], and the sink stores the
//! rows together with its new position; the loop keeps the follower's [`registry`] entry
//! current so maintenance keeps what it still needs.
//!
//! - [`core`]: what every follower loop shares (fault riding, staleness, shaping, lag).
//! - [`turns`]: the one follow loop every follower kind runs (polling, staleness, batching,
//!   delivery, lag, stop), generic over what differs between them (a role).
//! - [`follow`]: a single follower (start position, one position, registration).
//! - [`group_follow`]: a consumer-group member (slices, leases, beats).
//! - [`into_table`]: following into another Delta table, the one way `follow` and `run` do it.
//! - follower registrations and group records are the storage shell's
//!   ([`crate::storage::followers`], [`crate::storage::groups`]).
//! - [`sink`]: the sink trait and its three sinks (JSON lines, a Kafka topic, a Delta table).

internal_mods!(core);
internal_mods!(follow);
internal_mods!(group);
internal_mods!(group_follow);
internal_mods!(into_table);
internal_mods!(sink);
internal_mods!(turns);
