//! The write room: what every writer that changes rows shares, below the apps that use it
//! (Kafka ingest, the change feed's mirrors, push ingest, one-shot operations).
//!
//! - [`batch`] [sync]: rows and dead letters per source partition, with the offsets they span
//!   (a Kafka flush's open micro-batch; a mirror's changes of one source commit).
//! - [`packed`] [sync]: rows held packed (Arrow IPC, LZ4) while a batch fills.
//! - [`upsert`]: keyed changes against a table: deletion vectors (or rewrites) for the rows the
//!   keys already have, new files for the upserted rows, one `MERGE` transaction.
//! - [`deletion`]: rows found by predicate or key, deletion vectors, copy-on-write rewrites
//!   and change-data files.
//! - [`schema_change`] [sync]: the one schema-change rule: a table is created or its schema
//!   grown only in the commit of the rows that need it.
//! - [`dead_letters`]: the dead-letter table, appended through the commit path.

internal_mods!(batch);
internal_mods!(dead_letters);
internal_mods!(deletion);
internal_mods!(packed);
internal_mods!(schema_change);
internal_mods!(upsert);
