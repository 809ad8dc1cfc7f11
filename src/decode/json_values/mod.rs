//! How a JSON value lands in a column: the one set of rules for `write`, Kafka ingest and
//! every other JSON decoder, checked before Arrow's decoder sees the record, so that no value
//! is ever altered silently.
//!
//! - Integer columns (`byte`, `short`, `integer`, `long`) take integers in their range, also
//!   written `2.0`, `1e3` or as a string `"5"`; a fraction (`2.9`), a value out of range, or a
//!   value the column cannot hold (`true`, an object) is an error naming the field.
//! - `float` and `double` take any number (or a numeric string); `float` refuses values past
//!   its range.
//! - `decimal(p,s)` takes numbers with at most `s` fraction digits and `p - s` integer digits.
//! - `timestamp` and `timestamp_ntz` take ISO-8601 strings, or numbers read as **seconds**
//!   since the epoch (as Spark's JSON reader does), with up to six fraction digits.
//! - `date` takes `YYYY-MM-DD` strings; a number is refused (no unit to guess).
//! - `string` takes any JSON value: strings as they are, other values as their JSON text
//!   (as Spark's JSON reader does), so a field of mixed types can land in a string column.
//! - `boolean` takes `true`/`false` only.
//!
//! Numbers are judged by their text as sent, never through `f64`: a 38-digit integer for a
//! `decimal(38,0)` column keeps its digits, `1.0000001` seconds is refused for a timestamp.
//! Timestamp strings with more than six fraction digits are refused like numbers.
//!
//! [`RecordRules::check`] first runs the byte-level pass (`json_scan`), which approves a record
//! whose every value its column takes as it is, in one look at the bytes; only the rest is
//! walked in full. The walk goes through one record (without building a tree) and answers whether it
//! can be decoded as is, must be rewritten first (numbers for timestamps, non-strings for
//! strings, integers past 2^53 written with a fraction or exponent: the values are respelled
//! in place, every other byte kept), or is refused with the reason.

use std::cell::RefCell;
use std::collections::HashMap;
use std::fmt;

use arrow::datatypes::{DataType as A, Schema};
use serde::de::{Deserialize, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;

pub(crate) use super::json_text::check_timestamp_text;
use super::json_text::{astral_escapes_decoded, exact_integer, minified, plain, quoted, rfc3339, Plain};

/// What a column takes.
#[derive(Debug, Clone)]
pub(super) enum Slot {
    Integer {
        name: &'static str,
        min: i64,
        max: i64,
    },
    Float32,
    Float64,
    Decimal {
        precision: u8,
        scale: i8,
    },
    Timestamp,
    Date,
    Text,
    Boolean,
    Struct(Fields),
    List(Box<Slot>),
    Map(Box<Slot>),
    /// Left to Arrow's decoder (binary and types no JSON rule covers).
    Any,
}

/// A struct's fields in schema order, found by name.
#[derive(Debug, Clone, Default)]
pub(super) struct Fields {
    pub(super) list: Vec<(String, Slot)>,
    by_name: HashMap<String, usize>,
}

impl Fields {
    pub(super) fn get(&self, name: &str) -> Option<&Slot> {
        self.by_name.get(name).map(|i| &self.list[*i].1)
    }

    /// The index of field `name`, trying `hint` first (records mostly follow schema order).
    pub(super) fn position(&self, name: &[u8], hint: usize) -> Option<usize> {
        if self.list.get(hint).is_some_and(|(n, _)| n.as_bytes() == name) {
            return Some(hint);
        }
        std::str::from_utf8(name).ok().and_then(|n| self.by_name.get(n).copied())
    }
}

impl FromIterator<(String, Slot)> for Fields {
    fn from_iter<I: IntoIterator<Item = (String, Slot)>>(iter: I) -> Fields {
        let mut fields = Fields::default();
        for (name, slot) in iter {
            // A name given twice keeps its first slot, as a map would keep one.
            if !fields.by_name.contains_key(&name) {
                fields.by_name.insert(name.clone(), fields.list.len());
                fields.list.push((name, slot));
            }
        }
        fields
    }
}

impl Slot {
    fn of(t: &A) -> Slot {
        let int = |name, min, max| Slot::Integer { name, min, max };
        match t {
            A::Int8 => int("byte", i8::MIN.into(), i8::MAX.into()),
            A::Int16 => int("short", i16::MIN.into(), i16::MAX.into()),
            A::Int32 => int("integer", i32::MIN.into(), i32::MAX.into()),
            A::Int64 => int("long", i64::MIN, i64::MAX),
            A::Float16 | A::Float32 => Slot::Float32,
            A::Float64 => Slot::Float64,
            A::Decimal128(p, s) | A::Decimal64(p, s) | A::Decimal32(p, s) => Slot::Decimal { precision: *p, scale: *s },
            A::Timestamp(_, _) => Slot::Timestamp,
            A::Date32 | A::Date64 => Slot::Date,
            A::Utf8 | A::LargeUtf8 | A::Utf8View => Slot::Text,
            A::Boolean => Slot::Boolean,
            A::Struct(fields) => {
                Slot::Struct(fields.iter().map(|f| (f.name().clone(), Slot::of(f.data_type()))).collect())
            }
            A::List(f) | A::LargeList(f) => Slot::List(Box::new(Slot::of(f.data_type()))),
            A::Map(entries, _) => match entries.data_type() {
                A::Struct(kv) if kv.len() == 2 => Slot::Map(Box::new(Slot::of(kv[1].data_type()))),
                _ => Slot::Any,
            },
            _ => Slot::Any,
        }
    }
}

/// The rules for records of one table schema.
#[derive(Debug, Clone)]
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) struct RecordRules {
    pub(super) root: Slot,
}

