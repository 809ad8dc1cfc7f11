//! [sync] Type widening (protocol "Type Widening"): a column's type changes in place to a wider
//! one of its family, recorded in the field's `delta.typeChanges`; files written before keep
//! the old type and are read upcast.
//!
//! - [`allowed`]: the changes the protocol lists (byte → short → int → long; float → double;
//!   byte, short, int → double; date → timestamp_ntz; decimal(p, s) → decimal(p + k1, s + k2)
//!   with k1 ≥ k2 ≥ 0; byte, short, int → decimal(10 + k1, k2); long → decimal(20 + k1, k2)).
//! - [`automatic`]: those schema evolution applies by itself (Spark's defaults: every allowed
//!   change but integers into decimal or double, which `deltabus alter --widen` makes).
//! - [`iceberg_allows`]: those Iceberg V2 allows (int → long, float → double, decimal
//!   precision), the only ones a UniForm table takes.
//! - [`apply`]: the metadata and protocol of a schema change that widens columns.

use serde_json::{json, Value};

use super::actions::{Metadata, Protocol};
use super::features::with_features;
use super::schema::{DataType, PrimitiveType as P, StructField, StructType};
use crate::error::{Error, Result};

/// The table feature.
pub(crate) const FEATURE: &str = "typeWidening";
/// The table property that lets writers widen columns.
pub(crate) const PROPERTY: &str = "delta.enableTypeWidening";
/// The field metadata key holding a field's type changes.
pub(crate) const TYPE_CHANGES: &str = "delta.typeChanges";

/// Whether `from` may be widened to `to` (protocol "Type Widening").
pub(crate) fn allowed(from: P, to: P) -> bool {
    let rank = |t: P| match t {
        P::Byte => Some(0),
        P::Short => Some(1),
        P::Integer => Some(2),
        P::Long => Some(3),
        _ => None,
    };
    match (from, to) {
        _ if from == to => false,
        (a, b) if rank(a).is_some() && rank(b).is_some() => rank(a) < rank(b),
        (P::Float, P::Double) | (P::Date, P::TimestampNtz) => true,
        (P::Byte | P::Short | P::Integer, P::Double) => true,
        (P::Decimal { precision: p, scale: s }, P::Decimal { precision: p2, scale: s2 }) => {
            let (k1, k2) = (i16::from(p2) - i16::from(p), i16::from(s2) - i16::from(s));
            k1 >= k2 && k2 >= 0
        }
        (P::Byte | P::Short | P::Integer, P::Decimal { precision, scale }) => decimal_holds(precision, scale, 10),
        (P::Long, P::Decimal { precision, scale }) => decimal_holds(precision, scale, 20),
        _ => false,
    }
}

/// decimal(base + k1, k2) with k1 ≥ k2 ≥ 0.
fn decimal_holds(precision: u8, scale: i8, base: u8) -> bool {
    let (k1, k2) = (i16::from(precision) - i16::from(base), i16::from(scale));
    k1 >= k2 && k2 >= 0
}

/// Whether schema evolution widens `from` to `to` by itself: every allowed change but whole
/// numbers into decimal or double (as Spark, so a stray fraction does not turn a count into a
/// decimal).
pub(crate) fn automatic(from: P, to: P) -> bool {
    let whole = matches!(from, P::Byte | P::Short | P::Integer | P::Long);
    allowed(from, to) && !(whole && matches!(to, P::Double | P::Decimal { .. }))
}

/// Whether Iceberg V2 allows the change (a UniForm table takes no other).
pub(crate) fn iceberg_allows(from: P, to: P) -> bool {
    match (from, to) {
        (P::Byte | P::Short | P::Integer, P::Long) | (P::Byte | P::Short, P::Integer) => true,
        (P::Float, P::Double) => true,
        (P::Decimal { scale, .. }, P::Decimal { scale: s2, .. }) => scale == s2 && allowed(from, to),
        _ => false,
    }
}

/// Whether the table lets writers widen its columns (`delta.enableTypeWidening=true`).
pub(crate) fn enabled(configuration: &std::collections::HashMap<String, String>) -> bool {
    configuration.iter().any(|(k, v)| k.eq_ignore_ascii_case(PROPERTY) && v.eq_ignore_ascii_case("true"))
}

/// One type change of a schema: the field path (top-level name, then nested names, `element`,
/// `key` or `value`), and the types before and after.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct TypeChange {
    pub path: Vec<String>,
    pub from: P,
    pub to: P,
}

