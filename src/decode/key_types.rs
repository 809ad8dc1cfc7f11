//! A record's key read by the key columns' types [sync].
//!
//! A delete names its row by the canonical key rows get ([`keys_of_batch`]: the JSON array of
//! the key columns' values as the row holds them). A key read from bytes (a Kafka record key,
//! a tombstone's key at the listener, a Debezium `before` image, a framed key decoded to JSON)
//! is converted to each key column's type first, so `12345` deletes the row whose string key
//! is `"12345"` and `"1"` or `2.0` the rows whose long key is 1 or 2:
//! - string columns take a JSON string's text, or else the key's bytes as they are (UTF-8);
//! - integer columns take integers, integral numbers (`2.0`, `1e3`) and strings holding
//!   either, within the column's range;
//! - float, boolean, decimal, date and timestamp columns take numbers, `true`/`false` and
//!   strings the way a row's text converts (Arrow's casts).
//!
//! A key that does not convert is an error naming why (a dead letter, INVALID_RECORD at the
//! listener), never a delete that matches nothing. Without a table (no types yet) the JSON
//! value is taken as it is.
//!
//! [`keys_of_batch`]: crate::delta::row_keys::keys_of_batch

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, RecordBatch, StringArray};
use arrow::datatypes::{DataType as A, Field, Schema};
use serde_json::Value;

use crate::delta::schema::StructType;

/// The key columns of a keyed table, with the Arrow types their values have in rows.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) struct KeyColumns {
    names: Vec<String>,
    /// `None` where the table (or the column) does not exist yet.
    types: Vec<Option<A>>,
}

impl KeyColumns {
    /// The key columns `names` of a table of `schema` (`None`: not created yet).
    pub(crate) fn new(names: &[String], schema: Option<&StructType>) -> KeyColumns {
        let types = names
            .iter()
            .map(|n| schema.and_then(|s| s.field(n)).map(|f| crate::delta::arrow_schema::arrow_type(&f.data_type)))
            .collect();
        KeyColumns { names: names.to_vec(), types }
    }

    /// The key columns `names` of a table whose Arrow schema is `schema`.
    pub(crate) fn of_arrow(names: &[String], schema: Option<&Schema>) -> KeyColumns {
        let types = names
            .iter()
            .map(|n| schema.and_then(|s| s.field_with_name(n).ok()).map(|f| f.data_type().clone()))
            .collect();
        KeyColumns { names: names.to_vec(), types }
    }

    pub(crate) fn names(&self) -> &[String] {
        &self.names
    }

    /// `batch` with its key columns cast to their types (a decoded Avro key or `before`
    /// image); a value that does not convert becomes null, so its row names no key.
    pub(crate) fn cast_batch(&self, batch: &RecordBatch) -> RecordBatch {
        let schema = batch.schema();
        let mut fields: Vec<Field> = schema.fields().iter().map(|f| f.as_ref().clone()).collect();
        let mut columns = batch.columns().to_vec();
        for (name, t) in self.names.iter().zip(&self.types) {
            let (Some(t), Some((i, _))) = (t, schema.column_with_name(name)) else { continue };
            if columns[i].data_type() == t {
                continue;
            }
            let Ok(cast) = arrow::compute::cast(&columns[i], t) else { continue };
            columns[i] = cast;
            fields[i] = Field::new(name, t.clone(), true);
        }
        RecordBatch::try_new(Arc::new(Schema::new(fields)), columns).unwrap_or_else(|_| batch.clone())
    }

    /// The canonical key of a JSON object's key columns.
    ///
    /// # Errors
    /// Why not: a key column missing, null, or not convertible to its type.
    pub(crate) fn of_object(&self, obj: &Value) -> Result<String, String> {
        let values = self
            .names
            .iter()
            .zip(&self.types)
            .map(|(name, t)| {
                let v = obj
                    .get(name)
                    .filter(|v| !v.is_null())
                    .ok_or_else(|| format!("key column {name:?} is missing or null"))?;
                typed(Part::Json(v), t.as_ref()).map_err(|why| format!("key column {name:?}: {why}"))
            })
            .collect::<Result<Vec<Value>, String>>()?;
        serde_json::to_string(&values).map_err(|e| e.to_string())
    }

