//! Protobuf messages from the wire format straight into Arrow columns [sync]: no dynamic
//! message per record, no JSON in between.
//!
//! Contract:
//! - [`ProtoColumns::plan`] maps a message descriptor onto a table's Arrow schema by field
//!   name, as the proto3 JSON mapping the rest of the Protobuf path uses would
//!   (`decode::protobuf::proto3_options`): scalars, strings, enums as their names, nested
//!   messages as structs, repeated fields as lists, `google.protobuf.Timestamp` and the scalar
//!   wrappers. A descriptor it cannot map exactly (maps, bytes, durations, a column of another
//!   type, a message field without its column) gets no plan, and the dynamic path serves it.
//! - [`ProtoColumns::decode`] builds the rows of one batch, or answers `None` when any message
//!   needs what only the dynamic path does (a damaged message, an unknown enum number, a
//!   sub-microsecond timestamp, a repeated singular message, two members of one oneof, a
//!   non-finite float, an unsigned value past the column's range): the caller then decodes
//!   the batch the dynamic way, which also names each bad record. Where it answers, the rows
//!   equal the dynamic path's (a property test holds the two together).
//! - Absent fields read as the JSON mapping writes them: fields without presence as their
//!   default (0, "", false, the first enum value, an empty list), fields with presence
//!   (messages, `optional`, oneof members) as null; unknown field numbers are skipped.

use std::collections::HashMap;
use std::sync::Arc;

use arrow::array::{
    ArrayRef, BooleanBuilder, Float32Builder, Float64Builder, Int32Builder, Int64Builder, ListArray, RecordBatch,
    StringBuilder, StructArray, TimestampMicrosecondBuilder,
};
use arrow::buffer::{NullBuffer, OffsetBuffer};
use arrow::datatypes::{DataType as A, Field, FieldRef, Fields, SchemaRef, TimeUnit};
use prost_reflect::{FieldDescriptor, Kind, MessageDescriptor, Value};

/// Deepest nesting a plan follows.
const MAX_DEPTH: usize = 32;
/// RFC 3339's range, which the JSON mapping of a `Timestamp` keeps to (years 1 to 9999).
const TS_MIN_SECONDS: i64 = -62_135_596_800;
const TS_MAX_SECONDS: i64 = 253_402_300_799;

/// A descriptor's plan onto one Arrow schema.
#[derive(Debug)]
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) struct ProtoColumns {
    schema: SchemaRef,
    root: MessagePlan,
}

#[derive(Debug)]
struct MessagePlan {
    fields: Vec<FieldPlan>,
    /// Field number → index into `fields`.
    by_number: HashMap<u32, usize>,
    /// For each Arrow column, the field it is built from (`None`: always null).
    columns: Vec<Option<usize>>,
    oneofs: usize,
}

#[derive(Debug)]
struct FieldPlan {
    /// Its Arrow column's index.
    column: usize,
    kind: FieldKind,
    list: bool,
    oneof: Option<usize>,
    /// What an absent field without presence reads as (`None`: it has presence, so null).
    default: Option<Owned>,
    /// Its column takes no null: absent, the batch goes the dynamic way.
    required: bool,
}

#[derive(Debug)]
enum FieldKind {
    Scalar(Scalar),
    Enum(HashMap<i32, String>),
    Message(Box<MessagePlan>),
    Timestamp,
    Wrapper(Scalar),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scalar {
    Int32,
    Int64,
    Uint32,
    Uint64,
    Sint32,
    Sint64,
    Fixed32,
    Fixed64,
    Sfixed32,
    Sfixed64,
    Float,
    Double,
    Bool,
    String,
}

/// A value as a column takes it.
#[derive(Debug, Clone, PartialEq)]
enum Owned {
    Int(i64),
    F32(f32),
    F64(f64),
    Bool(bool),
    Str(String),
}

#[derive(Debug, Clone, Copy)]
enum Val<'a> {
    Int(i64),
    F32(f32),
    F64(f64),
    Bool(bool),
    Str(&'a str),
}

impl Owned {
    fn as_val(&self) -> Val<'_> {
        match self {
            Owned::Int(i) => Val::Int(*i),
            Owned::F32(x) => Val::F32(*x),
            Owned::F64(x) => Val::F64(*x),
            Owned::Bool(b) => Val::Bool(*b),
            Owned::Str(s) => Val::Str(s),
        }
    }
}