impl TypeChange {
    /// The dotted path, for messages.
    pub(crate) fn column(&self) -> String {
        self.path.join(".")
    }
}

/// The primitive types of `old` that `new` changes (fields both have, at any depth).
pub(crate) fn changes(old: &StructType, new: &StructType) -> Vec<TypeChange> {
    let mut out = Vec::new();
    for f in &new.fields {
        if let Some(o) = old.fields.iter().find(|o| o.name == f.name) {
            diff(&o.data_type, &f.data_type, &mut vec![f.name.clone()], &mut out);
        }
    }
    out
}

fn diff(old: &DataType, new: &DataType, path: &mut Vec<String>, out: &mut Vec<TypeChange>) {
    let mut nested = |name: &str, o: &DataType, n: &DataType, out: &mut Vec<TypeChange>| {
        path.push(name.to_string());
        diff(o, n, path, out);
        path.pop();
    };
    match (old, new) {
        (DataType::Primitive(a), DataType::Primitive(b)) if a != b => {
            out.push(TypeChange { path: path.clone(), from: *a, to: *b });
        }
        (DataType::Struct(a), DataType::Struct(b)) => {
            for f in &b.fields {
                if let Some(o) = a.fields.iter().find(|o| o.name == f.name) {
                    nested(&f.name, &o.data_type, &f.data_type, out);
                }
            }
        }
        (DataType::Array(a), DataType::Array(b)) => nested("element", &a.element_type, &b.element_type, out),
        (DataType::Map(a), DataType::Map(b)) => {
            nested("key", &a.key_type, &b.key_type, out);
            nested("value", &a.value_type, &b.value_type, out);
        }
        _ => {}
    }
}

/// Widens the fields of `target` to their types in `incoming` where that is an allowed change
/// (fields both have, at any depth); returns whether any changed. Narrower or unrelated types
/// in `incoming` change nothing.
pub(crate) fn widen_to(target: &mut StructType, incoming: &StructType) -> bool {
    let mut changed = false;
    for f in &mut target.fields {
        if let Some(i) = incoming.fields.iter().find(|i| i.name == f.name) {
            changed |= widen_type(&mut f.data_type, &i.data_type);
        }
    }
    changed
}

fn widen_type(target: &mut DataType, incoming: &DataType) -> bool {
    match (target, incoming) {
        (DataType::Primitive(a), DataType::Primitive(b)) if allowed(*a, *b) => {
            *a = *b;
            true
        }
        (DataType::Struct(a), DataType::Struct(b)) => widen_to(a, b),
        (DataType::Array(a), DataType::Array(b)) => widen_type(&mut a.element_type, &b.element_type),
        (DataType::Map(a), DataType::Map(b)) => {
            let key = widen_type(&mut a.key_type, &b.key_type);
            widen_type(&mut a.value_type, &b.value_type) | key
        }
        _ => false,
    }
}

/// Why `change` cannot be made on a table (`uniform`: with Iceberg metadata), if it cannot.
pub(crate) fn refusal(change: &TypeChange, uniform: bool) -> Option<String> {
    let (column, from, to) = (change.column(), change.from, change.to);
    if !allowed(from, to) {
        return Some(format!("column {column}: {from} cannot be widened to {to} (not a widening the protocol allows)"));
    }
    (uniform && !iceberg_allows(from, to)).then(|| {
        format!(
            "column {column}: {from} cannot be widened to {to} on a UniForm table (Iceberg allows int to long, \
             float to double and decimal precision only)"
        )
    })
}

/// The table's `protocol` and `metadata` after a schema change to `schema` that widens
/// columns (`None`: it widens none): each widened field's `delta.typeChanges` records the
/// change (at its nearest ancestor field, with the nested path), the property is set and the
/// protocol carries `typeWidening` (and `timestampNtz` when a date became one).
///
/// # Errors
/// [`Error::InvalidArgument`] for a change the protocol (or Iceberg, on a UniForm table) does
/// not allow.
pub(crate) fn apply(
    protocol: &Protocol,
    metadata: &Metadata,
    schema: &mut StructType,
) -> Result<Option<(Protocol, std::collections::HashMap<String, String>)>> {
    let old = StructType::parse(&metadata.schema_string)?;
    let found = changes(&old, schema);
    if found.is_empty() {
        return Ok(None);
    }
    let uniform =
        metadata.configuration.get("delta.universalFormat.enabledFormats").is_some_and(|v| v.contains("iceberg"));
    if let Some(why) = found.iter().find_map(|c| refusal(c, uniform)) {
        return Err(Error::InvalidArgument(why));
    }
    for c in &found {
        record(schema, c);
    }
    let mut configuration = metadata.configuration.clone();
    configuration.retain(|k, _| !k.eq_ignore_ascii_case(PROPERTY));
    configuration.insert(PROPERTY.into(), "true".into());
    let mut reader = vec![FEATURE];
    if found.iter().any(|c| c.to == P::TimestampNtz) {
        reader.push(super::features::Feature::TimestampNtz.name());
    }
    Ok(Some((with_features(protocol, &reader, &[]), configuration)))
}

