//! New tables: metadata and protocol from a schema and properties, and schema inference from
//! JSON records (schema changes of existing tables: [`super::evolve`], re-exported here).
//!
//! Inference rules (documented for `deltabus write` and pipelines creating their table): JSON
//! integers become `long` (past 64 bits `decimal(38,0)`), other numbers `double`, booleans
//! `boolean`, strings `string`, arrays `array<element>`, objects `struct`; a field that is
//! null in every sampled record becomes `string`, and so does a field whose values have
//! different types (each value is then stored as its JSON text, see
//! [`crate::decode::json_values`]); integers and doubles mix as `double`. Inferred fields are
//! nullable. Timestamps are not guessed from strings: give `--schema` for them.

use std::collections::HashMap;

use serde_json::json;

use crate::delta::actions::{Format, Metadata, Protocol};
use crate::delta::features::protocol_for_new_table;
use crate::delta::schema::{
    ArrayType, ColumnMappingMode, DataType, PrimitiveType, StructField, StructType, CM_ID, CM_PHYSICAL_NAME,
};
use crate::error::{Error, Result};

pub(crate) use super::evolve::{add_columns, added_fields, evolved_metadata, merge_schema, with_current_mapping};

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

/// An object's members as written, each value as its raw text (numbers keep their digits).
struct Members<'a>(Vec<(String, &'a serde_json::value::RawValue)>);

impl<'de> serde::Deserialize<'de> for Members<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Members<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                write!(f, "a JSON object")
            }
            fn visit_map<M: serde::de::MapAccess<'de>>(
                self,
                mut map: M,
            ) -> std::result::Result<Members<'de>, M::Error> {
                let mut members = Vec::new();
                while let Some(entry) = map.next_entry()? {
                    members.push(entry);
                }
                Ok(Members(members))
            }
        }
        d.deserialize_map(V)
    }
}

