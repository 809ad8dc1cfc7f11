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
//! The values are built with the `parquet-variant` crate; this module reads the JSON itself
//! because its numbers must stay exact, which a parse through `f64` (as `parquet-variant-json`
//! does) would not keep.

use parquet_variant::{
    BuilderSpecificState, ListBuilder, ObjectBuilder, ObjectState, Variant, VariantBuilder, VariantBuilderExt,
    VariantDecimal16, VariantDecimal4, VariantDecimal8,
};

use std::borrow::Cow;

use super::json_text::unicode_escape;

/// Deeper than this, a value is refused (the nesting limit of every JSON decoder here).
const MAX_DEPTH: usize = 128;

/// What [`Parser::value`] says when a container cannot open under a key its object holds.
const TWICE: &str = "a key appears twice in one object";

/// One JSON value (the whole text, white space around it allowed) as variant `metadata` and
/// `value` binaries.
///
/// # Errors
/// Why the text is not one JSON value the encoding holds, in one line.
pub(crate) fn encode(text: &[u8]) -> Result<(Vec<u8>, Vec<u8>), String> {
    let mut builder = VariantBuilder::new().with_validate_unique_fields(true);
    let mut p = Parser { b: text, at: 0 };
    p.value(&mut builder, 0)?;
    p.space();
    if p.at != text.len() {
        return Err(format!("unexpected text after the JSON value at byte {}", p.at));
    }
    builder.try_finish().map_err(|e| e.to_string())
}

