//! Turning UniForm on for an existing table: the protocol and metadata of the commit that
//! does it, or why the table cannot take it.
//!
//! What the commit sets: `delta.universalFormat.enabledFormats = iceberg`,
//! `delta.enableIcebergCompatV2 = true`, column mapping in `name` mode when the table had none
//! (every field, nested ones too, gets an id and a physical name equal to its name, so the
//! files already written read as before: by name on the Delta side, through the Iceberg name
//! mapping on the Iceberg side), `delta.enableDeletionVectors = false` when it was on, and a
//! table-features protocol (reader 3, writer 7) listing what the old one had plus
//! `columnMapping` and `icebergCompatV2`. Files already in the table keep their layout: the
//! protocol asks new files only to materialise partition values, and Iceberg readers take an
//! identity partition column missing from a file from its manifest entry.
//!
//! Refused, with the reason: a table deltabus cannot write, icebergCompatV1 on, live files
//! with deletion vectors (icebergCompatV2 forbids them; `deltabus compact` rewrites them), and
//! columns or partition columns Iceberg cannot hold.

use serde_json::json;

use crate::delta::actions::{Metadata, Protocol};
use crate::delta::features::{check_writable, with_features, Feature};
use crate::delta::schema::{ColumnMappingMode, StructField, CM_ID, CM_PHYSICAL_NAME};
use crate::delta::snapshot::Snapshot;
use crate::error::{Error, Result};

/// The protocol and metadata that turn UniForm on for `snapshot`'s table; `None` when it is
/// on already.
///
/// # Errors
/// [`Error::Unsupported`] with the reason the table cannot take it (see the module docs).
pub(crate) fn enable_uniform(snapshot: &Snapshot) -> Result<Option<(Protocol, Metadata)>> {
    let config = &snapshot.metadata.configuration;
    let on = |k: &str| config.iter().any(|(p, v)| p.eq_ignore_ascii_case(k) && v.trim().eq_ignore_ascii_case("true"));
    if super::enabled(config) && on("delta.enableIcebergCompatV2") {
        return Ok(None);
    }
    check_writable(&snapshot.protocol, &snapshot.metadata)?;
    if on("delta.enableIcebergCompatV1") {
        return Err(Error::unsupported("the table has icebergCompatV1 on, which excludes icebergCompatV2"));
    }
    let with_dvs = snapshot.files().iter().filter(|f| f.deletion_vector.is_some()).count();
    if with_dvs > 0 {
        return Err(Error::unsupported(format!(
            "{with_dvs} live files carry deletion vectors, which icebergCompatV2 forbids: rewrite them first (deltabus compact)"
        )));
    }
    let mut schema = snapshot.schema.clone();
    let mut configuration = config.clone();
    let mut mode = snapshot.column_mapping();
    if mode == ColumnMappingMode::None {
        let mut next = 0i64;
        map_by_name(&mut schema.fields, &mut next);
        configuration.insert("delta.columnMapping.mode".into(), "name".into());
        configuration.insert("delta.columnMapping.maxColumnId".into(), next.to_string());
        mode = ColumnMappingMode::Name;
    }
    let mut next = configuration
        .get("delta.columnMapping.maxColumnId")
        .and_then(|v| v.parse::<i64>().ok())
        .unwrap_or(0)
        .max(super::schema::max_field_id(&schema));
    super::nested::assign_nested_ids(&mut schema.fields, mode, &mut next);
    configuration.insert("delta.columnMapping.maxColumnId".into(), next.to_string());
    super::schema::check_convertible(&schema, &snapshot.metadata.partition_columns, mode)?;
    configuration.retain(|k, _| {
        !k.eq_ignore_ascii_case("delta.universalFormat.enabledFormats")
            && !k.eq_ignore_ascii_case("delta.enableIcebergCompatV2")
            && !k.eq_ignore_ascii_case("delta.enableDeletionVectors")
    });
    configuration.insert("delta.universalFormat.enabledFormats".into(), "iceberg".into());
    configuration.insert("delta.enableIcebergCompatV2".into(), "true".into());
    if on("delta.enableDeletionVectors") {
        configuration.insert("delta.enableDeletionVectors".into(), "false".into());
    }
    let protocol = with_features(&snapshot.protocol, &[Feature::ColumnMapping.name()], &["icebergCompatV2"]);
    let metadata = Metadata { schema_string: schema.to_json(), configuration, ..snapshot.metadata.clone() };
    check_writable(&protocol, &metadata)?;
    Ok(Some((protocol, metadata)))
}

