//! Sources of records for `deltabus run`.
//!
//! - [`kafka`]: the Kafka source stage: a consumer group's records handed to the pipeline as
//!   plain values. (A Delta table as a source is the change feed, [`crate::feed`].)

internal_mods!(kafka);
