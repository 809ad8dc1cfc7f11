//! The Delta protocol core: synchronous and free of I/O.
//!
//! Everything here works on bytes, listings and Arrow batches that the storage shell has
//! already fetched, so each rule of the protocol is a plain function that unit tests can call.
//!
//! - [`actions`]: every action with its exact fields; commit-file parsing.
//! - [`app_id`]: the typed `txn` appIds of deltabus's positions (Kafka partitions, tables).
//! - [`schema`], [`arrow_schema`]: the schema language and its Arrow mapping.
//! - [`properties`]: typed table properties with Spark's defaults.
//! - [`json_schema`]: a registry's JSON Schema as a Delta schema.
//! - [`json_values`]: how a JSON value lands in a column (exactly, or refused by field).
//! - [`create`]: new-table metadata and protocol, schema inference from JSON, schema merging.
//! - [`features`]: protocol validation and the reader-feature check.
//! - [`commit_plan`]: what a commit carries besides its actions (append-only, in-commit
//!   timestamps, row ids), decided before it is written.
//! - [`log_segment`]: `_delta_log` names and the files a version needs.
//! - [`last_checkpoint`]: the `_last_checkpoint` hint and its checksum.
//! - [`replay`], [`snapshot`]: reconciling actions into table state.
//! - [`checkpoint_read`], [`checkpoint_write`]: checkpoint rows to actions and back.
//! - [`dv`], [`z85`]: deletion vectors.
//! - [`retention`], [`followers`]: what maintenance may delete, and what followers need.
//! - [`paths`]: path containment for paths read from a log.
//! - [`scan`]: data-file batches to logical rows.
//! - [`predicate`], [`predicate_types`]: row predicates, and their literals checked against the schema.
//! - [`arrow_value`]: Arrow values as JSON.
//! - [`parquet_footer`], [`parquet_pages`]: Parquet footers and page headers checked before
//!   the Parquet decoder trusts them.

pub mod actions;
pub mod app_id;
pub mod arrow_schema;
pub mod arrow_value;
pub mod change_feed;
pub mod checkpoint_read;
pub mod checkpoint_write;
pub mod commit_plan;
pub mod conflict;
pub mod create;
pub mod dv;
pub mod features;
pub mod followers;
pub mod generated;
pub mod groups;
pub mod json_schema;
pub mod json_text;
pub mod json_values;
pub mod last_checkpoint;
pub mod log_segment;
pub mod parquet_footer;
pub mod parquet_pages;
pub mod partition;
pub mod paths;
pub mod predicate;
pub mod predicate_types;
pub mod properties;
pub mod replay;
pub mod retention;
pub mod scan;
pub mod schema;
pub mod snapshot;
pub mod stats;
pub mod transaction;
pub mod z85;
