//! The configuration's layers before they are typed: the file's secrets from the environment
//! or from mounted files, and `DELTABUS__...` overrides as a tree.
//!
//! - **Interpolation.** In the file's string values, `${NAME}` is the environment variable
//!   `NAME` and `${file:PATH}` the content of the file at `PATH` (one trailing newline
//!   removed: Docker and Kubernetes secrets). `$${` is a literal `${`. A variable that is not
//!   set or a file that cannot be read is an error naming the key, never a value.
//! - **Overrides.** `DELTABUS__A__B__C=value` sets `a.b.c`. Each level matches an existing key
//!   of the file or the defaults regardless of case (so `[pipelines.Orders]` is
//!   `DELTABUS__PIPELINES__ORDERS__...`); a new key is taken in lower case (librdkafka and
//!   object_store names are lower case). A level may contain dots
//!   (`...__PROPERTIES__SASL.PASSWORD` is the key `sasl.password`). Values stay text; the
//!   typed configuration reads numbers and booleans from them, so `0123` stays `0123`.

use toml::{Table, Value};

use crate::error::{Error, Result};

/// Replaces `${NAME}` and `${file:PATH}` in every string of `value`; `key` names the place.
///
/// # Errors
/// [`Error::InvalidArgument`] naming the key and the variable or file.
pub(super) fn interpolate(value: &mut Value, key: &str, env: &dyn Fn(&str) -> Option<String>) -> Result<()> {
    match value {
        Value::String(s) if s.contains("${") => *s = interpolate_str(s, key, env)?,
        Value::Table(t) => {
            for (k, v) in t.iter_mut() {
                interpolate(v, &join(key, k), env)?;
            }
        }
        Value::Array(a) => {
            for (i, v) in a.iter_mut().enumerate() {
                interpolate(v, &format!("{key}[{i}]"), env)?;
            }
        }
        _ => {}
    }
    Ok(())
}

fn join(key: &str, k: &str) -> String {
    if key.is_empty() {
        k.to_string()
    } else {
        format!("{key}.{k}")
    }
}

fn interpolate_str(s: &str, key: &str, env: &dyn Fn(&str) -> Option<String>) -> Result<String> {
    let bad = |why: String| Error::InvalidArgument(format!("configuration key {key}: {why}"));
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find('$') {
        out.push_str(&rest[..i]);
        let after = &rest[i..];
        if let Some(r) = after.strip_prefix("$${") {
            out.push_str("${");
            rest = r;
        } else if let Some(r) = after.strip_prefix("${") {
            let end = r.find('}').ok_or_else(|| bad("an unclosed ${".into()))?;
            let name = &r[..end];
            if let Some(path) = name.strip_prefix("file:") {
                let text = std::fs::read_to_string(path.trim())
                    .map_err(|e| bad(format!("cannot read the secret file {}: {e}", path.trim())))?;
                out.push_str(text.strip_suffix('\n').map_or(&text, |t| t.strip_suffix('\r').unwrap_or(t)));
            } else {
                let valid = !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
                if !valid {
                    return Err(bad(format!("${{{name}}} is not a variable name")));
                }
                out.push_str(&env(name).ok_or_else(|| bad(format!("environment variable {name} is not set")))?);
            }
            rest = &r[end + 1..];
        } else {
            out.push('$');
            rest = &after[1..];
        }
    }
    out.push_str(rest);
    Ok(out)
}

/// The tree of `DELTABUS__...` overrides, its keys spelled as in `existing` where they
/// match regardless of case.
///
/// # Errors
/// [`Error::InvalidArgument`] for an empty level or a key that is both a value and a section.
pub(super) fn env_overrides(vars: &[(String, String)], existing: &Value) -> Result<Value> {
    let mut tree = Table::new();
    let mut sorted: Vec<&(String, String)> = vars.iter().filter(|(k, _)| k.starts_with("DELTABUS__")).collect();
    sorted.sort();
    for (name, value) in sorted {
        let levels: Vec<&str> = name["DELTABUS__".len()..].split("__").collect();
        if levels.iter().any(|l| l.is_empty()) {
            return Err(Error::InvalidArgument(format!("environment variable {name}: an empty level")));
        }
        let mut at = &mut tree;
        let mut known = Some(existing);
        for (i, level) in levels.iter().enumerate() {
            let spelled = known
                .and_then(Value::as_table)
                .and_then(|t| t.keys().find(|k| k.eq_ignore_ascii_case(level)).cloned())
                .unwrap_or_else(|| level.to_ascii_lowercase());
            known = known.and_then(|v| v.get(&spelled));
            if i + 1 == levels.len() {
                at.insert(spelled, Value::String(value.clone()));
            } else {
                let next = at.entry(spelled).or_insert_with(|| Value::Table(Table::new()));
                at = next.as_table_mut().ok_or_else(|| {
                    Error::InvalidArgument(format!("environment variable {name}: a value where a section is"))
                })?;
            }
        }
    }
    Ok(Value::Table(tree))
}

