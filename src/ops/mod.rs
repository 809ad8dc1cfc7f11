//! One-shot table operations composed from the protocol core and the storage shell.
//!
//! - [`alter`]: column types widened in place, type widening turned on.
//! - [`cluster_by`]: a table's clustering columns changed or removed.
//! - [`delete`]: deletes by predicate, with deletion vectors or copy-on-write.
//! - [`maintenance`]: VACUUM and log cleanup (keeping what followers need).
//! - [`uniform`]: Iceberg metadata (UniForm), turned on for an existing table when asked.
//! - [`write`]: JSON lines to data files and one commit (`deltabus write`); `write_txn`: that
//!   commit through the exactly-once path when the write carries an app id; `write_lines`:
//!   its input read in chunks of lines and decoded.

internal_mods!(alter);
internal_mods!(cluster_by);
internal_mods!(delete);
internal_mods!(maintenance);
internal_mods!(uniform);
internal_mods!(write);
mod write_lines;
mod write_txn;