/// Appends `change` to the `delta.typeChanges` of the struct field nearest to it.
fn record(schema: &mut StructType, change: &TypeChange) {
    let entry = json!({"fromType": change.from.to_string(), "toType": change.to.to_string()});
    record_in(&mut schema.fields, &change.path, &entry);
}

/// Records `entry` at the field `path[0]` of `fields` or at a struct field below it, whichever
/// is nearest to the changed type; `false` when the path leads nowhere.
fn record_in(fields: &mut [StructField], path: &[String], entry: &Value) -> bool {
    let Some(field) = fields.iter_mut().find(|f| f.name == path[0]) else { return false };
    if record_below(&mut field.data_type, &path[1..], entry) {
        return true;
    }
    let mut entry = entry.clone();
    if path.len() > 1 {
        entry["fieldPath"] = Value::String(path[1..].join("."));
    }
    match field.metadata.entry(TYPE_CHANGES.to_string()).or_insert_with(|| Value::Array(Vec::new())) {
        Value::Array(items) => items.push(entry),
        other => *other = Value::Array(vec![entry]),
    }
    true
}

/// Records `entry` at a struct field inside `ty` along `rest` (through array elements and map
/// keys and values), if there is one on the way.
fn record_below(ty: &mut DataType, rest: &[String], entry: &Value) -> bool {
    let Some(step) = rest.first() else { return false };
    match ty {
        DataType::Struct(s) => record_in(&mut s.fields, rest, entry),
        DataType::Array(a) if step == "element" => record_below(&mut a.element_type, &rest[1..], entry),
        DataType::Map(m) => match step.as_str() {
            "key" => record_below(&mut m.key_type, &rest[1..], entry),
            "value" => record_below(&mut m.value_type, &rest[1..], entry),
            _ => false,
        },
        _ => false,
    }
}

/// Every recorded type change of `schema`, each with its `column` (top-level fields and the
/// struct fields below them, dotted), as `describe` and `alter` print them.
pub(crate) fn recorded(schema: &StructType) -> Vec<Value> {
    fn walk(fields: &[StructField], prefix: &str, out: &mut Vec<Value>) {
        for f in fields {
            let column = if prefix.is_empty() { f.name.clone() } else { format!("{prefix}.{}", f.name) };
            for entry in f.metadata.get(TYPE_CHANGES).and_then(Value::as_array).into_iter().flatten() {
                let mut e = entry.clone();
                if let Value::Object(o) = &mut e {
                    o.insert("column".into(), Value::String(column.clone()));
                }
                out.push(e);
            }
            for (path, s) in f.data_type.structs() {
                let inner = if path.is_empty() { column.clone() } else { format!("{column}.{path}") };
                walk(&s.fields, &inner, out);
            }
        }
    }
    let mut out = Vec::new();
    walk(&schema.fields, "", &mut out);
    out
}

/// Checks that every recorded type change of `schema` is one deltabus reads (readers must
/// refuse a table with a change they do not support).
///
/// # Errors
/// [`Error::Unsupported`] naming the column and the change.
pub(crate) fn check_recorded(schema: &StructType) -> Result<()> {
    fn walk(fields: &[StructField]) -> Result<()> {
        for f in fields {
            for entry in f.metadata.get(TYPE_CHANGES).and_then(Value::as_array).into_iter().flatten() {
                let ty = |k: &str| entry.get(k).and_then(Value::as_str).and_then(P::parse_name);
                match (ty("fromType"), ty("toType")) {
                    (Some(a), Some(b)) if allowed(a, b) => {}
                    _ => {
                        return Err(Error::unsupported(format!(
                            "column {}: type change {entry} is not one deltabus reads",
                            f.name
                        )))
                    }
                }
            }
            for (_, s) in f.data_type.structs() {
                walk(&s.fields)?;
            }
        }
        Ok(())
    }
    walk(&schema.fields)
}

#[cfg(test)]
#[path = "type_widening_tests.rs"]
mod tests;
