//! Rows decoded with a writer schema (Avro, Protobuf, Arrow IPC bodies) projected onto the
//! table's Arrow schema: columns are matched by name and cast to the table's types under the
//! value rules of [`super::exact`] (a cast never alters a value); a column the writer lacks is
//! null when the table allows it. Pure: it sees batches, never the table.

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
}
