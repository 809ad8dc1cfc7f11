//! The Delta schema language (protocol digest §3): primitive types including `timestamp_ntz`
//! and decimals, nested struct/array/map, and field metadata, with column-mapping accessors.
//!
//! Parsing accepts what real writers produce (`decimal(10, 4)` with spaces, a missing
//! `valueContainsNull`); serialisation writes the form Spark requires (all four field keys,
//! `containsNull` and `valueContainsNull` always present).

use std::collections::HashMap;
use std::fmt;

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use crate::error::{Error, Result};

/// Column-mapping metadata keys.
pub(crate) const CM_ID: &str = "delta.columnMapping.id";
pub(crate) const CM_PHYSICAL_NAME: &str = "delta.columnMapping.physicalName";

/// A primitive Delta type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PrimitiveType {
    String,
    Long,
    Integer,
    Short,
    Byte,
    Float,
    Double,
    Boolean,
    Binary,
    Date,
    Timestamp,
    TimestampNtz,
    Decimal { precision: u8, scale: i8 },
    Void,
}

impl PrimitiveType {
    /// The type a schema names (`long`, `decimal(10, 2)`), if it is primitive.
    pub(crate) fn parse_name(s: &str) -> Option<PrimitiveType> {
        PrimitiveType::parse(s)
    }

    fn parse(s: &str) -> Option<PrimitiveType> {
        use PrimitiveType::*;
        Some(match s {
            "string" => String,
            "long" => Long,
            "integer" => Integer,
            "short" => Short,
            "byte" => Byte,
            "float" => Float,
            "double" => Double,
            "boolean" => Boolean,
            "binary" => Binary,
            "date" => Date,
            "timestamp" => Timestamp,
            "timestamp_ntz" => TimestampNtz,
            "void" => Void,
            other => {
                let inner = other.strip_prefix("decimal")?.trim().strip_prefix('(')?.strip_suffix(')')?;
                let (p, s) = inner.split_once(',')?;
                let precision: u8 = p.trim().parse().ok()?;
                let scale: i8 = s.trim().parse().ok()?;
                if precision == 0 || precision > 38 || scale < 0 || scale as u8 > precision {
                    return None;
                }
                Decimal { precision, scale }
            }
        })
    }
}

impl fmt::Display for PrimitiveType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use PrimitiveType::*;
        let s = match self {
            String => "string",
            Long => "long",
            Integer => "integer",
            Short => "short",
            Byte => "byte",
            Float => "float",
            Double => "double",
            Boolean => "boolean",
            Binary => "binary",
            Date => "date",
            Timestamp => "timestamp",
            TimestampNtz => "timestamp_ntz",
            Void => "void",
            Decimal { precision, scale } => return write!(f, "decimal({precision},{scale})"),
        };
        f.write_str(s)
    }
}

/// Any Delta data type.
#[derive(Debug, Clone, PartialEq)]
pub enum DataType {
    Primitive(PrimitiveType),
    Struct(Box<StructType>),
    Array(Box<ArrayType>),
    Map(Box<MapType>),
    /// `variant`: semi-structured values stored as `struct<metadata: binary, value: binary>`.
    Variant,
}

/// `{"type":"array",...}`
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ArrayType {
    pub element_type: DataType,
    #[serde(default = "yes")]
    pub contains_null: bool,
}

/// `{"type":"map",...}`
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MapType {
    pub key_type: DataType,
    pub value_type: DataType,
    #[serde(default = "yes")]
    pub value_contains_null: bool,
}

fn yes() -> bool {
    true
}

/// One column.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StructField {
    pub name: String,
    #[serde(rename = "type")]
    pub data_type: DataType,
    #[serde(default = "yes")]
    pub nullable: bool,
    #[serde(default)]
    pub metadata: HashMap<String, Value>,
}

impl StructField {
    /// A field with no metadata.
    pub fn new(name: impl Into<String>, data_type: DataType, nullable: bool) -> Self {
        StructField { name: name.into(), data_type, nullable, metadata: HashMap::new() }
    }

    /// The column name in data files: the column-mapping physical name when the table uses
    /// column mapping, else the logical name.
    pub fn physical_name(&self, mode: ColumnMappingMode) -> &str {
        match mode {
            ColumnMappingMode::None => &self.name,
            _ => self.metadata.get(CM_PHYSICAL_NAME).and_then(Value::as_str).unwrap_or(&self.name),
        }
    }

    /// The column-mapping field id, if assigned.
    pub fn column_mapping_id(&self) -> Option<i64> {
        self.metadata.get(CM_ID).and_then(Value::as_i64)
    }
}

