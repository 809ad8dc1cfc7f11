//! The route values of records (`route_by`), in every payload format: a JSON field (dotted
//! for nested), the same field of framed JSON, of an Avro record (decoded with its writer
//! schema into Arrow) or of a Protobuf message. Strings are taken as they are, numbers and
//! booleans as written, enums by name; anything else (missing, null, nested, a record that
//! does not decode) is the reason the record cannot be routed.

use arrow::array::{Array, AsArray, RecordBatch};
use prost_reflect::{DynamicMessage, ReflectMessage, Value as Proto};

use super::format::Format;
use crate::common::record::RawRecord;

type Value = std::result::Result<String, String>;

impl Format {
    /// Each record's route value, or why it has none.
    pub(crate) async fn route_values(&mut self, field: &str, records: &[RawRecord<'_>]) -> Vec<Value> {
        match self {
            Format::Json => records.iter().map(|r| json_value(r.payload, field)).collect(),
            Format::JsonSchema(registry) => {
                let framing = registry.framing();
                records
                    .iter()
                    .map(|r| match r.payload.map(|p| framing.split(p)) {
                        Some(Some((_, body))) => json_value(Some(body), field),
                        Some(None) => Err(framing.unframed().to_string()),
                        None => Err("no payload to route".into()),
                    })
                    .collect()
            }
            Format::Avro(avro) => {
                let mut out: Vec<Value> = vec![Err("no payload to route".into()); records.len()];
                let decoded = avro.decode(records).await;
                for l in decoded.dead_letters {
                    if let Some(i) = records.iter().position(|r| r.offset == l.offset) {
                        out[i] = Err(l.reason);
                    }
                }
                for run in decoded.runs {
                    for (row, i) in run.rows_from.iter().enumerate() {
                        out[*i] = arrow_value(&run.batch, field, row);
                    }
                }
                out
            }
            Format::Protobuf(proto) => {
                let payloads: Vec<Option<&[u8]>> = records.iter().map(|r| r.payload).collect();
                proto
                    .messages(&payloads)
                    .await
                    .into_iter()
                    .map(|m| m.and_then(|(_, m)| proto_value(&m, field)))
                    .collect()
            }
        }
    }
}

fn missing(field: &str) -> String {
    format!("no route field {field:?}")
}

fn unusable(field: &str) -> String {
    format!("route field {field:?} is not a string, number or boolean")
}

/// The route value of a JSON payload, found without building the document: every other
/// field is skipped as it is read.
pub(crate) fn json_value(payload: Option<&[u8]>, field: &str) -> Value {
    let payload = payload.ok_or("no payload to route")?;
    let path: Vec<&str> = field.split('.').collect();
    let mut de = serde_json::Deserializer::from_slice(payload);
    let found = serde::de::DeserializeSeed::deserialize(Find(&path), &mut de).map_err(|e| format!("not JSON: {e}"))?;
    match found.ok_or_else(|| missing(field))? {
        serde_json::Value::String(s) => Ok(s),
        serde_json::Value::Number(n) => Ok(n.to_string()),
        serde_json::Value::Bool(b) => Ok(b.to_string()),
        _ => Err(unusable(field)),
    }
}

/// Looks for `path` in a JSON object, skipping whatever is not on it.
struct Find<'p>(&'p [&'p str]);

impl<'de> serde::de::DeserializeSeed<'de> for Find<'_> {
    type Value = Option<serde_json::Value>;

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> std::result::Result<Self::Value, D::Error> {
        if self.0.is_empty() {
            return serde::Deserialize::deserialize(d).map(Some);
        }
        d.deserialize_any(self)
    }
}

impl<'de> serde::de::Visitor<'de> for Find<'_> {
    type Value = Option<serde_json::Value>;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> std::result::Result<Self::Value, A::Error> {
        let mut found = None;
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            if found.is_none() && key == self.0[0] {
                found = map.next_value_seed(Find(&self.0[1..]))?;
            } else {
                map.next_value::<serde::de::IgnoredAny>()?;
            }
        }
        Ok(found)
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> std::result::Result<Self::Value, A::Error> {
        while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {}
        Ok(None)
    }