    /// The canonical key of a Kafka record key: a JSON object with the key columns (a
    /// `{"schema":…,"payload":…}` wrapper unwrapped), or, for one key column, a value of it
    /// (JSON, or the bytes as text).
    ///
    /// # Errors
    /// Why the key names no key.
    pub(crate) fn of_record_key(&self, key: &[u8]) -> Result<String, String> {
        let json = serde_json::from_slice::<Value>(key).ok();
        if let Some(v @ Value::Object(_)) = &json {
            let inner = match v.get("payload") {
                Some(p) if v.get("schema").is_some() => p,
                _ => v,
            };
            return self.of_object(inner);
        }
        let [name] = &self.names[..] else {
            return Err(format!("a record key that is not a JSON object cannot name the key columns {:?}", self.names));
        };
        let text = std::str::from_utf8(key).map_err(|_| "the record key is not UTF-8 text".to_string())?;
        let part = match &json {
            // A JSON string is its text; any other scalar keeps its spelling (`1.50`, `-0`).
            Some(Value::String(s)) => Part::Text(s),
            Some(Value::Array(_)) => return Err("a JSON array is not a key".into()),
            Some(Value::Null) if self.types[0].is_none() => return Err("the record key is null".into()),
            _ => Part::Text(text),
        };
        let part = match (&json, &self.types[0]) {
            // Untyped: a JSON scalar as it is, other text as a string.
            (Some(v @ (Value::Number(_) | Value::Bool(_))), None) => Part::Json(v),
            _ => part,
        };
        let value = typed(part, self.types[0].as_ref()).map_err(|why| format!("key column {name:?}: {why}"))?;
        serde_json::to_string(&[value]).map_err(|e| e.to_string())
    }
}