impl Seen {
    /// The type of one value, read from its raw JSON text.
    fn of(raw: &str) -> Seen {
        match raw.as_bytes().first() {
            Some(b'n') => Seen::Null,
            Some(b't' | b'f') => Seen::Boolean,
            Some(b'"') => Seen::Text,
            Some(b'{') => match serde_json::from_str::<Members<'_>>(raw) {
                Ok(m) => Seen::Struct(m.0.into_iter().fold(Vec::new(), |mut fields, (k, v)| {
                    let t = Seen::of(v.get());
                    match fields.iter_mut().find(|(n, _): &&mut (String, Seen)| *n == k) {
                        Some((_, existing)) => *existing = std::mem::replace(existing, Seen::Null).merge(t),
                        None => fields.push((k, t)),
                    }
                    fields
                })),
                Err(_) => Seen::Text,
            },
            Some(b'[') => match serde_json::from_str::<Vec<&serde_json::value::RawValue>>(raw) {
                Ok(items) => {
                    Seen::List(Box::new(items.iter().map(|i| Seen::of(i.get())).fold(Seen::Null, Seen::merge)))
                }
                Err(_) => Seen::Text,
            },
            // A number, judged by its digits: integers past 64 bits with at most 38 digits
            // are decimal(38,0), as Spark infers them; anything with a point or an exponent,
            // or longer, is a double.
            _ if raw.bytes().all(|b| b.is_ascii_digit() || b == b'-') => {
                let digits = raw.trim_start_matches('-').trim_start_matches('0').len();
                match raw.parse::<i64>() {
                    Ok(_) => Seen::Long,
                    Err(_) if digits <= 38 => Seen::BigInteger,
                    Err(_) => Seen::Double,
                }
            }
            _ => Seen::Double,
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

/// Fields whose names differ only in case: Delta column names are case-insensitive, so such a
/// record has no table (nested structs too).
fn same_but_case(fields: &[(String, Seen)], prefix: &str) -> std::result::Result<(), String> {
    for (i, (a, t)) in fields.iter().enumerate() {
        let path = if prefix.is_empty() { a.clone() } else { format!("{prefix}.{a}") };
        if let Some((b, _)) = fields[..i].iter().find(|(b, _)| b.to_lowercase() == a.to_lowercase()) {
            return Err(format!(
                "fields {b:?} and {a:?}{} differ only in case; Delta column names are case-insensitive, so they cannot both be columns",
                if prefix.is_empty() { String::new() } else { format!(" (in {prefix:?})") }
            ));
        }
        if let Seen::Struct(inner) = t {
            same_but_case(inner, &path)?;
        }
    }
    Ok(())
}

/// Infers a schema from sample JSON lines (the rules are in the module's documentation).
///
/// # Errors
/// [`Error::InvalidArgument`] when the sample is not JSON objects or nests too deep.
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) fn infer_schema(sample: &[&str]) -> Result<StructType> {
    let mut seen = Seen::Struct(Vec::new());
    for (i, l) in sample.iter().enumerate() {
        let v = serde_json::from_str::<&serde_json::value::RawValue>(l).map_err(|e| {
            let text = e.to_string();
            let reason = text.split(" at line ").next().unwrap_or(&text);
            Error::InvalidArgument(format!("line {}, column {}: not JSON: {reason}", i + 1, e.column()))
        })?;
        if !v.get().starts_with('{') {
            return Err(Error::InvalidArgument(format!("line {}: a record must be a JSON object", i + 1)));
        }
        let record = Seen::of(v.get());
        if let Seen::Struct(fields) = &record {
            same_but_case(fields, "").map_err(|why| Error::InvalidArgument(format!("line {}: {why}", i + 1)))?;
        }
        seen = seen.merge(record);
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
pub(crate) fn check_column_names(schema: &StructType, column_mapping: bool) -> Result<()> {
    check_column_names_under(schema, column_mapping, "")
}

/// [`check_column_names`] for fields inside the struct at `path` (named by their dotted paths).
///
/// # Errors
/// As [`check_column_names`].
pub(crate) fn check_column_names_under(schema: &StructType, column_mapping: bool, path: &str) -> Result<()> {
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
    walk(&schema.fields, path, column_mapping)
}

/// The properties of a new keyed table (upserts by key, from a pipeline or a served table):
/// deletion vectors on unless the properties say otherwise or the table is for Iceberg
/// readers too (icebergCompatV2 forbids them: replaced rows are then rewritten).
///
/// # Errors
/// [`Error::InvalidArgument`] for row tracking without deletion vectors: replaced rows would
/// be rewritten, which would renumber the rows kept beside them (refused by every rewrite).
pub(crate) fn keyed_table_properties(properties: &mut HashMap<String, String>) -> Result<()> {
    let on = |properties: &HashMap<String, String>, key: &str| {
        properties.iter().any(|(k, v)| k.eq_ignore_ascii_case(key) && v.trim().eq_ignore_ascii_case("true"))
    };
    let compat = crate::delta::iceberg_compat::enabled(properties) || on(properties, "delta.enableIcebergCompatV2");
    let set = properties.keys().any(|k| k.eq_ignore_ascii_case("delta.enableDeletionVectors"));
    if !compat && !set {
        properties.insert("delta.enableDeletionVectors".into(), "true".into());
    }
    if on(properties, "delta.enableRowTracking") && !on(properties, "delta.enableDeletionVectors") {
        return Err(Error::InvalidArgument(
            "a keyed table with delta.enableRowTracking=true needs deletion vectors (replaced rows are deleted \
             through them; a rewrite would renumber the rows kept)"
                .into(),
        ));
    }
    Ok(())
}

/// Protocol and metadata for a new table. A partition entry may derive its column
/// (`date(ts)`, `hour(ts) as h`, ...): it becomes a generated column (writer feature
/// `generatedColumns`) appended to the schema.
///
/// # Errors
/// [`Error::InvalidArgument`] for unknown partition columns or partition columns of a type that
/// cannot partition; [`Error::Unsupported`] for properties asking for unwritable features.
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) fn new_table(
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
    let needs = crate::delta::features::schema_features(&schema);
    let properties = &uniform_properties(properties)?;
    let properties = &crate::delta::properties::checked_properties(properties)?;
    check_column_names(&schema, properties.get("delta.columnMapping.mode").is_some_and(|m| m != "none"))?;
    let protocol = if generated > 0 {
        let mut with_feature = properties.clone();
        with_feature.insert("delta.feature.generatedColumns".into(), "supported".into());
        protocol_for_new_table(&with_feature, &needs)?
    } else {
        protocol_for_new_table(properties, &needs)?
    };
    let mut configuration: HashMap<String, String> = properties
        .iter()
        .filter(|(k, _)| !k.starts_with("delta.feature."))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    if properties.get("delta.enableRowTracking").is_some_and(|v| v.eq_ignore_ascii_case("true")) {
        materialized_row_tracking_columns(&mut configuration);
    }
    if properties.get("delta.columnMapping.mode").is_some_and(|m| m != "none") {
        let mut next = 0i64;
        assign_column_mapping(&mut schema.fields, &mut next);
        configuration.insert("delta.columnMapping.maxColumnId".into(), next.to_string());
    }
    if iceberg_compat(properties) {
        let mode = match properties.get("delta.columnMapping.mode").map(String::as_str) {
            Some("id") => ColumnMappingMode::Id,
            _ => ColumnMappingMode::Name,
        };
        let mut next = configuration.get("delta.columnMapping.maxColumnId").and_then(|v| v.parse().ok()).unwrap_or(0);
        crate::delta::iceberg_compat::nested::assign_nested_ids(&mut schema.fields, mode, &mut next);
        configuration.insert("delta.columnMapping.maxColumnId".into(), next.to_string());
        crate::delta::iceberg_compat::schema::check_convertible(&schema, partition_columns, mode)?;
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

/// Names the columns that hold row ids and row commit versions once rows are rewritten
/// (PROTOCOL.md, "Row Tracking"): readers (Spark, delta-kernel-rs) expose row ids only on tables
/// that name them. Names already given are kept.
fn materialized_row_tracking_columns(configuration: &mut HashMap<String, String>) {
    for (key, prefix) in [
        ("delta.rowTracking.materializedRowIdColumnName", "_row-id-col-"),
        ("delta.rowTracking.materializedRowCommitVersionColumnName", "_row-commit-version-col-"),
    ] {
        configuration.entry(key.to_string()).or_insert_with(|| format!("{prefix}{}", uuid::Uuid::new_v4()));
    }
}

/// Whether `delta.enableIcebergCompatV2` is on.
fn iceberg_compat(properties: &HashMap<String, String>) -> bool {
    properties.get("delta.enableIcebergCompatV2").is_some_and(|v| v.eq_ignore_ascii_case("true"))
}

/// The properties of a new table with what UniForm Iceberg needs filled in: asking for
/// `delta.universalFormat.enabledFormats = iceberg` turns on `delta.enableIcebergCompatV2`
/// and column mapping (`name` mode unless `id` is asked for).
///
/// # Errors
/// [`Error::Unsupported`] when the properties contradict it: icebergCompatV2 or column
/// mapping turned off, or deletion vectors turned on (icebergCompatV2 forbids them; deletes
/// and upserts on such a table rewrite files instead).
fn uniform_properties(properties: &HashMap<String, String>) -> Result<HashMap<String, String>> {
    let mut out = properties.clone();
    let get = |k: &str| properties.iter().find(|(p, _)| p.eq_ignore_ascii_case(k)).map(|(_, v)| v.trim().to_string());
    let uniform = crate::delta::iceberg_compat::enabled(properties);
    let compat = get("delta.enableIcebergCompatV2");
    if uniform && compat.as_deref().is_some_and(|v| !v.eq_ignore_ascii_case("true")) {
        return Err(Error::unsupported(
            "UniForm Iceberg (delta.universalFormat.enabledFormats=iceberg) needs delta.enableIcebergCompatV2=true",
        ));
    }
    if !uniform && !compat.as_deref().is_some_and(|v| v.eq_ignore_ascii_case("true")) {
        return Ok(out);
    }
    out.retain(|k, _| !k.eq_ignore_ascii_case("delta.enableIcebergCompatV2"));
    out.insert("delta.enableIcebergCompatV2".into(), "true".into());
    match get("delta.columnMapping.mode") {
        None => {
            out.insert("delta.columnMapping.mode".into(), "name".into());
        }
        Some(m) if m.eq_ignore_ascii_case("none") => {
            return Err(Error::unsupported(
                "icebergCompatV2 needs column mapping: delta.columnMapping.mode cannot be none",
            ))
        }
        Some(_) => {}
    }
    if get("delta.enableDeletionVectors").is_some_and(|v| v.eq_ignore_ascii_case("true")) {
        return Err(Error::unsupported(
            "icebergCompatV2 forbids deletion vectors: drop delta.enableDeletionVectors=true (deletes and upserts rewrite files instead)",
        ));
    }
    Ok(out)
}

/// Gives every field without one a column-mapping id and physical name, the fields of structs
/// inside arrays and maps too (Delta maps every struct field; readers resolve each by its
/// physical name).
pub(super) fn assign_column_mapping(fields: &mut [StructField], next: &mut i64) {
    for f in fields {
        if f.column_mapping_id().is_none() {
            *next += 1;
            f.metadata.insert(CM_ID.into(), json!(*next));
            f.metadata.insert(CM_PHYSICAL_NAME.into(), json!(format!("col-{}", uuid::Uuid::new_v4())));
        } else {
            *next = (*next).max(f.column_mapping_id().unwrap_or(0));
        }
        for (_, s) in f.data_type.structs_mut() {
            assign_column_mapping(&mut s.fields, next);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn evolution_on_a_column_mapped_table_gives_new_fields_fresh_ids() {
        let mut props = HashMap::new();
        props.insert("delta.columnMapping.mode".to_string(), "name".to_string());
        let schema = infer_schema(&[r#"{"id":1,"s":{"a":1}}"#]).unwrap();
        let (_, m) = new_table(schema, &[], &props).unwrap();
        let before = StructType::parse(&m.schema_string).unwrap();
        // Incoming rows add a top-level column (carrying another table's mapping, which must
        // not be kept) and a field inside the struct.
        let mut incoming = infer_schema(&[r#"{"id":1,"s":{"a":1,"b":"x"},"ünï":2}"#]).unwrap();
        if let Some(f) = incoming.fields.iter_mut().find(|f| f.name == "ünï") {
            f.metadata.insert(CM_ID.into(), json!(1));
            f.metadata.insert(CM_PHYSICAL_NAME.into(), json!("col-from-elsewhere"));
        }
        let merged = add_columns(&before, &incoming).unwrap().unwrap();
        let evolved = evolved_metadata(&m, ColumnMappingMode::Name, merged);
        let after = StructType::parse(&evolved.schema_string).unwrap();
        let id = |s: &StructType, path: &[&str]| -> (i64, String) {
            let mut fields = &s.fields;
            let mut f = None;
            for (i, name) in path.iter().enumerate() {
                let found = fields.iter().find(|x| x.name == *name).unwrap();
                f = Some(found);
                if i + 1 < path.len() {
                    let DataType::Struct(inner) = &found.data_type else { panic!("not a struct") };
                    fields = &inner.fields;
                }
            }
            let f = f.unwrap();
            (f.column_mapping_id().unwrap(), f.physical_name(ColumnMappingMode::Name).to_string())
        };
        // Existing fields keep their ids and physical names.
        for path in [&["id"][..], &["s"], &["s", "a"]] {
            assert_eq!(id(&before, path), id(&after, path), "{path:?}");
        }
        let max = m.configuration["delta.columnMapping.maxColumnId"].parse::<i64>().unwrap();
        let (new_top, top_name) = id(&after, &["ünï"]);
        let (new_inner, _) = id(&after, &["s", "b"]);
        assert!(new_top > max && new_inner > max && new_top != new_inner);
        assert!(top_name.starts_with("col-") && top_name != "col-from-elsewhere");
        assert_eq!(evolved.configuration["delta.columnMapping.maxColumnId"], new_top.max(new_inner).to_string());
        // Without column mapping the schema is taken as it is.
        let plain = evolved_metadata(&m, ColumnMappingMode::None, before.clone());
        assert_eq!(plain.configuration, m.configuration);
    }

    #[test]
    fn structs_inside_arrays_and_maps_are_mapped_and_keep_their_mapping() {
        let mut props = HashMap::new();
        props.insert("delta.columnMapping.mode".to_string(), "name".to_string());
        let schema = StructType::parse(
            r#"{"type":"struct","fields":[
            {"name":"items","type":{"type":"array","elementType":{"type":"struct","fields":[{"name":"sku","type":"string","nullable":true,"metadata":{}}]},"containsNull":true},"nullable":true,"metadata":{}},
            {"name":"attrs","type":{"type":"map","keyType":"string","valueType":{"type":"array","elementType":{"type":"struct","fields":[{"name":"v","type":"long","nullable":true,"metadata":{}}]},"containsNull":true},"valueContainsNull":true},"nullable":true,"metadata":{}}]}"#,
        )
        .unwrap();
        let (_, m) = new_table(schema, &[], &props).unwrap();
        let mapped = StructType::parse(&m.schema_string).unwrap();
        let inner = |s: &StructType| -> Vec<(i64, String)> {
            s.fields
                .iter()
                .flat_map(|f| f.data_type.structs())
                .flat_map(|(_, st)| {
                    st.fields
                        .iter()
                        .map(|f| (f.column_mapping_id().unwrap(), f.physical_name(ColumnMappingMode::Name).to_string()))
                })
                .collect::<Vec<_>>()
        };
        let ids = inner(&mapped);
        assert_eq!(ids.iter().map(|(i, _)| *i).collect::<Vec<_>>(), vec![2, 4], "sku and v after their columns");
        assert!(ids.iter().all(|(_, n)| n.starts_with("col-")));
        assert_eq!(m.configuration["delta.columnMapping.maxColumnId"], "4");
        // A mirror carrying another table's schema over keeps the target's mapping inside
        // arrays and maps, and a new column holding structs gets fresh ids.
        let mut incoming = StructType::parse(&m.schema_string).unwrap();
        fn strip(fields: &mut [StructField]) {
            for f in fields {
                f.metadata.clear();
                for (_, s) in f.data_type.structs_mut() {
                    strip(&mut s.fields);
                }
            }
        }
        strip(&mut incoming.fields);
        let mut extra = mapped.fields[0].clone();
        extra.name = "more".into();
        incoming.fields.push(extra);
        let carried = super::super::evolve::with_current_mapping(&mapped, &incoming);
        let evolved = evolved_metadata(&m, ColumnMappingMode::Name, carried);
        let after = StructType::parse(&evolved.schema_string).unwrap();
        let after_ids = inner(&after);
        assert_eq!(after_ids[..2], ids[..], "existing fields keep ids and physical names");
        assert!(after_ids[2].0 > 4 && after_ids[2].1 != ids[0].1, "{after_ids:?}");
        assert_eq!(after.fields[2].column_mapping_id(), Some(5));
        assert_eq!(evolved.configuration["delta.columnMapping.maxColumnId"], "6");
    }

    #[test]
    fn infers_and_merges() {
        let s = infer_schema(&[r#"{"a":1,"b":"x","c":{"d":[1.5]}}"#, r#"{"a":2,"e":null,"f":true}"#]).unwrap();
        let names: Vec<&str> = s.fields.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, vec!["a", "b", "c", "e", "f"]);
        assert_eq!(s.field("a").unwrap().data_type, DataType::Primitive(PrimitiveType::Long));
        assert_eq!(s.field("e").unwrap().data_type, DataType::Primitive(PrimitiveType::String));
        let nines = "9".repeat(38);
        let big = infer_schema(&[&format!(r#"{{"big":{nines},"huge":{nines}9,"f":1e3,"n":-12}}"#)]).unwrap();
        let types: Vec<String> = big.fields.iter().map(|f| serde_json::to_string(&f.data_type).unwrap()).collect();
        assert_eq!(types, ["\"decimal(38,0)\"", "\"double\"", "\"double\"", "\"long\""]);
        let cased = infer_schema(&[r#"{"A":1,"a":2}"#]).unwrap_err().to_string();
        assert!(cased.contains(r#"fields "A" and "a" differ only in case"#), "{cased}");
        assert!(infer_schema(&[r#"{"s":{"Ä":1,"ä":2}}"#]).is_err());
        let base = infer_schema(&[r#"{"a":1}"#]).unwrap();
        let merged = merge_schema(&base, &s).unwrap().unwrap();
        assert_eq!(merged.fields.len(), 5);
        assert!(merge_schema(&s, &base).unwrap().is_none());
        // Fields inside a struct both have are added too, and named by their paths.
        let have = infer_schema(&[r#"{"s":{"a":1}}"#]).unwrap();
        let rows = infer_schema(&[r#"{"s":{"a":1,"b":"x"},"t":true}"#]).unwrap();
        let nested = merge_schema(&have, &rows).unwrap().unwrap();
        assert_eq!(added_fields(&have, &nested), vec!["s.b".to_string(), "t".to_string()]);
        assert!(merge_schema(&nested, &rows).unwrap().is_none());
    }

    #[test]
    fn names_needing_column_mapping_evolve_tables_that_have_it() {
        let base = infer_schema(&[r#"{"a":1,"s":{"x":1}}"#]).unwrap();
        let incoming = infer_schema(&[r#"{"a":1,"s":{"x":1,"x y":2},"top new":"é","t(1)":{"k=v":1}}"#]).unwrap();
        let mut mapped = base.clone();
        let mut next = 0;
        assign_column_mapping(&mut mapped.fields, &mut next);
        for (schema, is_mapped) in [(&base, false), (&mapped, true)] {
            let merged = merge_schema(schema, &incoming);
            let copied = add_columns(schema, &incoming);
            if is_mapped {
                let merged = merged.unwrap().unwrap();
                assert_eq!(added_fields(schema, &merged), ["s.x y", "top new", "t(1)"]);
                assert!(copied.unwrap().is_some());
            } else {
                assert!(merged.unwrap_err().to_string().contains("column mapping"));
                assert!(copied.unwrap_err().contains("column mapping"));
            }
        }
        // Only the nested name needs mapping: refused on the unmapped table too.
        let nested = infer_schema(&[r#"{"s":{"x":1,"x y":2}}"#]).unwrap();
        assert!(merge_schema(&base, &nested).unwrap_err().to_string().contains("s.x y"));
        assert!(merge_schema(&mapped, &nested).unwrap().is_some());
        // An empty name is refused whatever the mode.
        let empty = infer_schema(&[r#"{"":1}"#]);
        if let Ok(empty) = empty {
            assert!(merge_schema(&mapped, &empty).is_err());
        }
    }

    #[test]
    fn copies_take_added_columns_and_refuse_the_rest() {
        let base = infer_schema(&[r#"{"a":1,"s":{"x":1}}"#]).unwrap();
        let more = infer_schema(&[r#"{"a":1,"s":{"x":1,"y":"é"},"名前":"x"}"#]).unwrap();
        let merged = add_columns(&base, &more).unwrap().unwrap();
        assert_eq!(merged.fields.iter().map(|f| f.name.as_str()).collect::<Vec<_>>(), ["a", "s", "名前"]);
        let DataType::Struct(inner) = &merged.field("s").unwrap().data_type else { panic!("struct") };
        assert_eq!(inner.fields.len(), 2);
        assert_eq!(add_columns(&merged, &more).unwrap(), None);
        assert_eq!(add_columns(&merged, &base).unwrap(), None, "a column the rows lack stays");
        let retyped = infer_schema(&[r#"{"a":"text"}"#]).unwrap();
        assert_eq!(
            add_columns(&base, &retyped).unwrap_err(),
            "column \"a\" changed type from string to long".replace("string to long", "long to string")
        );
        let cased = infer_schema(&[r#"{"A":1}"#]).unwrap();
        assert!(add_columns(&base, &cased).unwrap_err().contains("only in case"));
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
        let (p, m) = new_table(s.clone(), &[], &props).unwrap();
        assert_eq!((p.min_reader_version, p.min_writer_version), (3, 7));
        assert_eq!(p.reader_features.unwrap(), vec!["columnMapping", "deletionVectors"]);
        assert_eq!(m.configuration["delta.columnMapping.maxColumnId"], "2");
        assert!(m.schema_string.contains("delta.columnMapping.physicalName"));
        assert!(!m.configuration.keys().any(|k| k.starts_with("delta.rowTracking.")));
        // Row tracking names its materialized columns, uniquely per table.
        let tracked: HashMap<String, String> = [("delta.enableRowTracking".to_string(), "true".to_string())].into();
        let (_, a) = new_table(s.clone(), &[], &tracked).unwrap();
        let (_, b) = new_table(s, &[], &tracked).unwrap();
        let id = "delta.rowTracking.materializedRowIdColumnName";
        let version = "delta.rowTracking.materializedRowCommitVersionColumnName";
        assert!(a.configuration[id].starts_with("_row-id-col-"), "{:?}", a.configuration);
        assert!(a.configuration[version].starts_with("_row-commit-version-col-"));
        assert_ne!(a.configuration[id], b.configuration[id]);
    }

    #[test]
    fn keyed_tables_get_deletion_vectors_which_row_tracking_needs() {
        let props = |pairs: &[(&str, &str)]| -> HashMap<String, String> {
            pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
        };
        let mut plain = props(&[]);
        keyed_table_properties(&mut plain).unwrap();
        assert_eq!(plain["delta.enableDeletionVectors"], "true");
        let mut tracked = props(&[("delta.enableRowTracking", "true")]);
        keyed_table_properties(&mut tracked).unwrap();
        assert_eq!(tracked["delta.enableDeletionVectors"], "true");
        let mut without = props(&[("delta.enableRowTracking", "TRUE"), ("delta.enableDeletionVectors", "false")]);
        let err = keyed_table_properties(&mut without).unwrap_err().to_string();
        assert!(err.contains("needs deletion vectors"), "{err}");
    }
}