/// What [`RecordRules::check`] found.
#[derive(Debug, PartialEq, Eq)]
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) enum Verdict {
    /// Decode the record as it is.
    AsIs,
    /// Decode these bytes instead (same record, values spelled as the columns take them).
    Rewritten(Vec<u8>),
}

impl RecordRules {
    #[cfg_attr(feature = "internal-api", visibility::make(pub))]
    pub(crate) fn new(schema: &Schema) -> RecordRules {
        RecordRules {
            root: Slot::Struct(schema.fields().iter().map(|f| (f.name().clone(), Slot::of(f.data_type()))).collect()),
        }
    }

    /// Checks one record (one JSON object). Syntax errors are left to the decoder, which
    /// names them its own way.
    ///
    /// # Errors
    /// `field "a.b": <why>` for a value its column cannot hold exactly.
    #[cfg_attr(feature = "internal-api", visibility::make(pub))]
    pub(crate) fn check(&self, record: &[u8]) -> Result<Verdict, String> {
        // Most records: one byte-level pass finds every value as its column takes it.
        if self.one_pass(record) {
            return Ok(Verdict::AsIs);
        }
        self.check_walk(record)
    }

    /// Whether the byte-level pass alone approves the record as it is.
    #[cfg_attr(feature = "internal-api", visibility::make(pub))]
    pub(crate) fn one_pass(&self, record: &[u8]) -> bool {
        super::json_scan::approves(&self.root, record)
    }

