//! The byte-level pass of the JSON value rules [sync]: one scan over a record that approves it
//! when every value is already as its column takes it, so that the common record costs one
//! look at its bytes before Arrow's decoder, not a second parse.
//!
//! Contract:
//! - [`approves`] answers `true` only where the full walk ([`RecordRules::check_walk`]) would
//!   answer "decode as is"; anything it does not recognise for certain (an escaped key, an
//!   unknown field, a number a rule must read, a value its column takes only respelled, a
//!   syntax error) answers `false` and the full walk decides. A property test and the payload
//!   fuzz target hold the two to that.
//! - Strings are skipped with `memchr` (only escapes and the closing quote stop it); numbers
//!   are read only where their column's rule needs it (integer range, float range, decimal
//!   digits). An integer of up to 18 digits is read as its digits are scanned.
//! - A scan made with [`Scan::text`] (a record checked as UTF-8 whole) gives values' text as
//!   slices of it; one made with [`Scan::bytes`] checks each value's text where it is needed.
//!
//! [`RecordRules::check_walk`]: super::json_values::RecordRules::check_walk

use super::json_text::{check_timestamp_text, is_astral_escape};
use super::json_values::{Fields, Num, Slot};

/// Deeper than this, the full walk decides (its own recursion limit included).
const MAX_DEPTH: usize = 64;

/// Whether `record` (one JSON object against the `root` struct) decodes as it is.
pub(super) fn approves(root: &Slot, record: &[u8]) -> bool {
    let Slot::Struct(fields) = root else { return false };
    let mut s = Scan::bytes(record);
    s.ws();
    if s.peek() != Some(b'{') || s.object(fields, 0).is_none() {
        return false;
    }
    s.ws();
    s.at == s.b.len()
}

/// Whether a `float` column surely holds the number as written: below 10^38 (no exponent, at
/// most 38 integer digits).
pub(super) fn float32_holds(text: &str) -> bool {
    let int = text.trim_start_matches('-').split('.').next().unwrap_or("");
    if text.contains(['e', 'E']) || int.len() > 38 {
        return false;
    }
    // A fraction below float's smallest value would read as zero.
    let tiny = int.bytes().all(|b| b == b'0') && text.bytes().any(|b| (b'1'..=b'9').contains(&b));
    !tiny || text.parse::<f32>().is_ok_and(|x| x != 0.0)
}

pub(super) struct Scan<'a> {
    pub(super) b: &'a [u8],
    pub(super) at: usize,
    /// The record as text, when it was checked as UTF-8 whole: then a value's text is a slice
    /// of it, not checked again.
    text: Option<&'a str>,
}

/// `None`: not certain, the full walk decides.
pub(super) type Sure = Option<()>;

/// A number as JSON spells it.
pub(super) struct Number<'a> {
    pub(super) text: &'a str,
    /// Whether it has a fraction or an exponent.
    pub(super) real: bool,
    /// Its value, when it is an integer of at most 18 digits (read during the scan).
    pub(super) small: Option<i64>,
}

impl<'a> Number<'a> {
    /// Its value as an integer, when it is one that fits in `i64`.
    pub(super) fn integer(&self) -> Option<i64> {
        if self.real {
            return None;
        }
        self.small.or_else(|| self.text.parse().ok())
    }
}

impl<'a> Scan<'a> {
    /// A scan of bytes whose text is checked value by value, where a value needs it.
    pub(super) fn bytes(b: &'a [u8]) -> Scan<'a> {
        Scan { b, at: 0, text: None }
    }

    /// A scan of text already checked as UTF-8 whole.
    pub(super) fn text(text: &'a str) -> Scan<'a> {
        Scan { b: text.as_bytes(), at: 0, text: Some(text) }
    }

    /// The text of `b[from..to]` (bounds on ASCII characters the scan found).
    #[inline]
    pub(super) fn str_of(&self, from: usize, to: usize) -> Option<&'a str> {
        match self.text {
            Some(text) => text.get(from..to),
            None => std::str::from_utf8(self.b.get(from..to)?).ok(),
        }
    }

    /// The text of a slice the scan returned (a string's content).
    #[inline]
    pub(super) fn str_in(&self, part: &'a [u8]) -> Option<&'a str> {
        let from = (part.as_ptr() as usize).checked_sub(self.b.as_ptr() as usize)?;
        self.str_of(from, from + part.len())
    }
    #[inline]
    pub(super) fn peek(&self) -> Option<u8> {
        self.b.get(self.at).copied()
    }

    #[inline]
    pub(super) fn ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.at += 1;
        }
    }

