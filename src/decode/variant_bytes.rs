//! [sync] The bytes of the Parquet Variant encoding as [`super::variant`] writes them: a value
//! buffer filled front to back (a container's header put in front of its children once their
//! size is known) and the metadata dictionary of the keys one value uses.
//!
//! Written here rather than through `parquet-variant`'s builder, which makes a builder, a
//! dictionary and two buffers per value and hashes every key: on the ingest path that cost
//! about four times a typed decode of the same record. `parquet-variant` reads back what this
//! writes (every test decodes through it).

use std::borrow::Cow;
use std::collections::HashMap;

/// Primitive type ids (the header's upper six bits, basic type 0).
pub(crate) const NULL: u8 = 0;
pub(crate) const TRUE: u8 = 1;
pub(crate) const FALSE: u8 = 2;
const INT8: u8 = 3;
const INT16: u8 = 4;
const INT32: u8 = 5;
const INT64: u8 = 6;
const DOUBLE: u8 = 7;
const DECIMAL4: u8 = 8;
const DECIMAL8: u8 = 9;
const DECIMAL16: u8 = 10;
const STRING: u8 = 16;

/// The keys one value uses, each with its id (its place in the dictionary).
#[derive(Default)]
pub(crate) struct Keys<'a> {
    names: Vec<Cow<'a, str>>,
    /// Past a few keys, ids are looked up by name here instead of by a scan.
    index: HashMap<Cow<'a, str>, u32>,
}

/// Keys up to this many are found by a scan.
const SCANNED: usize = 16;

impl<'a> Keys<'a> {
    /// The id of `name`, added when new.
    pub(crate) fn id(&mut self, name: Cow<'a, str>) -> u32 {
        if self.names.len() <= SCANNED {
            if let Some(i) = self.names.iter().position(|n| *n == name) {
                return i as u32;
            }
        } else if let Some(i) = self.index.get(&name) {
            return *i;
        }
        let id = self.names.len() as u32;
        self.names.push(name);
        if self.names.len() > SCANNED {
            if self.index.is_empty() {
                self.index = self.names.iter().enumerate().map(|(i, n)| (n.clone(), i as u32)).collect();
            } else {
                self.index.insert(self.names[id as usize].clone(), id);
            }
        }
        id
    }

    pub(crate) fn name(&self, id: u32) -> &str {
        &self.names[id as usize]
    }

    /// The metadata binary: version 1, unsorted, the keys in id order.
    pub(crate) fn metadata(&self) -> Vec<u8> {
        let total: usize = self.names.iter().map(|n| n.len()).sum();
        let size = width(total.max(self.names.len()));
        let mut out = Vec::with_capacity(1 + size * (self.names.len() + 2) + total);
        out.push(1 | ((size as u8 - 1) << 6));
        put(&mut out, self.names.len(), size);
        let mut offset = 0;
        put(&mut out, 0, size);
        for n in &self.names {
            offset += n.len();
            put(&mut out, offset, size);
        }
        for n in &self.names {
            out.extend_from_slice(n.as_bytes());
        }
        out
    }
}

/// The bytes (1 to 4) an unsigned number up to `n` needs.
fn width(n: usize) -> usize {
    match n {
        0..=0xFF => 1,
        0x100..=0xFFFF => 2,
        0x1_0000..=0xFF_FFFF => 3,
        _ => 4,
    }
}

/// `n` little-endian in `size` bytes.
fn put(out: &mut Vec<u8>, n: usize, size: usize) {
    out.extend_from_slice(&(n as u32).to_le_bytes()[..size]);
}

pub(crate) fn primitive(out: &mut Vec<u8>, id: u8) {
    out.push(id << 2);
}

pub(crate) fn string(out: &mut Vec<u8>, s: &str) {
    if s.len() <= 63 {
        out.push(((s.len() as u8) << 2) | 1);
    } else {
        out.push(STRING << 2);
        out.extend_from_slice(&(s.len() as u32).to_le_bytes());
    }
    out.extend_from_slice(s.as_bytes());
}

