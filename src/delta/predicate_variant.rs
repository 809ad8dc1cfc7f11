//! [sync] `--where` paths inside a variant column (`properties.a.b`, `properties.tags.0`): the
//! value at the path as an Arrow column of the literal's kind, so that it compares as any
//! column does. Object keys match exactly (case too); a number steps into an array.
//!
//! - a 'string' literal compares with strings as they are and with other values as their JSON
//!   text (`properties.n = '5'` holds for 5);
//! - a number compares with numbers (integers exactly when every value is one, else as
//!   doubles); a boolean with booleans; anything else at the path is null, so unknown;
//! - `IS NULL` holds where the path is missing or holds JSON `null`.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, BooleanArray, Float64Array, Int64Array, StringArray, StructArray};
use parquet_variant::Variant;
use serde_json::Value;

use super::predicate::Lit;

/// The values at `path` inside each row of the variant column `s`, in the kind `lit` compares
/// with (`None`: as JSON text, for `IS NULL`).
pub(crate) fn values_at(s: &StructArray, path: &[String], lit: Option<&Lit>) -> ArrayRef {
    let (m, v) = (s.column(0).as_binary::<i32>(), s.column(1).as_binary::<i32>());
    let found: Vec<Option<Value>> = (0..s.len())
        .map(|i| {
            if s.is_null(i) || m.is_null(i) || v.is_null(i) {
                return None;
            }
            let variant = Variant::try_new(m.value(i), v.value(i)).ok()?;
            let at = step(variant, path)?;
            Some(super::arrow_value::variant_json(&at)).filter(|j| !j.is_null())
        })
        .collect();
    match lit {
        Some(Lit::Int(_)) if found.iter().flatten().all(|j| j.as_i64().is_some() || !j.is_number()) => {
            Arc::new(found.iter().map(|j| j.as_ref().and_then(Value::as_i64)).collect::<Int64Array>())
        }
        Some(Lit::Int(_) | Lit::Float(_)) => {
            Arc::new(found.iter().map(|j| j.as_ref().and_then(number)).collect::<Float64Array>())
        }
        Some(Lit::Bool(_)) => {
            Arc::new(found.iter().map(|j| j.as_ref().and_then(Value::as_bool)).collect::<BooleanArray>())
        }
        _ => Arc::new(found.iter().map(|j| j.as_ref().map(text)).collect::<StringArray>()),
    }
}

/// The value at `path` inside `v`: keys into objects, indexes into arrays.
fn step<'m, 'v>(v: Variant<'m, 'v>, path: &[String]) -> Option<Variant<'m, 'v>> {
    let Some((first, rest)) = path.split_first() else { return Some(v) };
    let next = match &v {
        Variant::Object(o) => o.get(first)?,
        Variant::List(l) => l.get(first.parse::<usize>().ok()?)?,
        _ => return None,
    };
    step(next, rest)
}

/// A number's value as a double; decimals printed as strings (past 15 digits) too.
fn number(j: &Value) -> Option<f64> {
    j.as_f64()
}

/// A value as a string literal compares with it: strings as they are, others as JSON text.
fn text(j: &Value) -> String {
    match j {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::delta::predicate::parse;
    use arrow::array::{BinaryBuilder, RecordBatch};
    use arrow::datatypes::{DataType, Field, Schema};

    fn batch(values: &[Option<&str>]) -> RecordBatch {
        let (mut m, mut v) = (BinaryBuilder::new(), BinaryBuilder::new());
        for value in values {
            let mut b = parquet_variant::VariantBuilder::new();
            match value {
                Some(text) => {
                    let j: Value = serde_json::from_str(text).unwrap();
                    append(&mut b, &j);
                }
                None => b.append_value(()),
            }
            let (meta, val) = b.finish();
            m.append_value(meta);
            v.append_value(val);
        }
        let fields = super::super::arrow_schema::variant_fields();
        let valid: Vec<bool> = values.iter().map(Option::is_some).collect();
        let s = StructArray::new(
            fields.clone(),
            vec![Arc::new(m.finish()), Arc::new(v.finish())],
            Some(arrow::buffer::NullBuffer::from(valid)),
        );
        let schema = Schema::new(vec![Field::new("p", DataType::Struct(fields), true)]);
        RecordBatch::try_new(Arc::new(schema), vec![Arc::new(s)]).unwrap()
    }

    fn append(b: &mut impl parquet_variant::VariantBuilderExt, j: &Value) {
        match j {
            Value::Null => b.append_value(()),
            Value::Bool(x) => b.append_value(*x),
            Value::Number(n) => match n.as_i64() {
                Some(i) => b.append_value(i),
                None => b.append_value(n.as_f64().unwrap()),
            },
            Value::String(s) => b.append_value(s.as_str()),
            Value::Array(a) => {
                let mut l = b.new_list();
                for x in a {
                    append(&mut l, x);
                }
                l.finish();
            }
            Value::Object(o) => {
                let mut obj = b.new_object();
                for (k, x) in o {
                    append(&mut parquet_variant::ObjectFieldBuilder::new(k, &mut obj), x);
                }
                obj.finish();
            }
        }
    }

    fn matching(where_: &str, b: &RecordBatch) -> Vec<usize> {
        let m = parse(where_).unwrap().evaluate(b).unwrap();
        (0..m.len()).filter(|i| m.value(*i)).collect()
    }

    /// Paths compare by the literal's kind; a missing path or another kind is unknown.
    #[test]
    fn paths_inside_a_variant_compare_as_columns_do() {
        let b = batch(&[
            Some(r#"{"a": {"b": "x"}, "n": 5, "tags": ["red", "blue"], "ok": true, "big": 9007199254740993}"#),
            Some(r#"{"a": {"b": "y"}, "n": 2.5, "ключ": "значение"}"#),
            Some(r#"{"a": 7, "n": "5"}"#),
            None,
            Some(r#"[{"a": 1}]"#),
            Some(r#"{"a": null, "n": 9007199254740993}"#),
        ]);
        assert_eq!(matching("p.a.b = 'x'", &b), [0]);
        assert_eq!(matching("p.a.b IN ('x', 'y')", &b), [0, 1]);
        assert_eq!(matching("p.n >= 3", &b), [0, 5]);
        assert_eq!(matching("p.n < 3", &b), [1]);
        assert_eq!(matching("p.n = '5'", &b), [0, 2], "a string literal compares with the text");
        assert_eq!(matching("p.big = 9007199254740993", &b), [0], "integers compare exactly");
        assert_eq!(matching("p.big = 9007199254740992", &b), Vec::<usize>::new());
        assert_eq!(matching("p.tags.1 = 'blue'", &b), [0]);
        assert_eq!(matching("p.0.a = 1", &b), [4]);
        assert_eq!(matching("p.ok = true", &b), [0]);
        assert_eq!(matching("p.ключ = 'значение'", &b), [1]);
        assert_eq!(matching("p.a IS NULL", &b), [3, 4, 5]);
        assert_eq!(matching("p.a IS NOT NULL AND NOT p.a.b = 'x'", &b), [1]);
        assert_eq!(matching("p.A.b = 'x'", &b), Vec::<usize>::new(), "keys match exactly");
    }
}
