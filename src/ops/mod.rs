//! Table operations composed from the protocol core and the storage shell.
//!
//! - [`create`]: new-table metadata and protocol, schema inference from JSON, schema merging.
//! - [`write`]: JSON lines to data files and one commit (`deltabus write`).

pub mod create;
pub mod write;
