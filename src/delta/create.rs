//! New tables and schema changes: metadata and protocol from a schema and properties, schema
//! inference from JSON records, and additive schema evolution.
//!
//! Inference rules (documented for `deltabus write` and pipelines creating their table): JSON
//! integers become `long` (past 64 bits `decimal(38,0)`), other numbers `double`, booleans
//! `boolean`, strings `string`, arrays `array<element>`, objects `struct`; a field that is
//! null in every sampled record becomes `string`, and so does a field whose values have
//! different types (each value is then stored as its JSON text, see
//! [`crate::delta::json_values`]); integers and doubles mix as `double`. Inferred fields are
//! nullable. Timestamps are not guessed from strings: give `--schema` for them.

use std::collections::HashMap;

use serde_json::{json, Value};

use crate::delta::actions::{Format, Metadata, Protocol};
use crate::delta::features::protocol_for_new_table;
use crate::delta::schema::{ArrayType, DataType, PrimitiveType, StructField, StructType, CM_ID, CM_PHYSICAL_NAME};
use crate::error::{Error, Result};

/// Structs nested deeper than this are refused at inference (the schema's JSON must stay
/// readable by every reader's JSON parser).
const MAX_INFERRED_DEPTH: usize = 24;

/// A field's type as seen so far in the sample.
#[derive(Debug, Clone, PartialEq)]
enum Seen {
    Null,
    Boolean,
    Long,
    /// An integer past 64 bits (at most 38 digits): `decimal(38,0)`, as Spark infers it.
    BigInteger,
    Double,
    Text,
    List(Box<Seen>),
    Struct(Vec<(String, Seen)>),
}

impl Seen {
    fn of(v: &Value) -> Seen {
        match v {
            Value::Null => Seen::Null,
            Value::Bool(_) => Seen::Boolean,
            Value::Number(n) if n.is_i64() => Seen::Long,
            Value::Number(n) if n.is_u64() => Seen::BigInteger,
            Value::Number(n) => match n.as_f64() {
                // An integral literal past i64 that a decimal(38,0) holds exactly.
                Some(x) if x.fract() == 0.0 && x.abs() >= 9.2e18 && x.abs() < 1e38 => Seen::BigInteger,
                _ => Seen::Double,
            },
            Value::String(_) => Seen::Text,
            Value::Array(items) => Seen::List(Box::new(items.iter().map(Seen::of).fold(Seen::Null, Seen::merge))),
            Value::Object(members) => Seen::Struct(members.iter().map(|(k, v)| (k.clone(), Seen::of(v))).collect()),
        }
    }

    /// The type that holds values of both (Spark's rules: numbers widen, anything else that
    /// differs becomes a string holding each value's JSON text).
    fn merge(self, other: Seen) -> Seen {
        use Seen::*;
        match (self, other) {
            (Null, x) | (x, Null) => x,
            (a, b) if a == b => a,
            (Long, BigInteger) | (BigInteger, Long) => BigInteger,
            (Long | BigInteger, Double) | (Double, Long | BigInteger) => Double,
            (List(a), List(b)) => List(Box::new(a.merge(*b))),
            (Struct(mut a), Struct(b)) => {
                for (name, t) in b {
                    match a.iter_mut().find(|(n, _)| *n == name) {
                        Some((_, existing)) => *existing = std::mem::replace(existing, Null).merge(t),
                        None => a.push((name, t)),
                    }
                }
                Struct(a)
            }
            _ => Text,
        }
    }

    fn delta(self, path: &str, depth: usize) -> Result<DataType> {
        let p = |t| DataType::Primitive(t);
        Ok(match self {
            Seen::Null | Seen::Text => p(PrimitiveType::String),
            Seen::Boolean => p(PrimitiveType::Boolean),
            Seen::Long => p(PrimitiveType::Long),
            Seen::BigInteger => p(PrimitiveType::Decimal { precision: 38, scale: 0 }),
            Seen::Double => p(PrimitiveType::Double),
            Seen::List(element) => DataType::Array(Box::new(ArrayType {
                element_type: element.delta(path, depth + 1)?,
                contains_null: true,
            })),
            // An object that never had a field holds its JSON text.
            Seen::Struct(fields) if fields.is_empty() => p(PrimitiveType::String),
            Seen::Struct(fields) => {
                if depth >= MAX_INFERRED_DEPTH {
                    return Err(Error::InvalidArgument(format!(
                        "field {path:?} nests objects more than {MAX_INFERRED_DEPTH} levels deep: give --schema \
                         (a string column takes the nested value as JSON text)"
                    )));
                }
                DataType::Struct(Box::new(StructType::new(
                    fields
                        .into_iter()
                        .map(|(name, t)| {
                            let inner = if path.is_empty() { name.clone() } else { format!("{path}.{name}") };
                            Ok(StructField::new(&name, t.delta(&inner, depth + 1)?, true))
                        })
                        .collect::<Result<Vec<_>>>()?,
                )))
            }
        })
    }
}

