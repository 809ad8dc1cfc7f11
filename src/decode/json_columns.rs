//! JSON records straight into Arrow columns [sync]: one scan per record that applies the value
//! rules and appends the values, with no tape and no second pass over the bytes.
//!
//! Contract:
//! - [`Columns::plan`] covers tables of flat columns of the common types (integers, `float`,
//!   `double`, `boolean`, `string`, `date`, `timestamp` and `timestamp_ntz`, `decimal`);
//!   other tables answer `None` and keep `arrow_json`'s decoder.
//! - [`Rows::push`] takes a record only where the value rules take it as it is (the byte-level
//!   pass's conditions, [`super::json_scan`]) and where `arrow_json` would build the same values
//!   (same number parsing, same escapes, the same date and timestamp parsers). Anything else
//!   (an unknown or repeated field, a value a rule must respell or refuse, a null in a column
//!   that takes none, a syntax error) answers `false` with nothing appended, and the caller
//!   decodes that record and the rest the other way. A property test and the payload fuzz
//!   target hold the two paths to the same rows.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;

use arrow::array::builder::{
    BooleanBuilder, Date32Builder, Decimal128Builder, Float32Builder, Float64Builder, Int16Builder, Int32Builder,
    Int64Builder, Int8Builder, StringBuilder, TimestampMicrosecondBuilder, TimestampMillisecondBuilder,
    TimestampNanosecondBuilder, TimestampSecondBuilder,
};
use arrow::array::timezone::Tz;
use arrow::array::{ArrayRef, RecordBatch};
use arrow::compute::kernels::cast_utils::{parse_decimal, string_to_datetime, Parser};
use arrow::datatypes::{DataType as A, Date32Type, Decimal128Type, SchemaRef, TimeUnit};
use arrow::error::ArrowError;
use chrono::{TimeZone, Utc};

use super::json_scan::{float32_holds, Scan};
use super::json_text::{check_timestamp_text, unicode_escape};
use super::json_values::decimal_fits;
use super::text_room::TextRoom;

/// How a table's records are decoded column by column.
#[derive(Debug, Clone)]
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) struct Columns {
    schema: SchemaRef,
    columns: Vec<Column>,
    by_name: HashMap<Box<[u8]>, usize>,
    /// Per column, the room for its string values (see [`TextRoom`]).
    text_room: Arc<[TextRoom]>,
}

#[derive(Debug, Clone)]
struct Column {
    name: Box<[u8]>,
    /// The name's first eight bytes ([`head`]): most names differ there, and those of at most
    /// eight bytes are compared whole by it.
    head: u64,
    kind: Kind,
    nullable: bool,
}

#[derive(Debug, Clone)]
enum Kind {
    Integer {
        min: i64,
        max: i64,
    },
    Float32,
    Float64,
    Boolean,
    Text,
    Date,
    /// `None`: no zone (`timestamp_ntz`), read as UTC as `arrow_json` does.
    Timestamp {
        unit: TimeUnit,
        zone: Option<Tz>,
    },
    Decimal {
        precision: u8,
        scale: i8,
    },
}

/// One decoded value, held until its record is known to be whole.
enum Val<'a> {
    Null,
    Int(i64),
    F32(f32),
    F64(f64),
    Bool(bool),
    Str(Cow<'a, str>),
    Day(i32),
    Dec(i128),
}

impl Kind {
    fn of(t: &A) -> Option<Kind> {
        let int = |min, max| Some(Kind::Integer { min, max });
        match t {
            A::Int8 => int(i8::MIN.into(), i8::MAX.into()),
            A::Int16 => int(i16::MIN.into(), i16::MAX.into()),
            A::Int32 => int(i32::MIN.into(), i32::MAX.into()),
            A::Int64 => int(i64::MIN, i64::MAX),
            A::Float32 => Some(Kind::Float32),
            A::Float64 => Some(Kind::Float64),
            A::Boolean => Some(Kind::Boolean),
            A::Utf8 => Some(Kind::Text),
            A::Date32 => Some(Kind::Date),
            A::Timestamp(unit, zone) => {
                let zone = match zone {
                    Some(z) => Some(z.parse::<Tz>().ok()?),
                    None => None,
                };
                Some(Kind::Timestamp { unit: *unit, zone })
            }
            A::Decimal128(precision, scale) => Some(Kind::Decimal { precision: *precision, scale: *scale }),
            _ => None,
        }
    }

