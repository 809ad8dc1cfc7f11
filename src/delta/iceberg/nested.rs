//! Field ids of list elements and map keys and values under icebergCompatV2 (PROTOCOL.md,
//! "Writer Requirements for IcebergCompatV2"): Iceberg gives every element, key and value an
//! id, which Delta keeps in the metadata of the nearest ancestor struct field, keyed by that
//! field's physical name followed by `element`, `key` or `value` for each level
//! (`col-7.element`, `col-9.value.element`). Delta writes the map under
//! `delta.columnMapping.nested.ids`; older writers used `parquet.field.nested.ids`, which is
//! read too. The ids come after the column-mapping ids and raise
//! `delta.columnMapping.maxColumnId` with them.
//!
//! Structs inside arrays or maps are not supported here (their fields would need ids and
//! physical names of their own): [`struct_in_collection`] names the column for a refusal.

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

/// Gives every element, key and value of `fields` (and of structs inside them) without an
/// id the next one above `*next`.
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
        if let DataType::Struct(s) = &mut f.data_type {
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
            match &f.data_type {
                DataType::Struct(s) => own.max(max_nested_id(&s.fields)),
                _ => own,
            }
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
        if let DataType::Struct(s) = &f.data_type {
            if let Some(m) = missing_nested_id(&s.fields, mode, &name) {
                return Some(m);
            }
        }
    }
    None
}

/// The first column (dotted path) holding a struct inside an array or a map.
pub(crate) fn struct_in_collection(fields: &[StructField], prefix: &str) -> Option<String> {
    fn inside(t: &DataType) -> bool {
        match t {
            DataType::Struct(_) => true,
            DataType::Array(a) => inside(&a.element_type),
            DataType::Map(m) => inside(&m.key_type) || inside(&m.value_type),
            _ => false,
        }
    }
    for f in fields {
        let name = if prefix.is_empty() { f.name.clone() } else { format!("{prefix}.{}", f.name) };
        match &f.data_type {
            DataType::Array(a) if inside(&a.element_type) => return Some(name),
            DataType::Map(m) if inside(&m.key_type) || inside(&m.value_type) => return Some(name),
            DataType::Struct(s) => {
                if let Some(n) = struct_in_collection(&s.fields, &name) {
                    return Some(n);
                }
            }
            _ => {}
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
        assert_eq!(struct_in_collection(&s.fields, ""), None);
        let structs = DataType::Array(Box::new(ArrayType {
            element_type: DataType::Struct(Box::new(StructType::new(vec![StructField::new("x", long(), true)]))),
            contains_null: true,
        }));
        let outer = StructType::new(vec![StructField::new("tags", structs, true)]);
        let s = StructType::new(vec![StructField::new("o", DataType::Struct(Box::new(outer)), true)]);
        assert_eq!(struct_in_collection(&s.fields, "").as_deref(), Some("o.tags"));
    }
}
