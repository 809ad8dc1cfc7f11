//! Delta types to Arrow types (digest §3).
//!
//! `timestamp` is `Timestamp(µs, "UTC")` and `timestamp_ntz` is `Timestamp(µs, None)`, so
//! Parquet files written from these types carry the right `isAdjustedToUTC`. Every Arrow field
//! produced for reading is nullable: a data file may legitimately lack a column (read as null).

use std::sync::Arc;

use arrow::datatypes::{DataType as ArrowType, Field, Fields, Schema, TimeUnit};

use super::schema::{DataType, PrimitiveType, StructField, StructType};

/// The Arrow type of a Delta type.
pub fn arrow_type(t: &DataType) -> ArrowType {
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

/// The physical fields of an unshredded variant.
pub fn variant_fields() -> Fields {
    Fields::from(vec![Field::new("metadata", ArrowType::Binary, true), Field::new("value", ArrowType::Binary, true)])
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
pub fn arrow_fields(fields: &[StructField]) -> Fields {
    fields.iter().map(|f| Field::new(&f.name, arrow_type(&f.data_type), true)).collect()
}

/// The logical Arrow schema of a table schema.
pub fn arrow_schema(schema: &StructType) -> Schema {
    Schema::new(arrow_fields(&schema.fields))
}