impl Scalar {
    fn of(kind: &Kind) -> Option<Scalar> {
        Some(match kind {
            Kind::Int32 => Scalar::Int32,
            Kind::Int64 => Scalar::Int64,
            Kind::Uint32 => Scalar::Uint32,
            Kind::Uint64 => Scalar::Uint64,
            Kind::Sint32 => Scalar::Sint32,
            Kind::Sint64 => Scalar::Sint64,
            Kind::Fixed32 => Scalar::Fixed32,
            Kind::Fixed64 => Scalar::Fixed64,
            Kind::Sfixed32 => Scalar::Sfixed32,
            Kind::Sfixed64 => Scalar::Sfixed64,
            Kind::Float => Scalar::Float,
            Kind::Double => Scalar::Double,
            Kind::Bool => Scalar::Bool,
            Kind::String => Scalar::String,
            _ => return None,
        })
    }

    /// The Arrow type the JSON mapping lands it in (see `decode::protobuf::delta_schema`).
    fn arrow(self) -> A {
        match self {
            Scalar::Int32 | Scalar::Sint32 | Scalar::Sfixed32 => A::Int32,
            Scalar::Float => A::Float32,
            Scalar::Double => A::Float64,
            Scalar::Bool => A::Boolean,
            Scalar::String => A::Utf8,
            _ => A::Int64,
        }
    }

    fn wire(self) -> u8 {
        match self {
            Scalar::Fixed32 | Scalar::Sfixed32 | Scalar::Float => 5,
            Scalar::Fixed64 | Scalar::Sfixed64 | Scalar::Double => 1,
            Scalar::String => 2,
            _ => 0,
        }
    }
}

impl ProtoColumns {
    /// The plan of `desc` onto `schema`; `None` when the dynamic path must serve it.
    #[cfg_attr(feature = "internal-api", visibility::make(pub))]
    pub(crate) fn plan(desc: &MessageDescriptor, schema: &SchemaRef) -> Option<ProtoColumns> {
        let root = message_plan(desc, schema.fields(), 0)?;
        Some(ProtoColumns { schema: schema.clone(), root })
    }

    /// One batch of message bodies as rows; `None` when any needs the dynamic path.
    #[cfg_attr(feature = "internal-api", visibility::make(pub))]
    pub(crate) fn decode(&self, bodies: &[&[u8]]) -> Option<RecordBatch> {
        let mut cols: Vec<Col> = self.schema.fields().iter().map(|f| Col::new(f)).collect::<Option<_>>()?;
        for body in bodies {
            decode_message(&self.root, body, &mut cols, 0)?;
        }
        let arrays: Vec<ArrayRef> = cols.into_iter().map(Col::finish).collect::<Option<_>>()?;
        RecordBatch::try_new(self.schema.clone(), arrays).ok()
    }
}

fn message_plan(desc: &MessageDescriptor, arrow: &Fields, depth: usize) -> Option<MessagePlan> {
    if depth > MAX_DEPTH {
        return None;
    }
    let mut fields = Vec::new();
    let mut by_number = HashMap::new();
    let mut columns = vec![None; arrow.len()];
    let mut oneof_ids: HashMap<String, usize> = HashMap::new();
    for f in desc.fields() {
        // Every field the mapping writes needs its column (else the table must evolve).
        let (at, column) = arrow.find(f.name())?;
        let mut plan = field_plan(&f, at, column.data_type(), depth, &mut oneof_ids)?;
        // A column that takes no null: a field that always has a value fills it; one that may
        // be absent must be there in every message (else the dynamic path refuses it).
        plan.required = !column.is_nullable() && !plan.list && plan.default.is_none();
        // A struct that may be null with children that may not: left to the dynamic path.
        if let (true, A::Struct(children)) = (column.is_nullable(), column.data_type()) {
            if !all_nullable(children) {
                return None;
            }
        }
        by_number.insert(f.number(), fields.len());
        columns[at] = Some(fields.len());
        fields.push(plan);
    }
    // Columns the message does not have read as null.
    if arrow.iter().zip(&columns).any(|(c, f)| f.is_none() && !c.is_nullable()) {
        return None;
    }
    Some(MessagePlan { fields, by_number, columns, oneofs: oneof_ids.len() })
}

fn all_nullable(fields: &Fields) -> bool {
    fields.iter().all(|f| {
        f.is_nullable()
            && match f.data_type() {
                A::Struct(children) => all_nullable(children),
                A::List(e) => e.is_nullable() && all_nullable(&Fields::from(vec![e.clone()])),
                _ => true,
            }
    })
}

