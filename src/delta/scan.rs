//! Turning a data file's Arrow batches into rows of the table's logical schema.
//!
//! Per file: columns are matched by physical name (column mapping), or by Parquet field id in
//! `id` mode; nested structs, lists and maps are adapted recursively; columns absent from old
//! files become nulls; widened or differently-encoded types (INT96, millisecond timestamps,
//! type widening) are cast; partition columns are materialised from `partitionValues`; and
//! rows whose physical index is in the file's deletion vector are dropped.

use std::sync::Arc;

use arrow::array::{
    new_null_array, Array, ArrayRef, AsArray, BooleanArray, ListArray, MapArray, RecordBatch, StringArray, StructArray,
};
use arrow::compute::{cast, filter_record_batch};
use arrow::datatypes::{DataType as ArrowType, Field, FieldRef, Fields, SchemaRef};
use roaring::RoaringTreemap;

use super::actions::PartitionValues;
use super::arrow_schema::{arrow_schema, arrow_type, variant_fields};
use super::schema::{ColumnMappingMode, DataType, StructField, StructType};
use crate::error::{Error, Result};

const FIELD_ID_KEY: &str = "PARQUET:field_id";

/// What is needed to turn file batches into logical rows, built once per snapshot.
#[derive(Debug, Clone)]
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) struct ScanPlan {
    pub schema: StructType,
    pub partition_columns: Vec<String>,
    pub mode: ColumnMappingMode,
    pub output: SchemaRef,
}

impl ScanPlan {
    /// A plan for reading all columns of a table.
    pub(crate) fn new(schema: &StructType, partition_columns: &[String], mode: ColumnMappingMode) -> Self {
        ScanPlan {
            schema: schema.clone(),
            partition_columns: partition_columns.to_vec(),
            mode,
            output: Arc::new(arrow_schema(schema)),
        }
    }

    /// Converts one batch of a data file. `first_row` is the physical index of the batch's
    /// first row in the file, used to apply `dv`.
    ///
    /// # Errors
    /// [`Error::DataFile`] when a column cannot be converted or a partition value does not
    /// parse as its column's type.
    #[cfg(test)]
    pub(crate) fn to_logical(
        &self,
        batch: &RecordBatch,
        partition_values: &PartitionValues,
        dv: Option<&RoaringTreemap>,
        first_row: u64,
        file: &str,
    ) -> Result<RecordBatch> {
        match dv {
            Some(bitmap) if !bitmap.is_empty() => {
                self.to_logical_filtered(batch, partition_values, &RowFilter::Exclude(bitmap), first_row, file)
            }
            _ => self.to_logical_filtered(batch, partition_values, &RowFilter::All, first_row, file),
        }
    }

    /// As [`ScanPlan::to_logical`] with an arbitrary selection of physical rows.
    ///
    /// # Errors
    /// As [`ScanPlan::to_logical`].
    pub(crate) fn to_logical_filtered(
        &self,
        batch: &RecordBatch,
        partition_values: &PartitionValues,
        filter: &RowFilter<'_>,
        first_row: u64,
        file: &str,
    ) -> Result<RecordBatch> {
        let n = batch.num_rows();
        let file_fields = batch.schema().fields().clone();
        let mut columns = Vec::with_capacity(self.schema.fields.len());
        for (field, out) in self.schema.fields.iter().zip(self.output.fields()) {
            let col = if self.partition_columns.contains(&field.name) {
                let physical = field.physical_name(self.mode);
                let raw =
                    partition_values.get(physical).or_else(|| partition_values.get(&field.name)).cloned().flatten();
                partition_array(raw.as_deref(), out.data_type(), n)
                    .map_err(|e| Error::data_file(file, format!("partition column {}: {e}", field.name)))?
            } else {
                match find_child(&file_fields, batch.columns(), field, self.mode) {
                    Some(c) => adapt(&c, &field.data_type, self.mode)
                        .map_err(|e| Error::data_file(file, format!("column {}: {e}", field.name)))?,
                    None => new_null_array(out.data_type(), n),
                }
            };
            columns.push(col);
        }
        let out = RecordBatch::try_new_with_options(
            self.output.clone(),
            columns,
            &arrow::array::RecordBatchOptions::new().with_row_count(Some(n)),
        )
        .map_err(|e| Error::data_file(file, e))?;
        let keep: BooleanArray = match filter {
            RowFilter::All => return Ok(out),
            RowFilter::Exclude(bitmap) => (0..n as u64).map(|i| Some(!bitmap.contains(first_row + i))).collect(),
            RowFilter::Only(bitmap) => (0..n as u64).map(|i| Some(bitmap.contains(first_row + i))).collect(),
        };
        filter_record_batch(&out, &keep).map_err(|e| Error::data_file(file, e))
    }

