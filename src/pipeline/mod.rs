//! The pipelines of `deltabus run`: Kafka partitions, or another table's change feed, into a
//! Delta table, exactly once.
//!
//! One Kafka record walks down: the source stage ([`crate::source::kafka::stage`]) polls it
//! as a plain record → [`decode`] → [`buffer`] → the flush policy → [`flushing`] → [`commit`]
//! → the storage shell's staged commit. Nothing here knows rdkafka.
//!
//! - [`decode`]: a partition's polled records into rows, key deletes and dead letters, through
//!   the decoding room ([`crate::decode`]).
//! - [`buffer`] [sync]: the open micro-batch, per Kafka partition.
//! - [`schema`]: the table as the pipeline sees it (snapshot, decoder, creation, evolution).
//! - [`commit`]: one flush: dead letters, data files, one commit with a txn per partition.
//! - [`upsert`]: the keyed flush: deletion vectors for replaced and deleted keys, new rows.
//! - [`dead_letter`]: the dead-letter destinations (Delta table, Kafka topic).
//! - [`flushing`]: the flush slot: one flush at a time in the background.
//! - [`positions`]: where assigned partitions resume, checked against the broker's watermarks.
//! - [`runner`]: the one consume loop of every Kafka pipeline (group events, seeking, polling,
//!   rate limits, metrics, applying flush outcomes), generic over where rows go.
//! - `ownership` [sync]: the partitions owned and the offsets each accepts.
//! - [`one_table`]: rows into one table (buffer and background flush slot).
//! - [`routed`]: rows routed to tables by a field (`route_by`), with the route-state table.
//! - [`delta_source`]: a pipeline that follows another Delta table.
//! - [`auto_compact`]: the background compactor beside a pipeline.
//! - [`service`]: several pipelines in one process, metrics endpoint, graceful shutdown.

pub mod auto_compact;
pub mod buffer;
pub mod commit;
pub mod coordinated;
pub mod dead_letter;
pub mod decode;
pub mod delta_source;
pub mod file_mirror;
mod flushing;
pub mod mirror;
pub mod one_table;
mod ownership;
pub mod positions;
pub mod routed;
pub mod runner;
pub mod schema;
pub mod service;
pub mod upsert;
