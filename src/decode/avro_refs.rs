//! Avro schema references: a writer schema that names types registered under other subjects
//! (Confluent `references`) made self-contained for `arrow-avro`, which parses one schema.
//!
//! Each referenced named type (record, enum, fixed), under its reference name (its full name),
//! is written out where the schema first uses it, and left as a name after that, as Avro's
//! parsing canonical form would have it. References of references are resolved the same way.

use std::collections::{HashMap, HashSet};

use serde_json::Value;

use crate::decode::registry::RegisteredSchema;

const PRIMITIVES: &[&str] = &["null", "boolean", "int", "long", "float", "double", "bytes", "string"];

/// The schema text with every referenced type inlined at its first use.
///
/// # Errors
/// A schema or referenced schema that is not JSON.
pub(crate) fn inline_references(schema: &RegisteredSchema) -> Result<String, String> {
    if schema.references.is_empty() {
        return Ok(schema.schema.clone());
    }
    let mut refs: HashMap<String, Value> = HashMap::new();
    for (name, r) in schema.all_references() {
        let v: Value = serde_json::from_str(&r.schema).map_err(|e| format!("referenced schema {name}: {e}"))?;
        refs.insert(name.to_string(), v);
    }
    let mut root: Value = serde_json::from_str(&schema.schema).map_err(|e| format!("schema: {e}"))?;
    let mut defined = HashSet::new();
    inline(&mut root, &refs, &mut defined, None);
    Ok(root.to_string())
}

fn full_name(name: &str, namespace: Option<&str>) -> String {
    match namespace {
        Some(ns) if !name.contains('.') && !ns.is_empty() => format!("{ns}.{name}"),
        _ => name.to_string(),
    }
}

fn inline(v: &mut Value, refs: &HashMap<String, Value>, defined: &mut HashSet<String>, ns: Option<&str>) {
    match v {
        Value::String(name) if !PRIMITIVES.contains(&name.as_str()) => {
            let full = full_name(name, ns);
            let key = [full.as_str(), name.as_str()].into_iter().find(|k| refs.contains_key(*k)).map(str::to_string);
            if let Some(key) = key {
                if !defined.contains(&full) && !defined.contains(&key) {
                    let mut def = refs[&key].clone();
                    // Defined now, so a recursive use inside stays a name.
                    defined.insert(key.clone());
                    defined.insert(full);
                    inline(&mut def, refs, defined, None);
                    *v = def;
                }
            }
        }
        Value::Array(union) => {
            for member in union {
                inline(member, refs, defined, ns);
            }
        }
        Value::Object(obj) => {
            let own_ns = obj.get("namespace").and_then(Value::as_str).map(str::to_string);
            let name = obj.get("name").and_then(Value::as_str).map(str::to_string);
            let kind = obj.get("type").and_then(Value::as_str).map(str::to_string);
            let inner_ns = match (&name, &own_ns) {
                (_, Some(n)) => Some(n.clone()),
                (Some(n), None) if n.contains('.') => n.rsplit_once('.').map(|(a, _)| a.to_string()),
                _ => ns.map(str::to_string),
            };
            if let (Some(n), Some("record" | "enum" | "fixed")) = (&name, kind.as_deref()) {
                defined.insert(full_name(n, inner_ns.as_deref()));
            }
            match kind.as_deref() {
                Some("record" | "error") => {
                    if let Some(Value::Array(fields)) = obj.get_mut("fields") {
                        for f in fields {
                            if let Some(t) = f.get_mut("type") {
                                inline(t, refs, defined, inner_ns.as_deref());
                            }
                        }
                    }
                }
                Some("array") => {
                    if let Some(items) = obj.get_mut("items") {
                        inline(items, refs, defined, ns);
                    }
                }
                Some("map") => {
                    if let Some(values) = obj.get_mut("values") {
                        inline(values, refs, defined, ns);
                    }
                }
                _ => {
                    if let Some(t) = obj.get_mut("type").filter(|t| !t.is_string()) {
                        inline(t, refs, defined, ns);
                    }
                }
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::registry::SchemaType;
    use std::sync::Arc;

    #[test]
    fn referenced_types_are_written_out_once() {
        let address = RegisteredSchema::new(
            0,
            SchemaType::Avro,
            r#"{"type":"record","name":"Address","namespace":"com.acme","fields":[{"name":"city","type":"string"},{"name":"country","type":"com.acme.Country"}]}"#,
        );
        let mut address = address;
        address.references.push((
            "com.acme.Country".into(),
            Arc::new(RegisteredSchema::new(
                0,
                SchemaType::Avro,
                r#"{"type":"enum","name":"Country","namespace":"com.acme","symbols":["DE","FR"]}"#,
            )),
        ));
        let mut order = RegisteredSchema::new(
            7,
            SchemaType::Avro,
            r#"{"type":"record","name":"Order","namespace":"com.acme","fields":[{"name":"ship","type":"Address"},{"name":"bill","type":["null","com.acme.Address"]},{"name":"id","type":"long"}]}"#,
        );
        order.references.push(("com.acme.Address".into(), Arc::new(address)));
        let out: Value = serde_json::from_str(&inline_references(&order).unwrap()).unwrap();
        assert_eq!(out["fields"][0]["type"]["name"], "Address", "written out at its first use");
        assert_eq!(out["fields"][0]["type"]["fields"][1]["type"]["symbols"][1], "FR", "references of references");
        assert_eq!(out["fields"][1]["type"][1], "com.acme.Address", "later uses stay names");
        // arrow-avro can use it.
        assert!(crate::decode::avro::AvroDecoder::plain(&out.to_string()).is_ok());
    }
}