    fn visit_bool<E>(self, _: bool) -> std::result::Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_i64<E>(self, _: i64) -> std::result::Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_u64<E>(self, _: u64) -> std::result::Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_f64<E>(self, _: f64) -> std::result::Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_str<E>(self, _: &str) -> std::result::Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_unit<E>(self) -> std::result::Result<Self::Value, E> {
        Ok(None)
    }
}

/// The route value in row `row` of a decoded batch (structs followed by the dotted path).
fn arrow_value(batch: &RecordBatch, field: &str, row: usize) -> Value {
    let mut parts = field.split('.');
    let first = parts.next().unwrap_or_default();
    let mut column = batch.column_by_name(first).ok_or_else(|| missing(field))?.clone();
    for part in parts {
        let s = column.as_struct_opt().ok_or_else(|| missing(field))?;
        if s.is_null(row) {
            return Err(missing(field));
        }
        column = s.column_by_name(part).ok_or_else(|| missing(field))?.clone();
    }
    if column.is_null(row) {
        return Err(missing(field));
    }
    match column.data_type() {
        t if t.is_nested() || matches!(t, arrow::datatypes::DataType::Binary) => Err(unusable(field)),
        _ => arrow::util::display::array_value_to_string(&column, row).map_err(|_| unusable(field)),
    }
}

/// The route value of a Protobuf message (nested messages followed by the dotted path).
fn proto_value(message: &DynamicMessage, field: &str) -> Value {
    let mut m = message.clone();
    let parts: Vec<&str> = field.split('.').collect();
    for (k, part) in parts.iter().enumerate() {
        let desc = m.descriptor().get_field_by_name(part).ok_or_else(|| missing(field))?;
        let v = m.get_field(&desc).into_owned();
        if k + 1 < parts.len() {
            match v {
                Proto::Message(inner) if m.has_field(&desc) => m = inner,
                _ => return Err(missing(field)),
            }
            continue;
        }
        return match v {
            Proto::String(s) => Ok(s),
            Proto::Bool(b) => Ok(b.to_string()),
            Proto::I32(n) => Ok(n.to_string()),
            Proto::I64(n) => Ok(n.to_string()),
            Proto::U32(n) => Ok(n.to_string()),
            Proto::U64(n) => Ok(n.to_string()),
            Proto::EnumNumber(n) => Ok(desc
                .kind()
                .as_enum()
                .and_then(|e| e.get_value(n))
                .map_or_else(|| n.to_string(), |v| v.name().to_string())),
            _ => Err(unusable(field)),
        };
    }
    Err(missing(field))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_fields_are_found_without_the_rest() {
        let p = br#"{"a":[1,{"region":"no"}],"geo":{"x":{"y":1},"region":"eu"},"n":7,"b":true,"s":"h\u00e9"}"#;
        assert_eq!(json_value(Some(p), "geo.region"), Ok("eu".into()));
        assert_eq!(json_value(Some(p), "n"), Ok("7".into()));
        assert_eq!(json_value(Some(p), "b"), Ok("true".into()));
        assert_eq!(json_value(Some(p), "s"), Ok("hé".into()));
        assert!(json_value(Some(p), "region").unwrap_err().contains("no route field"));
        assert!(json_value(Some(p), "geo").unwrap_err().contains("not a string"));
        assert!(json_value(Some(p), "n.x").unwrap_err().contains("no route field"));
        assert!(json_value(Some(br#"{"a":1"#), "a").unwrap_err().contains("not JSON"));
        assert!(json_value(Some(b"[1]"), "a").unwrap_err().contains("no route field"));
        assert!(json_value(None, "a").is_err());
    }
}