fn field_plan(
    f: &FieldDescriptor,
    at: usize,
    column: &A,
    depth: usize,
    oneofs: &mut HashMap<String, usize>,
) -> Option<FieldPlan> {
    if f.is_map() {
        return None;
    }
    let list = f.is_list();
    let element = match (list, column) {
        (true, A::List(e)) if e.is_nullable() => e.data_type(),
        (true, _) => return None,
        (false, t) => t,
    };
    let kind = match f.kind() {
        Kind::Enum(e) => {
            (element == &A::Utf8).then_some(())?;
            FieldKind::Enum(e.values().map(|v| (v.number(), v.name().to_string())).collect())
        }
        Kind::Message(m) => match m.full_name() {
            "google.protobuf.Timestamp" => {
                matches!(element, A::Timestamp(TimeUnit::Microsecond, _)).then_some(())?;
                FieldKind::Timestamp
            }
            name if name.starts_with("google.protobuf.") && name.ends_with("Value") => {
                let inner = Scalar::of(&m.get_field(1)?.kind())?;
                // UInt32Value lands in an integer column (see `decode::protobuf::kind_type`).
                let arrow = if name == "google.protobuf.UInt32Value" { A::Int32 } else { inner.arrow() };
                (element == &arrow).then_some(())?;
                FieldKind::Wrapper(if name == "google.protobuf.UInt32Value" { Scalar::Uint32 } else { inner })
            }
            name if name.starts_with("google.protobuf.") => return None,
            _ => {
                let A::Struct(children) = element else { return None };
                FieldKind::Message(Box::new(message_plan(&m, children, depth + 1)?))
            }
        },
        other => {
            let s = Scalar::of(&other)?;
            (element == &s.arrow()).then_some(())?;
            FieldKind::Scalar(s)
        }
    };
    let presence = !list && f.supports_presence();
    let default = if presence || list { None } else { Some(owned(&f.default_value(), &kind)?) };
    let oneof = f.containing_oneof().map(|o| {
        let n = oneofs.len();
        *oneofs.entry(o.full_name().to_string()).or_insert(n)
    });
    Some(FieldPlan { column: at, kind, list, oneof, default, required: false })
}

/// A default value as its column takes it.
fn owned(v: &Value, kind: &FieldKind) -> Option<Owned> {
    Some(match (v, kind) {
        (Value::I32(i), _) => Owned::Int((*i).into()),
        (Value::I64(i), _) => Owned::Int(*i),
        (Value::U32(i), _) => Owned::Int((*i).into()),
        (Value::U64(i), _) => Owned::Int(i64::try_from(*i).ok()?),
        (Value::F32(x), _) if x.is_finite() => Owned::F32(*x),
        (Value::F64(x), _) if x.is_finite() => Owned::F64(*x),
        (Value::Bool(b), _) => Owned::Bool(*b),
        (Value::String(s), _) => Owned::Str(s.clone()),
        (Value::EnumNumber(n), FieldKind::Enum(names)) => Owned::Str(names.get(n)?.clone()),
        _ => return None,
    })
}

/// The bytes of a message, read field by field.
struct Wire<'a>(&'a [u8]);

impl<'a> Wire<'a> {
    fn varint(&mut self) -> Option<u64> {
        let mut v = 0u64;
        for (i, b) in self.0.iter().take(10).enumerate() {
            // The tenth byte holds the top bit only.
            if i == 9 && *b > 1 {
                return None;
            }
            v |= u64::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                self.0 = &self.0[i + 1..];
                return Some(v);
            }
        }
        None
    }

    /// The next field's number and wire type (field numbers run from 1 to 2^29 - 1).
    fn tag(&mut self) -> Option<(u32, u8)> {
        let tag = self.varint()?;
        let number = u32::try_from(tag >> 3).ok().filter(|n| (1..1 << 29).contains(n))?;
        Some((number, (tag & 7) as u8))
    }

    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let (head, rest) = self.0.split_at_checked(n)?;
        self.0 = rest;
        Some(head)
    }

    fn skip(&mut self, wire: u8) -> Option<()> {
        match wire {
            0 => self.varint().map(drop),
            1 => self.take(8).map(drop),
            2 => {
                let n = usize::try_from(self.varint()?).ok()?;
                self.take(n).map(drop)
            }
            5 => self.take(4).map(drop),
            _ => None,
        }
    }

    /// One value of a scalar field whose wire type is `s.wire()`.
    fn scalar(&mut self, s: Scalar) -> Option<Val<'a>> {
        let fixed32 = |w: &mut Wire<'a>| w.take(4).map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]));
        let fixed64 = |w: &mut Wire<'a>| w.take(8).map(|b| u64::from_le_bytes(b.try_into().unwrap_or([0; 8])));
        Some(match s {
            Scalar::Int32 => Val::Int(i64::from(self.varint()? as i32)),
            Scalar::Int64 => Val::Int(self.varint()? as i64),
            Scalar::Uint32 => Val::Int(i64::from(self.varint()? as u32)),
            Scalar::Uint64 => Val::Int(i64::try_from(self.varint()?).ok()?),
            Scalar::Sint32 => {
                let n = self.varint()? as u32;
                Val::Int(i64::from((n >> 1) as i32 ^ -((n & 1) as i32)))
            }
            Scalar::Sint64 => {
                let n = self.varint()?;
                Val::Int((n >> 1) as i64 ^ -((n & 1) as i64))
            }
            Scalar::Fixed32 => Val::Int(i64::from(fixed32(self)?)),
            Scalar::Sfixed32 => Val::Int(i64::from(fixed32(self)? as i32)),
            Scalar::Fixed64 => Val::Int(i64::try_from(fixed64(self)?).ok()?),
            Scalar::Sfixed64 => Val::Int(fixed64(self)? as i64),
            Scalar::Float => Val::F32(f32::from_bits(fixed32(self)?)).finite()?,
            Scalar::Double => Val::F64(f64::from_bits(fixed64(self)?)).finite()?,
            Scalar::Bool => Val::Bool(self.varint()? != 0),
            Scalar::String => {
                let n = usize::try_from(self.varint()?).ok()?;
                Val::Str(std::str::from_utf8(self.take(n)?).ok()?)
            }
        })
    }
}

