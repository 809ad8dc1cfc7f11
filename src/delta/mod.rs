//! The Delta protocol core: synchronous and free of I/O.
//!
//! Everything here works on bytes, listings and Arrow batches that the storage shell has
//! already fetched, so each rule of the protocol is a plain function that unit tests can call.
//!
//! - [`actions`]: every action with its exact fields; commit-file parsing.
//! - [`app_id`]: the typed `txn` appIds of deltabus's positions (Kafka partitions, tables).
//! - [`schema`], [`arrow_schema`]: the schema language and its Arrow mapping.
//! - [`properties`]: typed table properties with Spark's defaults.
//! - [`create`]: new-table metadata and protocol, schema inference from JSON.
//! - [`evolve`]: schema merging and the metadata of an evolved (column-mapped) table.
//! - [`iceberg_compat`]: what icebergCompatV2 asks of a table: nested column-mapping ids and a
//!   schema Iceberg can represent.
//! - [`row_keys`]: the canonical key of a row (keyed ingestion, mirrors, the key index).
//! - [`features`]: protocol validation and the reader-feature check.
//! - [`clustering`]: clustered tables: the `delta.clustering` domain and its columns' rules.
//! - [`commit_plan`]: what a commit carries besides its actions (append-only, in-commit
//!   timestamps, row ids), decided before it is written.
//! - [`log_segment`]: `_delta_log` names and the files a version needs.
//! - [`last_checkpoint`]: the `_last_checkpoint` hint and its checksum.
//! - [`replay`], [`snapshot`]: reconciling actions into table state.
//! - [`checkpoint_read`], [`checkpoint_write`]: checkpoint rows to actions and back.
//! - [`dv`], [`z85`]: deletion vectors.
//! - [`retention`]: what maintenance may delete.
//! - [`paths`]: path containment for paths read from a log.
//! - [`scan`]: data-file batches to logical rows.
//! - [`predicate`], [`predicate_types`]: row predicates, and their literals checked against the schema;
//!   `predicate_variant`: paths inside variant columns as columns to compare.
//! - [`arrow_value`]: Arrow values as JSON; [`json_rows`]: rows as JSON text, written directly.
//! - [`parquet_footer`], [`parquet_pages`]: Parquet footers and page headers checked before
//!   the Parquet decoder trusts them.
//! - `test_rng` [tests only]: the seeded numbers of the property tests (here, the lowest floor,
//!   so every module's tests may use it).

internal_mods!(actions);
internal_mods!(app_id);
internal_mods!(arrow_schema);
internal_mods!(arrow_value);
internal_mods!(change_feed);
internal_mods!(clustering);
internal_mods!(checkpoint_read);
internal_mods!(checkpoint_write);
internal_mods!(commit_plan);
internal_mods!(conflict);
internal_mods!(create);
internal_mods!(dv);
internal_mods!(evolve);
internal_mods!(features);
internal_mods!(generated);
internal_mods!(iceberg_compat);
internal_mods!(json_rows);
internal_mods!(last_checkpoint);
internal_mods!(log_segment);
internal_mods!(parquet_footer);
internal_mods!(parquet_pages);
internal_mods!(partition);
internal_mods!(paths);
internal_mods!(predicate);
internal_mods!(predicate_types);
mod predicate_variant;
internal_mods!(properties);
internal_mods!(replay);
internal_mods!(retention);
internal_mods!(row_keys);
internal_mods!(scan);
internal_mods!(schema);
internal_mods!(snapshot);
internal_mods!(stats);
internal_mods!(transaction);
internal_mods!(type_widening);
internal_mods!(z85);
#[cfg(test)]
pub(crate) mod test_rng;
