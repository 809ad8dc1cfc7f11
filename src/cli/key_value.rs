//! `KEY=VALUE` flags (`--storage-option`, `--property`, `--kafka-property`), parsed by clap
//! through one type: a value without `=` or with an empty key is refused with the flag's name.

use std::str::FromStr;

/// One `KEY=VALUE`: the key trimmed, the value as given (secrets may end in spaces).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyValue {
    pub key: String,
    pub value: String,
}

impl FromStr for KeyValue {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.split_once('=') {
            Some((k, v)) if !k.trim().is_empty() => Ok(KeyValue { key: k.trim().to_string(), value: v.to_string() }),
            _ => Err("expected KEY=VALUE".into()),
        }
    }
}

/// The pairs as a map (a later key wins).
pub(super) fn to_map<M: FromIterator<(String, String)>>(pairs: &[KeyValue]) -> M {
    pairs.iter().map(|kv| (kv.key.clone(), kv.value.clone())).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_parse_at_the_first_equals_sign() {
        let kv: KeyValue = " sasl.jaas.config =a=b ".parse().unwrap();
        assert_eq!((kv.key.as_str(), kv.value.as_str()), ("sasl.jaas.config", "a=b "));
        assert!("novalue".parse::<KeyValue>().is_err());
        assert!("=x".parse::<KeyValue>().is_err());
        let m: std::collections::BTreeMap<String, String> = to_map(&["a=1".parse().unwrap(), "a=2".parse().unwrap()]);
        assert_eq!(m["a"], "2");
    }
}
