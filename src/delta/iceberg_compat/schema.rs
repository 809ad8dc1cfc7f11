//! Delta schemas as Iceberg schemas and partition specs.
//!
//! Field ids are the column-mapping ids (`delta.columnMapping.id`), so the Parquet field ids
//! deltabus writes under column mapping are the ones Iceberg readers resolve. Types map as
//! `byte`/`short`/`integer` → `int`, `long`, `float`, `double`, `decimal(p, s)`, `string`,
//! `binary`, `boolean`, `date`, `timestamp` → `timestamptz`, `timestamp_ntz` → `timestamp`,
//! structs with their fields (inside lists and maps too), arrays as lists and maps as maps
//! (element, key and value ids from [`super::nested`]); other types (variant, void) are
//! refused with the column that has them. Partition columns become identity partition
//! fields with ids from 1000.

use serde_json::{json, Value};

use super::nested::{max_nested_id, nested_id};
use crate::delta::schema::{ColumnMappingMode, DataType, PrimitiveType, StructField, StructType};
use crate::error::{Error, Result};

/// The first partition field id, as Iceberg numbers them.
pub(crate) const FIRST_PARTITION_FIELD_ID: i32 = 1000;

/// What a partition value is in Iceberg (and in the manifests' Avro).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) enum PartitionKind {
    Int,
    Long,
    Float,
    Double,
    Boolean,
    String,
    Date,
    /// Microseconds since the epoch; `true`: adjusted to UTC (`timestamptz`).
    Timestamp(bool),
}

/// One identity partition field.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) struct PartitionField {
    /// The partition column's (logical) name, also the partition field's name.
    pub name: String,
    /// Its name in `partitionValues` (the physical name under column mapping).
    pub physical: String,
    pub source_id: i32,
    pub field_id: i32,
    pub kind: PartitionKind,
    /// The Delta type, to parse `partitionValues` strings.
    pub delta_type: DataType,
}

fn refuse(column: &str, what: &str) -> Error {
    Error::unsupported(format!("column {column:?}: {what} cannot be written as Iceberg (UniForm) metadata"))
}

fn field_id(f: &StructField, path: &str) -> Result<i32> {
    let id = f.column_mapping_id().ok_or_else(|| {
        Error::unsupported(format!("column {path:?} has no column-mapping id: UniForm needs column mapping"))
    })?;
    i32::try_from(id).map_err(|_| refuse(path, "a field id above 2^31"))
}

/// The Iceberg type of a Delta type (`path` names the column in errors); `owner` is the
/// nearest struct field, holding the ids of elements, keys and values below `id_path`.
fn iceberg_type(t: &DataType, path: &str, owner: &StructField, id_path: &str) -> Result<Value> {
    use PrimitiveType as P;
    let nested = |p: &str| {
        let id = nested_id(owner, p).ok_or_else(|| {
            Error::unsupported(format!("column {path:?} has no field id for {p} (delta.columnMapping.nested.ids)"))
        })?;
        i32::try_from(id).map_err(|_| refuse(path, "a field id above 2^31"))
    };
    Ok(match t {
        DataType::Primitive(p) => json!(match p {
            P::Byte | P::Short | P::Integer => "int".to_string(),
            P::Long => "long".into(),
            P::Float => "float".into(),
            P::Double => "double".into(),
            P::Decimal { precision, scale } => format!("decimal({precision}, {scale})"),
            P::String => "string".into(),
            P::Binary => "binary".into(),
            P::Boolean => "boolean".into(),
            P::Date => "date".into(),
            P::Timestamp => "timestamptz".into(),
            P::TimestampNtz => "timestamp".into(),
            P::Void => return Err(refuse(path, "the void type")),
        }),
        DataType::Struct(s) => struct_type(&s.fields, path)?,
        DataType::Array(a) => {
            let e = format!("{id_path}.element");
            json!({
                "type": "list",
                "element-id": nested(&e)?,
                "element": iceberg_type(&a.element_type, path, owner, &e)?,
                "element-required": !a.contains_null,
            })
        }
        DataType::Map(m) => {
            let (k, v) = (format!("{id_path}.key"), format!("{id_path}.value"));
            json!({
                "type": "map",
                "key-id": nested(&k)?,
                "key": iceberg_type(&m.key_type, path, owner, &k)?,
                "value-id": nested(&v)?,
                "value": iceberg_type(&m.value_type, path, owner, &v)?,
                "value-required": !m.value_contains_null,
            })
        }
        DataType::Variant => return Err(refuse(path, "the variant type")),
    })
}