impl Val<'_> {
    fn finite(self) -> Option<Self> {
        match self {
            Val::F32(x) if !x.is_finite() => None,
            Val::F64(x) if !x.is_finite() => None,
            v => Some(v),
        }
    }
}

/// What a singular field holds once its message is read.
#[derive(Clone, Copy)]
enum Held<'a> {
    Val(Val<'a>),
    /// A nested message's bytes (read once the message ends).
    Message(&'a [u8]),
}

/// Appends one row (the message in `bytes`) to `cols`, the columns of `plan`.
fn decode_message(plan: &MessagePlan, bytes: &[u8], cols: &mut [Col], depth: usize) -> Option<()> {
    if depth > MAX_DEPTH {
        return None;
    }
    let mut held: Vec<Option<Held<'_>>> = vec![None; plan.fields.len()];
    let mut oneof_set: Vec<Option<usize>> = vec![None; plan.oneofs];
    let mut w = Wire(bytes);
    while !w.0.is_empty() {
        let (number, wire) = w.tag()?;
        let Some(&f) = plan.by_number.get(&number) else {
            w.skip(wire)?;
            continue;
        };
        let field = &plan.fields[f];
        if let Some(o) = field.oneof {
            // Two members of one oneof: the dynamic path keeps the last one; leave it to it.
            if oneof_set[o].is_some_and(|g| g != f) {
                return None;
            }
            oneof_set[o] = Some(f);
        }
        if field.list {
            let Col::List { child, .. } = &mut cols[field.column] else { return None };
            read_element(field, wire, &mut w, child, depth)?;
            continue;
        }
        held[f] = Some(match &field.kind {
            FieldKind::Scalar(s) if wire == s.wire() => Held::Val(w.scalar(*s)?),
            FieldKind::Enum(names) if wire == 0 => {
                let n = w.varint()? as i32;
                Held::Val(Val::Str(names.get(&n)?))
            }
            FieldKind::Message(_) | FieldKind::Timestamp | FieldKind::Wrapper(_) if wire == 2 => {
                // A message given twice is merged by the dynamic path: leave it to it.
                if held[f].is_some() {
                    return None;
                }
                let n = usize::try_from(w.varint()?).ok()?;
                Held::Message(w.take(n)?)
            }
            _ => return None,
        });
    }
    for (col, f) in cols.iter_mut().zip(&plan.columns) {
        let Some(f) = *f else {
            col.push_null();
            continue;
        };
        let field = &plan.fields[f];
        if field.list {
            col.end_list();
            continue;
        }
        match (held[f], &field.kind) {
            (Some(Held::Val(v)), _) => col.push(v)?,
            (Some(Held::Message(m)), FieldKind::Message(inner)) => {
                let Col::Struct { children, valid, .. } = col else { return None };
                decode_message(inner, m, children, depth + 1)?;
                valid.push(true);
            }
            (Some(Held::Message(m)), FieldKind::Timestamp) => col.push(Val::Int(timestamp_micros(m)?))?,
            (Some(Held::Message(m)), FieldKind::Wrapper(s)) => col.push(wrapped(m, *s)?)?,
            (None, _) => match &field.default {
                Some(d) => col.push(d.as_val())?,
                None if field.required => return None,
                None => col.push_null(),
            },
            _ => return None,
        }
    }
    Some(())
}

/// One element (or a packed run of them) of a repeated field.
fn read_element(field: &FieldPlan, wire: u8, w: &mut Wire<'_>, child: &mut Col, depth: usize) -> Option<()> {
    match &field.kind {
        FieldKind::Scalar(s) if wire == s.wire() => child.push(w.scalar(*s)?),
        // Packed: a run of numbers in one length-delimited value.
        FieldKind::Scalar(s) if wire == 2 && *s != Scalar::String => {
            let n = usize::try_from(w.varint()?).ok()?;
            let mut run = Wire(w.take(n)?);
            while !run.0.is_empty() {
                child.push(run.scalar(*s)?)?;
            }
            Some(())
        }
        FieldKind::Enum(names) if wire == 0 => {
            let n = w.varint()? as i32;
            child.push(Val::Str(names.get(&n)?))
        }
        FieldKind::Enum(names) if wire == 2 => {
            let n = usize::try_from(w.varint()?).ok()?;
            let mut run = Wire(w.take(n)?);
            while !run.0.is_empty() {
                let n = run.varint()? as i32;
                child.push(Val::Str(names.get(&n)?))?;
            }
            Some(())
        }
        FieldKind::Message(inner) if wire == 2 => {
            let n = usize::try_from(w.varint()?).ok()?;
            let m = w.take(n)?;
            let Col::Struct { children, valid, .. } = child else { return None };
            decode_message(inner, m, children, depth + 1)?;
            valid.push(true);
            Some(())
        }
        FieldKind::Timestamp if wire == 2 => {
            let n = usize::try_from(w.varint()?).ok()?;
            child.push(Val::Int(timestamp_micros(w.take(n)?)?))
        }
        FieldKind::Wrapper(s) if wire == 2 => {
            let n = usize::try_from(w.varint()?).ok()?;
            child.push(wrapped(w.take(n)?, *s)?)
        }
        _ => None,
    }
}

/// A `google.protobuf.Timestamp` in microseconds (whole microseconds only).
fn timestamp_micros(m: &[u8]) -> Option<i64> {
    let (mut seconds, mut nanos) = (0i64, 0i64);
    let mut w = Wire(m);
    while !w.0.is_empty() {
        match w.tag()? {
            (1, 0) => seconds = w.varint()? as i64,
            (2, 0) => nanos = i64::from(w.varint()? as i32),
            (1 | 2, _) => return None,
            (_, wire) => w.skip(wire)?,
        }
    }
    let whole = (TS_MIN_SECONDS..=TS_MAX_SECONDS).contains(&seconds);
    (whole && (0..1_000_000_000).contains(&nanos) && nanos % 1000 == 0).then(|| seconds * 1_000_000 + nanos / 1000)
}

/// The value of a scalar wrapper (its default when unset).
fn wrapped(m: &[u8], s: Scalar) -> Option<Val<'_>> {
    let mut value = match s {
        Scalar::Float => Val::F32(0.0),
        Scalar::Double => Val::F64(0.0),
        Scalar::Bool => Val::Bool(false),
        Scalar::String => Val::Str(""),
        _ => Val::Int(0),
    };
    let mut w = Wire(m);
    while !w.0.is_empty() {
        match w.tag()? {
            (1, wire) if wire == s.wire() => value = w.scalar(s)?,
            (1, _) => return None,
            (_, wire) => w.skip(wire)?,
        }
    }
    // UInt32Value lands in an integer column.
    match (s, value) {
        (Scalar::Uint32, Val::Int(i)) if i > i64::from(i32::MAX) => None,
        _ => Some(value),
    }
}