/// A key value as it came: a JSON value, or text (a record key's bytes, a JSON string).
#[derive(Debug, Clone, Copy)]
enum Part<'a> {
    Json(&'a Value),
    Text(&'a str),
}

/// The canonical JSON of `part` as a value of type `t` (as a row's key spells it).
fn typed(part: Part<'_>, t: Option<&A>) -> Result<Value, String> {
    let Some(t) = t else {
        return Ok(match part {
            Part::Json(v) => v.clone(),
            Part::Text(s) => Value::String(s.to_string()),
        });
    };
    let text = match part {
        Part::Text(s) => s.to_string(),
        Part::Json(Value::String(s)) => s.clone(),
        Part::Json(v @ (Value::Number(_) | Value::Bool(_))) if !matches!(t, A::Utf8 | A::LargeUtf8 | A::Utf8View) => {
            v.to_string()
        }
        Part::Json(v) => return Err(format!("{v} is not a {t}")),
    };
    if matches!(t, A::Utf8 | A::LargeUtf8 | A::Utf8View) {
        return Ok(Value::String(text));
    }
    let text = text.trim();
    match t {
        A::Int8 | A::Int16 | A::Int32 | A::Int64 => integer(text, t).map(Value::from),
        A::Boolean => match text {
            "true" => Ok(Value::Bool(true)),
            "false" => Ok(Value::Bool(false)),
            _ => Err(format!("{text:?} is not a boolean")),
        },
        A::Float32 | A::Float64 | A::Decimal128(_, _) | A::Date32 | A::Timestamp(_, _) => cast_one(text, t),
        _ => Err(format!("a key column of type {t} cannot be read from a record key")),
    }
}

/// An integer key: digits, or an integral number (`2.0`, `1e3`), within the type's range.
fn integer(text: &str, t: &A) -> Result<i64, String> {
    let bad = || format!("{text:?} is not a {t}");
    let v = match text.parse::<i64>() {
        Ok(v) => v,
        Err(_) => {
            let f: f64 = text.parse().map_err(|_| bad())?;
            if !f.is_finite() || f.fract() != 0.0 || f.abs() >= 9.223_372_036_854_775e18 {
                return Err(bad());
            }
            f as i64
        }
    };
    let fits = match t {
        A::Int8 => i8::try_from(v).is_ok(),
        A::Int16 => i16::try_from(v).is_ok(),
        A::Int32 => i32::try_from(v).is_ok(),
        _ => true,
    };
    fits.then_some(v).ok_or_else(bad)
}

/// `text` cast to `t` as a row's text would be, printed as rows' values are.
fn cast_one(text: &str, t: &A) -> Result<Value, String> {
    let bad = || format!("{text:?} is not a {t}");
    let one: ArrayRef = Arc::new(StringArray::from(vec![text]));
    let opts = arrow::compute::CastOptions { safe: false, ..Default::default() };
    let typed = arrow::compute::cast_with_options(&one, t, &opts)
        .or_else(|e| match t {
            // Spark's `YYYY-MM-DD HH:MM:SS[.f]` spelling.
            A::Timestamp(_, _) => {
                let alt: ArrayRef = Arc::new(StringArray::from(vec![text.replace(' ', "T")]));
                arrow::compute::cast_with_options(&alt, t, &opts)
            }
            _ => Err(e),
        })
        .map_err(|_| bad())?;
    if typed.is_null(0) {
        return Err(bad());
    }
    Ok(crate::delta::row_keys::key_value(typed.as_ref(), 0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::delta::row_keys::keys_of_batch;
    use crate::delta::schema::{DataType, PrimitiveType as P, StructField};

    fn columns(types: &[(&str, P)]) -> KeyColumns {
        let schema =
            StructType::new(types.iter().map(|(n, t)| StructField::new(*n, DataType::Primitive(*t), true)).collect());
        KeyColumns::new(&types.iter().map(|(n, _)| n.to_string()).collect::<Vec<_>>(), Some(&schema))
    }

    /// The key a row holding `value` (as text, cast to the column's type) gets.
    fn row_key(k: &KeyColumns, value: &str) -> String {
        let t = k.types[0].clone().unwrap();
        let one: ArrayRef = Arc::new(StringArray::from(vec![value]));
        let array = arrow::compute::cast(&one, &t).unwrap();
        let batch = RecordBatch::try_from_iter([(k.names[0].as_str(), array)]).unwrap();
        keys_of_batch(&batch, &k.names)[0].clone().unwrap()
    }

    #[test]
    fn string_keys_are_the_key_text_whatever_it_looks_like() {
        let k = columns(&[("id", P::String)]);
        for key in ["12345", "true", "1e3", "1.50", "-0", "null", "ünï 😀", "user-7"] {
            assert_eq!(k.of_record_key(key.as_bytes()).unwrap(), row_key(&k, key), "{key}");
        }
        assert_eq!(k.of_record_key(b"\"quoted\"").unwrap(), row_key(&k, "quoted"));
        assert_eq!(k.of_record_key(br#"{"id":"12345"}"#).unwrap(), row_key(&k, "12345"));
        assert!(k.of_record_key(br#"{"id":12345}"#).is_err(), "a number is not a string inside an object");
        assert!(k.of_record_key(&[0xff, 0xfe]).is_err());
    }

    #[test]
    fn integer_keys_convert_or_are_refused() {
        let k = columns(&[("id", P::Long)]);
        for (key, row) in [
            ("1", "1"),
            ("\"1\"", "1"),
            ("2.0", "2"),
            ("1e3", "1000"),
            ("-0", "0"),
            ("-9223372036854775808", "-9223372036854775808"),
        ] {
            assert_eq!(k.of_record_key(key.as_bytes()).unwrap(), row_key(&k, row), "{key}");
        }
        for key in ["2.5", "abc", "true", "1e300", "[1]", "9223372036854775808"] {
            assert!(k.of_record_key(key.as_bytes()).is_err(), "{key}");
        }
        let small = columns(&[("id", P::Byte)]);
        assert!(small.of_record_key(b"128").is_err());
        assert_eq!(small.of_record_key(b"-128").unwrap(), "[-128]");
    }

    #[test]
    fn other_types_convert_as_rows_do() {
        let cases = [
            (P::Double, "1.50", "1.5"),
            (P::Float, "0.1", "0.1"),
            (P::Boolean, "true", "true"),
            (P::Decimal { precision: 10, scale: 2 }, "1.5", "1.50"),
            (P::Date, "\"2024-02-29\"", "2024-02-29"),
            (P::TimestampNtz, "\"2024-01-01 10:00:00.5\"", "2024-01-01T10:00:00.5"),
        ];
        for (t, key, row) in cases {
            let k = columns(&[("c", t)]);
            assert_eq!(k.of_record_key(key.as_bytes()).unwrap(), row_key(&k, row), "{t:?} {key}");
        }
        assert!(columns(&[("c", P::Boolean)]).of_record_key(b"1").is_err());
        assert!(columns(&[("c", P::Date)]).of_record_key(b"\"tomorrow\"").is_err());
    }

    #[test]
    fn objects_name_every_key_column() {
        let k = columns(&[("region", P::String), ("n", P::Integer)]);
        let obj = serde_json::json!({"region": "eu", "n": "7", "x": 1});
        assert_eq!(k.of_object(&obj).unwrap(), r#"["eu",7]"#);
        assert!(k.of_object(&serde_json::json!({"region": "eu"})).unwrap_err().contains("\"n\""));
        assert!(k.of_record_key(b"7").is_err(), "a scalar cannot name two columns");
        let untyped = KeyColumns::new(&["id".into()], None);
        assert_eq!(untyped.of_record_key(b"42").unwrap(), "[42]");
        assert_eq!(untyped.of_record_key(b"user-7").unwrap(), r#"["user-7"]"#);
    }
}
