//! The async storage shell over `object_store`: opening a table location, reading its log
//! into a [`Snapshot`](crate::delta::snapshot::Snapshot), and reading its data files.
//!
//! Contract: every path that comes out of a log goes through
//! [`resolve_in_table`](crate::delta::paths::resolve_in_table) before it becomes an object
//! path, so a damaged or hostile log cannot make deltabus read outside the table root.

mod checkpoint_writer;
mod data_reader;
mod location;
mod log_reader;

pub use data_reader::FileRows;
pub use location::{StorageOptions, Table};
pub use log_reader::CommitRecord;