    /// [`RecordRules::check`] by a full walk of the record (also what the byte-level pass
    /// must agree with wherever it answers).
    #[cfg_attr(feature = "internal-api", visibility::make(pub))]
    pub(crate) fn check_walk(&self, record: &[u8]) -> Result<Verdict, String> {
        // Arrow's decoder reads escaped characters past U+1FFFF wrong: they go to it as UTF-8.
        if let Some(decoded) = astral_escapes_decoded(record) {
            return match self.check_walk(&decoded)? {
                Verdict::AsIs => Ok(Verdict::Rewritten(decoded)),
                rewritten => Ok(rewritten),
            };
        }
        let ctx = Walk {
            path: RefCell::new(Vec::new()),
            problem: RefCell::new(None),
            base: record.as_ptr() as usize,
            edits: RefCell::new(Vec::new()),
        };
        let mut de = serde_json::Deserializer::from_slice(record);
        if let Err(e) = (Check { slot: &self.root, ctx: &ctx }).deserialize(&mut de) {
            return match ctx.problem.into_inner() {
                Some(why) => {
                    // The path was collected innermost first while the error unwound.
                    let mut path = ctx.path.into_inner();
                    path.reverse();
                    Err(if path.is_empty() {
                        format!("the record is not an object: {why}")
                    } else {
                        format!("field {:?}: {why}", path.join("."))
                    })
                }
                None if e.is_syntax() || e.is_eof() || e.is_data() => Ok(Verdict::AsIs),
                None => Err(e.to_string()),
            };
        }
        let edits = ctx.edits.into_inner();
        if edits.is_empty() {
            return Ok(Verdict::AsIs);
        }
        // Values respelled in place; every other byte as sent.
        let mut out = Vec::with_capacity(record.len() + 32 * edits.len());
        let mut at = 0;
        for (start, end, text) in edits {
            out.extend_from_slice(record.get(at..start).unwrap_or_default());
            out.extend_from_slice(text.as_bytes());
            at = end;
        }
        out.extend_from_slice(record.get(at..).unwrap_or_default());
        Ok(Verdict::Rewritten(out))
    }
}

/// What a walk found: the reason a value was refused, and the path to it, collected (from the
/// value outwards) only while the refusal unwinds, so that good records allocate nothing.
struct Walk {
    path: RefCell<Vec<String>>,
    problem: RefCell<Option<String>>,
    /// Where the record starts in memory: a raw value's offset is its address minus this.
    base: usize,
    /// Values to respell: (start, end, new text), in record order.
    edits: RefCell<Vec<(usize, usize, String)>>,
}

impl Walk {
    fn refuse<E: serde::de::Error>(&self, why: String) -> E {
        *self.problem.borrow_mut() = Some(why);
        E::custom("refused")
    }

    /// Respells the raw value `raw` (a slice of the record) as `text`.
    fn respell(&self, raw: &str, text: String) {
        let start = (raw.as_ptr() as usize).saturating_sub(self.base);
        self.edits.borrow_mut().push((start, start + raw.len(), text));
    }

    /// Notes `segment` on the way out of a refused value.
    fn through<E>(&self, segment: impl FnOnce() -> String, e: E) -> E {
        if self.problem.borrow().is_some() {
            self.path.borrow_mut().push(segment());
        }
        e
    }
}

/// One value against its slot; `Ok(true)` when the record must be rewritten.
#[derive(Clone, Copy)]
struct Check<'a> {
    slot: &'a Slot,
    ctx: &'a Walk,
}

/// A number as the walk met it; its text is made only when a rule needs it (a refusal, a
/// decimal's digits, a timestamp), so that plain integers and doubles allocate nothing.
#[derive(Debug, Clone, Copy)]
pub(super) enum Num<'a> {
    Int(i128),
    Float(f64),
    /// A number written as a JSON string.
    Text(&'a str),
}

impl Num<'_> {
    fn text(self) -> String {
        match self {
            Num::Int(i) => i.to_string(),
            Num::Float(x) => float_text(x),
            Num::Text(t) => t.to_string(),
        }
    }

    fn as_f64(self) -> Option<f64> {
        match self {
            Num::Int(i) => Some(i as f64),
            Num::Float(x) => Some(x),
            Num::Text(t) => t.parse().ok(),
        }
    }
}

/// How a column refusing a value could take it: the widening it needs, made by schema
/// evolution itself (`automatic`) or only by `deltabus alter --widen`.
fn widen_hint(to: &str, automatic: bool) -> String {
    if automatic {
        format!("widening it to {to} needs evolve_schema on a table with delta.enableTypeWidening=true")
    } else {
        format!("widening it to {to} needs `deltabus alter <table> --widen <column>=<type>`")
    }
}

/// The shortest text that reads back as `x` (what the producer most likely wrote).
fn float_text(x: f64) -> String {
    format!("{x}")
}

/// Whether a `decimal(precision, scale)` column takes the number as written, as it is.
pub(super) fn decimal_fits(text: &str, precision: u8, scale: i8) -> bool {
    Slot::Decimal { precision, scale }.number(Num::Text(text)) == Ok(false)
}