/// A struct type, and the schema of a table.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct StructType {
    pub fields: Vec<StructField>,
}

#[derive(Serialize, Deserialize)]
struct StructRepr {
    #[serde(rename = "type")]
    kind: String,
    fields: Vec<StructField>,
}

impl Serialize for StructType {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        StructRepr { kind: "struct".into(), fields: self.fields.clone() }.serialize(s)
    }
}

impl<'de> Deserialize<'de> for StructType {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let repr = StructRepr::deserialize(d)?;
        if repr.kind != "struct" {
            return Err(D::Error::custom(format!("expected a struct type, found {:?}", repr.kind)));
        }
        Ok(StructType { fields: repr.fields })
    }
}

impl StructType {
    /// A struct of the given fields.
    pub fn new(fields: Vec<StructField>) -> Self {
        StructType { fields }
    }

    /// Parses a `schemaString`, checking that names are unique ignoring case.
    ///
    /// # Errors
    /// [`Error::InvalidLog`] when the JSON is not a valid Delta schema.
    pub fn parse(schema_string: &str) -> Result<StructType> {
        let schema: StructType = serde_json::from_str(schema_string)
            .map_err(|e| Error::invalid_log("metaData.schemaString", format!("invalid schema: {e}")))?;
        schema.check_unique_names()?;
        Ok(schema)
    }

    fn check_unique_names(&self) -> Result<()> {
        let mut seen = std::collections::HashSet::new();
        for f in &self.fields {
            if !seen.insert(f.name.to_lowercase()) {
                return Err(Error::invalid_log("metaData.schemaString", format!("duplicate column {:?}", f.name)));
            }
            for (_, s) in f.data_type.structs() {
                s.check_unique_names()?;
            }
        }
        Ok(())
    }

    /// The schema as a `schemaString`.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    /// Finds a top-level field by exact name.
    pub fn field(&self, name: &str) -> Option<&StructField> {
        self.fields.iter().find(|f| f.name == name)
    }

    /// Whether any field at any depth has this type.
    pub fn contains(&self, pred: &dyn Fn(&DataType) -> bool) -> bool {
        fn walk(t: &DataType, pred: &dyn Fn(&DataType) -> bool) -> bool {
            if pred(t) {
                return true;
            }
            match t {
                DataType::Struct(s) => s.fields.iter().any(|f| walk(&f.data_type, pred)),
                DataType::Array(a) => walk(&a.element_type, pred),
                DataType::Map(m) => walk(&m.key_type, pred) || walk(&m.value_type, pred),
                _ => false,
            }
        }
        self.fields.iter().any(|f| walk(&f.data_type, pred))
    }
}

impl DataType {
    /// The structs at this type's own level: itself when it is a struct, else the structs its
    /// array elements and map keys and values hold (through nested arrays and maps), each with
    /// its path below the field (`""`, `"element"`, `"value.element"`). A struct's fields are
    /// the next level: walking every field of a schema, structs inside arrays and maps
    /// included, is a recursion over these.
    pub(crate) fn structs(&self) -> Vec<(String, &StructType)> {
        fn walk<'a>(t: &'a DataType, path: String, out: &mut Vec<(String, &'a StructType)>) {
            match t {
                DataType::Struct(s) => out.push((path, s)),
                DataType::Array(a) => walk(&a.element_type, below(&path, "element"), out),
                DataType::Map(m) => {
                    walk(&m.key_type, below(&path, "key"), out);
                    walk(&m.value_type, below(&path, "value"), out);
                }
                DataType::Primitive(_) | DataType::Variant => {}
            }
        }
        let mut out = Vec::new();
        walk(self, String::new(), &mut out);
        out
    }

    /// As [`DataType::structs`], mutable.
    pub(crate) fn structs_mut(&mut self) -> Vec<(String, &mut StructType)> {
        fn walk<'a>(t: &'a mut DataType, path: String, out: &mut Vec<(String, &'a mut StructType)>) {
            match t {
                DataType::Struct(s) => out.push((path, s)),
                DataType::Array(a) => walk(&mut a.element_type, below(&path, "element"), out),
                DataType::Map(m) => {
                    walk(&mut m.key_type, below(&path, "key"), out);
                    walk(&mut m.value_type, below(&path, "value"), out);
                }
                DataType::Primitive(_) | DataType::Variant => {}
            }
        }
        let mut out = Vec::new();
        walk(self, String::new(), &mut out);
        out
    }
}

fn below(path: &str, step: &str) -> String {
    if path.is_empty() {
        step.to_string()
    } else {
        format!("{path}.{step}")
    }
}

