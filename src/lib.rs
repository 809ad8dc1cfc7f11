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
//! - [`feed`]: the change feed: the changes cursor, the follower loops, follower
//!   registrations, consumer groups, and its sinks (lines, a Kafka topic, a Delta table, both
//!   mirrors).
//! - [`write`]: what writers that change rows share: batches, keyed upserts, deletion
//!   vectors and rewrites, the dead-letter table.
//! - [`ingest`]: Kafka ingest: the consume loop, batching, flushes, positions, coordinated
//!   commits.
//! - [`app`]: the composition root of `deltabus run` (pipelines wired from configuration).
//! - [`serve`]: push ingest over HTTP (`deltabus serve`), exactly once per producer.
//! - [`metrics`]: Prometheus metrics and health probes.
//! - [`source`]: the Kafka transport (consumer, producers, the one client builder).
//! - [`decode`]: the decoding room (JSON, Avro, Protobuf payloads into Arrow) and the JSON
//!   value rules.
//! - [`iceberg`]: the Iceberg metadata (UniForm) built from a table's log, synchronous.
//! - [`key_index`]: the key index of keyed tables and its sidecar format, synchronous.
//! - [`beside`]: follower registrations and consumer groups kept beside a table, synchronous.

#![deny(unsafe_code)] // allowed in one module: `source::kafka::batch`, librdkafka's batch consume
#![warn(unreachable_pub)]

/// Declares modules that are the crate's own: public only with the `internal-api` feature,
/// which the crate's tests, benchmarks and fuzz targets turn on.
macro_rules! internal_mods {
    ($($name:ident),* $(,)?) => {$(
        #[cfg(feature = "internal-api")]
        pub mod $name;
        #[cfg(not(feature = "internal-api"))]
        pub(crate) mod $name;
    )*};
}

pub mod cli;
pub mod config;
internal_mods!(
    app,
    beside,
    common,
    compactor,
    decode,
    delta,
    error,
    failpoint,
    feed,
    iceberg,
    ingest,
    key_index,
    metrics,
    ops,
    panic_guard,
    serve,
    source,
    storage,
    write
);

pub use common::heap::set_heap_trimmer;
pub use error::{Error, ErrorKind, Result};
pub use serve::budget::memory_tight;

/// The engine name written into `commitInfo.engineInfo`.
pub const ENGINE_INFO: &str = concat!("deltabus/", env!("CARGO_PKG_VERSION"));
