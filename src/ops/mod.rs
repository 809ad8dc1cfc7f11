//! Table operations composed from the protocol core and the storage shell.
//!
//! - [`changes`]: a cursor over the row-level changes of commits (`changes`, `tail`).
//! - [`create`]: new-table metadata and protocol, schema inference from JSON, schema merging.
//! - [`delete`]: deletes by predicate, with deletion vectors or copy-on-write.
//! - [`follow`]: the change feed into another Delta table, exactly once.
//! - [`maintenance`]: VACUUM and log cleanup.
//! - [`write`]: JSON lines to data files and one commit (`deltabus write`).

pub mod changes;
pub mod create;
pub mod delete;
pub mod follow;
pub mod maintenance;
pub mod write;
