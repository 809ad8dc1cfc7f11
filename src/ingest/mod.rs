//! Kafka ingest, the pipelines of `deltabus run` that read Kafka: partitions into Delta
//! tables, exactly once.
//!
//! One Kafka record walks down: the source stage ([`crate::source::kafka::stage`]) polls it
//! as a plain record → [`decode`] → the batch ([`crate::write::batch`]) → the flush policy → [`flushing`] → [`commit`]
//! → the storage shell's staged commit. Nothing here knows rdkafka.
//!
//! - [`decode`]: a partition's polled records into rows, key deletes and dead letters, through
//!   the decoding room ([`crate::decode`]).
//! - the open micro-batch per Kafka partition and the keyed flush's planner live in the
//!   write room ([`crate::write::batch`], [`crate::write::upsert`]), shared with the mirrors.
//! - [`schema`]: the table as the pipeline sees it (snapshot, decoder, creation, evolution).
//! - [`commit`]: one flush: dead letters, data files, one commit with a txn per partition.
//! - [`dead_letter`]: the dead-letter destinations (the table of [`crate::write::dead_letters`],
//!   a Kafka topic).
//! - [`flushing`]: the flush slot: one flush at a time in the background.
//! - [`positions`]: where assigned partitions resume, checked against the broker's watermarks.
//! - [`runner`]: the one consume loop of every Kafka pipeline (group events, seeking, polling,
//!   rate limits, metrics, applying flush outcomes), generic over where rows go.
//! - `ownership` [sync]: the partitions owned and the offsets each accepts.
//! - [`one_table`]: rows into one table (buffer and background flush slot).
//! - [`routed`]: rows routed to tables by a field (`route_by`), with the route-state table.
//! - [`coordinated`]: coordinated commits (the control records and the take-only-what-continues
//!   rule, the worker's client, the committer's loop).
//!
//! The process around the pipelines (several pipelines, Delta sources, metrics, shutdown) is
//! the composition root's: [`crate::app`].

internal_mods!(commit);
internal_mods!(coordinated);
internal_mods!(dead_letter);
internal_mods!(decode);
mod flushing;
internal_mods!(one_table);
mod ownership;
internal_mods!(positions);
internal_mods!(routed);
internal_mods!(runner);
internal_mods!(schema);
