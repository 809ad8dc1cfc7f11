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
//!
//! Beside it: `wire` reads the wire format, `columns` holds the builders.

use std::collections::HashMap;

use arrow::array::{ArrayRef, RecordBatch};
use arrow::datatypes::{DataType as A, Fields, SchemaRef, TimeUnit};
use prost_reflect::{FieldDescriptor, Kind, MessageDescriptor, Value};

use crate::decode::text_room::TextRoom;
use columns::Col;
use wire::{Scalar, Val, Wire};

mod columns;
#[cfg(test)]
mod tests;
mod wire;

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
    /// The room of each string column, depth first (see [`TextRoom`]).
    text_room: Box<[TextRoom]>,
}

#[derive(Debug)]
struct MessagePlan {
    fields: Vec<FieldPlan>,
    /// Field number → index into `fields`.
    by_number: HashMap<u32, usize>,
    /// The same for the small numbers most fields have, by index (`usize::MAX`: none).
    by_small_number: Vec<usize>,
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

/// A value as a column takes it.
#[derive(Debug, Clone, PartialEq)]
enum Owned {
    Int(i64),
    F32(f32),
    F64(f64),
    Bool(bool),
    Str(String),
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

impl ProtoColumns {
    /// The plan of `desc` onto `schema`; `None` when the dynamic path must serve it.
    #[cfg_attr(feature = "internal-api", visibility::make(pub))]
    pub(crate) fn plan(desc: &MessageDescriptor, schema: &SchemaRef) -> Option<ProtoColumns> {
        let root = message_plan(desc, schema.fields(), 0)?;
        let mut strings = 0;
        for f in schema.fields() {
            Col::new(f, 0, &mut || {
                strings += 1;
                0
            })?;
        }
        let text_room = (0..strings).map(|_| TextRoom::default()).collect();
        Some(ProtoColumns { schema: schema.clone(), root, text_room })
    }

    /// One batch of message bodies as rows; `None` when any needs the dynamic path.
    #[cfg_attr(feature = "internal-api", visibility::make(pub))]
    pub(crate) fn decode(&self, bodies: &[&[u8]]) -> Option<RecordBatch> {
        let (rows, bytes) = (bodies.len(), bodies.iter().map(|b| b.len()).sum());
        let mut rooms = self.text_room.iter();
        let mut text = || rooms.next().map_or(0, |r| r.room(rows, bytes));
        let mut cols: Vec<Col> =
            self.schema.fields().iter().map(|f| Col::new(f, rows, &mut text)).collect::<Option<_>>()?;
        for body in bodies {
            decode_message(&self.root, body, &mut cols, 0)?;
        }
        let mut took = Vec::with_capacity(self.text_room.len());
        cols.iter().for_each(|c| c.text_bytes(&mut took));
        self.text_room.iter().zip(took).for_each(|(room, bytes)| room.learn(bytes, rows));
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
    let mut by_small_number = vec![usize::MAX; by_number.keys().map(|n| *n as usize + 1).max().unwrap_or(0).min(64)];
    for (n, f) in &by_number {
        if let Some(slot) = by_small_number.get_mut(*n as usize) {
            *slot = *f;
        }
    }
    Some(MessagePlan { fields, by_number, by_small_number, columns, oneofs: oneof_ids.len() })
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
    // (Most messages have few fields: their values held on the stack.)
    let mut few = [None; 16];
    let mut many;
    let held: &mut [Option<Held<'_>>] = match few.get_mut(..plan.fields.len()) {
        Some(few) => few,
        None => {
            many = vec![None; plan.fields.len()];
            &mut many
        }
    };
    let mut oneof_set: Vec<Option<usize>> = vec![None; plan.oneofs];
    let mut w = Wire(bytes);
    while !w.0.is_empty() {
        let (number, wire) = w.tag()?;
        let f = match plan.by_small_number.get(number as usize) {
            Some(&f) => Some(f).filter(|f| *f != usize::MAX),
            None => plan.by_number.get(&number).copied(),
        };
        let Some(f) = f else {
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