    /// A plan that reads only these columns (in table order); the reader then decodes only the
    /// matching Parquet columns.
    pub(crate) fn projected(&self, columns: &[String]) -> ScanPlan {
        let mut schema = self.schema.clone();
        schema.fields.retain(|f| columns.contains(&f.name));
        ScanPlan::new(&schema, &self.partition_columns, self.mode)
    }

    /// The top-level physical column names a file needs for this plan, or `None` when columns
    /// are matched by field id (then every column is read).
    pub(crate) fn physical_columns(&self) -> Option<Vec<&str>> {
        if self.mode == ColumnMappingMode::Id {
            return None;
        }
        Some(
            self.schema
                .fields
                .iter()
                .filter(|f| !self.partition_columns.contains(&f.name))
                .map(|f| f.physical_name(self.mode))
                .collect(),
        )
    }

    /// A plan whose output has one more string column (as change-data files carry
    /// `_change_type`).
    pub(crate) fn with_extra_string_column(&self, name: &str) -> ScanPlan {
        let mut schema = self.schema.clone();
        schema.fields.push(StructField::new(name, DataType::Primitive(super::schema::PrimitiveType::String), true));
        ScanPlan::new(&schema, &self.partition_columns, self.mode)
    }
}

/// Which physical rows of a file to keep, by 0-based row index.
#[derive(Debug, Clone, Copy)]
pub(crate) enum RowFilter<'a> {
    All,
    /// Every row not in the bitmap (a deletion vector).
    Exclude(&'a RoaringTreemap),
    /// Only the rows in the bitmap.
    Only(&'a RoaringTreemap),
}

fn find_child(fields: &Fields, columns: &[ArrayRef], field: &StructField, mode: ColumnMappingMode) -> Option<ArrayRef> {
    let physical = field.physical_name(mode);
    if let Some(i) = fields.iter().position(|f| f.name() == physical) {
        return Some(columns[i].clone());
    }
    if mode == ColumnMappingMode::Id {
        let id = field.column_mapping_id()?.to_string();
        let i = fields.iter().position(|f| f.metadata().get(FIELD_ID_KEY) == Some(&id))?;
        return Some(columns[i].clone());
    }
    None
}

type AResult<T> = std::result::Result<T, String>;

/// Adapts a file array to a logical Delta type.
fn adapt(array: &ArrayRef, target: &DataType, mode: ColumnMappingMode) -> AResult<ArrayRef> {
    match (target, array.data_type()) {
        (DataType::Struct(st), ArrowType::Struct(_)) => adapt_struct(array.as_struct(), &st.fields, mode),
        (DataType::Variant, ArrowType::Struct(fields)) => {
            let s = array.as_struct();
            // A shredded variant keeps part of its value in `typed_value`; reading only
            // `value` would lose it, so refuse rather than return incomplete values.
            if let Some(i) = fields.iter().position(|f| f.name() == "typed_value") {
                if s.column(i).null_count() < s.len() {
                    return Err("shredded variant values (typed_value) are not supported".to_string());
                }
            }
            let cols: Vec<ArrayRef> = ["metadata", "value"]
                .iter()
                .map(|name| match fields.iter().position(|f| f.name() == name) {
                    Some(i) => cast(s.column(i), &ArrowType::Binary).map_err(|e| e.to_string()),
                    None => Ok(new_null_array(&ArrowType::Binary, s.len())),
                })
                .collect::<AResult<_>>()?;
            Ok(Arc::new(StructArray::try_new(variant_fields(), cols, s.nulls().cloned()).map_err(|e| e.to_string())?))
        }
        (DataType::Array(at), ArrowType::List(_) | ArrowType::LargeList(_)) => {
            let list = if matches!(array.data_type(), ArrowType::LargeList(_)) {
                let f = Arc::new(Field::new("element", array.as_list::<i64>().values().data_type().clone(), true));
                cast(array, &ArrowType::List(f)).map_err(|e| e.to_string())?
            } else {
                array.clone()
            };
            let list = list.as_list::<i32>();
            let values = adapt(list.values(), &at.element_type, mode)?;
            let field = Arc::new(Field::new("element", values.data_type().clone(), true));
            Ok(Arc::new(
                ListArray::try_new(field, list.offsets().clone(), values, list.nulls().cloned())
                    .map_err(|e| e.to_string())?,
            ))
        }
        (DataType::Map(mt), ArrowType::Map(_, _)) => {
            let map = array.as_map();
            let keys = adapt(map.keys(), &mt.key_type, mode)?;
            let values = adapt(map.values(), &mt.value_type, mode)?;
            let entry_fields = Fields::from(vec![
                Field::new("key", keys.data_type().clone(), false),
                Field::new("value", values.data_type().clone(), true),
            ]);
            let entries =
                StructArray::try_new(entry_fields.clone(), vec![keys, values], None).map_err(|e| e.to_string())?;
            let field: FieldRef = Arc::new(Field::new("key_value", ArrowType::Struct(entry_fields), false));
            Ok(Arc::new(
                MapArray::try_new(field, map.offsets().clone(), entries, map.nulls().cloned(), false)
                    .map_err(|e| e.to_string())?,
            ))
        }
        (DataType::Primitive(_), _) => {
            let want = arrow_type(target);
            if array.data_type() == &want {
                Ok(array.clone())
            } else {
                cast(array, &want).map_err(|e| format!("cannot convert {} to {want}: {e}", array.data_type()))
            }
        }
        (t, found) => {
            Err(format!("file type {found} does not match table type {}", serde_json::to_string(t).unwrap_or_default()))
        }
    }
}

fn adapt_struct(s: &StructArray, fields: &[StructField], mode: ColumnMappingMode) -> AResult<ArrayRef> {
    let mut cols = Vec::with_capacity(fields.len());
    let mut out_fields = Vec::with_capacity(fields.len());
    for f in fields {
        let col = match find_child(s.fields(), s.columns(), f, mode) {
            Some(c) => adapt(&c, &f.data_type, mode)?,
            None => new_null_array(&arrow_type(&f.data_type), s.len()),
        };
        out_fields.push(Field::new(&f.name, col.data_type().clone(), true));
        cols.push(col);
    }
    Ok(Arc::new(StructArray::try_new(Fields::from(out_fields), cols, s.nulls().cloned()).map_err(|e| e.to_string())?))
}

/// Materialises a partition value as a column of `n` equal values: what a `partitionValues`
/// string means to every reader (`""` and Hive's default partition are null).
pub(crate) fn partition_array(raw: Option<&str>, target: &ArrowType, n: usize) -> AResult<ArrayRef> {
    let value = raw.filter(|v| !v.is_empty() && *v != "__HIVE_DEFAULT_PARTITION__");
    let Some(value) = value else {
        return Ok(new_null_array(target, n));
    };
    let one: ArrayRef = Arc::new(StringArray::from(vec![value]));
    let typed = match target {
        ArrowType::Binary => Arc::new(arrow::array::BinaryArray::from(vec![value.as_bytes()])) as ArrayRef,
        ArrowType::Timestamp(_, _) => cast(&one, target)
            .or_else(|_| {
                // Spark's local form `YYYY-MM-DD HH:MM:SS[.f]` for tables written in UTC sessions.
                let alt: ArrayRef = Arc::new(StringArray::from(vec![value.replace(' ', "T")]));
                cast(&alt, target)
            })
            .map_err(|e| format!("{value:?}: {e}"))?,
        _ => {
            let opts = arrow::compute::CastOptions { safe: false, ..Default::default() };
            arrow::compute::cast_with_options(&one, target, &opts).map_err(|e| format!("{value:?}: {e}"))?
        }
    };
    if typed.is_null(0) {
        return Err(format!("{value:?} is not a valid {target}"));
    }
    let indices = arrow::array::UInt32Array::from(vec![0u32; n]);
    arrow::compute::take(typed.as_ref(), &indices, None).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::Int64Array;

    #[test]
    fn partition_values_of_many_types() {
        let a = partition_array(Some("42"), &ArrowType::Int32, 3).unwrap();
        assert_eq!(a.len(), 3);
        assert!(partition_array(Some("x"), &ArrowType::Int32, 1).is_err());
        assert_eq!(partition_array(None, &ArrowType::Utf8, 2).unwrap().null_count(), 2);
        assert_eq!(partition_array(Some(""), &ArrowType::Int64, 1).unwrap().null_count(), 1);
        let ts = partition_array(
            Some("2021-11-18 02:30:00.123456"),
            &ArrowType::Timestamp(arrow::datatypes::TimeUnit::Microsecond, None),
            1,
        )
        .unwrap();
        assert_eq!(ts.as_primitive::<arrow::datatypes::TimestampMicrosecondType>().value(0), 1_637_202_600_123_456);
    }

    #[test]
    fn missing_columns_and_dv() {
        let schema = StructType::parse(r#"{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}},{"name":"new","type":"string","nullable":true,"metadata":{}}]}"#).unwrap();
        let plan = ScanPlan::new(&schema, &[], ColumnMappingMode::None);
        let file =
            RecordBatch::try_from_iter(vec![("id", Arc::new(Int64Array::from(vec![0, 1, 2, 3])) as ArrayRef)]).unwrap();
        let dv: RoaringTreemap = [5u64, 7].into_iter().collect();
        let out = plan.to_logical(&file, &Default::default(), Some(&dv), 4, "f").unwrap();
        assert_eq!(out.num_rows(), 2);
        assert_eq!(out.column(1).null_count(), 2);
        assert_eq!(out.column(0).as_primitive::<arrow::datatypes::Int64Type>().values().to_vec(), vec![0, 2]);
    }
}
