//! Schema changes of an existing table: additive merges of incoming schemas (JSON records,
//! another table's rows), and the metadata of the evolved table, where a column-mapped table
//! gives new fields fresh ids and physical names and keeps those of the fields it has.

use super::create::{assign_column_mapping, check_column_names, check_column_names_under};
use crate::delta::actions::Metadata;
use crate::delta::schema::{ColumnMappingMode, DataType, StructField, StructType, CM_ID, CM_PHYSICAL_NAME};
use crate::error::Result;

/// The table's metadata with its schema evolved to `schema` (its current schema with columns
/// added, at the top level or inside structs). On a column-mapped table (name or id mode)
/// every added field, nested ones included, gets a fresh `delta.columnMapping.id` above the
/// table's `delta.columnMapping.maxColumnId` and a fresh physical name (whatever ids or names
/// it carried from elsewhere, such as another table's schema), and the maximum is raised;
/// fields the table already has keep theirs, so data already written reads as before.
pub(crate) fn evolved_metadata(current: &Metadata, mode: ColumnMappingMode, schema: StructType) -> Metadata {
    let mut schema = schema;
    let mut configuration = current.configuration.clone();
    if mode != ColumnMappingMode::None {
        let existing = StructType::parse(&current.schema_string).unwrap_or_default();
        let recorded = configuration.get("delta.columnMapping.maxColumnId").and_then(|v| v.parse::<i64>().ok());
        let mut next = recorded.unwrap_or(0).max(max_column_id(&existing.fields));
        map_new_fields(&existing.fields, &mut schema.fields, &mut next);
        if configuration.get("delta.enableIcebergCompatV2").is_some_and(|v| v.eq_ignore_ascii_case("true")) {
            next = next.max(crate::delta::iceberg_compat::nested::max_nested_id(&existing.fields));
            crate::delta::iceberg_compat::nested::assign_nested_ids(&mut schema.fields, mode, &mut next);
        }
        configuration.insert("delta.columnMapping.maxColumnId".into(), next.to_string());
    }
    Metadata { schema_string: schema.to_json(), configuration, ..current.clone() }
}

/// `incoming` (another table's schema, a mirror's source) with the column mapping of the
/// fields `current` already has (id, physical name, nested ids; by name, inside structs too,
/// those inside arrays and maps included),
/// ready for [`evolved_metadata`]: the columns a table holds keep the names its files use,
/// new ones get fresh ids there.
pub(crate) fn with_current_mapping(current: &StructType, incoming: &StructType) -> StructType {
    fn carry(existing: &[StructField], fields: &mut [StructField]) {
        for f in fields {
            let Some(e) = existing.iter().find(|e| e.name == f.name) else { continue };
            for key in
                [CM_ID, CM_PHYSICAL_NAME, crate::delta::iceberg_compat::nested::NESTED_IDS, "parquet.field.nested.ids"]
            {
                match e.metadata.get(key) {
                    Some(v) => f.metadata.insert(key.into(), v.clone()),
                    None => f.metadata.remove(key),
                };
            }
            let old = e.data_type.structs();
            for (path, new) in f.data_type.structs_mut() {
                if let Some((_, old)) = old.iter().find(|(p, _)| *p == path) {
                    carry(&old.fields, &mut new.fields);
                }
            }
        }
    }
    let mut out = incoming.clone();
    carry(&current.fields, &mut out.fields);
    out
}

/// The largest column-mapping id among `fields` and their nested fields.
fn max_column_id(fields: &[StructField]) -> i64 {
    fields
        .iter()
        .map(|f| {
            let inner = f.data_type.structs().iter().map(|(_, s)| max_column_id(&s.fields)).max().unwrap_or(0);
            f.column_mapping_id().unwrap_or(0).max(inner)
        })
        .max()
        .unwrap_or(0)
}

/// Fresh ids and physical names for the fields of `fields` that `existing` does not have
/// (recursively inside structs both have, those inside arrays and maps too).
fn map_new_fields(existing: &[StructField], fields: &mut [StructField], next: &mut i64) {
    for f in fields {
        match existing.iter().find(|e| e.name == f.name) {
            Some(e) => {
                let old = e.data_type.structs();
                for (path, new) in f.data_type.structs_mut() {
                    match old.iter().find(|(p, _)| *p == path) {
                        Some((_, old)) => map_new_fields(&old.fields, &mut new.fields, next),
                        None => {
                            strip_column_mapping(&mut new.fields);
                            assign_column_mapping(&mut new.fields, next);
                        }
                    }
                }
            }
            None => {
                strip_column_mapping(std::slice::from_mut(f));
                assign_column_mapping(std::slice::from_mut(f), next);
            }
        }
    }
}

fn strip_column_mapping(fields: &mut [StructField]) {
    for f in fields {
        f.metadata.remove(CM_ID);
        f.metadata.remove(CM_PHYSICAL_NAME);
        f.metadata.remove(crate::delta::iceberg_compat::nested::NESTED_IDS);
        f.metadata.remove("parquet.field.nested.ids");
        for (_, s) in f.data_type.structs_mut() {
            strip_column_mapping(&mut s.fields);
        }
    }
}