/// An integer as the narrowest of int8/16/32/64.
pub(crate) fn integer(out: &mut Vec<u8>, i: i64) {
    if let Ok(x) = i8::try_from(i) {
        out.push(INT8 << 2);
        out.extend_from_slice(&x.to_le_bytes());
    } else if let Ok(x) = i16::try_from(i) {
        out.push(INT16 << 2);
        out.extend_from_slice(&x.to_le_bytes());
    } else if let Ok(x) = i32::try_from(i) {
        out.push(INT32 << 2);
        out.extend_from_slice(&x.to_le_bytes());
    } else {
        out.push(INT64 << 2);
        out.extend_from_slice(&i.to_le_bytes());
    }
}

pub(crate) fn double(out: &mut Vec<u8>, x: f64) {
    out.push(DOUBLE << 2);
    out.extend_from_slice(&x.to_le_bytes());
}

/// A decimal of `precision` digits (at most 38) as decimal4, 8 or 16.
pub(crate) fn decimal(out: &mut Vec<u8>, unscaled: i128, precision: usize, scale: u8) {
    let fits = |p: usize| precision <= p && usize::from(scale) <= p;
    if fits(9) {
        out.extend_from_slice(&[DECIMAL4 << 2, scale]);
        out.extend_from_slice(&(unscaled as i32).to_le_bytes());
    } else if fits(18) {
        out.extend_from_slice(&[DECIMAL8 << 2, scale]);
        out.extend_from_slice(&(unscaled as i64).to_le_bytes());
    } else {
        out.extend_from_slice(&[DECIMAL16 << 2, scale]);
        out.extend_from_slice(&unscaled.to_le_bytes());
    }
}

/// Puts an object's header in front of its values (`out[start..]`): `fields` are (key id,
/// offset of its value from `start`), sorted here by key name.
///
/// # Errors
/// The key named twice, when one is.
pub(crate) fn close_object(
    out: &mut Vec<u8>,
    start: usize,
    keys: &Keys<'_>,
    fields: &mut [(u32, usize)],
) -> Result<(), String> {
    fields.sort_unstable_by(|a, b| keys.name(a.0).cmp(keys.name(b.0)));
    if let Some(w) = fields.windows(2).find(|w| w[0].0 == w[1].0) {
        return Err(format!("the key {:?} appears twice in one object", keys.name(w[0].0)));
    }
    let data = out.len() - start;
    let large = fields.len() > 255;
    let id_size = width(fields.iter().map(|f| f.0 as usize).max().unwrap_or(0));
    let offset_size = width(data);
    let mut header = Vec::with_capacity(5 + fields.len() * (id_size + offset_size) + offset_size);
    header.push(2 | (((u8::from(large) << 4) | ((id_size as u8 - 1) << 2) | (offset_size as u8 - 1)) << 2));
    put(&mut header, fields.len(), if large { 4 } else { 1 });
    for f in fields.iter() {
        put(&mut header, f.0 as usize, id_size);
    }
    for f in fields.iter() {
        put(&mut header, f.1, offset_size);
    }
    put(&mut header, data, offset_size);
    out.splice(start..start, header);
    Ok(())
}

/// Puts an array's header in front of its elements (`out[start..]`), each at its offset
/// from `start`.
pub(crate) fn close_array(out: &mut Vec<u8>, start: usize, offsets: &[usize]) {
    let data = out.len() - start;
    let large = offsets.len() > 255;
    let offset_size = width(data);
    let mut header = Vec::with_capacity(5 + (offsets.len() + 1) * offset_size);
    header.push(3 | (((u8::from(large) << 2) | (offset_size as u8 - 1)) << 2));
    put(&mut header, offsets.len(), if large { 4 } else { 1 });
    for o in offsets {
        put(&mut header, *o, offset_size);
    }
    put(&mut header, data, offset_size);
    out.splice(start..start, header);
}