    #[inline]
    pub(super) fn eat(&mut self, byte: u8) -> Sure {
        (self.peek() == Some(byte)).then(|| self.at += 1)
    }

    #[inline]
    pub(super) fn literal(&mut self, word: &[u8]) -> Sure {
        let end = self.at + word.len();
        (self.b.get(self.at..end) == Some(word)).then(|| self.at = end)
    }

    /// A string at the cursor: its content (between the quotes) and whether it has escapes.
    pub(super) fn string(&mut self) -> Option<(&'a [u8], bool)> {
        self.eat(b'"')?;
        let start = self.at;
        let mut escaped = false;
        loop {
            let i = self.at + memchr::memchr2(b'"', b'\\', &self.b[self.at..])?;
            if self.b[i] == b'"' {
                self.at = i + 1;
                return Some((&self.b[start..i], escaped));
            }
            // Characters past U+1FFFF escaped as surrogates are respelled by the walk.
            if is_astral_escape(&self.b[i..]) {
                return None;
            }
            escaped = true;
            self.at = i + 2;
            if self.at > self.b.len() {
                return None;
            }
        }
    }

    /// A number at the cursor, as JSON spells one (anything else: `None`).
    pub(super) fn number(&mut self) -> Option<Number<'a>> {
        let start = self.at;
        let negative = self.eat(b'-').is_some();
        let first = self.at;
        let mut value: i64 = 0;
        match self.peek()? {
            b'0' => self.at += 1,
            b'1'..=b'9' => {
                while let Some(d @ b'0'..=b'9') = self.peek() {
                    // At most 18 digits are kept (below 10^18): the rest is read from the text.
                    value = value.wrapping_mul(10).wrapping_add(i64::from(d - b'0'));
                    self.at += 1;
                }
            }
            _ => return None,
        }
        let digits = self.at - first;
        let mut real = false;
        if self.eat(b'.').is_some() {
            real = true;
            self.some_digits()?;
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            real = true;
            self.at += 1;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.at += 1;
            }
            self.some_digits()?;
        }
        // A number ends where a structural character or white space does.
        if !matches!(self.peek(), None | Some(b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r')) {
            return None;
        }
        let small = (!real && digits <= 18).then(|| if negative { -value } else { value });
        Some(Number { text: self.str_of(start, self.at)?, real, small })
    }

    fn digits(&mut self) {
        while matches!(self.peek(), Some(b'0'..=b'9')) {
            self.at += 1;
        }
    }

    fn some_digits(&mut self) -> Sure {
        let from = self.at;
        self.digits();
        (self.at > from).then_some(())
    }

    /// The members of an object at the cursor: `member` reads each one's value (the key given,
    /// with whether it has escapes).
    pub(super) fn members(&mut self, mut member: impl FnMut(&mut Self, &'a [u8], bool) -> Sure) -> Sure {
        self.eat(b'{')?;
        self.ws();
        if self.eat(b'}').is_some() {
            return Some(());
        }
        loop {
            let (key, escaped) = self.string()?;
            self.ws();
            self.eat(b':')?;
            self.ws();
            member(self, key, escaped)?;
            self.ws();
            if self.eat(b',').is_some() {
                self.ws();
                continue;
            }
            return self.eat(b'}');
        }
    }

    fn object(&mut self, fields: &Fields, depth: usize) -> Sure {
        let mut hint = 0;
        self.members(|s, key, escaped| {
            if escaped {
                return None;
            }
            // Unknown fields are left to the walk (and the decoder's strict mode).
            let i = fields.position(key, hint)?;
            hint = i + 1;
            s.value(&fields.list[i].1, depth + 1)
        })
    }

    fn value(&mut self, slot: &Slot, depth: usize) -> Sure {
        if depth > MAX_DEPTH {
            return None;
        }
        match self.peek()? {
            b'n' => self.literal(b"null"),
            b't' | b'f' if matches!(slot, Slot::Boolean) => self.literal(b"true").or_else(|| self.literal(b"false")),
            b'"' => {
                let (text, escaped) = self.string()?;
                match slot {
                    Slot::Text | Slot::Date => Some(()),
                    Slot::Timestamp if !escaped => check_timestamp_text(self.str_in(text)?).ok(),
                    _ => None,
                }
            }
            b'-' | b'0'..=b'9' => {
                let number = self.number()?;
                match slot {
                    Slot::Float64 => Some(()),
                    Slot::Integer { min, max, .. } => (*min..=*max).contains(&number.integer()?).then_some(()),
                    // Below 10^38 a float column holds it: no exponent, at most 38 digits.
                    Slot::Float32 => float32_holds(number.text).then_some(()),
                    Slot::Decimal { .. } => (slot.number(Num::Text(number.text)) == Ok(false)).then_some(()),
                    _ => None,
                }
            }
            b'{' => match slot {
                Slot::Struct(fields) => self.object(fields, depth),
                Slot::Map(values) => self.map(values, depth),
                _ => None,
            },
            b'[' => match slot {
                Slot::List(element) => self.list(element, depth),
                _ => None,
            },
            _ => None,
        }
    }

    fn map(&mut self, values: &Slot, depth: usize) -> Sure {
        self.members(|s, _, _| s.value(values, depth + 1))
    }

    fn list(&mut self, element: &Slot, depth: usize) -> Sure {
        self.eat(b'[')?;
        self.ws();
        if self.eat(b']').is_some() {
            return Some(());
        }
        loop {
            self.value(element, depth + 1)?;
            self.ws();
            if self.eat(b',').is_some() {
                self.ws();
                continue;
            }
            return self.eat(b']');
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::json_values::{RecordRules, Verdict};
    use arrow::datatypes::{DataType as A, Field, Schema, TimeUnit};
    use std::sync::Arc;

    fn rules() -> RecordRules {
        let inner = A::Struct(vec![Field::new("n", A::Int32, true), Field::new("s", A::Utf8, true)].into());
        let entries = Field::new(
            "entries",
            A::Struct(vec![Field::new("key", A::Utf8, false), Field::new("value", A::Int32, true)].into()),
            false,
        );
        RecordRules::new(&Schema::new(vec![
            Field::new("x", A::Int64, true),
            Field::new("b", A::Int8, true),
            Field::new("g", A::Float32, true),
            Field::new("d", A::Decimal128(5, 2), true),
            Field::new("ts", A::Timestamp(TimeUnit::Microsecond, Some("UTC".into())), true),
            Field::new("day", A::Date32, true),
            Field::new("s", A::Utf8, true),
            Field::new("f", A::Float64, true),
            Field::new("ok", A::Boolean, true),
            Field::new("inner", inner, true),
            Field::new("xs", A::List(Arc::new(Field::new("element", A::Int64, true))), true),
            Field::new("m", A::Map(Arc::new(entries), false), true),
            Field::new("bin", A::Binary, true),
            Field::new("ключ", A::Utf8, true),
        ]))
    }

    #[test]
    fn common_records_are_approved_in_one_pass() {
        let r = rules();
        for ok in [
            r#"{"x": 1, "s": "a\"b", "f": 2.5, "ok": true, "inner": {"n": 3, "s": "ü"}, "xs": [1, -2]}"#,
            r#"{"m": {"k": 1, "l": null}, "ts": "2024-01-02T03:04:05.123456Z", "day": "2024-01-02"}"#,
            r#" {"d": 123.45, "g": 1.25, "b": -128, "ключ": "значение", "f": -1e-3, "x": null} "#,
            r#"{"x":9223372036854775807,"xs":[],"inner":{},"ok":false,"d":-0.5}"#,
        ] {
            assert!(approves(&r.root, ok.as_bytes()), "{ok}");
            assert_eq!(r.check_walk(ok.as_bytes()), Ok(Verdict::AsIs), "{ok}");
        }
        // What a rule must respell or refuse is left to the walk.
        for walk in [
            r#"{"x": 2.0}"#,
            r#"{"x": 2.5}"#,
            r#"{"b": 128}"#,
            r#"{"s": 5}"#,
            r#"{"ts": 1700000000}"#,
            r#"{"ts": "2024-01-02T03:04:05.1234567Z"}"#,
            r#"{"d": 1.234}"#,
            r#"{"unknown": 1}"#,
            r#"{"\u0078": 1}"#,
            r#"{"x": 1}{"x": 2}"#,
            r#"{"x": 1"#,
            r#"[1]"#,
            r#"{"bin": "AA=="}"#,
        ] {
            assert!(!approves(&r.root, walk.as_bytes()), "{walk}");
        }
    }

    /// The integer read during the scan is the one the text spells, at every digit count.
    #[test]
    fn integers_read_during_the_scan_are_the_text_s() {
        let mut digits = String::new();
        for n in 1..=22 {
            digits.push(char::from(b'0' + (n * 7 % 10) as u8));
            for text in [digits.clone(), format!("-{digits}"), "9".repeat(n), format!("-{}", "9".repeat(n))] {
                for end in ["", ",", "}", " "] {
                    let spelled = format!("{text}{end}");
                    let number = Scan::bytes(spelled.as_bytes()).number().unwrap();
                    assert_eq!(number.integer(), text.parse::<i64>().ok(), "{spelled}");
                    let number = Scan::text(&spelled).number().unwrap();
                    assert_eq!((number.text, number.integer()), (text.as_str(), text.parse::<i64>().ok()));
                }
            }
        }
        for (text, int) in
            [("0", Some(0)), ("-0", Some(0)), ("-9223372036854775808", Some(i64::MIN)), ("2.0", None), ("1e3", None)]
        {
            assert_eq!(Scan::bytes(text.as_bytes()).number().unwrap().integer(), int, "{text}");
        }
        for bad in ["01x", "-", "1.", "1e", "+1", "1x"] {
            assert!(Scan::bytes(bad.as_bytes()).number().is_none(), "{bad}");
        }
    }

    /// Random records, well-formed or not: wherever the pass approves, the walk agrees.
    #[test]
    fn the_pass_never_approves_what_the_walk_would_not() {
        const TOKENS: &[&str] = &[
            "0",
            "-0",
            "12",
            "-7",
            "2.0",
            "2.5",
            "1e3",
            "-1.5e-3",
            "9223372036854775807",
            "9223372036854775808",
            "-9223372036854775809",
            "128",
            "-129",
            "99999999999999999999999",
            "1e400",
            "01",
            "1.",
            "-",
            "123.45",
            "1234.5",
            "0.50",
            "3.4e39",
            "340282366920938463463374607431768211456",
            "\"a\"",
            "\"ü\"",
            "\"a\\\"b\"",
            "\"2024-01-02T03:04:05Z\"",
            "\"2024-01-02T03:04:05.1234567Z\"",
            "\"5\"",
            "\"x\\u00e9\"",
            "\"\\q\"",
            "\"2.5\"",
            "true",
            "false",
            "null",
            "nul",
            "tru",
            "{",
            "}",
            "]",
            "",
            "[1,2]",
            "[1,2.5]",
            "[]",
            "{}",
            "{\"n\":1}",
            "{\"n\":1.5}",
            "{\"k\":1}",
            "{\"k\":\"v\"}",
        ];
        const KEYS: &[&str] =
            &["x", "b", "g", "d", "ts", "day", "s", "f", "ok", "inner", "xs", "m", "bin", "ключ", "zz", "\\u0078", "n"];
        let r = rules();
        let mut raw = crate::delta::test_rng::xorshift(0x9E37_79B9_7F4A_7C15u64);
        let mut next = move |n: usize| (raw() % n as u64) as usize;
        let (mut approved, mut tried) = (0, 0);
        for _ in 0..200_000 {
            let mut rec = String::from("{");
            for i in 0..next(5) {
                if i > 0 {
                    rec.push_str([",", ", ", " ,\n", ""][next(4)]);
                }
                rec.push_str(&format!("\"{}\"", KEYS[next(KEYS.len())]));
                rec.push_str([":", " : ", ""][next(3).min(next(3))]);
                match next(6) {
                    0 => rec.push_str(&format!("[{}, {}]", TOKENS[next(TOKENS.len())], TOKENS[next(TOKENS.len())])),
                    1 => rec.push_str(&format!(
                        "{{\"n\": {}, \"k\": {}}}",
                        TOKENS[next(TOKENS.len())],
                        TOKENS[next(TOKENS.len())]
                    )),
                    _ => rec.push_str(TOKENS[next(TOKENS.len())]),
                }
            }
            rec.push_str(["}", "} ", "", "}x", "}}"][next(5).min(next(5))]);
            if next(10) == 0 {
                let cut = next(rec.len() + 1);
                rec.truncate(rec.floor_char_boundary(cut));
            }
            tried += 1;
            if approves(&r.root, rec.as_bytes()) {
                approved += 1;
                assert_eq!(r.check_walk(rec.as_bytes()), Ok(Verdict::AsIs), "approved {rec}");
            }
        }
        // The generator is not all noise: a good share takes the one-pass route.
        assert!(approved * 20 > tried, "{approved} of {tried} approved");
    }
}
