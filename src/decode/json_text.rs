//! [sync] A JSON value's raw text, read exactly: a number's digits with its exponent applied
//! (never through `f64`), integers from their text, timestamp strings' fraction digits, and the
//! respellings the JSON value rules ([`super::json_values`]) write in place.

/// A number's text as plain decimal digits: its sign, integer digits without leading zeros and
/// fraction digits without trailing zeros, the exponent applied exactly (`-1.5e3` → (-, "1500",
/// "")). `None` for text that is not a JSON number, or an exponent too large to spell out.
pub(crate) struct Plain {
    pub negative: bool,
    pub int: String,
    pub frac: String,
}

pub(crate) fn plain(text: &str) -> Option<Plain> {
    let t = text.trim();
    let (negative, t) = match t.as_bytes().first()? {
        b'-' => (true, &t[1..]),
        b'+' => (false, &t[1..]),
        _ => (false, t),
    };
    let (mantissa, exponent) = match t.find(['e', 'E']) {
        Some(i) => (&t[..i], t[i + 1..].parse::<i64>().ok()?),
        None => (t, 0),
    };
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    if int.is_empty() && frac.is_empty() || !int.bytes().chain(frac.bytes()).all(|b| b.is_ascii_digit()) {
        return None;
    }
    if exponent.unsigned_abs() > 400 {
        return None;
    }
    // All digits, and where the point goes among them.
    let digits: String = format!("{int}{frac}");
    let point = i64::try_from(int.len()).ok()? + exponent;
    let (int, frac) = if point <= 0 {
        (String::new(), format!("{}{digits}", "0".repeat(usize::try_from(-point).ok()?)))
    } else if point as usize >= digits.len() {
        (format!("{digits}{}", "0".repeat(point as usize - digits.len())), String::new())
    } else {
        (digits[..point as usize].to_string(), digits[point as usize..].to_string())
    };
    Some(Plain { negative, int: int.trim_start_matches('0').to_string(), frac: frac.trim_end_matches('0').to_string() })
}

/// An integer from a number's text, exactly: a fraction or more digits than an `i128` holds
/// is refused (`name` is the column's type).
pub(crate) fn exact_integer(text: &str, name: &str) -> Result<i128, String> {
    if let Ok(i) = text.parse::<i64>() {
        return Ok(i.into());
    }
    let p = plain(text).ok_or_else(|| format!("{text} is not a number; the column is {name}"))?;
    if !p.frac.is_empty() {
        return Err(format!("{text} has a fraction; the column is {name}"));
    }
    if p.int.len() > 38 {
        return Err(format!("{text} is out of range for {name}"));
    }
    let magnitude: i128 =
        if p.int.is_empty() { 0 } else { p.int.parse().map_err(|_| format!("{text} is out of range for {name}"))? };
    Ok(if p.negative { -magnitude } else { magnitude })
}

/// Microseconds since the epoch as the RFC 3339 text the decoder takes.
pub(crate) fn rfc3339(text: &str, micros: i64) -> Result<String, String> {
    chrono::DateTime::from_timestamp_micros(micros)
        .map(|at| at.format("%Y-%m-%dT%H:%M:%S%.6fZ").to_string())
        .ok_or_else(|| format!("{text} seconds is out of range"))
}

/// A JSON string holding `text`.
pub(crate) fn quoted(text: &str) -> String {
    serde_json::to_string(text).unwrap_or_else(|_| format!("\"{text}\""))
}

/// JSON text without the white space between tokens (strings kept as they are).
pub(crate) fn minified(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let (mut in_string, mut escaped) = (false, false);
    for c in text.chars() {
        if in_string {
            out.push(c);
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => in_string = false,
                _ => {}
            }
        } else if c == '"' {
            in_string = true;
            out.push(c);
        } else if !c.is_whitespace() {
            out.push(c);
        }
    }
    out
}

/// Why a timestamp's text is refused, if it is: more than six fraction digits of a second
/// (timestamps keep microseconds; the decoder would cut the rest silently).
///
/// # Errors
/// The reason, naming the value.
pub(crate) fn check_timestamp_text(text: &str) -> Result<(), String> {
    let Some(dot) = text.find('.') else { return Ok(()) };
    if !text[..dot].contains(':') {
        return Ok(());
    }
    let fraction: &str = text[dot + 1..].split(|c: char| !c.is_ascii_digit()).next().unwrap_or("");
    if fraction.trim_end_matches('0').len() > 6 {
        return Err(format!("{text:?} is finer than a microsecond; timestamps keep microseconds"));
    }
    Ok(())
}

/// Whether the escape starting at `b` (its backslash) is the high half of a surrogate pair
/// for a character past U+1FFFF (`\ud840` and above): `arrow_json` decodes those pairs to the
/// wrong character, so such records are respelled first ([`astral_escapes_decoded`]).
pub(crate) fn is_astral_escape(b: &[u8]) -> bool {
    b.get(..2) == Some(b"\\u") && b.get(2..6).and_then(hex4).is_some_and(is_wide_high)
}

/// The record with every surrogate-pair escape of a character past U+1FFFF written as the
/// character itself (every other byte as sent); `None` when it has none.
pub(crate) fn astral_escapes_decoded(record: &[u8]) -> Option<Vec<u8>> {
    let mut out: Option<Vec<u8>> = None;
    let (mut at, mut copied) = (0, 0);
    while let Some(i) = memchr::memchr(b'\\', record.get(at..)?) {
        let i = at + i;
        match Some(&record[i..]).filter(|e| is_astral_escape(e)).and_then(|e| unicode_escape(&e[1..])) {
            Some((c, _)) => {
                let out = out.get_or_insert_with(|| Vec::with_capacity(record.len()));
                out.extend_from_slice(&record[copied..i]);
                out.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes());
                copied = i + 12;
                at = i + 12;
            }
            _ => at = i + 2,
        }
    }
    let mut out = out?;
    out.extend_from_slice(record.get(copied..).unwrap_or_default());
    Some(out)
}

/// A high surrogate whose pairs land past U+1FFFF.
fn is_wide_high(unit: u16) -> bool {
    (0xD840..=0xDBFF).contains(&unit)
}

/// The character a `\u` escape stands for (`b` starts at its `u`), a surrogate pair read whole
/// (`\ud83d\ude00`), and the bytes it took; `None` for anything else, a lone surrogate included.
pub(crate) fn unicode_escape(b: &[u8]) -> Option<(char, usize)> {
    let high = b.get(1..5).and_then(hex4)?;
    if let Some(c) = char::from_u32(high.into()) {
        return Some((c, 5));
    }
    let low = (b.get(5..7)? == b"\\u").then(|| b.get(7..11).and_then(hex4)).flatten()?;
    if !(0xD800..=0xDBFF).contains(&high) || !(0xDC00..=0xDFFF).contains(&low) {
        return None;
    }
    let n = 0x1_0000 + ((u32::from(high) - 0xD800) << 10) + (u32::from(low) - 0xDC00);
    char::from_u32(n).map(|c| (c, 11))
}

fn hex4(b: &[u8]) -> Option<u16> {
    b.iter().try_fold(0u16, |n, d| Some(n << 4 | char::from(*d).to_digit(16)? as u16))
}
