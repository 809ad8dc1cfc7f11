//! Delta types to Arrow types (digest §3).
//!
//! `timestamp` is `Timestamp(µs, "UTC")` and `timestamp_ntz` is `Timestamp(µs, None)`, so
//! Parquet files written from these types carry the right `isAdjustedToUTC`. Every Arrow field
//! produced for reading is nullable: a data file may legitimately lack a column (read as null).

use std::sync::Arc;

use arrow::datatypes::{DataType as ArrowType, Field, Fields, Schema, TimeUnit};

use super::schema::{DataType, PrimitiveType, StructField, StructType};

/// The Arrow type of a Delta type.
pub(crate) fn arrow_type(t: &DataType) -> ArrowType {
    match t {
        DataType::Primitive(p) => primitive(*p),
        DataType::Struct(s) => ArrowType::Struct(arrow_fields(&s.fields)),
        DataType::Array(a) => ArrowType::List(Arc::new(Field::new("element", arrow_type(&a.element_type), true))),
        DataType::Map(m) => {
            let entries = Fields::from(vec![
                Field::new("key", arrow_type(&m.key_type), false),
                Field::new("value", arrow_type(&m.value_type), true),
            ]);
            ArrowType::Map(Arc::new(Field::new("key_value", ArrowType::Struct(entries), false)), false)
        }
        DataType::Variant => ArrowType::Struct(variant_fields()),
    }
}

/// Field metadata marking the `metadata` child of a variant column's struct, so that printers
/// tell a variant from a struct of two binaries.
pub(crate) const VARIANT_MARK: &str = "deltabus.variant";

/// The physical fields of an unshredded variant: two required binaries, as Spark writes them
/// (a null variant is a null struct).
pub(crate) fn variant_fields() -> Fields {
    let mark = std::collections::HashMap::from([(VARIANT_MARK.to_string(), "true".to_string())]);
    Fields::from(vec![
        Field::new("metadata", ArrowType::Binary, false).with_metadata(mark),
        Field::new("value", ArrowType::Binary, false),
    ])
}

/// Whether a struct's fields are a variant's (as [`variant_fields`] makes them).
pub(crate) fn is_variant(fields: &Fields) -> bool {
    fields.len() == 2 && fields[0].metadata().contains_key(VARIANT_MARK)
}

fn primitive(p: PrimitiveType) -> ArrowType {
    match p {
        PrimitiveType::String => ArrowType::Utf8,
        PrimitiveType::Long => ArrowType::Int64,
        PrimitiveType::Integer => ArrowType::Int32,
        PrimitiveType::Short => ArrowType::Int16,
        PrimitiveType::Byte => ArrowType::Int8,
        PrimitiveType::Float => ArrowType::Float32,
        PrimitiveType::Double => ArrowType::Float64,
        PrimitiveType::Boolean => ArrowType::Boolean,
        PrimitiveType::Binary => ArrowType::Binary,
        PrimitiveType::Date => ArrowType::Date32,
        PrimitiveType::Timestamp => ArrowType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
        PrimitiveType::TimestampNtz => ArrowType::Timestamp(TimeUnit::Microsecond, None),
        PrimitiveType::Decimal { precision, scale } => ArrowType::Decimal128(precision, scale),
        PrimitiveType::Void => ArrowType::Null,
    }
}

/// Arrow fields (logical names, all nullable) of Delta fields.
pub(crate) fn arrow_fields(fields: &[StructField]) -> Fields {
    fields.iter().map(|f| Field::new(&f.name, arrow_type(&f.data_type), true)).collect()
}

/// The logical Arrow schema of a table schema.
pub(crate) fn arrow_schema(schema: &StructType) -> Schema {
    Schema::new(arrow_fields(&schema.fields))
}

