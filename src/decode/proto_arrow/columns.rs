//! The Arrow columns `proto_arrow` builds [sync]: one builder per column, nested for structs
//! and lists, finished into arrays of exactly the table's types.

use std::sync::Arc;

use arrow::array::{
    ArrayRef, BooleanBuilder, Float32Builder, Float64Builder, Int32Builder, Int64Builder, ListArray, StringBuilder,
    StructArray, TimestampMicrosecondBuilder,
};
use arrow::buffer::{NullBuffer, OffsetBuffer};
use arrow::datatypes::{DataType as A, Field, FieldRef, Fields, TimeUnit};

use super::wire::Val;

/// A column being built.
pub(super) enum Col {
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
    /// A column with room for `n` rows; each string column (in depth-first order) takes its
    /// bytes of room from `text`.
    pub(super) fn new(f: &Field, n: usize, text: &mut dyn FnMut() -> usize) -> Option<Col> {
        Some(match f.data_type() {
            A::Int32 => Col::I32(Int32Builder::with_capacity(n)),
            A::Int64 => Col::I64(Int64Builder::with_capacity(n)),
            A::Float32 => Col::F32(Float32Builder::with_capacity(n)),
            A::Float64 => Col::F64(Float64Builder::with_capacity(n)),
            A::Boolean => Col::Bool(BooleanBuilder::with_capacity(n)),
            A::Utf8 => Col::Str(StringBuilder::with_capacity(n, text())),
            A::Timestamp(TimeUnit::Microsecond, tz) => {
                Col::Ts(TimestampMicrosecondBuilder::with_capacity(n), tz.clone())
            }
            A::Struct(fields) => Col::Struct {
                fields: fields.clone(),
                children: fields.iter().map(|c| Col::new(c, n, text)).collect::<Option<_>>()?,
                valid: Vec::with_capacity(n),
            },
            A::List(e) => Col::List {
                field: e.clone(),
                child: Box::new(Col::new(e, n, text)?),
                offsets: {
                    let mut offsets = Vec::with_capacity(n + 1);
                    offsets.push(0);
                    offsets
                },
                valid: Vec::with_capacity(n),
            },
            _ => return None,
        })
    }

    pub(super) fn push(&mut self, v: Val<'_>) -> Option<()> {
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

    pub(super) fn push_null(&mut self) {
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
    pub(super) fn end_list(&mut self) {
        if let Col::List { child, offsets, valid, .. } = self {
            offsets.push(i32::try_from(child.len()).unwrap_or(i32::MAX));
            valid.push(true);
        }
    }

    /// The bytes of each string column's values, in the order [`Col::new`] sized them.
    pub(super) fn text_bytes(&self, out: &mut Vec<usize>) {
        match self {
            Col::Str(b) => out.push(b.values_slice().len()),
            Col::Struct { children, .. } => children.iter().for_each(|c| c.text_bytes(out)),
            Col::List { child, .. } => child.text_bytes(out),
            _ => {}
        }
    }

    pub(super) fn len(&self) -> usize {
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

    pub(super) fn finish(self) -> Option<ArrayRef> {
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