/// A column being built.
enum Col {
    I32(Int32Builder),
    I64(Int64Builder),
    F32(Float32Builder),
    F64(Float64Builder),
    Bool(BooleanBuilder),
    Str(StringBuilder),
    Ts(TimestampMicrosecondBuilder, Option<Arc<str>>),
    Struct { fields: Fields, children: Vec<Col>, valid: Vec<bool> },
    List { field: FieldRef, child: Box<Col>, offsets: Vec<i32>, valid: Vec<bool> },
}

impl Col {
    fn new(f: &Field) -> Option<Col> {
        Some(match f.data_type() {
            A::Int32 => Col::I32(Int32Builder::new()),
            A::Int64 => Col::I64(Int64Builder::new()),
            A::Float32 => Col::F32(Float32Builder::new()),
            A::Float64 => Col::F64(Float64Builder::new()),
            A::Boolean => Col::Bool(BooleanBuilder::new()),
            A::Utf8 => Col::Str(StringBuilder::new()),
            A::Timestamp(TimeUnit::Microsecond, tz) => Col::Ts(TimestampMicrosecondBuilder::new(), tz.clone()),
            A::Struct(fields) => Col::Struct {
                fields: fields.clone(),
                children: fields.iter().map(|c| Col::new(c)).collect::<Option<_>>()?,
                valid: Vec::new(),
            },
            A::List(e) => {
                Col::List { field: e.clone(), child: Box::new(Col::new(e)?), offsets: vec![0], valid: Vec::new() }
            }
            _ => return None,
        })
    }

