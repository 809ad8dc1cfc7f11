//! New tables and schema changes: metadata and protocol from a schema and properties, schema
//! inference from JSON records, and additive schema evolution.
//!
//! Inference rules (documented for `deltabus write`): JSON integers become `long`, other
//! numbers `double`, booleans `boolean`, strings `string`, arrays `array<element>`, objects
//! `struct`; a field that is null in every sampled record becomes `string`. Inferred fields
//! are nullable. Timestamps are not guessed from strings: give `--schema` for them.

use std::collections::HashMap;

use arrow::datatypes::DataType as A;
use serde_json::{json, Value};

use crate::delta::actions::{Format, Metadata, Protocol};
use crate::delta::features::protocol_for_new_table;
use crate::delta::schema::{ArrayType, DataType, PrimitiveType, StructField, StructType, CM_ID, CM_PHYSICAL_NAME};
use crate::error::{Error, Result};

/// Infers a schema from sample JSON lines.
///
/// # Errors
/// [`Error::InvalidArgument`] when the sample is not JSON objects or types cannot be inferred.
pub fn infer_schema(sample: &[&str]) -> Result<StructType> {
    // A line that is not JSON is named as such (with its column), before inference.
    let mut values = Vec::with_capacity(sample.len());
    for (i, l) in sample.iter().enumerate() {
        let v = serde_json::from_str::<Value>(l).map_err(|e| {
            let text = e.to_string();
            let reason = text.split(" at line ").next().unwrap_or(&text);
            Error::InvalidArgument(format!("line {}, column {}: not JSON: {reason}", i + 1, e.column()))
        })?;
        values.push(Ok(v));
    }
    let arrow = arrow_json::reader::infer_json_schema_from_iterator(values.into_iter()).map_err(|e| {
        Error::InvalidArgument(format!("cannot infer a schema: {}", e.to_string().trim_start_matches("Json error: ")))
    })?;
    let fields = arrow
        .fields()
        .iter()
        .map(|f| Ok(StructField::new(f.name(), from_arrow(f.data_type())?, true)))
        .collect::<Result<Vec<_>>>()?;
    if fields.is_empty() {
        return Err(Error::InvalidArgument("cannot infer a schema from records without fields".into()));
    }
    Ok(StructType::new(fields))
}

fn from_arrow(t: &A) -> Result<DataType> {
    Ok(match t {
        A::Int64 | A::Int32 => DataType::Primitive(PrimitiveType::Long),
        A::Float64 | A::Float32 => DataType::Primitive(PrimitiveType::Double),
        A::Boolean => DataType::Primitive(PrimitiveType::Boolean),
        A::Utf8 | A::LargeUtf8 | A::Null => DataType::Primitive(PrimitiveType::String),
        A::List(f) | A::LargeList(f) => {
            DataType::Array(Box::new(ArrayType { element_type: from_arrow(f.data_type())?, contains_null: true }))
        }
        A::Struct(fields) => DataType::Struct(Box::new(StructType::new(
            fields
                .iter()
                .map(|f| Ok(StructField::new(f.name(), from_arrow(f.data_type())?, true)))
                .collect::<Result<Vec<_>>>()?,
        ))),
        other => return Err(Error::InvalidArgument(format!("cannot map inferred type {other} to Delta"))),
    })
}

/// Protocol and metadata for a new table. A partition entry may derive its column
/// (`date(ts)`, `hour(ts) as h`, ...): it becomes a generated column (writer feature
/// `generatedColumns`) appended to the schema.
///
/// # Errors
/// [`Error::InvalidArgument`] for unknown partition columns or partition columns of a type that
/// cannot partition; [`Error::Unsupported`] for properties asking for unwritable features.
pub fn new_table(
    schema: StructType,
    partition_columns: &[String],
    properties: &HashMap<String, String>,
) -> Result<(Protocol, Metadata)> {
    // Derived partitions (`date(ts)`, ...) become generated columns appended to the schema.
    let mut schema = schema;
    let mut generated = 0;
    let mut partition_columns = partition_columns.to_vec();
    for spec in &mut partition_columns {
        if let Some(g) = crate::delta::generated::parse_partition_spec(spec)? {
            if schema.field(&g.column).is_some() {
                return Err(Error::InvalidArgument(format!(
                    "partition_by {spec:?}: the schema already has a column {:?} (name it with `as <name>`)",
                    g.column
                )));
            }
            schema.fields.push(g.field());
            *spec = g.column;
            generated += 1;
        }
    }
    if generated > 0 {
        crate::delta::generated::generated_columns(&schema)?;
    }
    let partition_columns = &partition_columns[..];
    for (i, p) in partition_columns.iter().enumerate() {
        if partition_columns[..i].contains(p) {
            return Err(Error::InvalidArgument(format!("partition column {p:?} is named twice")));
        }
        match schema.field(p).map(|f| &f.data_type) {
            None => return Err(Error::InvalidArgument(format!("partition column {p:?} is not in the schema"))),
            Some(DataType::Primitive(PrimitiveType::Binary))
            | Some(DataType::Struct(_) | DataType::Array(_) | DataType::Map(_) | DataType::Variant) => {
                return Err(Error::InvalidArgument(format!(
                    "column {p:?} cannot be a partition column (nested or binary type)"
                )))
            }
            Some(_) => {}
        }
    }
    let uses_ntz = schema.contains(&|t| *t == DataType::Primitive(PrimitiveType::TimestampNtz));
    crate::delta::properties::check_property_names(properties.keys())?;
    let protocol = if generated > 0 {
        let mut with_feature = properties.clone();
        with_feature.insert("delta.feature.generatedColumns".into(), "supported".into());
        protocol_for_new_table(&with_feature, uses_ntz)?
    } else {
        protocol_for_new_table(properties, uses_ntz)?
    };
    let mut configuration: HashMap<String, String> = properties
        .iter()
        .filter(|(k, _)| !k.starts_with("delta.feature."))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    if properties.get("delta.columnMapping.mode").is_some_and(|m| m != "none") {
        let mut next = 0i64;
        assign_column_mapping(&mut schema.fields, &mut next);
        configuration.insert("delta.columnMapping.maxColumnId".into(), next.to_string());
    }
    let metadata = Metadata {
        id: uuid::Uuid::new_v4().to_string(),
        name: None,
        description: None,
        format: Format::default(),
        schema_string: schema.to_json(),
        partition_columns: partition_columns.to_vec(),
        configuration,
        // Stamped with the commit's time when committed (`Transaction::commit_bytes`).
        created_time: None,
    };
    Ok((protocol, metadata))
}