/// Integer and fraction digits of a plain decimal text (`-12.340` → ("12", "34")).
fn digits(text: &str) -> (String, String) {
    let t = text.trim_start_matches(['-', '+']);
    let (int, frac) = t.split_once('.').unwrap_or((t, ""));
    (int.trim_start_matches('0').to_string(), frac.trim_end_matches('0').to_string())
}

impl Slot {
    /// Whether the number (its shortest text) fits; `Ok(true)` when it must be respelled.
    pub(super) fn number(&self, n: Num<'_>) -> Result<bool, String> {
        match self {
            Slot::Integer { name, min, max } => {
                let value = match n {
                    Num::Int(i) => i,
                    _ => {
                        let x = n.as_f64().ok_or_else(|| format!("{} is not a number", n.text()))?;
                        if x.fract() != 0.0 {
                            return Err(format!(
                                "{} has a fraction; the column is {name} ({})",
                                n.text(),
                                widen_hint("double or a decimal", false)
                            ));
                        }
                        if x.abs() >= 9.223_372_036_854_776e18 {
                            return Err(format!("a number of about {x:e} is out of range for {name} ({min}..={max})"));
                        }
                        if x.abs() >= 9_007_199_254_740_992.0 {
                            return Err(format!("{} is not exact as an integer; the column is {name}", n.text()));
                        }
                        x as i128
                    }
                };
                if value < i128::from(*min) || value > i128::from(*max) {
                    let hint = if i64::try_from(value).is_ok() {
                        widen_hint("a wider integer", true)
                    } else {
                        widen_hint("decimal(38,0)", false)
                    };
                    return Err(format!("{value} is out of range for {name} ({min}..={max}; {hint})"));
                }
                Ok(false)
            }
            Slot::Float32 => match n.as_f64() {
                // Past float's range, or so small that float holds only zero.
                Some(x) if x.is_finite() && (x.abs() > f64::from(f32::MAX) || (x != 0.0 && (x as f32) == 0.0)) => {
                    Err(format!("{} is out of range for float ({})", n.text(), widen_hint("double", true)))
                }
                _ => Ok(false),
            },
            Slot::Float64 | Slot::Any => Ok(false),
            Slot::Decimal { precision, scale } => {
                let (int, frac) = match n {
                    Num::Text(t) => plain(t).map(|p| (p.int, p.frac)).ok_or_else(|| format!("{t} is not a number"))?,
                    _ => digits(&n.text()),
                };
                let int_room = i64::from(*precision) - i64::from(*scale);
                if frac.len() as i64 > i64::from(*scale) {
                    return Err(format!(
                        "{} has more than {scale} fraction digits; the column is decimal({precision},{scale}) ({})",
                        n.text(),
                        widen_hint("a decimal of more digits", true)
                    ));
                }
                if int.len() as i64 > int_room {
                    return Err(format!(
                        "{} has more than {int_room} integer digits; the column is decimal({precision},{scale}) ({})",
                        n.text(),
                        widen_hint("a decimal of more digits", true)
                    ));
                }
                Ok(false)
            }
            Slot::Timestamp => {
                seconds_to_micros(&n.text())?;
                Ok(true)
            }
            Slot::Date => Err(format!("{} is a number; a date column takes 'YYYY-MM-DD' strings", n.text())),
            Slot::Text => Ok(true),
            Slot::Boolean => Err(format!("{} is a number; the column is boolean", n.text())),
            Slot::Struct(_) | Slot::List(_) | Slot::Map(_) => {
                Err(format!("{} is a number; the column is {}", n.text(), self.shape()))
            }
        }
    }

    fn shape(&self) -> &'static str {
        match self {
            Slot::Integer { name, .. } => name,
            Slot::Float32 => "float",
            Slot::Float64 => "double",
            Slot::Decimal { .. } => "decimal",
            Slot::Timestamp => "timestamp",
            Slot::Date => "date",
            Slot::Text => "string",
            Slot::Boolean => "boolean",
            Slot::Struct(_) => "a struct",
            Slot::List(_) => "an array",
            Slot::Map(_) => "a map",
            Slot::Any => "any",
        }
    }
}