/// Copies the `[kafka]` defaults (brokers, properties) into every pipeline with a Kafka source
/// and `[schema_registry]` into every pipeline, and every Avro or Protobuf topic of
/// `[server.kafka]`, without its own; a pipeline's own keys win.
pub(super) fn apply_defaults(tree: &mut Value) {
    let kafka = tree.get("kafka").cloned();
    let registry = tree.get("schema_registry").cloned();
    if let Some(r) = &registry {
        let topics = tree
            .get_mut("server")
            .and_then(|s| s.get_mut("kafka"))
            .and_then(|k| k.get_mut("topics"))
            .and_then(Value::as_table_mut);
        for (_, t) in topics.into_iter().flat_map(|t| t.iter_mut()) {
            let Some(t) = t.as_table_mut() else { continue };
            if matches!(t.get("format").and_then(Value::as_str), Some("avro" | "protobuf")) {
                t.entry("schema_registry").or_insert_with(|| r.clone());
            }
        }
    }
    let Some(pipelines) = tree.get_mut("pipelines").and_then(Value::as_table_mut) else { return };
    for (_, p) in pipelines.iter_mut() {
        let Some(p) = p.as_table_mut() else { continue };
        if p.contains_key("delta") {
            continue;
        }
        if let Some(Value::Table(defaults)) = &kafka {
            let mut own = Value::Table(defaults.clone());
            if let Some(mine) = p.remove("kafka") {
                merge(&mut own, mine);
            }
            p.insert("kafka".into(), own);
        }
        if let Some(r) = &registry {
            p.entry("schema_registry").or_insert_with(|| r.clone());
        }
    }
}

/// Merges `over` into `base` (tables recursively; anything else replaced).
pub(super) fn merge(base: &mut Value, over: Value) {
    match (base, over) {
        (Value::Table(b), Value::Table(o)) => {
            for (k, v) in o {
                match b.get_mut(&k) {
                    Some(existing) => merge(existing, v),
                    None => {
                        b.insert(k, v);
                    }
                }
            }
        }
        (b, o) => *b = o,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(name: &str) -> Option<String> {
        match name {
            "SASL_PASSWORD" => Some("s3cr3t".into()),
            _ => None,
        }
    }

    #[test]
    fn variables_and_files_are_interpolated() {
        let dir = tempfile::tempdir().unwrap();
        let secret = dir.path().join("key");
        std::fs::write(&secret, "from-a-file\n").unwrap();
        let mut v: Value = toml::from_str(&format!(
            "[a]\np = \"${{SASL_PASSWORD}}\"\nf = \"${{file:{}}}\"\nlit = \"$${{x}} costs $5\"\n",
            secret.display()
        ))
        .unwrap();
        interpolate(&mut v, "", &env).unwrap();
        assert_eq!(v["a"]["p"].as_str(), Some("s3cr3t"));
        assert_eq!(v["a"]["f"].as_str(), Some("from-a-file"));
        assert_eq!(v["a"]["lit"].as_str(), Some("${x} costs $5"));
        let mut missing: Value = toml::from_str("[a.b]\nk = \"${NOPE}\"\n").unwrap();
        let e = interpolate(&mut missing, "", &env).unwrap_err().to_string();
        assert!(e.contains("a.b.k") && e.contains("NOPE is not set"), "{e}");
    }

    #[test]
    fn kafka_defaults_reach_every_kafka_pipeline() {
        let mut tree: Value = toml::from_str(
            "[kafka]\nbrokers = \"b:9092\"\nproperties = { \"security.protocol\" = \"SSL\", \"x\" = \"1\" }\n\
             [pipelines.a.kafka]\ntopic = \"t\"\nproperties = { \"x\" = \"2\" }\n\
             [pipelines.b.delta]\nsource = \"/s\"\n",
        )
        .unwrap();
        apply_defaults(&mut tree);
        let a = &tree["pipelines"]["a"]["kafka"];
        assert_eq!(a["brokers"].as_str(), Some("b:9092"));
        assert_eq!(a["properties"]["security.protocol"].as_str(), Some("SSL"));
        assert_eq!(a["properties"]["x"].as_str(), Some("2"), "the pipeline's own key wins");
        assert!(tree["pipelines"]["b"].get("kafka").is_none(), "Delta sources take no Kafka defaults");
    }

    #[test]
    fn overrides_follow_the_existing_spelling_and_keep_text() {
        let existing: Value = toml::from_str("[pipelines.Orders]\ntable = \"t\"\n").unwrap();
        let vars = vec![
            ("DELTABUS__PIPELINES__ORDERS__TABLE".to_string(), "0123".to_string()),
            ("DELTABUS__PIPELINES__ORDERS__KAFKA__PROPERTIES__SASL.PASSWORD".to_string(), "p".to_string()),
            ("OTHER".to_string(), "x".to_string()),
        ];
        let tree = env_overrides(&vars, &existing).unwrap();
        assert_eq!(tree["pipelines"]["Orders"]["table"].as_str(), Some("0123"));
        assert_eq!(tree["pipelines"]["Orders"]["kafka"]["properties"]["sasl.password"].as_str(), Some("p"));
        let mut merged = existing.clone();
        merge(&mut merged, tree);
        assert_eq!(merged["pipelines"]["Orders"]["table"].as_str(), Some("0123"));
        assert!(env_overrides(&[("DELTABUS__A____B".into(), "1".into())], &existing).is_err());
    }
}
