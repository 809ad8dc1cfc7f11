//! `_last_checkpoint`: a hint at a recent checkpoint, never trusted blindly.
//!
//! A missing, unparsable, or checksum-failing file yields `None`, and the caller falls back to
//! listing the log. The checksum is the MD5 of the canonical form in digest §1.3.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The fields of `_last_checkpoint` that deltabus uses or writes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) struct LastCheckpoint {
    pub version: u64,
    pub size: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parts: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size_in_bytes: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub num_of_add_files: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checksum: Option<String>,
}

impl LastCheckpoint {
    /// Parses the hint; `None` when it cannot be used.
    #[cfg_attr(feature = "internal-api", visibility::make(pub))]
    pub(crate) fn parse(bytes: &[u8]) -> Option<LastCheckpoint> {
        let value: Value = serde_json::from_slice(bytes).ok()?;
        if let Some(expected) = value.get("checksum").and_then(Value::as_str) {
            if checksum(&value) != expected {
                return None;
            }
        }
        serde_json::from_value(value).ok()
    }

    /// Serialises with a checksum, as Spark writes it.
    pub(crate) fn to_json_with_checksum(&self) -> String {
        let mut plain = self.clone();
        plain.checksum = None;
        let mut value = serde_json::to_value(&plain).unwrap_or(Value::Null);
        let sum = checksum(&value);
        if let Value::Object(m) = &mut value {
            m.insert("checksum".into(), Value::String(sum));
        }
        value.to_string()
    }
}

fn urlenc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fn flatten(prefix: &str, v: &Value, out: &mut Vec<(String, String)>) {
    let join = |seg: String| {
        if prefix.is_empty() {
            seg
        } else {
            format!("{prefix}+{seg}")
        }
    };
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                flatten(&join(format!("\"{}\"", urlenc(k))), x, out);
            }
        }
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                flatten(&join(i.to_string()), x, out);
            }
        }
        Value::String(s) => out.push((prefix.to_string(), format!("\"{}\"", urlenc(s)))),
        other => out.push((prefix.to_string(), other.to_string())),
    }
}

/// The `_last_checkpoint` checksum of a JSON object (its own `checksum` key excluded).
pub(crate) fn checksum(v: &Value) -> String {
    let mut pairs = Vec::new();
    if let Value::Object(m) = v {
        for (k, x) in m.iter().filter(|(k, _)| k.as_str() != "checksum") {
            flatten(&format!("\"{}\"", urlenc(k)), x, &mut pairs);
        }
    }
    pairs.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
    let canonical = pairs.iter().map(|(p, v)| format!("{p}={v}")).collect::<Vec<_>>().join(",");
    format!("{:x}", <md5::Md5 as md5::Digest>::digest(canonical.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_checksum_vector() {
        let v: Value = serde_json::from_str(
            r#"{"k0":"'v 0'", "checksum": "adsaskfljadfkjadfkj", "k1":{"k2": 2, "k3": ["v3", [1, 2], {"k4": "v4", "k5": ["v5", "v6", "v7"]}]}}"#,
        )
        .unwrap();
        assert_eq!(checksum(&v), "6a92d155a59bf2eecbd4b4ec7fd1f875");
    }

    #[test]
    fn hint_validation() {
        assert_eq!(LastCheckpoint::parse(br#"{"version":10,"size":13}"#).map(|l| l.version), Some(10));
        assert!(LastCheckpoint::parse(b"{not json").is_none());
        assert!(LastCheckpoint::parse(br#"{"version":10,"size":13,"checksum":"00"}"#).is_none());
        let lc = LastCheckpoint {
            version: 3,
            size: 7,
            parts: None,
            size_in_bytes: Some(9),
            num_of_add_files: None,
            checksum: None,
        };
        let text = lc.to_json_with_checksum();
        assert_eq!(LastCheckpoint::parse(text.as_bytes()).map(|l| l.version), Some(3));
    }
}
