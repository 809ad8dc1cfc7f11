//! The Protobuf wire format as `proto_arrow` reads it [sync]: scalar kinds, their wire types
//! and values, and a reader of fields that answers `None` for anything malformed (a varint
//! past ten bytes, a field number 0, a length past the end, a group), as the dynamic decoder
//! refuses it.

use arrow::datatypes::DataType as A;
use prost_reflect::Kind;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Scalar {
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

#[derive(Debug, Clone, Copy)]
pub(super) enum Val<'a> {
    Int(i64),
    F32(f32),
    F64(f64),
    Bool(bool),
    Str(&'a str),
}

impl Scalar {
    pub(super) fn of(kind: &Kind) -> Option<Scalar> {
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
    pub(super) fn arrow(self) -> A {
        match self {
            Scalar::Int32 | Scalar::Sint32 | Scalar::Sfixed32 => A::Int32,
            Scalar::Float => A::Float32,
            Scalar::Double => A::Float64,
            Scalar::Bool => A::Boolean,
            Scalar::String => A::Utf8,
            _ => A::Int64,
        }
    }

    pub(super) fn wire(self) -> u8 {
        match self {
            Scalar::Fixed32 | Scalar::Sfixed32 | Scalar::Float => 5,
            Scalar::Fixed64 | Scalar::Sfixed64 | Scalar::Double => 1,
            Scalar::String => 2,
            _ => 0,
        }
    }
}

/// The bytes of a message, read field by field.
pub(super) struct Wire<'a>(pub(super) &'a [u8]);

impl<'a> Wire<'a> {
    pub(super) fn varint(&mut self) -> Option<u64> {
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
    pub(super) fn tag(&mut self) -> Option<(u32, u8)> {
        let tag = self.varint()?;
        let number = u32::try_from(tag >> 3).ok().filter(|n| (1..1 << 29).contains(n))?;
        Some((number, (tag & 7) as u8))
    }

    pub(super) fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let (head, rest) = self.0.split_at_checked(n)?;
        self.0 = rest;
        Some(head)
    }

    pub(super) fn skip(&mut self, wire: u8) -> Option<()> {
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
    pub(super) fn scalar(&mut self, s: Scalar) -> Option<Val<'a>> {
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
    pub(super) fn finite(self) -> Option<Self> {
        match self {
            Val::F32(x) if !x.is_finite() => None,
            Val::F64(x) if !x.is_finite() => None,
            v => Some(v),
        }
    }
}
