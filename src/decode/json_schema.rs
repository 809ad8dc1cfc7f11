//! A JSON Schema (draft 4 to 2020-12, as Confluent's registry stores them for `json-schema`
//! topics) as a Delta schema, for tables created from a registry schema rather than from a
//! sample: `integer` → long, `number` → double, `string` → string (`format: date-time` →
//! timestamp, `date` → date), `boolean`, `array` → array of `items`, `object` with
//! `properties` → struct; `["null", T]` and `anyOf`/`oneOf` of a type and `null` are nullable;
//! a property listed in `required` (and not null-able) is not nullable. `$ref` to `#/definitions`
//! or `#/$defs` is followed. What has no Delta type is refused by name.

use serde_json::Value;

use crate::delta::schema::{ArrayType, DataType, PrimitiveType, StructField, StructType};
use crate::error::{Error, Result};

/// The Delta schema of a JSON Schema whose root is an object.
///
/// # Errors
/// [`Error::InvalidArgument`] naming the property that has no Delta type.
pub(crate) fn delta_schema(text: &str) -> Result<StructType> {
    let root: Value = serde_json::from_str(text).map_err(|e| Error::InvalidArgument(format!("JSON Schema: {e}")))?;
    match convert(&root, &root, "", 0)? {
        (DataType::Struct(s), _) => Ok(*s),
        _ => Err(Error::InvalidArgument("JSON Schema: the root is not an object".into())),
    }
}

/// (type, nullable)
fn convert(node: &Value, root: &Value, at: &str, depth: u32) -> Result<(DataType, bool)> {
    let bad =
        |why: &str| Error::InvalidArgument(format!("JSON Schema at {:?}: {why}", if at.is_empty() { "/" } else { at }));
    if depth > 64 {
        return Err(bad("nested too deeply"));
    }
    if let Some(r) = node.get("$ref").and_then(Value::as_str) {
        let path = r.strip_prefix("#/").ok_or_else(|| bad("only local $refs are followed"))?;
        let target = path.split('/').try_fold(root, |v, k| v.get(k)).ok_or_else(|| bad("unresolved $ref"))?;
        return convert(target, root, at, depth + 1);
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(options) = node.get(key).and_then(Value::as_array) {
            let non_null: Vec<&Value> =
                options.iter().filter(|o| o.get("type") != Some(&Value::from("null"))).collect();
            return match non_null.as_slice() {
                [one] => convert(one, root, at, depth + 1).map(|(t, n)| (t, n || non_null.len() < options.len())),
                _ => Err(bad(&format!("{key} of several types has no single Delta type"))),
            };
        }
    }
    let (kind, nullable) = match node.get("type") {
        Some(Value::String(t)) => (t.as_str(), false),
        Some(Value::Array(ts)) => {
            let named: Vec<&str> = ts.iter().filter_map(Value::as_str).filter(|t| *t != "null").collect();
            match named.as_slice() {
                [one] => (*one, named.len() < ts.len()),
                _ => return Err(bad("a union of several types has no single Delta type")),
            }
        }
        _ if node.get("properties").is_some() => ("object", false),
        _ => return Err(bad("no type")),
    };
    let p = |t| DataType::Primitive(t);
    let data_type = match kind {
        "integer" => p(PrimitiveType::Long),
        "number" => p(PrimitiveType::Double),
        "boolean" => p(PrimitiveType::Boolean),
        "string" => match node.get("format").and_then(Value::as_str) {
            Some("date-time") => p(PrimitiveType::Timestamp),
            Some("date") => p(PrimitiveType::Date),
            _ => p(PrimitiveType::String),
        },
        "array" => {
            let items = node.get("items").ok_or_else(|| bad("an array without items"))?;
            // JSON arrays may hold nulls whatever `items` says.
            let (element_type, _) = convert(items, root, &format!("{at}/items"), depth + 1)?;
            DataType::Array(Box::new(ArrayType { element_type, contains_null: true }))
        }
        "object" => {
            let required: Vec<&str> = node
                .get("required")
                .and_then(Value::as_array)
                .map(|r| r.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            let props =
                node.get("properties").and_then(Value::as_object).ok_or_else(|| bad("an object without properties"))?;
            let mut fields = Vec::with_capacity(props.len());
            for (name, schema) in props {
                let (t, n) = convert(schema, root, &format!("{at}/{name}"), depth + 1)?;
                fields.push(StructField::new(name, t, n || !required.contains(&name.as_str())));
            }
            DataType::Struct(Box::new(StructType::new(fields)))
        }
        other => return Err(bad(&format!("type {other:?} has no Delta type"))),
    };
    Ok((data_type, nullable))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn objects_become_structs_with_their_types_and_nullability() {
        let s = delta_schema(
            r##"{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","required":["id"],
               "properties":{"id":{"type":"integer"},"name":{"type":["null","string"]},
                 "at":{"type":"string","format":"date-time"},"day":{"type":"string","format":"date"},
                 "tags":{"type":"array","items":{"type":"string"}},
                 "addr":{"$ref":"#/definitions/Addr"},"score":{"anyOf":[{"type":"null"},{"type":"number"}]}},
               "definitions":{"Addr":{"type":"object","properties":{"city":{"type":"string"}}}}}"##,
        )
        .unwrap();
        let json = s.to_json();
        assert!(json.contains(r#"{"name":"id","type":"long","nullable":false"#), "{json}");
        assert!(json.contains(r#"{"name":"at","type":"timestamp","nullable":true"#), "{json}");
        assert!(json.contains(r#"{"name":"day","type":"date""#), "{json}");
        assert!(json.contains(r#""name":"addr","type":{"type":"struct","fields":[{"name":"city""#), "{json}");
        assert!(json.contains(r#"{"name":"score","type":"double","nullable":true"#), "{json}");
        assert!(delta_schema(r#"{"type":"object","properties":{"x":{"type":["string","integer"]}}}"#).is_err());
        assert!(delta_schema(r#"{"type":"string"}"#).is_err());
    }
}