/// Infers a schema from sample JSON lines (the rules are in the module's documentation).
///
/// # Errors
/// [`Error::InvalidArgument`] when the sample is not JSON objects or nests too deep.
pub fn infer_schema(sample: &[&str]) -> Result<StructType> {
    let mut seen = Seen::Struct(Vec::new());
    for (i, l) in sample.iter().enumerate() {
        let v = serde_json::from_str::<Value>(l).map_err(|e| {
            let text = e.to_string();
            let reason = text.split(" at line ").next().unwrap_or(&text);
            Error::InvalidArgument(format!("line {}, column {}: not JSON: {reason}", i + 1, e.column()))
        })?;
        if !v.is_object() {
            return Err(Error::InvalidArgument(format!("line {}: a record must be a JSON object", i + 1)));
        }
        seen = seen.merge(Seen::of(&v));
    }
    let Seen::Struct(fields) = seen else {
        return Err(Error::Internal("inference lost the record struct".into()));
    };
    if fields.is_empty() {
        return Err(Error::InvalidArgument("cannot infer a schema from records without fields".into()));
    }
    let fields = fields
        .into_iter()
        .map(|(name, t)| Ok(StructField::new(&name, t.delta(&name, 1)?, true)))
        .collect::<Result<Vec<_>>>()?;
    Ok(StructType::new(fields))
}

/// Characters Delta allows in column names only under column mapping (Spark's rule).
const NEEDS_COLUMN_MAPPING: &[char] = &[' ', ',', ';', '{', '}', '(', ')', '\n', '\t', '='];

/// Refuses column names no reader can take: empty names always, and names with
/// ` ,;{}()\n\t=` unless the table uses column mapping.
///
/// # Errors
/// [`Error::InvalidArgument`] naming the column and the fix.
pub fn check_column_names(schema: &StructType, column_mapping: bool) -> Result<()> {
    fn walk(fields: &[StructField], path: &str, mapped: bool) -> Result<()> {
        for f in fields {
            let name = if path.is_empty() { f.name.clone() } else { format!("{path}.{}", f.name) };
            if f.name.is_empty() {
                return Err(Error::InvalidArgument(format!(
                    "a column name is empty (in {:?}): name every field",
                    if path.is_empty() { "the record" } else { path }
                )));
            }
            if !mapped {
                if let Some(c) = f.name.chars().find(|c| NEEDS_COLUMN_MAPPING.contains(c)) {
                    return Err(Error::InvalidArgument(format!(
                        "column {name:?} contains {c:?}, which Delta allows only with column mapping: \
                         create the table with --property delta.columnMapping.mode=name"
                    )));
                }
            }
            let mut t = &f.data_type;
            loop {
                match t {
                    DataType::Array(a) => t = &a.element_type,
                    DataType::Map(m) => t = &m.value_type,
                    _ => break,
                }
            }
            if let DataType::Struct(s) = t {
                walk(&s.fields, &name, mapped)?;
            }
        }
        Ok(())
    }
    walk(&schema.fields, "", column_mapping)
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
    if !partition_columns.is_empty() && schema.fields.iter().all(|f| partition_columns.contains(&f.name)) {
        return Err(Error::InvalidArgument(
            "every column is a partition column: at least one column must hold data in the files".into(),
        ));
    }
    let uses_ntz = schema.contains(&|t| *t == DataType::Primitive(PrimitiveType::TimestampNtz));
    let properties = &crate::delta::properties::checked_properties(properties)?;
    check_column_names(&schema, properties.get("delta.columnMapping.mode").is_some_and(|m| m != "none"))?;
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
/// [`Error::InvalidArgument`] for a new column whose name needs column mapping.
pub fn merge_schema(current: &StructType, incoming: &StructType) -> Result<Option<StructType>> {
    let mut merged = current.clone();
    let mut changed = false;
    for f in &incoming.fields {
        if !current.fields.iter().any(|c| c.name.eq_ignore_ascii_case(&f.name)) {
            check_column_names(&StructType::new(vec![f.clone()]), false)?;
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