    fn push(&mut self, v: Val<'_>) -> Option<()> {
        match (self, v) {
            (Col::I32(b), Val::Int(i)) => b.append_value(i32::try_from(i).ok()?),
            (Col::I64(b), Val::Int(i)) => b.append_value(i),
            (Col::Ts(b, _), Val::Int(i)) => b.append_value(i),
            (Col::F32(b), Val::F32(x)) => b.append_value(x),
            (Col::F64(b), Val::F64(x)) => b.append_value(x),
            (Col::Bool(b), Val::Bool(x)) => b.append_value(x),
            (Col::Str(b), Val::Str(s)) => b.append_value(s),
            _ => return None,
        }
        Some(())
    }

    fn push_null(&mut self) {
        match self {
            Col::I32(b) => b.append_null(),
            Col::I64(b) => b.append_null(),
            Col::Ts(b, _) => b.append_null(),
            Col::F32(b) => b.append_null(),
            Col::F64(b) => b.append_null(),
            Col::Bool(b) => b.append_null(),
            Col::Str(b) => b.append_null(),
            Col::Struct { children, valid, .. } => {
                children.iter_mut().for_each(Col::push_null);
                valid.push(false);
            }
            Col::List { offsets, valid, .. } => {
                offsets.push(*offsets.last().unwrap_or(&0));
                valid.push(false);
            }
        }
    }

    /// Closes a list row holding the elements pushed since the last one.
    fn end_list(&mut self) {
        if let Col::List { child, offsets, valid, .. } = self {
            offsets.push(i32::try_from(child.len()).unwrap_or(i32::MAX));
            valid.push(true);
        }
    }

    fn len(&self) -> usize {
        use arrow::array::ArrayBuilder;
        match self {
            Col::I32(b) => b.len(),
            Col::I64(b) => b.len(),
            Col::Ts(b, _) => b.len(),
            Col::F32(b) => b.len(),
            Col::F64(b) => b.len(),
            Col::Bool(b) => b.len(),
            Col::Str(b) => b.len(),
            Col::Struct { valid, .. } | Col::List { valid, .. } => valid.len(),
        }
    }