    /// The value at the cursor as this column takes it; `None`: not certain.
    fn value<'a>(&self, s: &mut Scan<'a>) -> Option<Val<'a>> {
        match (s.peek()?, self) {
            (b'n', _) => s.literal(b"null").map(|()| Val::Null),
            (b't', Kind::Boolean) => s.literal(b"true").map(|()| Val::Bool(true)),
            (b'f', Kind::Boolean) => s.literal(b"false").map(|()| Val::Bool(false)),
            (b'"', Kind::Text) => text(s).map(Val::Str),
            (b'"', Kind::Date) => Date32Type::parse(&text(s)?).map(Val::Day),
            (b'"', Kind::Timestamp { unit, zone }) => {
                let (raw, escaped) = s.string()?;
                let raw = s.str_in(raw).filter(|_| !escaped)?;
                check_timestamp_text(raw).ok()?;
                match zone {
                    Some(zone) => in_unit(&string_to_datetime(zone, raw).ok()?, *unit),
                    None => in_unit(&string_to_datetime(&Utc, raw).ok()?, *unit),
                }
                .map(Val::Int)
            }
            (b'-' | b'0'..=b'9', _) => {
                let number = s.number()?;
                if let Kind::Integer { min, max } = self {
                    return number.integer().filter(|v| (*min..=*max).contains(v)).map(Val::Int);
                }
                let number = number.text;
                match self {
                    Kind::Float64 => number.parse().ok().filter(|x: &f64| x.is_finite()).map(Val::F64),
                    Kind::Float32 if float32_holds(number) => {
                        number.parse().ok().filter(|x: &f32| x.is_finite()).map(Val::F32)
                    }
                    Kind::Decimal { precision, scale } if decimal_fits(number, *precision, *scale) => {
                        parse_decimal::<Decimal128Type>(number, *precision, *scale).ok().map(Val::Dec)
                    }
                    _ => None,
                }
            }
            _ => None,
        }
    }
}

/// A timestamp in the column's unit, as `arrow_json` computes it.
fn in_unit<Z: TimeZone>(t: &chrono::DateTime<Z>, unit: TimeUnit) -> Option<i64> {
    match unit {
        TimeUnit::Second => Some(t.timestamp()),
        TimeUnit::Millisecond => Some(t.timestamp_millis()),
        TimeUnit::Microsecond => Some(t.timestamp_micros()),
        TimeUnit::Nanosecond => t.timestamp_nanos_opt(),
    }
}

/// A string value at the cursor, its escapes read as `arrow_json` reads them.
fn text<'a>(s: &mut Scan<'a>) -> Option<Cow<'a, str>> {
    let (raw, escaped) = s.string()?;
    if !escaped {
        return s.str_in(raw).map(Cow::Borrowed);
    }
    let mut out = Vec::with_capacity(raw.len());
    let mut rest = raw;
    while let Some(i) = memchr::memchr(b'\\', rest) {
        out.extend_from_slice(&rest[..i]);
        let (c, used) = escape(&rest[i + 1..])?;
        let mut utf8 = [0; 4];
        out.extend_from_slice(c.encode_utf8(&mut utf8).as_bytes());
        rest = &rest[i + 1 + used..];
    }
    out.extend_from_slice(rest);
    String::from_utf8(out).ok().map(Cow::Owned)
}

/// The character an escape (after its backslash) stands for, and the bytes it took.
fn escape(b: &[u8]) -> Option<(char, usize)> {
    let c = match *b.first()? {
        b'"' => '"',
        b'\\' => '\\',
        b'/' => '/',
        b'b' => '\u{8}',
        b'f' => '\u{c}',
        b'n' => '\n',
        b'r' => '\r',
        b't' => '\t',
        b'u' => return unicode_escape(b),
        _ => return None,
    };
    Some((c, 1))
}

impl Columns {
    /// The plan for a table schema, or `None` when a column is outside what this decoder covers.
    #[cfg_attr(feature = "internal-api", visibility::make(pub))]
    pub(crate) fn plan(schema: &SchemaRef) -> Option<Columns> {
        let mut columns = Vec::with_capacity(schema.fields().len());
        let mut by_name = HashMap::new();
        for (i, f) in schema.fields().iter().enumerate() {
            let name: Box<[u8]> = f.name().as_bytes().into();
            if by_name.insert(name.clone(), i).is_some() {
                return None;
            }
            columns.push(Column { head: head(&name), name, kind: Kind::of(f.data_type())?, nullable: f.is_nullable() });
        }
        let text_room = (0..columns.len()).map(|_| TextRoom::default()).collect();
        Some(Columns { schema: schema.clone(), columns, by_name, text_room })
    }

