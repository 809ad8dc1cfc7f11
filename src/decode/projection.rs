//! Rows decoded with a writer schema (Avro, Protobuf, Arrow IPC bodies) projected onto the
//! table's Arrow schema: columns are matched by name and cast to the table's types under the
//! value rules of [`super::exact`] (a cast never alters a value); a column the writer lacks is
//! null when the table allows it; a writer field of any type lands in a `variant` column as
//! its variant value (records as objects, arrays, maps, decimals and times exact). Pure: it
//! sees batches, never the table.

use std::sync::Arc;

use arrow::array::{new_null_array, ArrayRef, RecordBatch};
use arrow::datatypes::SchemaRef;

/// Why a batch does not fit the table.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) enum Mismatch {
    /// Writer fields the table does not have (evolution can add them).
    Extra(Vec<String>),
    /// Anything else: a required column missing, a type that does not convert.
    Refused(String),
}

/// The fields of `batch` named in `names` (what [`project`] found extra), made nullable: the
/// columns schema evolution adds to the table for them.
///
/// # Errors
/// A field of a type Delta cannot hold.
pub(crate) fn extra_fields(batch: &RecordBatch, names: &[String]) -> crate::Result<crate::delta::schema::StructType> {
    let writer = crate::delta::arrow_schema::delta_struct_of(&batch.schema())?;
    let fields = writer
        .fields
        .into_iter()
        .filter(|f| names.contains(&f.name))
        .map(|mut f| {
            f.nullable = true;
            f
        })
        .collect();
    Ok(crate::delta::schema::StructType::new(fields))
}

/// `batch` in `target`'s columns and types.
///
/// # Errors
/// A [`Mismatch`] naming the fields.
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) fn project(batch: &RecordBatch, target: &SchemaRef) -> Result<RecordBatch, Mismatch> {
    let extra: Vec<String> = batch
        .schema()
        .fields()
        .iter()
        .filter(|f| target.field_with_name(f.name()).is_err())
        .map(|f| f.name().clone())
        .collect();
    if !extra.is_empty() {
        return Err(Mismatch::Extra(extra));
    }
    let mut columns: Vec<ArrayRef> = Vec::with_capacity(target.fields().len());
    for field in target.fields() {
        let column = match batch.column_by_name(field.name()) {
            Some(c) if c.data_type() == field.data_type() => c.clone(),
            Some(c) if is_variant_column(field) => to_variant(c).map_err(|e| {
                Mismatch::Refused(format!(
                    "field {:?}: {e} (sent as {}, the column is variant)",
                    field.name(),
                    c.data_type()
                ))
            })?,
            // A value that does not fit is an error, never a silent null or a cut fraction.
            Some(c) => super::exact::cast(c, field.data_type()).map_err(|e| {
                Mismatch::Refused(format!(
                    "field {:?}: {e} (sent as {}, the column is {})",
                    field.name(),
                    c.data_type(),
                    field.data_type()
                ))
            })?,
            None if field.is_nullable() => new_null_array(field.data_type(), batch.num_rows()),
            None => return Err(Mismatch::Refused(format!("required field {:?} is missing", field.name()))),
        };
        if !field.is_nullable() && column.null_count() > 0 {
            return Err(Mismatch::Refused(format!("field {:?} is null but required by the table", field.name())));
        }
        columns.push(column);
    }
    RecordBatch::try_new(Arc::new(target.as_ref().clone()), columns)
        .map_err(|e| Mismatch::Refused(format!("rows do not fit the table: {e}")))
}

/// Whether a table column is a `variant` (its physical struct).
fn is_variant_column(field: &arrow::datatypes::Field) -> bool {
    matches!(field.data_type(), arrow::datatypes::DataType::Struct(f) if crate::delta::arrow_schema::is_variant(f))
}

/// Metadata of a variant with no keys (version 1), and the value `null`: what a null row's
/// required children hold (readers never look at them).
const EMPTY_METADATA: [u8; 3] = [0x01, 0x00, 0x00];
const NULL_VALUE: [u8; 1] = [0x00];

