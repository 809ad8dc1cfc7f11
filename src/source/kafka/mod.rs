//! The Kafka source. [`payload`] [sync] decodes raw message bytes into Arrow batches.

pub mod payload;
