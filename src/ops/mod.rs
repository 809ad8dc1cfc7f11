//! Table operations composed from the protocol core and the storage shell.
//!
//! - [`changes`]: a cursor over the row-level changes of commits (`changes`, `tail`).
//! - [`create`]: new-table metadata and protocol, schema inference from JSON, schema merging.
//! - [`delete`]: deletes by predicate, with deletion vectors or copy-on-write.
//! - [`follow`]: the change feed into another Delta table, exactly once.
//! - [`followers`]: follower registrations, their needs and their health.
//! - [`maintenance`]: VACUUM and log cleanup (keeping what followers need).
//! - [`write`]: JSON lines to data files and one commit (`deltabus write`).

pub mod changes;
pub mod create;
pub mod delete;
pub(crate) mod deletion;
pub mod follow;
pub mod followers;
pub mod maintenance;
pub mod write;