/// `column` (any Arrow type) as variant values in the table's physical layout (a struct of
/// the required `metadata` and `value` binaries; a null stays a null variant).
fn to_variant(column: &ArrayRef) -> Result<ArrayRef, String> {
    use arrow::array::{Array, AsArray, BinaryBuilder, StructArray};
    use arrow::datatypes::DataType;
    let variant = parquet_variant_compute::cast_to_variant(column.as_ref()).map_err(|e| e.to_string())?;
    let binary = |a: &ArrayRef| arrow::compute::cast(a, &DataType::Binary).map_err(|e| e.to_string());
    let (metadata, value) = (binary(variant.metadata_column())?, binary(variant.value_column())?);
    let (metadata, value) = (metadata.as_binary::<i32>(), value.as_binary::<i32>());
    let (mut m, mut v) = (BinaryBuilder::new(), BinaryBuilder::new());
    for i in 0..variant.len() {
        if variant.is_null(i) || metadata.is_null(i) || value.is_null(i) {
            m.append_value(EMPTY_METADATA);
            v.append_value(NULL_VALUE);
        } else {
            m.append_value(metadata.value(i));
            v.append_value(value.value(i));
        }
    }
    let children: Vec<ArrayRef> = vec![Arc::new(m.finish()), Arc::new(v.finish())];
    let nulls = column.logical_nulls();
    let array = StructArray::try_new(crate::delta::arrow_schema::variant_fields(), children, nulls)
        .map_err(|e| e.to_string())?;
    Ok(Arc::new(array))
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{Int32Array, StringArray};
    use arrow::datatypes::{DataType, Field, Schema};

    fn batch() -> RecordBatch {
        let s = Schema::new(vec![Field::new("id", DataType::Int32, false), Field::new("name", DataType::Utf8, true)]);
        RecordBatch::try_new(
            Arc::new(s),
            vec![Arc::new(Int32Array::from(vec![1, 2])), Arc::new(StringArray::from(vec![Some("a"), None]))],
        )
        .unwrap()
    }

    #[test]
    fn widens_fills_and_refuses_by_name() {
        let target = Arc::new(Schema::new(vec![
            Field::new("id", DataType::Int64, false),
            Field::new("name", DataType::Utf8, true),
            Field::new("email", DataType::Utf8, true),
        ]));
        let out = project(&batch(), &target).unwrap();
        assert_eq!(out.schema(), target);
        assert_eq!(out.column(2).null_count(), 2);
        let narrow = Arc::new(Schema::new(vec![Field::new("id", DataType::Int64, false)]));
        assert_eq!(project(&batch(), &narrow), Err(Mismatch::Extra(vec!["name".into()])));
        let required = Arc::new(Schema::new(vec![
            Field::new("id", DataType::Int64, false),
            Field::new("name", DataType::Utf8, false),
        ]));
        assert!(matches!(project(&batch(), &required), Err(Mismatch::Refused(m)) if m.contains("required")));
    }

    #[test]
    fn avro_time_and_uuid_logical_types_land_as_delta_types() {
        use crate::common::record::RawRecord;
        let schema = r#"{"type":"record","name":"R","fields":[
            {"name":"t_ms","type":{"type":"int","logicalType":"time-millis"}},
            {"name":"t_us","type":{"type":"long","logicalType":"time-micros"}},
            {"name":"u","type":{"type":"string","logicalType":"uuid"}}]}"#;
        let uuid = b"123e4567-e89b-12d3-a456-426614174000";
        let datum = [&[0xD0, 0x0F, 0x0A, 0x48][..], &uuid[..]].concat();
        let mut decoder = crate::decode::avro::AvroDecoder::plain(schema).unwrap();
        let raw =
            [RawRecord { topic: "t", partition: 0, offset: 0, timestamp_ms: None, key: None, payload: Some(&datum) }];
        let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
        let decoded = rt.block_on(decoder.decode(&raw));
        assert!(decoded.dead_letters.is_empty(), "{:?}", decoded.dead_letters);
        let batch = &decoded.runs[0].batch;
        let delta = crate::delta::arrow_schema::delta_struct_of(&batch.schema()).unwrap();
        let types: Vec<String> = delta.fields.iter().map(|f| serde_json::to_string(&f.data_type).unwrap()).collect();
        assert_eq!(
            types,
            vec!["\"long\"", "\"long\"", "\"string\""],
            "time → long (as Spark reads Avro times), uuid → string"
        );
        let target = Arc::new(crate::delta::arrow_schema::arrow_schema_strict(&delta));
        let out = project(batch, &target).unwrap();
        use arrow::array::AsArray;
        assert_eq!(out.column(0).as_primitive::<arrow::datatypes::Int64Type>().value(0), 1000);
        assert_eq!(out.column(1).as_primitive::<arrow::datatypes::Int64Type>().value(0), 5);
        assert_eq!(out.column(2).as_string::<i32>().value(0), "123e4567-e89b-12d3-a456-426614174000");
    }

    #[test]
    fn any_writer_field_lands_in_a_variant_column_as_its_value() {
        use arrow::array::{Array, Decimal128Array, ListArray, StructArray};
        use arrow::datatypes::{DataType, Field, Fields, Int32Type};
        let tags = ListArray::from_iter_primitive::<Int32Type, _, _>(vec![Some(vec![Some(1), None]), None]);
        let inner = Fields::from(vec![Field::new("città", DataType::Utf8, true)]);
        let place = StructArray::new(inner, vec![Arc::new(StringArray::from(vec![Some("Köln"), None]))], None);
        let amount = Decimal128Array::from(vec![Some(12345), Some(-5)]).with_precision_and_scale(10, 2).unwrap();
        let writer = Schema::new(vec![
            Field::new("tags", tags.data_type().clone(), true),
            Field::new("place", place.data_type().clone(), true),
            Field::new("amount", amount.data_type().clone(), true),
        ]);
        let batch =
            RecordBatch::try_new(Arc::new(writer), vec![Arc::new(tags), Arc::new(place), Arc::new(amount)]).unwrap();
        let variant = DataType::Struct(crate::delta::arrow_schema::variant_fields());
        let target = Arc::new(Schema::new(vec![
            Field::new("tags", variant.clone(), true),
            Field::new("place", variant.clone(), true),
            Field::new("amount", variant, true),
        ]));
        let out = project(&batch, &target).unwrap();
        let json = |c: usize, r: usize| -> serde_json::Value {
            use arrow::array::{Array, AsArray};
            let s = out.column(c).as_struct();
            if s.is_null(r) {
                return serde_json::Value::Null;
            }
            let (m, v) = (s.column(0).as_binary::<i32>(), s.column(1).as_binary::<i32>());
            crate::delta::arrow_value::variant_json(&parquet_variant::Variant::try_new(m.value(r), v.value(r)).unwrap())
        };
        assert_eq!(json(0, 0), serde_json::json!([1, null]));
        assert_eq!(json(0, 1), serde_json::Value::Null, "a null list is a null variant");
        assert_eq!(json(1, 0), serde_json::json!({"città": "Köln"}));
        assert_eq!(json(1, 1), serde_json::json!({}), "a struct of nulls keeps its (empty) shape");
        assert_eq!((json(2, 0), json(2, 1)), (serde_json::json!(123.45), serde_json::json!(-0.05)));
    }
}