    /// An empty set of rows with room for `records` records of `bytes` bytes in all (a string
    /// column never gets more room than that: its values are at most the records' bytes).
    #[cfg_attr(feature = "internal-api", visibility::make(pub))]
    pub(crate) fn rows<'a>(&'a self, records: usize, bytes: usize) -> Rows<'a> {
        let builders = (self.schema.fields().iter().zip(self.text_room.iter()))
            .map(|(f, room)| Builder::new(f.data_type(), records, room.room(records, bytes)))
            .collect();
        Rows { plan: self, builders, pending: Vec::with_capacity(self.columns.len()), rows: 0 }
    }

    fn position(&self, key: &[u8], hint: usize) -> Option<usize> {
        let key_head = head(key);
        let is =
            |c: &Column| c.head == key_head && c.name.len() == key.len() && (key.len() <= 8 || c.name[8..] == key[8..]);
        if self.columns.get(hint).is_some_and(is) {
            return Some(hint);
        }
        // A few columns are found faster by looking than by hashing.
        if self.columns.len() <= 32 {
            return self.columns.iter().position(is);
        }
        self.by_name.get(key).copied()
    }
}

/// A name's first eight bytes as one number (zeros past a shorter name's end).
#[inline]
fn head(name: &[u8]) -> u64 {
    match name.first_chunk::<8>() {
        Some(first) => u64::from_le_bytes(*first),
        None => name.iter().rev().fold(0, |h, &b| h << 8 | u64::from(b)),
    }
}

/// Rows being decoded into columns.
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) struct Rows<'a> {
    plan: &'a Columns,
    builders: Vec<Builder>,
    pending: Vec<Option<Val<'a>>>,
    rows: usize,
}

impl<'a> Rows<'a> {
    /// Appends one record (one JSON object) as a row; `false`, with nothing appended, when
    /// this decoder is not certain of it.
    #[cfg_attr(feature = "internal-api", visibility::make(pub))]
    pub(crate) fn push(&mut self, record: &'a [u8]) -> bool {
        if self.read(record).is_none() {
            return false;
        }
        for (builder, value) in self.builders.iter_mut().zip(self.pending.drain(..)) {
            builder.append(value.unwrap_or(Val::Null));
        }
        self.rows += 1;
        true
    }

    /// The rows as one batch (`None` when there are none).
    ///
    /// # Errors
    /// Arrow's, should the columns not make a batch of the schema (a defect: the caller then
    /// decodes the records the other way).
    #[cfg_attr(feature = "internal-api", visibility::make(pub))]
    pub(crate) fn finish(self) -> Result<Option<RecordBatch>, ArrowError> {
        if self.rows == 0 {
            return Ok(None);
        }
        for (builder, room) in self.builders.iter().zip(self.plan.text_room.iter()) {
            if let Builder::Text(b) = builder {
                room.learn(b.values_slice().len(), self.rows);
            }
        }
        let arrays: Vec<ArrayRef> = self.builders.into_iter().map(Builder::finish).collect();
        RecordBatch::try_new(self.plan.schema.clone(), arrays).map(Some)
    }

    /// Reads one record's values into `pending` (one slot per column).
    fn read(&mut self, record: &'a [u8]) -> Option<()> {
        let plan = self.plan;
        // Checked whole once, so that no value's text is checked again.
        let record = std::str::from_utf8(record).ok()?;
        self.pending.clear();
        self.pending.resize_with(plan.columns.len(), || None);
        let pending = &mut self.pending;
        let mut s = Scan::text(record);
        s.ws();
        let mut hint = 0;
        s.members(|s, key, escaped| {
            if escaped {
                return None;
            }
            let i = plan.position(key, hint)?;
            hint = i + 1;
            let column = &plan.columns[i];
            let value = column.kind.value(s)?;
            if matches!(value, Val::Null) && !column.nullable {
                return None;
            }
            // A field given twice is left to the other decoder.
            pending[i].replace(value).is_none().then_some(())
        })?;
        s.ws();
        if s.at != record.len() {
            return None;
        }
        let missing_required = pending.iter().zip(&plan.columns).any(|(v, c)| v.is_none() && !c.nullable);
        (!missing_required).then_some(())
    }
}

/// One column's builder.
enum Builder {
    I8(Int8Builder),
    I16(Int16Builder),
    I32(Int32Builder),
    I64(Int64Builder),
    F32(Float32Builder),
    F64(Float64Builder),
    Bool(BooleanBuilder),
    Text(StringBuilder),
    Date(Date32Builder),
    TsS(TimestampSecondBuilder),
    TsMs(TimestampMillisecondBuilder),
    TsUs(TimestampMicrosecondBuilder),
    TsNs(TimestampNanosecondBuilder),
    Dec(Decimal128Builder),
}

