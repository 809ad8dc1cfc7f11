//! # deltabus
//!
//! Exactly-once streaming ingest into, and log tailing out of, Delta Lake tables.
//!
//! ```text
//! source (kafka | delta-log tail) ──► batcher ──► parquet writer ──► committer ──► table
//! http producers ──► serve (group commit, one txn per producer) ─────────►│
//!                                                                        ▲
//! compactor (dataChange=false rewrites) ─────────────────────────────────┘
//! change feed (tail _delta_log from a version) ──► sinks (stdout | kafka | delta table)
//!           all of them stand on: delta/ (protocol core)  +  storage/ (object_store shell)
//! ```
//!
//! - [`delta`]: the protocol, synchronous and without I/O.
//! - [`storage`]: the async shell over `object_store`: opening tables, reading the log and
//!   data files.
//! - [`compactor`]: dataChange=false rewrites of small and DV-heavy files.
//! - [`cli`]: the `deltabus` command line.
//! - [`common`]: types several floors share (flush policy, follower settings, units, clock).
//! - [`config`]: the one configuration loader.
//! - [`error`]: the one error type.
//! - [`failpoint`]: crash points for tests that kill the process between two steps.
//! - [`panic_guard`]: panics of third-party decoders (Parquet) turned into errors.
//! - [`ops`]: one-shot table operations (write, delete, VACUUM, log cleanup).
//! - [`feed`]: the change feed: the changes cursor, the follower loop, follower
//!   registrations, and its sinks (lines, a Kafka topic, a Delta table).
//! - [`pipeline`]: the ingest pipeline (`deltabus run`): batching, commits, dead letters.
//! - [`serve`]: push ingest over HTTP (`deltabus serve`), exactly once per producer.
//! - [`metrics`]: Prometheus metrics and health probes.
//! - [`source`]: record sources (the Kafka consumer and payload decoder).

#![forbid(unsafe_code)]

pub mod cli;
pub mod common;
pub mod compactor;
pub mod config;
pub mod decode;
pub mod delta;
pub mod error;
pub mod failpoint;
pub mod feed;
pub mod metrics;
pub mod ops;
pub mod panic_guard;
pub mod pipeline;
pub mod serve;
pub mod source;
pub mod storage;

pub use error::{Error, ErrorKind, Result};

/// The engine name written into `commitInfo.engineInfo`.
pub const ENGINE_INFO: &str = concat!("deltabus/", env!("CARGO_PKG_VERSION"));