/// A JSON reader over bytes that appends each value to a variant builder as it goes.
struct Parser<'a> {
    b: &'a [u8],
    at: usize,
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

    /// Reads one value into `out`.
    fn value(&mut self, out: &mut impl VariantBuilderExt, depth: usize) -> Result<(), String> {
        if depth > MAX_DEPTH {
            return Err(format!("the value nests deeper than {MAX_DEPTH} levels"));
        }
        self.space();
        match self.b.get(self.at) {
            Some(b'{') => {
                self.at += 1;
                // (Only an object's member can fail to open: its key is taken.)
                let object = out.try_new_object().map_err(|_| TWICE.to_string())?;
                self.object(object, depth)
            }
            Some(b'[') => {
                self.at += 1;
                let list = out.try_new_list().map_err(|_| TWICE.to_string())?;
                self.list(list, depth)
            }
            Some(b'"') => {
                let s = self.string()?;
                out.append_value(s.as_ref());
                Ok(())
            }
            Some(b't') => self.word("true", || out.append_value(true)),
            Some(b'f') => self.word("false", || out.append_value(false)),
            Some(b'n') => self.word("null", || out.append_value(())),
            Some(b'-' | b'0'..=b'9') => {
                let v = self.number()?;
                out.append_value(v);
                Ok(())
            }
            Some(_) => self.fail("unexpected character"),
            None => self.fail("unexpected end"),
        }
    }

    fn word(&mut self, w: &str, append: impl FnOnce()) -> Result<(), String> {
        if !self.b[self.at..].starts_with(w.as_bytes()) {
            return self.fail("unexpected word");
        }
        self.at += w.len();
        append();
        Ok(())
    }

    /// An object's members after its `{`, up to and with its `}`.
    fn object<S: BuilderSpecificState>(
        &mut self,
        mut object: ObjectBuilder<'_, S>,
        depth: usize,
    ) -> Result<(), String> {
        self.space();
        if self.b.get(self.at) == Some(&b'}') {
            self.at += 1;
            object.finish();
            return Ok(());
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
            let mut member = Member { key: &key, object: &mut object, twice: false };
            let read = self.value(&mut member, depth + 1);
            if member.twice || read.as_ref().is_err_and(|e| e == TWICE) {
                return Err(format!("the key {key:?} appears twice in one object"));
            }
            read?;
            self.space();
            match self.b.get(self.at) {
                Some(b',') => self.at += 1,
                Some(b'}') => {
                    self.at += 1;
                    object.finish();
                    return Ok(());
                }
                _ => return self.fail("expected ',' or '}'"),
            }
        }
    }

    /// A list's elements after its `[`, up to and with its `]`.
    fn list<S: BuilderSpecificState>(&mut self, mut list: ListBuilder<'_, S>, depth: usize) -> Result<(), String> {
        self.space();
        if self.b.get(self.at) == Some(&b']') {
            self.at += 1;
            list.finish();
            return Ok(());
        }
        loop {
            self.value(&mut list, depth + 1)?;
            self.space();
            match self.b.get(self.at) {
                Some(b',') => self.at += 1,
                Some(b']') => {
                    self.at += 1;
                    list.finish();
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

    /// A number, as [`number_variant`] encodes it.
    fn number(&mut self) -> Result<Variant<'static, 'static>, String> {
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
        number_variant(text, fraction, exponent)
    }
}

/// One member of an object being built: its value goes in under `key`, and a key the object
/// already holds is noted in `twice` (the builder refuses it rather than replace the value).
struct Member<'o, 'v, 's, S: BuilderSpecificState> {
    key: &'s str,
    object: &'o mut ObjectBuilder<'v, S>,
    twice: bool,
}

impl<S: BuilderSpecificState> VariantBuilderExt for Member<'_, '_, '_, S> {
    type State<'a>
        = ObjectState<'a>
    where
        Self: 'a;

    fn append_null(&mut self) {
        self.append_value(());
    }

    fn append_value<'m, 'v>(&mut self, value: impl Into<Variant<'m, 'v>>) {
        self.twice |= self.object.try_insert(self.key, value).is_err();
    }

    fn try_new_list(&mut self) -> Result<ListBuilder<'_, Self::State<'_>>, arrow::error::ArrowError> {
        self.object.try_new_list(self.key)
    }

    fn try_new_object(&mut self) -> Result<ObjectBuilder<'_, Self::State<'_>>, arrow::error::ArrowError> {
        self.object.try_new_object(self.key)
    }
}

/// A JSON number's variant (the rules are in the module's documentation).
fn number_variant(text: &str, fraction: bool, exponent: bool) -> Result<Variant<'static, 'static>, String> {
    if !fraction && !exponent {
        if let Ok(i) = text.parse::<i64>() {
            return Ok(narrowest(i));
        }
    }
    if !exponent {
        if let Some(d) = decimal(text) {
            return Ok(d);
        }
    }
    match text.parse::<f64>() {
        Ok(x) if x.is_finite() => Ok(Variant::Double(x)),
        _ => Err(format!("the number {text} is out of the range of a double")),
    }
}

fn narrowest(i: i64) -> Variant<'static, 'static> {
    if let Ok(x) = i8::try_from(i) {
        Variant::Int8(x)
    } else if let Ok(x) = i16::try_from(i) {
        Variant::Int16(x)
    } else if let Ok(x) = i32::try_from(i) {
        Variant::Int32(x)
    } else {
        Variant::Int64(i)
    }
}

/// A number without exponent as the narrowest decimal of its digits and scale (precision and
/// scale at most 9, 18 or 38), or `None` past 38 digits.
fn decimal(text: &str) -> Option<Variant<'static, 'static>> {
    let (negative, t) = text.strip_prefix('-').map_or((false, text), |t| (true, t));
    let (int, frac) = t.split_once('.').unwrap_or((t, ""));
    let scale = u8::try_from(frac.len()).ok()?;
    let digits = format!("{int}{frac}");
    let significant = digits.trim_start_matches('0');
    let precision = significant.len().max(1);
    if precision > 38 || scale > 38 {
        return None;
    }
    let magnitude: i128 = if significant.is_empty() { 0 } else { significant.parse().ok()? };
    let unscaled = if negative { -magnitude } else { magnitude };
    let fits = |p: usize| precision <= p && usize::from(scale) <= p;
    if fits(9) {
        VariantDecimal4::try_new(unscaled as i32, scale).ok().map(Variant::from)
    } else if fits(18) {
        VariantDecimal8::try_new(unscaled as i64, scale).ok().map(Variant::from)
    } else {
        VariantDecimal16::try_new(unscaled, scale).ok().map(Variant::from)
    }
}

#[cfg(test)]
#[path = "variant_tests.rs"]
mod tests;