/// Seconds since the epoch (the number's text) as microseconds, exactly.
fn seconds_to_micros(text: &str) -> Result<i64, String> {
    let Plain { negative, int, frac } = plain(text).ok_or_else(|| format!("{text} is not a number"))?;
    if frac.len() > 6 {
        return Err(format!("{text} seconds is finer than a microsecond; timestamps keep microseconds"));
    }
    let whole: i64 =
        if int.is_empty() { 0 } else { int.parse().map_err(|_| format!("{text} seconds is out of range"))? };
    let micros: i64 = format!("{frac:0<6}").parse().unwrap_or(0);
    let total = whole
        .checked_mul(1_000_000)
        .and_then(|w| w.checked_add(micros))
        .ok_or_else(|| format!("{text} seconds is out of range"))?;
    Ok(if negative { -total } else { total })
}

impl<'de> DeserializeSeed<'de> for Check<'_> {
    type Value = bool;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<bool, D::Error> {
        match self.slot {
            Slot::Any => {
                d.deserialize_ignored_any(IgnoredAny)?;
                Ok(false)
            }
            // Columns whose rules read a number's digits see the value as sent.
            Slot::Integer { .. } | Slot::Decimal { .. } | Slot::Timestamp | Slot::Text => {
                let raw = <&'de RawValue>::deserialize(d)?;
                self.raw(raw.get())
            }
            _ => d.deserialize_any(self),
        }
    }
}

impl Check<'_> {
    /// One value of a number-sensitive column, as its raw JSON text.
    fn raw<E: serde::de::Error>(self, text: &str) -> Result<bool, E> {
        let refuse = |why: String| Err(self.ctx.refuse(why));
        match text.as_bytes().first() {
            Some(b'-' | b'0'..=b'9') => match self.slot {
                Slot::Integer { name, .. } => {
                    let value = match exact_integer(text, name) {
                        Ok(v) => v,
                        Err(why) => return refuse(why),
                    };
                    if let Err(why) = self.slot.number(Num::Int(value)) {
                        return refuse(why);
                    }
                    // The decoder reads `2.0` or `1e3` through a double: past 2^53 it gets
                    // the exact digits instead.
                    if value.unsigned_abs() > 1 << 53 && !text.bytes().all(|b| b.is_ascii_digit() || b == b'-') {
                        self.ctx.respell(text, value.to_string());
                        return Ok(true);
                    }
                    Ok(false)
                }
                Slot::Timestamp => match seconds_to_micros(text).and_then(|m| rfc3339(text, m)) {
                    Ok(at) => {
                        self.ctx.respell(text, format!("\"{at}\""));
                        Ok(true)
                    }
                    Err(why) => refuse(why),
                },
                Slot::Text => {
                    self.ctx.respell(text, quoted(text));
                    Ok(true)
                }
                _ => self.slot.number(Num::Text(text)).map_err(|why| self.ctx.refuse(why)),
            },
            // A string column takes strings as they are: no second parse on the hot path.
            Some(b'"') if matches!(self.slot, Slot::Text) => Ok(false),
            Some(b'"') => {
                let Ok(content) = serde_json::from_str::<std::borrow::Cow<'_, str>>(text) else { return Ok(false) };
                match self.slot {
                    Slot::Timestamp => match check_timestamp_text(&content) {
                        Ok(()) => Ok(false),
                        Err(why) => refuse(why),
                    },
                    _ => self.visit_str(&content),
                }
            }
            Some(b'n') => Ok(false),
            _ if matches!(self.slot, Slot::Text) => {
                self.ctx.respell(text, quoted(&minified(text)));
                Ok(true)
            }
            // Booleans, objects, arrays: the shape rules of the visitor.
            _ => {
                let mut de = serde_json::Deserializer::from_str(text);
                de.deserialize_any(self).map_err(|e| {
                    if self.ctx.problem.borrow().is_none() {
                        *self.ctx.problem.borrow_mut() = Some(e.to_string());
                    }
                    E::custom("refused")
                })
            }
        }
    }
}