/// Adds the fields of `incoming` missing from `current` (as nullable columns), at the top
/// level and inside structs both have. Returns `None` when nothing is new.
///
/// Existing columns keep their table type: JSON inference cannot tell a map from a struct or a
/// timestamp from a string, so whether a value fits is left to the decoder, which reports the
/// line and column of a value that does not.
///
/// # Errors
/// [`Error::InvalidArgument`] for a new column whose name needs column mapping on a table
/// without it (on a column-mapped table, name or id mode, any non-empty name is fine).
pub(crate) fn merge_schema(current: &StructType, incoming: &StructType) -> Result<Option<StructType>> {
    merge_fields(current, incoming, column_mapped(current), "")
}

/// Whether `schema` is a column-mapped table's (name or id mode): such a table's fields all
/// carry a physical name and an id (given when the mode is set, never taken away).
pub(crate) fn column_mapped(schema: &StructType) -> bool {
    schema.fields.iter().any(|f| f.metadata.contains_key(CM_PHYSICAL_NAME) || f.metadata.contains_key(CM_ID))
}

fn merge_fields(current: &StructType, incoming: &StructType, mapped: bool, path: &str) -> Result<Option<StructType>> {
    let mut merged = current.clone();
    let mut changed = false;
    for f in &incoming.fields {
        match merged.fields.iter_mut().find(|c| c.name.eq_ignore_ascii_case(&f.name)) {
            None => {
                check_column_names_under(&StructType::new(vec![f.clone()]), mapped, path)?;
                let mut nf = f.clone();
                nf.nullable = true;
                merged.fields.push(nf);
                changed = true;
            }
            Some(c) => {
                if let (DataType::Struct(have), DataType::Struct(new)) = (&c.data_type, &f.data_type) {
                    let inner_path = if path.is_empty() { c.name.clone() } else { format!("{path}.{}", c.name) };
                    if let Some(inner) = merge_fields(have, new, mapped, &inner_path)? {
                        c.data_type = DataType::Struct(Box::new(inner));
                        changed = true;
                    }
                }
            }
        }
    }
    Ok(changed.then_some(merged))
}

/// The dotted paths of the fields `merged` has and `current` does not (nested ones too).
pub(crate) fn added_fields(current: &StructType, merged: &StructType) -> Vec<String> {
    let mut out = Vec::new();
    for f in &merged.fields {
        match current.fields.iter().find(|c| c.name == f.name) {
            None => out.push(f.name.clone()),
            Some(c) => {
                if let (DataType::Struct(have), DataType::Struct(new)) = (&c.data_type, &f.data_type) {
                    out.extend(added_fields(have, new).into_iter().map(|p| format!("{}.{p}", f.name)));
                }
            }
        }
    }
    out
}

/// The schema a copy of another table's rows needs: `current` with the columns `incoming` adds
/// (top level or inside structs, made nullable), `None` when `incoming` fits as it is. Only
/// additive changes are expressible in a copy that already holds rows: a column whose type
/// changed, or a required column the incoming rows no longer have, is refused (the message
/// names the column and both types).
///
/// # Errors
/// The refusal's reason.
pub(crate) fn add_columns(
    current: &StructType,
    incoming: &StructType,
) -> std::result::Result<Option<StructType>, String> {
    let added = add_fields(current, incoming, "")?;
    if let Some(merged) = &added {
        // The columns added must be names the table can hold (a column-mapped source may
        // have names an unmapped target cannot take); the table's own names already are.
        check_column_names(merged, column_mapped(current)).map_err(|e| e.to_string())?;
    }
    Ok(added)
}

fn add_fields(
    current: &StructType,
    incoming: &StructType,
    prefix: &str,
) -> std::result::Result<Option<StructType>, String> {
    let mut merged = current.clone();
    let mut changed = false;
    let path = |name: &str| if prefix.is_empty() { name.to_string() } else { format!("{prefix}.{name}") };
    for f in &incoming.fields {
        match merged.fields.iter_mut().find(|c| c.name == f.name) {
            None => {
                if let Some(c) = current.fields.iter().find(|c| c.name.eq_ignore_ascii_case(&f.name)) {
                    return Err(format!("column {:?} differs from {:?} only in case", path(&f.name), path(&c.name)));
                }
                let mut nf = f.clone();
                nf.nullable = true;
                merged.fields.push(nf);
                changed = true;
            }
            Some(c) if c.data_type == f.data_type => {}
            Some(c) => match (&c.data_type, &f.data_type) {
                (DataType::Struct(a), DataType::Struct(b)) => {
                    if let Some(inner) = add_fields(a, b, &path(&f.name))? {
                        c.data_type = DataType::Struct(Box::new(inner));
                        changed = true;
                    }
                }
                (a, b) => {
                    return Err(format!(
                        "column {:?} changed type from {} to {}",
                        path(&f.name),
                        type_text(a),
                        type_text(b)
                    ))
                }
            },
        }
    }
    for c in &current.fields {
        if !c.nullable && !incoming.fields.iter().any(|f| f.name == c.name) {
            return Err(format!("required column {:?} is no longer in the rows", path(&c.name)));
        }
    }
    Ok(changed.then_some(merged))
}

fn type_text(t: &DataType) -> String {
    match t {
        DataType::Primitive(p) => p.to_string(),
        other => serde_json::to_string(other).unwrap_or_else(|_| "a nested type".into()),
    }
}