/// Gives every field without one a column-mapping id and physical name.
fn assign_column_mapping(fields: &mut [StructField], next: &mut i64) {
    for f in fields {
        if f.column_mapping_id().is_none() {
            *next += 1;
            f.metadata.insert(CM_ID.into(), json!(*next));
            f.metadata.insert(CM_PHYSICAL_NAME.into(), json!(format!("col-{}", uuid::Uuid::new_v4())));
        } else {
            *next = (*next).max(f.column_mapping_id().unwrap_or(0));
        }
        if let DataType::Struct(s) = &mut f.data_type {
            assign_column_mapping(&mut s.fields, next);
        }
    }
}

/// Adds the top-level fields of `incoming` missing from `current` (as nullable columns).
/// Returns `None` when nothing is new.
///
/// Existing columns keep their table type: JSON inference cannot tell a map from a struct or a
/// timestamp from a string, so whether a value fits is left to the decoder, which reports the
/// line and column of a value that does not.
///
/// # Errors
/// None today; kept fallible for nested evolution.
pub fn merge_schema(current: &StructType, incoming: &StructType) -> Result<Option<StructType>> {
    let mut merged = current.clone();
    let mut changed = false;
    for f in &incoming.fields {
        if !current.fields.iter().any(|c| c.name.eq_ignore_ascii_case(&f.name)) {
            let mut nf = f.clone();
            nf.nullable = true;
            merged.fields.push(nf);
            changed = true;
        }
    }
    Ok(changed.then_some(merged))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn infers_and_merges() {
        let s = infer_schema(&[r#"{"a":1,"b":"x","c":{"d":[1.5]}}"#, r#"{"a":2,"e":null,"f":true}"#]).unwrap();
        let names: Vec<&str> = s.fields.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, vec!["a", "b", "c", "e", "f"]);
        assert_eq!(s.field("a").unwrap().data_type, DataType::Primitive(PrimitiveType::Long));
        assert_eq!(s.field("e").unwrap().data_type, DataType::Primitive(PrimitiveType::String));
        let base = infer_schema(&[r#"{"a":1}"#]).unwrap();
        let merged = merge_schema(&base, &s).unwrap().unwrap();
        assert_eq!(merged.fields.len(), 5);
        assert!(merge_schema(&s, &base).unwrap().is_none());
    }

    #[test]
    fn new_tables() {
        let s = infer_schema(&[r#"{"a":1,"p":"x"}"#]).unwrap();
        let (p, m) = new_table(s.clone(), &["p".into()], &HashMap::new()).unwrap();
        assert_eq!((p.min_reader_version, p.min_writer_version), (1, 2));
        assert_eq!(m.partition_columns, vec!["p"]);
        assert!(new_table(s.clone(), &["zz".into()], &HashMap::new()).is_err());
        let props: HashMap<String, String> =
            [("delta.enableDeletionVectors", "true"), ("delta.columnMapping.mode", "name")]
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
        let (p, m) = new_table(s, &[], &props).unwrap();
        assert_eq!((p.min_reader_version, p.min_writer_version), (3, 7));
        assert_eq!(p.reader_features.unwrap(), vec!["columnMapping", "deletionVectors"]);
        assert_eq!(m.configuration["delta.columnMapping.maxColumnId"], "2");
        assert!(m.schema_string.contains("delta.columnMapping.physicalName"));
    }
}