    fn finish(self) -> Option<ArrayRef> {
        let nulls = |valid: Vec<bool>| Some(NullBuffer::from(valid)).filter(|n| n.null_count() > 0);
        Some(match self {
            Col::I32(mut b) => Arc::new(b.finish()),
            Col::I64(mut b) => Arc::new(b.finish()),
            Col::Ts(mut b, tz) => Arc::new(b.finish().with_timezone_opt(tz)),
            Col::F32(mut b) => Arc::new(b.finish()),
            Col::F64(mut b) => Arc::new(b.finish()),
            Col::Bool(mut b) => Arc::new(b.finish()),
            Col::Str(mut b) => Arc::new(b.finish()),
            Col::Struct { fields, children, valid } => {
                let arrays: Vec<ArrayRef> = children.into_iter().map(Col::finish).collect::<Option<_>>()?;
                Arc::new(StructArray::try_new(fields, arrays, nulls(valid)).ok()?)
            }
            Col::List { field, child, offsets, valid } => {
                let values = child.finish()?;
                Arc::new(ListArray::try_new(field, OffsetBuffer::new(offsets.into()), values, nulls(valid)).ok()?)
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::json::PayloadDecoder;
    use crate::decode::protobuf::{compile, delta_schema, proto3_options, Proto3};
    use prost::Message;
    use prost_reflect::DynamicMessage;

    const PROTO: &str = r#"syntax = "proto3"; package t;
        import "google/protobuf/timestamp.proto"; import "google/protobuf/wrappers.proto";
        message Row {
          int64 id = 1; int32 small = 2; uint32 u = 3; uint64 big = 4; sint32 s32 = 5; sint64 s64 = 6;
          fixed32 fx32 = 7; fixed64 fx64 = 8; sfixed32 sf32 = 9; sfixed64 sf64 = 10;
          float fl = 11; double db = 12; bool ok = 13; string name = 14;
          Kind kind = 15; Line line = 16; repeated int64 nums = 17; repeated string tags = 18;
          repeated Line lines = 19; google.protobuf.Timestamp at = 20; google.protobuf.Int64Value maybe = 21;
          optional int32 opt = 22; oneof choice { string a = 23; int32 b = 24; }
          repeated Kind kinds = 25; google.protobuf.StringValue sv = 26;
          enum Kind { NEW = 0; PAID = 1; }
          message Line { double amount = 1; int32 qty = 2; Inner inner = 3; }
          message Inner { string note = 1; }
        }"#;

    fn desc() -> MessageDescriptor {
        compile(PROTO, &[]).unwrap().get_message_by_name("t.Row").unwrap()
    }

    struct Rng(u64);
    impl Rng {
        fn next(&mut self, n: u64) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0 % n
        }
    }

    /// A random message: a random subset of fields; with `edgy`, values at the edges now and
    /// then (those only the dynamic path takes: NaN, unknown enum numbers, nanoseconds, ...).
    fn random_message(desc: &MessageDescriptor, r: &mut Rng, depth: u32, edgy: bool) -> DynamicMessage {
        let mut m = DynamicMessage::new(desc.clone());
        for f in desc.fields() {
            if r.next(3) == 0 {
                continue;
            }
            let one = |r: &mut Rng| -> Option<Value> {
                // Of each list, the last value is an edge: picked only when edgy, one in four.
                let pick = |r: &mut Rng, n: u64| {
                    if edgy && r.next(4) == 0 {
                        n - 1
                    } else {
                        r.next(n - 1)
                    }
                };
                Some(match f.kind() {
                    Kind::Int64 | Kind::Sint64 | Kind::Sfixed64 => {
                        Value::I64([0, -1, 7, i64::MIN, i64::MAX][r.next(5) as usize])
                    }
                    Kind::Int32 | Kind::Sint32 | Kind::Sfixed32 => {
                        Value::I32([0, -5, 42, i32::MIN, i32::MAX][r.next(5) as usize])
                    }
                    Kind::Uint32 | Kind::Fixed32 => Value::U32([0, 9, u32::MAX][r.next(3) as usize]),
                    Kind::Uint64 | Kind::Fixed64 => Value::U64([0, 9, i64::MAX as u64, u64::MAX][pick(r, 4) as usize]),
                    Kind::Float => Value::F32([0.0, 1.5, -2.25e10, f32::NAN][pick(r, 4) as usize]),
                    Kind::Double => Value::F64([0.0, 0.1, -1e300, f64::INFINITY][pick(r, 4) as usize]),
                    Kind::Bool => Value::Bool(r.next(2) == 0),
                    Kind::String => Value::String(["", "a", "ключ ü 🎉", "x\"y\\z"][r.next(4) as usize].to_string()),
                    Kind::Enum(_) => Value::EnumNumber([0, 1, 7][pick(r, 3) as usize]),
                    Kind::Message(inner) => match inner.full_name() {
                        "google.protobuf.Timestamp" => {
                            let mut t = DynamicMessage::new(inner.clone());
                            t.set_field_by_name("seconds", Value::I64([0, 1_700_000_000, -86_400][r.next(3) as usize]));
                            t.set_field_by_name("nanos", Value::I32([0, 250_000_000, 123_456_789][pick(r, 3) as usize]));
                            Value::Message(t)
                        }
                        "google.protobuf.Int64Value" => {
                            let mut t = DynamicMessage::new(inner.clone());
                            t.set_field_by_name("value", Value::I64(r.next(100) as i64 - 50));
                            Value::Message(t)
                        }
                        "google.protobuf.StringValue" => {
                            let mut t = DynamicMessage::new(inner.clone());
                            t.set_field_by_name("value", Value::String("wrapped".into()));
                            Value::Message(t)
                        }
                        _ if depth < 3 => Value::Message(random_message(&inner, r, depth + 1, edgy)),
                        _ => return None,
                    },
                    Kind::Bytes => return None,
                })
            };
            if f.is_list() {
                let values: Vec<Value> = (0..r.next(4)).filter_map(|_| one(r)).collect();
                m.set_field(&f, Value::List(values));
            } else if let Some(v) = one(r) {
                m.set_field(&f, v);
            }
        }
        m
    }

    /// What the dynamic path makes of one body (`None`: not a row of the table).
    fn dynamic(desc: &MessageDescriptor, decoder: &PayloadDecoder, bodies: &[Vec<u8>]) -> Option<RecordBatch> {
        let options = proto3_options();
        let messages: Vec<DynamicMessage> =
            bodies.iter().map(|b| DynamicMessage::decode(desc.clone(), b.as_slice()).ok()).collect::<Option<_>>()?;
        let rows: Vec<Proto3<'_>> = messages.iter().map(|m| Proto3(m, &options)).collect();
        decoder.decode_serialized(&rows)
    }

    #[test]
    fn wire_decoding_agrees_with_the_dynamic_path() {
        let desc = desc();
        let schema = Arc::new(crate::delta::arrow_schema::arrow_schema_strict(&delta_schema(&desc).unwrap()));
        let plan = ProtoColumns::plan(&desc, &schema).expect("the message maps onto its own table");
        let decoder = PayloadDecoder::new(schema.clone(), 1 << 20);
        let mut r = Rng(0x9E37_79B9_7F4A_7C15);
        let (mut direct, mut tried) = (0, 0);
        for _ in 0..10_000 {
            let edgy = r.next(2) == 0;
            let mut body = random_message(&desc, &mut r, 0, edgy).encode_to_vec();
            match r.next(if edgy { 8 } else { 16 }) {
                // Two encodings back to back: the dynamic path merges them.
                0 => body.extend(random_message(&desc, &mut r, 0, false).encode_to_vec()),
                // An unknown field, skipped by both.
                1 => body.extend([0xf8, 0x06, 0x05]),
                // Damage.
                2 if !body.is_empty() => {
                    let at = r.next(body.len() as u64) as usize;
                    body[at] ^= 1 << r.next(8);
                }
                3 => body.truncate(r.next(body.len() as u64 + 1) as usize),
                _ => {}
            }
            tried += 1;
            if let Some(got) = plan.decode(&[body.as_slice()]) {
                direct += 1;
                let want = dynamic(&desc, &decoder, std::slice::from_ref(&body))
                    .unwrap_or_else(|| {
                        let m = DynamicMessage::decode(desc.clone(), body.as_slice());
                        let json = m.as_ref().map(|m| crate::decode::protobuf::to_json(m, &proto3_options(), 0));
                        panic!("only the direct path decodes {body:?}: {json:?}")
                    });
                for (i, f) in schema.fields().iter().enumerate() {
                    assert_eq!(got.column(i), want.column(i), "column {} of {body:?}", f.name());
                }
            }
        }
        assert!(direct * 3 > tried, "only {direct} of {tried} decoded directly");
        // A whole batch of good messages at once, as a poll hands them over.
        let bodies: Vec<Vec<u8>> = (0..200)
            .map(|_| random_message(&desc, &mut r, 0, false).encode_to_vec())
            .filter(|b| plan.decode(&[b.as_slice()]).is_some())
            .collect();
        let refs: Vec<&[u8]> = bodies.iter().map(Vec::as_slice).collect();
        assert_eq!(plan.decode(&refs), dynamic(&desc, &decoder, &bodies));
    }

    #[test]
    fn descriptors_it_cannot_map_exactly_get_no_plan() {
        let pool = compile(
            r#"syntax = "proto3"; message M { map<string, int32> counts = 1; }
               message B { bytes raw = 1; } message W { int64 id = 1; }"#,
            &[],
        )
        .unwrap();
        for name in ["M", "B"] {
            let d = pool.get_message_by_name(name).unwrap();
            let schema = Arc::new(crate::delta::arrow_schema::arrow_schema_strict(&delta_schema(&d).unwrap()));
            assert!(ProtoColumns::plan(&d, &schema).is_none(), "{name}");
        }
        // A column of another type, or a field without a column.
        let w = pool.get_message_by_name("W").unwrap();
        let other = Arc::new(arrow::datatypes::Schema::new(vec![Field::new("id", A::Int32, true)]));
        assert!(ProtoColumns::plan(&w, &other).is_none());
        let none = Arc::new(arrow::datatypes::Schema::new(vec![Field::new("x", A::Int64, true)]));
        assert!(ProtoColumns::plan(&w, &none).is_none());
        // A column that takes no null is filled by a field that always has a value.
        let required = Arc::new(arrow::datatypes::Schema::new(vec![Field::new("id", A::Int64, false)]));
        let plan = ProtoColumns::plan(&w, &required).unwrap();
        assert_eq!(plan.decode(&[&[][..]]).unwrap().column(0).null_count(), 0);
        // Extra nullable columns read as null.
        let wider = Arc::new(arrow::datatypes::Schema::new(vec![
            Field::new("id", A::Int64, true),
            Field::new("later", A::Utf8, true),
        ]));
        let plan = ProtoColumns::plan(&w, &wider).unwrap();
        let batch = plan.decode(&[&[0x08, 0x2a][..], &[][..]]).unwrap();
        use arrow::array::{Array, AsArray};
        let ids = batch.column(0).as_primitive::<arrow::datatypes::Int64Type>();
        assert_eq!((ids.value(0), ids.value(1)), (42, 0));
        assert_eq!(batch.column(1).null_count(), 2);
    }
}
