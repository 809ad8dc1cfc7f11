//! Field ids of list elements and map keys and values under icebergCompatV2 (PROTOCOL.md,
//! "Writer Requirements for IcebergCompatV2"): Iceberg gives every element, key and value an
//! id, which Delta keeps in the metadata of the nearest ancestor struct field, keyed by that
//! field's physical name followed by `element`, `key` or `value` for each level
//! (`col-7.element`, `col-9.value.element`). Delta writes the map under
//! `delta.columnMapping.nested.ids`; older writers used `parquet.field.nested.ids`, which is
//! read too. The ids come after the column-mapping ids and raise
//! `delta.columnMapping.maxColumnId` with them.
//!
//! A struct inside an array or a map is a level of its own: its fields carry their own
//! column-mapping ids and physical names, and the elements, keys and values below them are
//! keyed by those fields' physical names (`col-a.element` holds the element id of the array
//! column `col-a`; the struct inside it has fields `col-x`, whose own list is `col-x.element`).

use serde_json::{json, Map, Value};

use crate::delta::schema::{ColumnMappingMode, DataType, StructField};

/// The metadata key Delta writes the nested ids under.
pub(crate) const NESTED_IDS: &str = "delta.columnMapping.nested.ids";
/// The key older writers used.
const LEGACY_NESTED_IDS: &str = "parquet.field.nested.ids";

/// The paths, below `prefix`, of the elements, keys and values inside `t`.
fn paths(t: &DataType, prefix: &str, out: &mut Vec<String>) {
    match t {
        DataType::Array(a) => {
            let p = format!("{prefix}.element");
            out.push(p.clone());
            paths(&a.element_type, &p, out);
        }
        DataType::Map(m) => {
            let (k, v) = (format!("{prefix}.key"), format!("{prefix}.value"));
            out.push(k.clone());
            out.push(v.clone());
            paths(&m.key_type, &k, out);
            paths(&m.value_type, &v, out);
        }
        _ => {}
    }
}

/// The id of the element, key or value at `path` (`<physical name>.element...`) of `f`.
pub(crate) fn nested_id(f: &StructField, path: &str) -> Option<i64> {
    [NESTED_IDS, LEGACY_NESTED_IDS].iter().find_map(|k| f.metadata.get(*k)?.get(path)?.as_i64())
}

/// Gives every element, key and value of `fields` (and of the structs inside them, in arrays
/// and maps too) without an id the next one above `*next`.
pub(crate) fn assign_nested_ids(fields: &mut [StructField], mode: ColumnMappingMode, next: &mut i64) {
    for f in fields {
        let mut wanted = Vec::new();
        paths(&f.data_type, f.physical_name(mode), &mut wanted);
        if !wanted.is_empty() {
            let mut ids: Map<String, Value> =
                f.metadata.get(NESTED_IDS).and_then(Value::as_object).cloned().unwrap_or_default();
            for p in wanted {
                if let Some(id) = nested_id(f, &p) {
                    ids.insert(p, json!(id));
                } else {
                    *next += 1;
                    ids.insert(p, json!(*next));
                }
            }
            f.metadata.insert(NESTED_IDS.into(), Value::Object(ids));
        }
        for (_, s) in f.data_type.structs_mut() {
            assign_nested_ids(&mut s.fields, mode, next);
        }
    }
}

/// The largest nested id of `fields` (and of the structs inside them).
pub(crate) fn max_nested_id(fields: &[StructField]) -> i64 {
    fields
        .iter()
        .map(|f| {
            let own = [NESTED_IDS, LEGACY_NESTED_IDS]
                .iter()
                .filter_map(|k| f.metadata.get(*k)?.as_object())
                .flat_map(|m| m.values().filter_map(Value::as_i64))
                .max()
                .unwrap_or(0);
            f.data_type.structs().iter().map(|(_, s)| max_nested_id(&s.fields)).fold(own, i64::max)
        })
        .max()
        .unwrap_or(0)
}