/// The Arrow field written to data files for a Delta field: the physical name and, under
/// column mapping, the Parquet field id (and the ids of list elements and map keys and
/// values, where icebergCompatV2 gave them).
pub(crate) fn physical_field(f: &StructField, mode: super::schema::ColumnMappingMode) -> Field {
    let data_type = physical_type(&f.data_type, mode, f, f.physical_name(mode));
    let field = Field::new(f.physical_name(mode), data_type, f.nullable);
    match (mode, f.column_mapping_id()) {
        (super::schema::ColumnMappingMode::None, _) | (_, None) => field,
        (_, Some(id)) => with_field_id(field, Some(id)),
    }
}

fn with_field_id(field: Field, id: Option<i64>) -> Field {
    match id {
        Some(id) => field.with_metadata(
            [("PARQUET:field_id".to_string(), id.to_string())].into_iter().collect::<std::collections::HashMap<_, _>>(),
        ),
        None => field,
    }
}

/// `owner` is the nearest struct field, holding the nested ids below `id_path`.
fn physical_type(
    t: &DataType,
    mode: super::schema::ColumnMappingMode,
    owner: &StructField,
    id_path: &str,
) -> ArrowType {
    let id = |p: &str| match mode {
        super::schema::ColumnMappingMode::None => None,
        _ => super::iceberg_compat::nested::nested_id(owner, p),
    };
    match t {
        DataType::Struct(s) => ArrowType::Struct(s.fields.iter().map(|f| physical_field(f, mode)).collect()),
        DataType::Array(a) => {
            let e = format!("{id_path}.element");
            let element = Field::new("element", physical_type(&a.element_type, mode, owner, &e), a.contains_null);
            ArrowType::List(Arc::new(with_field_id(element, id(&e))))
        }
        DataType::Map(m) => {
            let (k, v) = (format!("{id_path}.key"), format!("{id_path}.value"));
            let entries = Fields::from(vec![
                with_field_id(Field::new("key", physical_type(&m.key_type, mode, owner, &k), false), id(&k)),
                with_field_id(
                    Field::new("value", physical_type(&m.value_type, mode, owner, &v), m.value_contains_null),
                    id(&v),
                ),
            ]);
            ArrowType::Map(Arc::new(Field::new("key_value", ArrowType::Struct(entries), false)), false)
        }
        other => arrow_type(other),
    }
}

/// The schema of data files: data (non-partition) columns with physical names.
pub(crate) fn physical_schema(
    schema: &StructType,
    partition_columns: &[String],
    mode: super::schema::ColumnMappingMode,
) -> Schema {
    Schema::new(
        schema
            .fields
            .iter()
            .filter(|f| !partition_columns.contains(&f.name))
            .filter(|f| f.data_type != DataType::Primitive(PrimitiveType::Void))
            .map(|f| physical_field(f, mode))
            .collect::<Vec<_>>(),
    )
}

/// The logical Arrow schema with Delta's nullability kept (for validating incoming rows).
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) fn arrow_schema_strict(schema: &StructType) -> Schema {
    fn field(f: &StructField) -> Field {
        Field::new(&f.name, strict_type(&f.data_type), f.nullable)
    }
    fn strict_type(t: &DataType) -> ArrowType {
        match t {
            DataType::Struct(s) => ArrowType::Struct(s.fields.iter().map(field).collect()),
            DataType::Array(a) => {
                ArrowType::List(Arc::new(Field::new("element", strict_type(&a.element_type), a.contains_null)))
            }
            DataType::Map(m) => {
                let entries = Fields::from(vec![
                    Field::new("key", strict_type(&m.key_type), false),
                    Field::new("value", strict_type(&m.value_type), m.value_contains_null),
                ]);
                ArrowType::Map(Arc::new(Field::new("key_value", ArrowType::Struct(entries), false)), false)
            }
            other => arrow_type(other),
        }
    }
    Schema::new(schema.fields.iter().map(field).collect::<Vec<_>>())
}