fn struct_type(fields: &[StructField], prefix: &str) -> Result<Value> {
    let mut out = Vec::with_capacity(fields.len());
    for f in fields {
        let path = if prefix.is_empty() { f.name.clone() } else { format!("{prefix}.{}", f.name) };
        out.push(json!({
            "id": field_id(f, &path)?,
            "name": f.name,
            "required": !f.nullable,
            "type": iceberg_type(&f.data_type, &path, f, f.physical_name(ColumnMappingMode::Name))?,
        }));
    }
    Ok(json!({"type": "struct", "fields": out}))
}

/// The Iceberg schema of a Delta schema, with id `schema_id`.
///
/// # Errors
/// [`Error::Unsupported`] naming the first column Iceberg cannot hold or that has no id.
pub(crate) fn iceberg_schema(schema: &StructType, schema_id: i64) -> Result<Value> {
    let mut s = struct_type(&schema.fields, "")?;
    s["schema-id"] = json!(schema_id);
    Ok(s)
}

/// The highest field id of a schema (Iceberg's `last-column-id`).
pub(crate) fn max_field_id(schema: &StructType) -> i64 {
    fn walk(fields: &[StructField]) -> i64 {
        fields
            .iter()
            .map(|f| {
                let own = f.column_mapping_id().unwrap_or(0);
                f.data_type.structs().iter().map(|(_, s)| walk(&s.fields)).fold(own, i64::max)
            })
            .max()
            .unwrap_or(0)
    }
    walk(&schema.fields).max(max_nested_id(&schema.fields))
}

/// The Iceberg name mapping (`schema.name-mapping.default`) of a schema: each field id with
/// the column name data files use for it (the physical name). Readers resolve columns of
/// files written without Parquet field ids (files a table held before UniForm was turned on)
/// through it.
pub(crate) fn name_mapping(schema: &StructType, mode: crate::delta::schema::ColumnMappingMode) -> Value {
    fn walk(fields: &[StructField], mode: crate::delta::schema::ColumnMappingMode) -> Vec<Value> {
        fields
            .iter()
            .filter_map(|f| {
                let id = f.column_mapping_id()?;
                let mut names = vec![f.physical_name(mode).to_string()];
                if names[0] != f.name {
                    names.push(f.name.clone());
                }
                let mut entry = json!({"field-id": id, "names": names});
                let inner = below(f, &f.data_type, f.physical_name(mode), mode);
                if !inner.is_empty() {
                    entry["fields"] = json!(inner);
                }
                Some(entry)
            })
            .collect()
    }
    /// The entries below a value of type `t`: a struct's fields, or the elements, keys and
    /// values below `id_path` (named as Parquet names them: `element`, `key`, `value`), with
    /// what is below them in turn.
    fn below(owner: &StructField, t: &DataType, id_path: &str, mode: ColumnMappingMode) -> Vec<Value> {
        let entry = |name: &str, inner: &DataType| {
            let p = format!("{id_path}.{name}");
            let id = nested_id(owner, &p)?;
            let mut e = json!({"field-id": id, "names": [name]});
            let fields = below(owner, inner, &p, mode);
            if !fields.is_empty() {
                e["fields"] = json!(fields);
            }
            Some(e)
        };
        match t {
            DataType::Struct(s) => walk(&s.fields, mode),
            DataType::Array(a) => entry("element", &a.element_type).into_iter().collect(),
            DataType::Map(m) => {
                [entry("key", &m.key_type), entry("value", &m.value_type)].into_iter().flatten().collect()
            }
            _ => Vec::new(),
        }
    }
    json!(walk(&schema.fields, mode))
}

/// The identity partition fields of `partition_columns`.
///
/// # Errors
/// [`Error::Unsupported`] for a partition column whose type has no identity partition here
/// (decimal, binary).
pub(crate) fn partition_fields(
    schema: &StructType,
    partition_columns: &[String],
    mode: crate::delta::schema::ColumnMappingMode,
) -> Result<Vec<PartitionField>> {
    use PrimitiveType as P;
    let mut out = Vec::new();
    for (i, name) in partition_columns.iter().enumerate() {
        let f = schema
            .field(name)
            .ok_or_else(|| Error::invalid_log("metadata", format!("no partition column {name:?}")))?;
        let kind = match &f.data_type {
            DataType::Primitive(P::Byte | P::Short | P::Integer) => PartitionKind::Int,
            DataType::Primitive(P::Long) => PartitionKind::Long,
            DataType::Primitive(P::Float) => PartitionKind::Float,
            DataType::Primitive(P::Double) => PartitionKind::Double,
            DataType::Primitive(P::Boolean) => PartitionKind::Boolean,
            DataType::Primitive(P::String) => PartitionKind::String,
            DataType::Primitive(P::Date) => PartitionKind::Date,
            DataType::Primitive(P::Timestamp) => PartitionKind::Timestamp(true),
            DataType::Primitive(P::TimestampNtz) => PartitionKind::Timestamp(false),
            _ => return Err(refuse(name, "a partition column of this type")),
        };
        out.push(PartitionField {
            name: name.clone(),
            physical: f.physical_name(mode).to_string(),
            source_id: field_id(f, name)?,
            field_id: FIRST_PARTITION_FIELD_ID + i32::try_from(i).unwrap_or(i32::MAX - FIRST_PARTITION_FIELD_ID),
            kind,
            delta_type: f.data_type.clone(),
        });
    }
    Ok(out)
}

