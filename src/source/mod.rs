//! Sources of records for `deltabus run`.
//!
//! - [`kafka`]: the Kafka source stage: a consumer group's records handed to the pipeline as
//!   plain values. (A Delta table as a source is the change feed, [`crate::feed`].)
//! - [`registry`]: the schema-registry client of Avro topics.

pub mod kafka;
pub mod registry;