impl<'de> Visitor<'de> for Check<'_> {
    type Value = bool;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "a JSON value")
    }
    fn visit_unit<E: serde::de::Error>(self) -> Result<bool, E> {
        Ok(false) // nullability is the decoder's to check
    }
    fn visit_bool<E: serde::de::Error>(self, v: bool) -> Result<bool, E> {
        match self.slot {
            Slot::Boolean | Slot::Any => Ok(false),
            Slot::Text => Ok(true),
            other => Err(self.ctx.refuse(format!("{v} is a boolean; the column is {}", other.shape()))),
        }
    }
    fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<bool, E> {
        self.slot.number(Num::Int(v.into())).map_err(|why| self.ctx.refuse(why))
    }
    fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<bool, E> {
        self.slot.number(Num::Int(v.into())).map_err(|why| self.ctx.refuse(why))
    }
    fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<bool, E> {
        self.slot.number(Num::Float(v)).map_err(|why| self.ctx.refuse(why))
    }
    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<bool, E> {
        let refuse = |why: String| Err(self.ctx.refuse(why));
        match self.slot {
            Slot::Integer { .. } | Slot::Decimal { .. } => match v.trim().parse::<i128>() {
                Ok(i) => self.slot.number(Num::Int(i)).map_err(|why| self.ctx.refuse(why)),
                Err(_) if matches!(self.slot, Slot::Decimal { .. }) && v.trim().parse::<f64>().is_ok() => {
                    self.slot.number(Num::Text(v.trim())).map_err(|why| self.ctx.refuse(why))
                }
                Err(_) => refuse(format!("{v:?} is not a number; the column is {}", self.slot.shape())),
            },
            Slot::Float32 | Slot::Float64 => match v.trim().parse::<f64>() {
                Ok(_) => self.slot.number(Num::Text(v.trim())).map_err(|why| self.ctx.refuse(why)),
                Err(_) => refuse(format!("{v:?} is not a number; the column is {}", self.slot.shape())),
            },
            Slot::Boolean => refuse(format!("{v:?} is a string; the column is boolean")),
            Slot::Struct(_) | Slot::List(_) | Slot::Map(_) => {
                refuse(format!("{v:?} is a string; the column is {}", self.slot.shape()))
            }
            Slot::Timestamp | Slot::Date | Slot::Text | Slot::Any => Ok(false),
        }
    }
    fn visit_seq<S: SeqAccess<'de>>(self, mut seq: S) -> Result<bool, S::Error> {
        let element = match self.slot {
            Slot::List(element) => element.as_ref(),
            Slot::Text => {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                return Ok(true);
            }
            other => return Err(self.ctx.refuse(format!("an array; the column is {}", other.shape()))),
        };
        let mut rewrite = false;
        let mut index = 0usize;
        loop {
            match seq.next_element_seed(Check { slot: element, ctx: self.ctx }) {
                Ok(Some(r)) => rewrite |= r,
                Ok(None) => return Ok(rewrite),
                Err(e) => return Err(self.ctx.through(|| format!("[{index}]"), e)),
            }
            index += 1;
        }
    }
    fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<bool, M::Error> {
        let mut rewrite = false;
        match self.slot {
            Slot::Struct(fields) => {
                while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
                    match fields.get(key.as_ref()) {
                        Some(slot) => match map.next_value_seed(Check { slot, ctx: self.ctx }) {
                            Ok(r) => rewrite |= r,
                            Err(e) => return Err(self.ctx.through(|| key.into_owned(), e)),
                        },
                        // Unknown fields are the decoder's (strict mode) to refuse.
                        None => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
            }
            Slot::Map(values) => {
                while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
                    match map.next_value_seed(Check { slot: values, ctx: self.ctx }) {
                        Ok(r) => rewrite |= r,
                        Err(e) => return Err(self.ctx.through(|| key.into_owned(), e)),
                    }
                }
            }
            Slot::Text => {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                rewrite = true;
            }
            other => return Err(self.ctx.refuse(format!("an object; the column is {}", other.shape()))),
        }
        Ok(rewrite)
    }
}

#[cfg(test)]
mod tests;