/// The first column (dotted path) with an element, key or value without an id.
pub(crate) fn missing_nested_id(fields: &[StructField], mode: ColumnMappingMode, prefix: &str) -> Option<String> {
    for f in fields {
        let name = if prefix.is_empty() { f.name.clone() } else { format!("{prefix}.{}", f.name) };
        let mut wanted = Vec::new();
        paths(&f.data_type, f.physical_name(mode), &mut wanted);
        if wanted.iter().any(|p| nested_id(f, p).is_none()) {
            return Some(name);
        }
        for (path, s) in f.data_type.structs() {
            let inner = if path.is_empty() { name.clone() } else { format!("{name}.{path}") };
            if let Some(m) = missing_nested_id(&s.fields, mode, &inner) {
                return Some(m);
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::delta::schema::{ArrayType, MapType, PrimitiveType, StructType, CM_PHYSICAL_NAME};

    fn long() -> DataType {
        DataType::Primitive(PrimitiveType::Long)
    }

    #[test]
    fn ids_for_every_level_keyed_by_physical_names() {
        let array_of_arrays = DataType::Array(Box::new(ArrayType {
            element_type: DataType::Array(Box::new(ArrayType { element_type: long(), contains_null: true })),
            contains_null: true,
        }));
        let map_of_arrays = DataType::Map(Box::new(MapType {
            key_type: DataType::Primitive(PrimitiveType::String),
            value_type: DataType::Array(Box::new(ArrayType { element_type: long(), contains_null: true })),
            value_contains_null: true,
        }));
        let mut a = StructField::new("a", array_of_arrays, true);
        a.metadata.insert(CM_PHYSICAL_NAME.into(), json!("col-a"));
        let mut m = StructField::new("m", map_of_arrays, true);
        m.metadata.insert(CM_PHYSICAL_NAME.into(), json!("col-m"));
        m.metadata.insert(LEGACY_NESTED_IDS.into(), json!({"col-m.key": 7}));
        let mut s = StructType::new(vec![a, StructField::new("id", long(), true), m]);
        assert_eq!(missing_nested_id(&s.fields, ColumnMappingMode::Name, "").as_deref(), Some("a"));
        let mut next = 10;
        assign_nested_ids(&mut s.fields, ColumnMappingMode::Name, &mut next);
        assert_eq!(next, 14);
        assert_eq!(s.fields[0].metadata[NESTED_IDS], json!({"col-a.element": 11, "col-a.element.element": 12}));
        assert_eq!(nested_id(&s.fields[2], "col-m.key"), Some(7), "ids already given are kept");
        assert_eq!(nested_id(&s.fields[2], "col-m.value.element"), Some(14));
        assert!(!s.fields[1].metadata.contains_key(NESTED_IDS));
        assert_eq!(max_nested_id(&s.fields), 14);
        assert_eq!(missing_nested_id(&s.fields, ColumnMappingMode::Name, ""), None);
        // A struct inside an array: its own fields' lists are keyed by their own physical names.
        let list_of_longs = DataType::Array(Box::new(ArrayType { element_type: long(), contains_null: true }));
        let mut x = StructField::new("x", list_of_longs, true);
        x.metadata.insert(CM_PHYSICAL_NAME.into(), json!("col-x"));
        let structs = DataType::Array(Box::new(ArrayType {
            element_type: DataType::Struct(Box::new(StructType::new(vec![x]))),
            contains_null: true,
        }));
        let mut tags = StructField::new("tags", structs, true);
        tags.metadata.insert(CM_PHYSICAL_NAME.into(), json!("col-tags"));
        tags.metadata.insert(NESTED_IDS.into(), json!({"col-tags.element": 3}));
        let outer = StructType::new(vec![tags]);
        let mut s = StructType::new(vec![StructField::new("o", DataType::Struct(Box::new(outer)), true)]);
        assert_eq!(missing_nested_id(&s.fields, ColumnMappingMode::Name, "").as_deref(), Some("o.tags.element.x"));
        let mut next = 20;
        assign_nested_ids(&mut s.fields, ColumnMappingMode::Name, &mut next);
        assert_eq!(next, 21);
        let DataType::Struct(o) = &s.fields[0].data_type else { panic!("struct") };
        let DataType::Array(a) = &o.fields[0].data_type else { panic!("array") };
        let DataType::Struct(e) = &a.element_type else { panic!("struct element") };
        assert_eq!(nested_id(&e.fields[0], "col-x.element"), Some(21));
        assert_eq!(max_nested_id(&s.fields), 21);
        assert_eq!(missing_nested_id(&s.fields, ColumnMappingMode::Name, ""), None);
    }
}
