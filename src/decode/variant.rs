//! [sync] JSON text into the Parquet Variant encoding (a `metadata` and a `value` binary), the
//! way Spark's `parse_json` encodes it, so that `to_json` of what deltabus writes gives back the
//! JSON that was sent:
//!
//! - integers as the narrowest of int8/16/32/64; an integer past a `long`, and a number with a
//!   fraction but no exponent, as a decimal of its own digits and scale (decimal4/8/16 by
//!   precision) when it has at most 38 digits; everything else (exponents, more digits) as a
//!   double; a number no double holds (`1e400`) is refused;
//! - strings (escapes decoded, surrogate pairs whole, a lone surrogate refused), booleans, null,
//!   arrays and objects (a key named twice in one object is refused, as Spark refuses it).
//!
//! The JSON is read here, and the bytes written by [`super::variant_bytes`], because numbers
//! must stay exact (a parse through `f64`, as `parquet-variant-json` does, would not keep them)
//! and because the ingest path needs it fast.

use std::borrow::Cow;

use super::json_text::unicode_escape;
use super::variant_bytes::{self as bytes, Keys};

/// Deeper than this, a value is refused (the nesting limit of every JSON decoder here).
const MAX_DEPTH: usize = 128;

/// One JSON value (the whole text, white space around it allowed) as variant `metadata` and
/// `value` binaries.
///
/// # Errors
/// Why the text is not one JSON value the encoding holds, in one line.
pub(crate) fn encode(text: &[u8]) -> Result<(Vec<u8>, Vec<u8>), String> {
    let mut p = Parser { b: text, at: 0, keys: Keys::default(), out: Vec::with_capacity(text.len()) };
    p.value(0)?;
    p.space();
    if p.at != text.len() {
        return Err(format!("unexpected text after the JSON value at byte {}", p.at));
    }
    Ok((p.keys.metadata(), p.out))
}

/// A JSON reader over bytes that writes each value's encoding as it goes.
struct Parser<'a> {
    b: &'a [u8],
    at: usize,
    keys: Keys<'a>,
    out: Vec<u8>,
}

impl<'a> Parser<'a> {
    fn space(&mut self) {
        while self.b.get(self.at).is_some_and(|c| matches!(c, b' ' | b'\t' | b'\n' | b'\r')) {
            self.at += 1;
        }
    }

    fn fail<T>(&self, what: &str) -> Result<T, String> {
        Err(format!("not JSON: {what} at byte {}", self.at))
    }

    /// Reads one value and writes it.
    fn value(&mut self, depth: usize) -> Result<(), String> {
        if depth > MAX_DEPTH {
            return Err(format!("the value nests deeper than {MAX_DEPTH} levels"));
        }
        self.space();
        match self.b.get(self.at) {
            Some(b'{') => {
                self.at += 1;
                self.object(depth)
            }
            Some(b'[') => {
                self.at += 1;
                self.list(depth)
            }
            Some(b'"') => {
                let s = self.string()?;
                bytes::string(&mut self.out, &s);
                Ok(())
            }
            Some(b't') => self.word("true", bytes::TRUE),
            Some(b'f') => self.word("false", bytes::FALSE),
            Some(b'n') => self.word("null", bytes::NULL),
            Some(b'-' | b'0'..=b'9') => self.number(),
            Some(_) => self.fail("unexpected character"),
            None => self.fail("unexpected end"),
        }
    }

    fn word(&mut self, w: &str, id: u8) -> Result<(), String> {
        if !self.b[self.at..].starts_with(w.as_bytes()) {
            return self.fail("unexpected word");
        }
        self.at += w.len();
        bytes::primitive(&mut self.out, id);
        Ok(())
    }

    /// An object's members after its `{`, up to and with its `}`.
    fn object(&mut self, depth: usize) -> Result<(), String> {
        let start = self.out.len();
        let mut fields: Vec<(u32, usize)> = Vec::new();
        self.space();
        if self.b.get(self.at) == Some(&b'}') {
            self.at += 1;
            return bytes::close_object(&mut self.out, start, &self.keys, &mut fields);
        }
        loop {
            self.space();
            if self.b.get(self.at) != Some(&b'"') {
                return self.fail("expected a key");
            }
            let key = self.string()?;
            self.space();
            if self.b.get(self.at) != Some(&b':') {
                return self.fail("expected ':'");
            }
            self.at += 1;
            fields.push((self.keys.id(key), self.out.len() - start));
            self.value(depth + 1)?;
            self.space();
            match self.b.get(self.at) {
                Some(b',') => self.at += 1,
                Some(b'}') => {
                    self.at += 1;
                    return bytes::close_object(&mut self.out, start, &self.keys, &mut fields);
                }
                _ => return self.fail("expected ',' or '}'"),
            }
        }
    }

