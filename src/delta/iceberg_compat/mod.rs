//! What `icebergCompatV2` asks of a Delta table (PROTOCOL.md "Iceberg Compatibility V2"): every
//! nested column carries a column-mapping id ([`nested`]), and the schema and partitioning are
//! ones Iceberg can represent ([`schema`]: the Delta schema as Iceberg's, with field ids).
//! The Iceberg metadata files written beside the log are [`crate::iceberg`]'s.

internal_mods!(nested, schema);

use std::collections::HashMap;

/// Whether a table's configuration asks for Iceberg metadata
/// (`delta.universalFormat.enabledFormats` names `iceberg`).
pub(crate) fn enabled(configuration: &HashMap<String, String>) -> bool {
    configuration
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case("delta.universalFormat.enabledFormats"))
        .is_some_and(|(_, v)| v.split(',').any(|f| f.trim().eq_ignore_ascii_case("iceberg")))
}
