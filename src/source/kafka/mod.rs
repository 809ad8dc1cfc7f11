//! The Kafka source.
//!
//! - [`avro`]: Confluent-framed Avro payloads into Arrow, writer schemas from the registry.
//! - [`avro_refs`] [sync]: referenced Avro types inlined into a writer schema.
//! - [`protobuf`]: Confluent-framed Protobuf payloads into proto3 JSON, schemas from the registry.
//! - [`payload`] [sync]: raw message bytes into Arrow batches, bad records into dead letters.
//! - [`columns`] [sync]: the optional record columns (key, headers, topic, partition, offset,
//!   timestamp).
//! - [`stage`]: the source as the pipeline sees it: assign, seek, poll plain records.
//! - [`consumer`]: the consumer-group client whose callbacks only send events.
//! - [`dead_letter_topic`]: the producer of a dead-letter topic.
//! - [`header_ids`] [sync]: Apicurio's header-carried schema ids as in-band frames.
//! - [`topics`]: the topics a `topic_pattern` matches.

pub mod avro;
pub mod avro_refs;
pub mod columns;
pub mod consumer;
pub mod dead_letter_topic;
pub mod header_ids;
pub mod payload;
pub mod protobuf;
pub mod stage;
pub mod topics;
