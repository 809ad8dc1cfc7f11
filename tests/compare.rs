//! Compares what a reader printed with a reference answer (`tests/data/conformance/expected`
//! or kernel-oracle's output), allowing only what legitimately differs between writers.
//!
//! Rows (JSON lines) compare as multisets after normalising each value:
//! - object members whose value is null are dropped (writers differ in printing nulls);
//! - integers compare exactly; other numbers at 12 significant digits; a string that spells
//!   a number equals that number (decimals are printed either way);
//! - a string in any ISO-8601 timestamp form (`T` or space, any fraction, `Z` or an offset)
//!   is that instant in UTC; dates compare as written;
//! - a map may be a JSON object or a list of `{"key", "value"}` entries;
//! - a variant printed as its `metadata` and `value` binaries (hex, as the reference reader
//!   prints it) equals the JSON it holds (as deltabus prints it);
//! - `drop` names columns to ignore (the change feed's `_commit_timestamp`, which comes from
//!   file modification times unless in-commit timestamps are on).
//!
//! Files (`{"version": N, "files": [{"path", "size", "dv"}]}`) compare by path, fully
//! percent-decoded and relative to the table root (an absolute path matches by suffix), with
//! the deletion-vector flag and, where both give it, the size.

use std::collections::BTreeMap;
use std::sync::LazyLock;

use chrono::{Duration, NaiveDate, NaiveTime};
use percent_encoding::percent_decode_str;
use regex::Regex;
use serde_json::{Map, Value};

static TIMESTAMP: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2}):(\d{2})(\.\d+)?(Z|[+-]\d{2}:?\d{2})?$").unwrap()
});
static INTEGER: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"^[+-]?\d+$").unwrap());
static NUMBER: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$").unwrap());

fn float(x: f64) -> String {
    if x.is_nan() {
        return "n:nan".into();
    }
    if x.is_infinite() {
        return format!("n:{}inf", if x < 0.0 { "-" } else { "" });
    }
    if x == x.trunc() && x.abs() < 9_007_199_254_740_992.0 {
        return format!("n:{}", x as i64);
    }
    format!("n:{x:.11e}")
}

fn integer(digits: &str) -> String {
    let (negative, digits) = match digits.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, digits.trim_start_matches('+')),
    };
    let digits = digits.trim_start_matches('0');
    match (digits.is_empty(), negative) {
        (true, _) => "n:0".into(),
        (false, true) => format!("n:-{digits}"),
        (false, false) => format!("n:{digits}"),
    }
}

fn timestamp(c: &regex::Captures) -> Option<String> {
    let num = |i: usize| c.get(i).and_then(|m| m.as_str().parse::<u32>().ok());
    let date = NaiveDate::from_ymd_opt(num(1)? as i32, num(2)?, num(3)?)?;
    let fraction = c.get(7).map_or("", |m| &m.as_str()[1..]);
    let micros: u32 = format!("{:0<6}", fraction.chars().take(6).collect::<String>()).parse().ok()?;
    let time = NaiveTime::from_hms_micro_opt(num(4)?, num(5)?, num(6)?, micros)?;
    let mut at = date.and_time(time);
    if let Some(zone) = c.get(8).map(|m| m.as_str()).filter(|z| *z != "Z") {
        let digits = zone[1..].replace(':', "");
        let minutes = digits[..2].parse::<i64>().ok()? * 60 + digits[2..].parse::<i64>().ok()?;
        let offset = Duration::minutes(if zone.starts_with('-') { -minutes } else { minutes });
        at -= offset;
    }
    Some(format!("ts:{}", at.format("%Y-%m-%dT%H:%M:%S%.6f")))
}

fn text(s: &str) -> Value {
    if let Some(c) = TIMESTAMP.captures(s) {
        if let Some(t) = timestamp(&c) {
            return Value::String(t);
        }
    }
    if INTEGER.is_match(s) {
        return Value::String(integer(s));
    }
    if NUMBER.is_match(s) {
        if let Ok(x) = s.parse::<f64>() {
            return Value::String(float(x));
        }
    }
    Value::String(s.to_string())
}

fn is_entry_list(items: &[Value]) -> bool {
    !items.is_empty()
        && items.iter().all(|e| {
            e.as_object().is_some_and(|o| o.contains_key("key") && o.keys().all(|k| k == "key" || k == "value"))
        })
}

