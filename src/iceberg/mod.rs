//! [sync] UniForm: the Iceberg v2 view of a Delta table, built from its log (no I/O here; the
//! storage shell's `storage/iceberg.rs` writes it).
//!
//! A table with `delta.universalFormat.enabledFormats = iceberg` carries the `icebergCompatV2`
//! writer feature and column mapping; after each commit the storage shell
//! (`storage/iceberg.rs`) writes, under `<table>/metadata/`:
//! - manifests (Avro): one entry per data file with its record count, size, partition tuple
//!   and the column statistics converted from the Delta stats ([`files`]);
//! - a manifest list (Avro) per Iceberg snapshot ([`avro`]);
//! - `v<N>.metadata.json`: schemas with the column-mapping ids as field ids, the partition
//!   spec (identity transforms of the partition columns), snapshots and their log, each
//!   snapshot's summary naming the Delta version it mirrors ([`metadata`]);
//! - `version-hint.text`: `N`, the Hadoop-catalog pointer readers open without a catalog.
//!
//! Contract: the same Parquet files serve both formats; nothing here changes a Delta commit.

internal_mods!(avro, avro_read, enable, files, glue, metadata);

pub(crate) use crate::delta::iceberg_compat::{enabled, nested, schema};

/// The folder of the Iceberg metadata, under the table root.
pub(crate) const METADATA_DIR: &str = "metadata";
/// The Hadoop-catalog pointer to the current `v<N>.metadata.json`.
pub(crate) const VERSION_HINT: &str = "version-hint.text";
/// The snapshot-summary key holding the Delta version an Iceberg snapshot mirrors.
pub(crate) const DELTA_VERSION: &str = "delta-version";

/// The name of metadata file `n`.
pub(crate) fn metadata_file_name(n: u64) -> String {
    format!("v{n}.metadata.json")
}