impl Builder {
    /// Only for the types [`Kind::of`] covers; a string column gets `text` bytes of room.
    fn new(t: &A, n: usize, text: usize) -> Builder {
        match t {
            A::Int8 => Builder::I8(Int8Builder::with_capacity(n)),
            A::Int16 => Builder::I16(Int16Builder::with_capacity(n)),
            A::Int32 => Builder::I32(Int32Builder::with_capacity(n)),
            A::Int64 => Builder::I64(Int64Builder::with_capacity(n)),
            A::Float32 => Builder::F32(Float32Builder::with_capacity(n)),
            A::Float64 => Builder::F64(Float64Builder::with_capacity(n)),
            A::Boolean => Builder::Bool(BooleanBuilder::with_capacity(n)),
            A::Date32 => Builder::Date(Date32Builder::with_capacity(n)),
            A::Timestamp(TimeUnit::Second, _) => {
                Builder::TsS(TimestampSecondBuilder::with_capacity(n).with_data_type(t.clone()))
            }
            A::Timestamp(TimeUnit::Millisecond, _) => {
                Builder::TsMs(TimestampMillisecondBuilder::with_capacity(n).with_data_type(t.clone()))
            }
            A::Timestamp(TimeUnit::Microsecond, _) => {
                Builder::TsUs(TimestampMicrosecondBuilder::with_capacity(n).with_data_type(t.clone()))
            }
            A::Timestamp(TimeUnit::Nanosecond, _) => {
                Builder::TsNs(TimestampNanosecondBuilder::with_capacity(n).with_data_type(t.clone()))
            }
            A::Decimal128(..) => Builder::Dec(Decimal128Builder::with_capacity(n).with_data_type(t.clone())),
            _ => Builder::Text(StringBuilder::with_capacity(n, text)),
        }
    }

    /// Appends a value [`Kind::value`] produced for this column (range already checked).
    fn append(&mut self, v: Val<'_>) {
        macro_rules! put {
            ($b:expr, $x:expr) => {
                match $x {
                    Some(x) => $b.append_value(x),
                    None => $b.append_null(),
                }
            };
        }
        let int = |v: &Val<'_>| match v {
            Val::Int(i) => Some(*i),
            _ => None,
        };
        match self {
            Builder::I8(b) => put!(b, int(&v).map(|i| i as i8)),
            Builder::I16(b) => put!(b, int(&v).map(|i| i as i16)),
            Builder::I32(b) => put!(b, int(&v).map(|i| i as i32)),
            Builder::I64(b) => put!(b, int(&v)),
            Builder::TsS(b) => put!(b, int(&v)),
            Builder::TsMs(b) => put!(b, int(&v)),
            Builder::TsUs(b) => put!(b, int(&v)),
            Builder::TsNs(b) => put!(b, int(&v)),
            Builder::F32(b) => put!(b, if let Val::F32(x) = v { Some(x) } else { None }),
            Builder::F64(b) => put!(b, if let Val::F64(x) = v { Some(x) } else { None }),
            Builder::Bool(b) => put!(b, if let Val::Bool(x) = v { Some(x) } else { None }),
            Builder::Text(b) => put!(b, if let Val::Str(x) = v { Some(x) } else { None }),
            Builder::Date(b) => put!(b, if let Val::Day(x) = v { Some(x) } else { None }),
            Builder::Dec(b) => put!(b, if let Val::Dec(x) = v { Some(x) } else { None }),
        }
    }

    fn finish(self) -> ArrayRef {
        match self {
            Builder::I8(mut b) => Arc::new(b.finish()),
            Builder::I16(mut b) => Arc::new(b.finish()),
            Builder::I32(mut b) => Arc::new(b.finish()),
            Builder::I64(mut b) => Arc::new(b.finish()),
            Builder::F32(mut b) => Arc::new(b.finish()),
            Builder::F64(mut b) => Arc::new(b.finish()),
            Builder::Bool(mut b) => Arc::new(b.finish()),
            Builder::Text(mut b) => Arc::new(b.finish()),
            Builder::Date(mut b) => Arc::new(b.finish()),
            Builder::TsS(mut b) => Arc::new(b.finish()),
            Builder::TsMs(mut b) => Arc::new(b.finish()),
            Builder::TsUs(mut b) => Arc::new(b.finish()),
            Builder::TsNs(mut b) => Arc::new(b.finish()),
            Builder::Dec(mut b) => Arc::new(b.finish()),
        }
    }
}