/// The canonical form of one value; `Value::Null` for nulls, which objects then drop.
pub fn normalize(v: &Value) -> Value {
    match v {
        Value::Null => Value::Null,
        Value::Bool(_) => v.clone(),
        Value::Number(n) => Value::String(match (n.as_i64(), n.as_u64(), n.as_f64()) {
            (Some(i), _, _) => format!("n:{i}"),
            (None, Some(u), _) => format!("n:{u}"),
            (_, _, Some(x)) => float(x),
            _ => integer(&n.to_string()),
        }),
        Value::String(s) => text(s),
        Value::Array(items) if is_entry_list(items) => {
            let mut map = BTreeMap::new();
            for entry in items {
                let key = match normalize(&entry["key"]) {
                    Value::String(s) => s,
                    other => other.to_string(),
                };
                map.insert(key, normalize(entry.get("value").unwrap_or(&Value::Null)));
            }
            object(map)
        }
        Value::Array(items) => Value::Array(items.iter().map(normalize).collect()),
        Value::Object(o)
            if o.len() == 2 && o.get("metadata").is_some_and(Value::is_string) && o.contains_key("value") =>
        {
            // The reference prints a variant as its two binaries; readers print its JSON.
            match variant_binaries(o) {
                Some(json) => normalize(&json),
                None => object(o.iter().map(|(k, x)| (text_key(k), normalize(x))).collect()),
            }
        }
        Value::Object(o) => {
            // An object read as a map has string keys; normalise them like entry keys.
            object(o.iter().map(|(k, x)| (text_key(k), normalize(x))).collect())
        }
    }
}

/// The JSON of a variant printed as hex `metadata` and `value` binaries (`None`: it is not one).
fn variant_binaries(o: &serde_json::Map<String, Value>) -> Option<Value> {
    let metadata = hex::decode(o["metadata"].as_str()?).ok()?;
    let value = hex::decode(o["value"].as_str()?).ok()?;
    let variant = parquet_variant::Variant::try_new(&metadata, &value).ok()?;
    Some(deltabus::delta::arrow_value::variant_json(&variant))
}

fn text_key(k: &str) -> String {
    match text(k) {
        Value::String(s) => s,
        other => other.to_string(),
    }
}

fn object(members: BTreeMap<String, Value>) -> Value {
    Value::Object(members.into_iter().filter(|(_, x)| !x.is_null()).collect::<Map<String, Value>>())
}

fn canonical_lines(jsonl: &[u8], drop: &[&str], what: &str) -> Result<BTreeMap<String, i64>, String> {
    let mut rows = BTreeMap::new();
    for (i, line) in String::from_utf8_lossy(jsonl).lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let mut value: Value =
            serde_json::from_str(line).map_err(|e| format!("{what} line {}: not JSON: {e}", i + 1))?;
        let Some(members) = value.as_object_mut() else {
            return Err(format!("{what} line {}: not a JSON object", i + 1));
        };
        for column in drop {
            members.remove(*column);
        }
        *rows.entry(normalize(&value).to_string()).or_insert(0) += 1;
    }
    Ok(rows)
}

/// Rows as multisets; `Ok` names how many agreed, `Err` the first differences.
pub fn rows(expected: &[u8], actual: &[u8], drop: &[&str]) -> Result<String, String> {
    let want = canonical_lines(expected, drop, "expected")?;
    let got = canonical_lines(actual, drop, "actual")?;
    if want == got {
        return Ok(format!("same: {} rows", want.values().sum::<i64>()));
    }
    let diff = |a: &BTreeMap<String, i64>, b: &BTreeMap<String, i64>| -> Vec<String> {
        a.iter()
            .filter(|(k, n)| b.get(*k).copied().unwrap_or(0) < **n)
            .map(|(k, _)| k.chars().take(300).collect())
            .collect()
    };
    let (missing, extra) = (diff(&want, &got), diff(&got, &want));
    let mut report = format!(
        "different: expected {} rows, got {}; {} missing, {} unexpected",
        want.values().sum::<i64>(),
        got.values().sum::<i64>(),
        missing.len(),
        extra.len()
    );
    for r in missing.iter().take(5) {
        report += &format!("\n  missing    {r}");
    }
    for r in extra.iter().take(5) {
        report += &format!("\n  unexpected {r}");
    }
    Err(report)
}

fn file_key(path: &str) -> String {
    let mut p = path.to_string();
    loop {
        let decoded = percent_decode_str(&p).decode_utf8_lossy().into_owned();
        if decoded == p {
            break;
        }
        p = decoded;
    }
    match p.split_once("://") {
        Some((_, rest)) => rest.to_string(),
        None => p,
    }
}