/// Gives every field (inside arrays and maps too) an id and a physical name equal to its
/// name (the names files hold).
fn map_by_name(fields: &mut [StructField], next: &mut i64) {
    for f in fields {
        *next += 1;
        f.metadata.insert(CM_ID.into(), json!(*next));
        f.metadata.insert(CM_PHYSICAL_NAME.into(), json!(f.name.clone()));
        for (_, s) in f.data_type.structs_mut() {
            map_by_name(&mut s.fields, next);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::delta::actions::Action;
    use crate::delta::create::{infer_schema, new_table};
    use std::collections::HashMap;

    fn table(properties: &[(&str, &str)], partitions: &[&str]) -> Snapshot {
        let props: HashMap<String, String> = properties.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        let schema = infer_schema(&[r#"{"id":1,"p":"a","s":{"x":1.5}}"#]).unwrap();
        let parts: Vec<String> = partitions.iter().map(|p| p.to_string()).collect();
        let (p, m) = new_table(schema, &parts, &props).unwrap();
        Snapshot::for_new_table(p, m).unwrap()
    }

    #[test]
    fn a_plain_table_gets_name_mapping_by_its_names_and_the_features() {
        let s = table(&[("delta.enableDeletionVectors", "true")], &["p"]);
        let (p, m) = enable_uniform(&s).unwrap().unwrap();
        assert_eq!((p.min_reader_version, p.min_writer_version), (3, 7));
        assert!(p.reader_features.clone().unwrap().iter().any(|f| f == "columnMapping"));
        let w = p.writer_features.clone().unwrap();
        assert!(w.iter().any(|f| f == "icebergCompatV2") && w.iter().any(|f| f == "columnMapping"));
        assert_eq!(m.configuration["delta.universalFormat.enabledFormats"], "iceberg");
        assert_eq!(m.configuration["delta.enableIcebergCompatV2"], "true");
        assert_eq!(m.configuration["delta.enableDeletionVectors"], "false");
        assert_eq!(m.configuration["delta.columnMapping.mode"], "name");
        assert_eq!(m.configuration["delta.columnMapping.maxColumnId"], "4");
        let schema = crate::delta::schema::StructType::parse(&m.schema_string).unwrap();
        for f in &schema.fields {
            assert_eq!(f.physical_name(ColumnMappingMode::Name), f.name, "files keep their column names");
            assert!(f.column_mapping_id().is_some());
        }
        let mut after = s;
        after.apply_commit(1, vec![Action::Protocol(p), Action::Metadata(m)], "1.json").unwrap();
        assert!(enable_uniform(&after).unwrap().is_none(), "on already");
    }

    #[test]
    fn column_mapped_tables_keep_their_ids_and_uniform_ones_are_left_alone() {
        let s = table(&[("delta.columnMapping.mode", "id")], &[]);
        let before = s.schema.clone();
        let (_, m) = enable_uniform(&s).unwrap().unwrap();
        assert_eq!(m.configuration["delta.columnMapping.mode"], "id");
        assert_eq!(crate::delta::schema::StructType::parse(&m.schema_string).unwrap(), before);
        assert!(enable_uniform(&table(&[("delta.universalFormat.enabledFormats", "iceberg")], &[])).unwrap().is_none());
    }

    #[test]
    fn deletion_vectors_in_files_are_refused() {
        let mut s = table(&[("delta.enableDeletionVectors", "true")], &[]);
        let add = crate::delta::actions::parse_action_line(
            r#"{"add":{"path":"a.parquet","partitionValues":{},"size":1,"modificationTime":1,"dataChange":true,
            "stats":"{\"numRecords\":2}","deletionVector":{"storageType":"i","pathOrInlineDv":"wi5b=000010000siXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L","offset":null,"sizeInBytes":40,"cardinality":1}}}"#,
            "1.json",
        )
        .unwrap()
        .unwrap();
        s.apply_commit(1, vec![add], "1.json").unwrap();
        let e = enable_uniform(&s).unwrap_err().to_string();
        assert!(e.contains("1 live files carry deletion vectors"), "{e}");
    }
}