/// The Delta type that holds an Arrow type faithfully (a decoded Avro or Protobuf schema
/// becoming a table): 32-bit integers stay `integer`, timestamps with a zone are `timestamp`
/// and without one `timestamp_ntz`, dictionaries (Avro enums) are `string`, fixed-size binary
/// is `binary`, times of day are `long` (microseconds: Delta has no time type).
///
/// # Errors
/// [`crate::Error::InvalidArgument`] for types Delta cannot hold (unsigned 64-bit, intervals…).
pub(crate) fn delta_type_of(t: &ArrowType) -> crate::Result<DataType> {
    use super::schema::{ArrayType, MapType, PrimitiveType as P, StructField, StructType};
    let p = |t| Ok(DataType::Primitive(t));
    match t {
        ArrowType::Boolean => p(P::Boolean),
        ArrowType::Int8 => p(P::Byte),
        ArrowType::Int16 | ArrowType::UInt8 => p(P::Short),
        ArrowType::Int32 | ArrowType::UInt16 => p(P::Integer),
        ArrowType::Int64 | ArrowType::UInt32 | ArrowType::Time32(_) | ArrowType::Time64(_) => p(P::Long),
        ArrowType::Float16 | ArrowType::Float32 => p(P::Float),
        ArrowType::Float64 => p(P::Double),
        ArrowType::Utf8 | ArrowType::LargeUtf8 | ArrowType::Utf8View | ArrowType::Null => p(P::String),
        ArrowType::Dictionary(_, v) if matches!(v.as_ref(), ArrowType::Utf8 | ArrowType::LargeUtf8) => p(P::String),
        ArrowType::Binary | ArrowType::LargeBinary | ArrowType::BinaryView | ArrowType::FixedSizeBinary(_) => {
            p(P::Binary)
        }
        ArrowType::Date32 | ArrowType::Date64 => p(P::Date),
        ArrowType::Timestamp(_, Some(_)) => p(P::Timestamp),
        ArrowType::Timestamp(_, None) => p(P::TimestampNtz),
        ArrowType::Decimal128(precision, scale)
        | ArrowType::Decimal64(precision, scale)
        | ArrowType::Decimal32(precision, scale)
            if *precision <= 38 =>
        {
            p(P::Decimal { precision: *precision, scale: *scale })
        }
        ArrowType::List(f) | ArrowType::LargeList(f) | ArrowType::FixedSizeList(f, _) => {
            Ok(DataType::Array(Box::new(ArrayType {
                element_type: delta_type_of(f.data_type())?,
                contains_null: f.is_nullable(),
            })))
        }
        ArrowType::Map(entries, _) => {
            let ArrowType::Struct(kv) = entries.data_type() else {
                return Err(crate::Error::InvalidArgument(format!("map type {t} has no key/value struct")));
            };
            let (Some(k), Some(v)) = (kv.first(), kv.get(1)) else {
                return Err(crate::Error::InvalidArgument(format!("map type {t} lacks its key or value")));
            };
            Ok(DataType::Map(Box::new(MapType {
                key_type: delta_type_of(k.data_type())?,
                value_type: delta_type_of(v.data_type())?,
                value_contains_null: v.is_nullable(),
            })))
        }
        ArrowType::Struct(fields) => Ok(DataType::Struct(Box::new(StructType::new(
            fields
                .iter()
                .map(|f| Ok(StructField::new(f.name(), delta_type_of(f.data_type())?, f.is_nullable())))
                .collect::<crate::Result<Vec<_>>>()?,
        )))),
        other => Err(crate::Error::InvalidArgument(format!("Delta has no type for {other}"))),
    }
}
/// A Delta schema holding an Arrow schema faithfully (a writer schema becoming a table).
///
/// # Errors
/// An Arrow type with no Delta counterpart.
pub(crate) fn delta_struct_of(arrow: &arrow::datatypes::Schema) -> crate::Result<StructType> {
    arrow
        .fields()
        .iter()
        .map(|f| Ok(StructField::new(f.name(), delta_type_of(f.data_type())?, f.is_nullable())))
        .collect::<crate::Result<Vec<_>>>()
        .map(StructType::new)
}