/// The partition spec (id 0) of these fields.
pub(crate) fn partition_spec(fields: &[PartitionField]) -> Value {
    json!({
        "spec-id": 0,
        "fields": fields.iter().map(|p| json!({
            "name": p.name, "transform": "identity", "source-id": p.source_id, "field-id": p.field_id,
        })).collect::<Vec<_>>(),
    })
}

/// Checks that a table made with this schema and partitioning can carry Iceberg metadata.
///
/// # Errors
/// As [`iceberg_schema`] and [`partition_fields`].
pub(crate) fn check_convertible(
    schema: &StructType,
    partition_columns: &[String],
    mode: crate::delta::schema::ColumnMappingMode,
) -> Result<()> {
    iceberg_schema(schema, 0)?;
    partition_fields(schema, partition_columns, mode)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::delta::schema::ColumnMappingMode;

    fn mapped(fields: Vec<StructField>) -> StructType {
        let mut s = StructType::new(fields);
        for (i, f) in s.fields.iter_mut().enumerate() {
            f.metadata.insert(crate::delta::schema::CM_ID.into(), json!(i + 1));
            f.metadata.insert("delta.columnMapping.physicalName".into(), json!(format!("col-{i}")));
        }
        s
    }

    #[test]
    fn types_and_ids_map_and_unsupported_ones_are_named() {
        let s = mapped(vec![
            StructField::new("n", DataType::Primitive(PrimitiveType::Short), false),
            StructField::new("ts", DataType::Primitive(PrimitiveType::Timestamp), true),
            StructField::new("d", DataType::Primitive(PrimitiveType::Decimal { precision: 10, scale: 2 }), true),
            StructField::new("é", DataType::Primitive(PrimitiveType::String), true),
        ]);
        let v = iceberg_schema(&s, 3).unwrap();
        assert_eq!(v["schema-id"], 3);
        assert_eq!(v["fields"][0], json!({"id": 1, "name": "n", "required": true, "type": "int"}));
        assert_eq!(v["fields"][1]["type"], "timestamptz");
        assert_eq!(v["fields"][2]["type"], "decimal(10, 2)");
        assert_eq!(v["fields"][3]["name"], "é");
        assert_eq!(max_field_id(&s), 4);
        let parts = partition_fields(&s, &["é".into()], ColumnMappingMode::Name).unwrap();
        assert_eq!((parts[0].source_id, parts[0].field_id, parts[0].physical.as_str()), (4, 1000, "col-3"));
        assert!(partition_fields(&s, &["d".into()], ColumnMappingMode::Name).is_err());
        let unmapped = StructType::new(vec![StructField::new("a", DataType::Primitive(PrimitiveType::Long), true)]);
        assert!(iceberg_schema(&unmapped, 0).unwrap_err().to_string().contains("column mapping"));
        let variant = mapped(vec![StructField::new("v", DataType::Variant, true)]);
        assert!(iceberg_schema(&variant, 0).unwrap_err().to_string().contains("\"v\""));
    }

    #[test]
    fn name_mapping_names_physical_and_logical_names() {
        let mut inner = mapped(vec![StructField::new("x", DataType::Primitive(PrimitiveType::Long), true)]);
        inner.fields[0].metadata.insert(crate::delta::schema::CM_ID.into(), json!(3));
        let mut s = mapped(vec![
            StructField::new("id", DataType::Primitive(PrimitiveType::Long), true),
            StructField::new("s", DataType::Struct(Box::new(inner)), true),
        ]);
        s.fields[0].metadata.insert("delta.columnMapping.physicalName".into(), json!("id"));
        let m = name_mapping(&s, ColumnMappingMode::Name);
        assert_eq!(m[0], json!({"field-id": 1, "names": ["id"]}));
        assert_eq!(m[1]["names"], json!(["col-1", "s"]));
        assert_eq!(m[1]["fields"][0], json!({"field-id": 3, "names": ["col-0", "x"]}));
    }
}