/// File listings; `Ok` names the version and count, `Err` the problems.
pub fn files(expected: &[u8], actual: &[u8]) -> Result<String, String> {
    let parse = |bytes: &[u8], what: &str| -> Result<Value, String> {
        serde_json::from_slice(bytes).map_err(|e| format!("{what} listing is not JSON: {e}"))
    };
    let (want, got) = (parse(expected, "expected")?, parse(actual, "actual")?);
    let mut problems = Vec::new();
    if want["version"] != got["version"] {
        problems.push(format!("version: expected {}, got {}", want["version"], got["version"]));
    }
    let list = |v: &Value| v["files"].as_array().cloned().unwrap_or_default();
    let want_files: BTreeMap<String, Value> =
        list(&want).into_iter().map(|f| (file_key(f["path"].as_str().unwrap_or("")), f)).collect();
    let mut got_files = BTreeMap::new();
    for f in list(&got) {
        let key = file_key(f["path"].as_str().unwrap_or(""));
        let matched = want_files
            .keys()
            .find(|k| **k == key || key.ends_with(&format!("/{}", k.trim_start_matches('/'))))
            .cloned()
            .unwrap_or(key);
        got_files.insert(matched, f);
    }
    for k in want_files.keys().filter(|k| !got_files.contains_key(*k)) {
        problems.push(format!("missing file {k}"));
    }
    for k in got_files.keys().filter(|k| !want_files.contains_key(*k)) {
        problems.push(format!("unexpected file {k}"));
    }
    for (k, w) in &want_files {
        let Some(g) = got_files.get(k) else { continue };
        let dv = |f: &Value| f["dv"].as_bool().unwrap_or(false);
        if dv(w) != dv(g) {
            problems.push(format!("{k}: dv expected {}, got {}", dv(w), dv(g)));
        }
        if let (Some(ws), Some(gs)) = (w["size"].as_i64(), g["size"].as_i64()) {
            if ws != gs {
                problems.push(format!("{k}: size expected {ws}, got {gs}"));
            }
        }
    }
    if problems.is_empty() {
        return Ok(format!("same: version {}, {} files", want["version"], want_files.len()));
    }
    Err(format!(
        "different: {} problems\n  {}",
        problems.len(),
        problems.iter().take(10).cloned().collect::<Vec<_>>().join("\n  ")
    ))
}

#[test]
fn normalisation_accepts_spellings_and_refuses_differences() {
    let same = |a: &str, b: &str| rows(a.as_bytes(), b.as_bytes(), &[]).is_ok();
    assert!(same(r#"{"t":"2021-01-01T10:00:00Z","x":null}"#, r#"{"t":"2021-01-01 11:00:00.000+01:00"}"#));
    assert!(same(r#"{"d":"1.50"}"#, r#"{"d":1.5}"#));
    assert!(same(r#"{"m":{"a":1}}"#, r#"{"m":[{"key":"a","value":1}]}"#));
    assert!(same("{\"i\":1}\n{\"i\":2}\n", "{\"i\":2}\n{\"i\":1}\n"));
    assert!(!same(r#"{"i":1}"#, r#"{"i":2}"#));
    assert!(!same("{\"i\":1}\n{\"i\":1}\n", "{\"i\":1}\n"));
    assert!(!same(r#"{"t":"2021-01-01T10:00:00Z"}"#, r#"{"t":"2021-01-01T10:00:00.000001Z"}"#));
    assert!(!same(r#"{"big":12345678901234567890}"#, r#"{"big":12345678901234567891}"#));
    assert!(rows(b"{\"v\":1,\"_commit_timestamp\":1}", b"{\"v\":1,\"_commit_timestamp\":2}", &["_commit_timestamp"])
        .is_ok());
    let listing =
        |path: &str, dv: bool| format!(r#"{{"version":3,"files":[{{"path":"{path}","size":10,"dv":{dv}}}]}}"#);
    assert!(files(listing("a=b%253Ac/f.parquet", false).as_bytes(), listing("/t/a=b:c/f.parquet", false).as_bytes())
        .is_ok());
    assert!(files(listing("f.parquet", false).as_bytes(), listing("f.parquet", true).as_bytes()).is_err());
    assert!(files(listing("f.parquet", false).as_bytes(), listing("g.parquet", false).as_bytes()).is_err());
}
