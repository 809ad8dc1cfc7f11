//! The Kafka source.
//!
//! - [`payload`] [sync]: raw message bytes into Arrow batches, bad records into dead letters.
//! - [`columns`] [sync]: the optional record columns (key, headers, topic, partition, offset,
//!   timestamp).
//! - [`consumer`]: the consumer-group client whose callbacks only send events.

pub mod columns;
pub mod consumer;
pub mod payload;
