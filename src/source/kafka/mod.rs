//! The Kafka source: the transport only. Records come out as plain values ([`crate::common::record`]); what
//! their bytes mean is [`crate::decode`]'s.
//!
//! - [`stage`]: the source as the pipeline sees it: assign, seek, poll plain records.
//! - [`client`]: the one builder of librdkafka client settings.
//! - [`consumer`]: the consumer-group client whose callbacks only send events.
//! - `batch`: librdkafka's batch consume, the one module with unsafe code.
//! - [`control`]: the one-partition control topic of coordinated commits.
//! - [`dead_letter_topic`]: the producer of a dead-letter topic.
//! - [`topics`]: the topics a `topic_pattern` matches.

mod batch;
internal_mods!(client);
internal_mods!(consumer);
internal_mods!(control);
internal_mods!(dead_letter_topic);
internal_mods!(stage);
internal_mods!(topics);
