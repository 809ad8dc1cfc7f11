//! Keeping secrets out of what configuration errors and `config check` print.
//!
//! - A syntax error names the file, line and column and what is wrong, never the line itself
//!   (it may hold a secret).
//! - A type or value error names the key; the offending value is replaced by `<redacted>`.
//! - Credentials embedded in URLs and broker lists (`s3://key:secret@bucket`,
//!   `user:password@broker:9092`) are shown as `<redacted>@...`.

use std::path::Path;

/// The syntax error of a TOML file, as one line without the file's content.
pub fn syntax_error(path: &Path, text: &str) -> Option<String> {
    let e = toml::from_str::<toml::Value>(text).err()?;
    let at = e.span().map(|s| {
        let before = &text[..s.start.min(text.len())];
        let line = before.matches('\n').count() + 1;
        let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
        format!("line {line}, column {column}: ")
    });
    Some(format!("{}: {}{}", path.display(), at.unwrap_or_default(), e.message().trim()))
}

/// Whether a storage option or client property holds a secret (its value is then never
/// shown): passwords, secrets, tokens, keys (but not key file locations), JAAS configurations,
/// credentials.
pub fn is_secret_key(key: &str) -> bool {
    let k = key.to_ascii_lowercase();
    if k.ends_with(".location") || k.ends_with("_path") || k.ends_with("_file") {
        return false;
    }
    ["password", "secret", "token", "jaas", "credential", "private", "key"]
        .iter()
        .any(|w| k.split(['.', '_', '-']).any(|part| part.contains(w)))
}

/// `message` with every double-quoted value replaced by `<redacted>` (keys are in backticks).
pub fn without_values(message: &str) -> String {
    let mut out = String::with_capacity(message.len());
    let mut rest = message;
    while let Some(start) = rest.find('"') {
        out.push_str(&rest[..start]);
        let after = &rest[start + 1..];
        let mut end = None;
        let mut escaped = false;
        for (i, c) in after.char_indices() {
            match c {
                '\\' if !escaped => escaped = true,
                '"' if !escaped => {
                    end = Some(i);
                    break;
                }
                _ => escaped = false,
            }
        }
        out.push_str("\"<redacted>\"");
        match end {
            Some(i) => rest = &after[i + 1..],
            None => return out,
        }
    }
    out.push_str(rest);
    out
}

/// `value` with the user-info of each URL or `user:password@host` entry redacted.
pub fn without_userinfo(value: &str) -> String {
    value
        .split(',')
        .map(|part| {
            let (scheme, rest) = match part.find("://") {
                Some(i) => part.split_at(i + 3),
                None => ("", part),
            };
            let authority_end = rest.find('/').unwrap_or(rest.len());
            match rest[..authority_end].rfind('@') {
                Some(at) => format!("{scheme}<redacted>{}", &rest[at..]),
                None => part.to_string(),
            }
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// Applies [`without_userinfo`] to every string of a TOML tree.
pub fn redact_tree(v: &mut toml::Value) {
    match v {
        toml::Value::String(s) if s.contains('@') => *s = without_userinfo(s),
        toml::Value::Array(items) => items.iter_mut().for_each(redact_tree),
        toml::Value::Table(t) => t.iter_mut().for_each(|(_, v)| redact_tree(v)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_secret_keys_are_hidden() {
        for secret in [
            "sasl.password",
            "sasl.jaas.config",
            "ssl.key.password",
            "ssl.key.pem",
            "sasl.oauthbearer.client.secret",
            "aws_secret_access_key",
            "azure_storage_account_key",
            "google_service_account_key",
            "azure_storage_token",
        ] {
            assert!(is_secret_key(secret), "{secret}");
        }
        for shown in
            ["security.protocol", "sasl.mechanism", "sasl.username", "ssl.key.location", "aws_endpoint", "aws_region"]
        {
            assert!(!is_secret_key(shown), "{shown}");
        }
    }

    #[test]
    fn syntax_errors_do_not_quote_the_line() {
        let text = "[storage]\naws_secret_access_key = \"S3SECRET_abc\n";
        let e = syntax_error(Path::new("c.toml"), text).unwrap();
        assert!(!e.contains("S3SECRET"), "{e}");
        assert!(e.starts_with("c.toml: line 2, column") && !e.contains('\n'), "{e}");
        assert!(syntax_error(Path::new("c.toml"), "a = 1\n").is_none());
    }

    #[test]
    fn values_and_userinfo_are_redacted() {
        let m = r#"invalid type: string "sasl.password=hunter2", expected a map for key `p.kafka.properties`"#;
        let r = without_values(m);
        assert!(!r.contains("hunter2") && r.contains("`p.kafka.properties`"), "{r}");
        assert_eq!(without_userinfo("s3://AKIA:secret@bucket/x"), "s3://<redacted>@bucket/x");
        assert_eq!(without_userinfo("user:pw@b1:9092,b2:9092"), "<redacted>@b1:9092,b2:9092");
        assert_eq!(without_userinfo("s3://bucket/a@b"), "s3://bucket/a@b", "an @ in the path is not user-info");
    }
}
