//! The ingest pipeline's decisions (for `deltabus run`, issue 4): when a micro-batch is
//! flushed, and how a source position is named in the table's `txn` actions.
//!
//! - [`flush`] [sync]: the flush policy, a pure function of the batch state and `now`.
//! - [`app_id`] [sync]: the typed `txn` appId of a Kafka partition or a source table.

pub mod app_id;
pub mod flush;
