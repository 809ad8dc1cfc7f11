//! [sync] What deltabus keeps beside a table's log, under `_deltabus/`, for the change feed
//! (no I/O here; `storage/followers.rs` and `storage/groups.rs` read and write it):
//!
//! - [`followers`]: follower registrations (`_deltabus/followers/`) and what maintenance must
//!   keep for them (log files and data files a follower has not read yet).
//! - [`groups`]: consumer groups over a table's change feed (`_deltabus/groups/<group>/`):
//!   their shapes, members and leases, and the rules every member applies to them.

internal_mods!(followers, groups);