    /// A list's elements after its `[`, up to and with its `]`.
    fn list(&mut self, depth: usize) -> Result<(), String> {
        let start = self.out.len();
        let mut offsets = Vec::new();
        self.space();
        if self.b.get(self.at) == Some(&b']') {
            self.at += 1;
            bytes::close_array(&mut self.out, start, &offsets);
            return Ok(());
        }
        loop {
            offsets.push(self.out.len() - start);
            self.value(depth + 1)?;
            self.space();
            match self.b.get(self.at) {
                Some(b',') => self.at += 1,
                Some(b']') => {
                    self.at += 1;
                    bytes::close_array(&mut self.out, start, &offsets);
                    return Ok(());
                }
                _ => return self.fail("expected ',' or ']'"),
            }
        }
    }
    /// A string starting at its quote, escapes decoded (borrowed from the text when it has
    /// none).
    fn string(&mut self) -> Result<Cow<'a, str>, String> {
        self.at += 1;
        let first = self.at;
        while self.b.get(self.at).is_some_and(|c| *c != b'"' && *c != b'\\' && *c >= 0x20) {
            self.at += 1;
        }
        if self.b.get(self.at) == Some(&b'"') {
            let text = std::str::from_utf8(&self.b[first..self.at]).map_err(|_| "a string is not valid UTF-8")?;
            self.at += 1;
            return Ok(Cow::Borrowed(text));
        }
        let mut out = self.b[first..self.at].to_vec();
        loop {
            let start = self.at;
            while self.b.get(self.at).is_some_and(|c| *c != b'"' && *c != b'\\' && *c >= 0x20) {
                self.at += 1;
            }
            out.extend_from_slice(&self.b[start..self.at]);
            match self.b.get(self.at) {
                Some(b'"') => {
                    self.at += 1;
                    return String::from_utf8(out)
                        .map(Cow::Owned)
                        .map_err(|_| "a string is not valid UTF-8".to_string());
                }
                Some(b'\\') => self.escape(&mut out)?,
                Some(_) => return self.fail("a control character in a string"),
                None => return self.fail("an unterminated string"),
            }
        }
    }

    fn escape(&mut self, out: &mut Vec<u8>) -> Result<(), String> {
        let simple = match self.b.get(self.at + 1) {
            Some(b'"') => b'"',
            Some(b'\\') => b'\\',
            Some(b'/') => b'/',
            Some(b'b') => 8,
            Some(b'f') => 12,
            Some(b'n') => b'\n',
            Some(b'r') => b'\r',
            Some(b't') => b'\t',
            Some(b'u') => {
                let Some((c, took)) = unicode_escape(&self.b[self.at + 1..]) else {
                    return self.fail("a \\u escape that is no character (a lone surrogate?)");
                };
                out.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes());
                self.at += 1 + took;
                return Ok(());
            }
            _ => return self.fail("an unknown escape"),
        };
        out.push(simple);
        self.at += 2;
        Ok(())
    }

    /// A number, as [`number`] encodes it.
    fn number(&mut self) -> Result<(), String> {
        let start = self.at;
        let digits = |p: &mut Self| {
            let s = p.at;
            while p.b.get(p.at).is_some_and(u8::is_ascii_digit) {
                p.at += 1;
            }
            p.at - s
        };
        if self.b[self.at] == b'-' {
            self.at += 1;
        }
        let int_start = self.at;
        let n = digits(self);
        if n == 0 || (n > 1 && self.b[int_start] == b'0') {
            return self.fail("a malformed number");
        }
        let mut fraction = false;
        if self.b.get(self.at) == Some(&b'.') {
            self.at += 1;
            fraction = true;
            if digits(self) == 0 {
                return self.fail("a malformed number");
            }
        }
        let mut exponent = false;
        if matches!(self.b.get(self.at), Some(b'e' | b'E')) {
            self.at += 1;
            exponent = true;
            if matches!(self.b.get(self.at), Some(b'+' | b'-')) {
                self.at += 1;
            }
            if digits(self) == 0 {
                return self.fail("a malformed number");
            }
        }
        let text = std::str::from_utf8(&self.b[start..self.at]).map_err(|e| e.to_string())?;
        number(&mut self.out, text, fraction, exponent)
    }
}

/// Writes a JSON number (the rules are in the module's documentation).
fn number(out: &mut Vec<u8>, text: &str, fraction: bool, exponent: bool) -> Result<(), String> {
    if !fraction && !exponent {
        if let Ok(i) = text.parse::<i64>() {
            bytes::integer(out, i);
            return Ok(());
        }
    }
    if !exponent {
        if let Some((unscaled, precision, scale)) = decimal(text) {
            bytes::decimal(out, unscaled, precision, scale);
            return Ok(());
        }
    }
    match text.parse::<f64>() {
        Ok(x) if x.is_finite() => {
            bytes::double(out, x);
            Ok(())
        }
        _ => Err(format!("the number {text} is out of the range of a double")),
    }
}

/// A number without exponent as a decimal of its digits and scale: (unscaled, precision,
/// scale), or `None` past 38 digits.
fn decimal(text: &str) -> Option<(i128, usize, u8)> {
    let (negative, t) = text.strip_prefix('-').map_or((false, text), |t| (true, t));
    let (int, frac) = t.split_once('.').unwrap_or((t, ""));
    let scale = u8::try_from(frac.len()).ok()?;
    let int = int.trim_start_matches('0');
    let significant = if int.is_empty() { frac.trim_start_matches('0') } else { frac };
    let precision = (int.len() + significant.len()).max(1);
    if precision > 38 || scale > 38 {
        return None;
    }
    let mut magnitude: i128 = 0;
    for d in int.bytes().chain(frac.bytes()) {
        magnitude = magnitude * 10 + i128::from(d - b'0');
    }
    Some((if negative { -magnitude } else { magnitude }, precision, scale))
}

#[cfg(test)]
#[path = "variant_tests.rs"]
mod tests;