/// The table's column-mapping mode (`delta.columnMapping.mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ColumnMappingMode {
    #[default]
    None,
    Name,
    Id,
}

impl Serialize for DataType {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        match self {
            DataType::Primitive(p) => s.serialize_str(&p.to_string()),
            DataType::Variant => s.serialize_str("variant"),
            DataType::Struct(st) => st.serialize(s),
            DataType::Array(a) => {
                #[derive(Serialize)]
                #[serde(rename_all = "camelCase")]
                struct Repr<'a> {
                    #[serde(rename = "type")]
                    kind: &'a str,
                    element_type: &'a DataType,
                    contains_null: bool,
                }
                Repr { kind: "array", element_type: &a.element_type, contains_null: a.contains_null }.serialize(s)
            }
            DataType::Map(m) => {
                #[derive(Serialize)]
                #[serde(rename_all = "camelCase")]
                struct Repr<'a> {
                    #[serde(rename = "type")]
                    kind: &'a str,
                    key_type: &'a DataType,
                    value_type: &'a DataType,
                    value_contains_null: bool,
                }
                Repr {
                    kind: "map",
                    key_type: &m.key_type,
                    value_type: &m.value_type,
                    value_contains_null: m.value_contains_null,
                }
                .serialize(s)
            }
        }
    }
}

impl<'de> Deserialize<'de> for DataType {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let v = Value::deserialize(d)?;
        match &v {
            Value::String(s) if s == "variant" => Ok(DataType::Variant),
            Value::String(s) => PrimitiveType::parse(s)
                .map(DataType::Primitive)
                .ok_or_else(|| D::Error::custom(format!("unknown data type {s:?}"))),
            Value::Object(o) => match o.get("type").and_then(Value::as_str) {
                Some("struct") => {
                    serde_json::from_value(v).map(|s| DataType::Struct(Box::new(s))).map_err(D::Error::custom)
                }
                Some("array") => {
                    serde_json::from_value(v).map(|a| DataType::Array(Box::new(a))).map_err(D::Error::custom)
                }
                Some("map") => serde_json::from_value(v).map(|m| DataType::Map(Box::new(m))).map_err(D::Error::custom),
                Some("variant") => Ok(DataType::Variant),
                other => Err(D::Error::custom(format!("unknown complex type {other:?}"))),
            },
            _ => Err(D::Error::custom("a data type must be a string or an object")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_all_kinds_and_round_trips() {
        let s = r#"{"type":"struct","fields":[
            {"name":"a","type":"integer","nullable":true,"metadata":{}},
            {"name":"b","type":"decimal(10, 4)","nullable":false,"metadata":{"delta.columnMapping.id":2,"delta.columnMapping.physicalName":"col-b"}},
            {"name":"c","type":{"type":"array","elementType":"timestamp_ntz","containsNull":true},"nullable":true,"metadata":{}},
            {"name":"d","type":{"type":"map","keyType":"string","valueType":{"type":"struct","fields":[{"name":"x","type":"long","nullable":true,"metadata":{}}]}},"nullable":true,"metadata":{}},
            {"name":"e","type":"variant","nullable":true,"metadata":{}}]}"#;
        let schema = StructType::parse(s).unwrap();
        assert_eq!(schema.fields.len(), 5);
        assert_eq!(schema.fields[1].data_type, DataType::Primitive(PrimitiveType::Decimal { precision: 10, scale: 4 }));
        assert_eq!(schema.fields[1].physical_name(ColumnMappingMode::Name), "col-b");
        assert_eq!(schema.fields[1].physical_name(ColumnMappingMode::None), "b");
        let json = schema.to_json();
        assert!(json.contains(r#""decimal(10,4)""#));
        assert!(json.contains(r#""valueContainsNull":true"#));
        assert_eq!(StructType::parse(&json).unwrap(), schema);
    }

    #[test]
    fn refuses_bad_schemas() {
        assert!(StructType::parse(
            r#"{"type":"struct","fields":[{"name":"a","type":"int","nullable":true,"metadata":{}}]}"#
        )
        .is_err());
        assert!(StructType::parse(r#"{"type":"struct","fields":[{"name":"a","type":"long","nullable":true,"metadata":{}},{"name":"A","type":"long","nullable":true,"metadata":{}}]}"#).is_err());
        assert!(StructType::parse(
            r#"{"type":"struct","fields":[{"name":"a","type":"decimal(40,2)","nullable":true,"metadata":{}}]}"#
        )
        .is_err());
    }
}
