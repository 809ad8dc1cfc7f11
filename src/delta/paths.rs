//! Path containment: every data, change-data and DV path taken from a log must resolve inside
//! the table root.
//!
//! Log paths are RFC 2396 URIs relative to the root (or absolute). They are percent-decoded
//! exactly once, then normalised segment by segment; `..` that climbs above the root, empty
//! names, and absolute URIs are refused unless the caller opted in to absolute paths that fall
//! under the same root.

use percent_encoding::percent_decode_str;

use crate::error::{Error, Result};

/// Resolves a log path to a path relative to the table root (segments joined with `/`,
/// percent-decoded).
///
/// `root_url` is the table root as a URL string without a trailing slash (for example
/// `file:///data/t` or `s3://bucket/t`). Absolute paths are accepted only when
/// `allow_absolute` is set and they lie under `root_url`.
///
/// # Errors
/// [`Error::PathRefused`] for anything that does not stay inside the root.
pub(crate) fn resolve_in_table(raw: &str, root_url: &str, allow_absolute: bool) -> Result<String> {
    let refuse = |reason: &str| Error::PathRefused { path: raw.to_string(), reason: reason.to_string() };
    if raw.is_empty() {
        return Err(refuse("empty path"));
    }
    let has_scheme = raw.split_once(':').is_some_and(|(s, _)| {
        !s.is_empty() && !s.contains('/') && s.chars().all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
    });
    let relative = if has_scheme || raw.starts_with('/') {
        if !allow_absolute {
            return Err(refuse(
                "absolute paths are not allowed (enable allow_absolute_paths to accept paths inside the table root)",
            ));
        }
        let decoded = decode(raw).ok_or_else(|| refuse("invalid percent-encoding"))?;
        let root = decode(root_url).ok_or_else(|| refuse("invalid table root"))?;
        let normalise = |s: &str| s.replacen("file:///", "file:/", 1);
        let (decoded, root) = (normalise(&decoded), normalise(&root));
        let rest = decoded
            .strip_prefix(root.trim_end_matches('/'))
            .filter(|r| r.starts_with('/'))
            .ok_or_else(|| refuse("absolute path outside the table root"))?;
        rest.trim_start_matches('/').to_string()
    } else {
        decode(raw).ok_or_else(|| refuse("invalid percent-encoding"))?
    };
    let mut parts: Vec<&str> = Vec::new();
    for seg in relative.split('/') {
        match seg {
            "" | "." => {}
            ".." => {
                if parts.pop().is_none() {
                    return Err(refuse("path climbs above the table root"));
                }
            }
            s if s.contains('\0') || s.contains('\\') => return Err(refuse("path contains a NUL or backslash")),
            s => parts.push(s),
        }
    }
    if parts.is_empty() {
        return Err(refuse("path names the table root itself"));
    }
    if parts[0] == "_delta_log" {
        return Err(refuse("data paths must not point into _delta_log"));
    }
    Ok(parts.join("/"))
}

fn decode(s: &str) -> Option<String> {
    percent_decode_str(s).decode_utf8().ok().map(|c| c.into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_paths_are_decoded_once() {
        assert_eq!(resolve_in_table("p=a%253Ab/x.parquet", "file:///t", false).unwrap(), "p=a%3Ab/x.parquet");
        assert_eq!(resolve_in_table("a/./b/../c.parquet", "file:///t", false).unwrap(), "a/c.parquet");
        assert_eq!(resolve_in_table("special%20p%40%23h", "file:///t", false).unwrap(), "special p@#h");
    }

    #[test]
    fn hostile_paths_are_refused() {
        for p in [
            "../secret",
            "a/../../etc/passwd",
            "%2E%2E/x",
            "/etc/passwd",
            "file:///etc/passwd",
            "s3://other/x",
            "",
            "_delta_log/00.json",
            "a\\..\\b",
        ] {
            assert!(resolve_in_table(p, "file:///t", false).is_err(), "{p} accepted");
        }
    }

    #[test]
    fn absolute_inside_root_only_with_opt_in() {
        assert!(resolve_in_table("file:/t/a.parquet", "file:///t", false).is_err());
        assert_eq!(resolve_in_table("file:/t/a.parquet", "file:///t", true).unwrap(), "a.parquet");
        assert_eq!(resolve_in_table("s3://b/t/x/y.parquet", "s3://b/t", true).unwrap(), "x/y.parquet");
        assert!(resolve_in_table("s3://b/t2/y.parquet", "s3://b/t", true).is_err());
        assert!(resolve_in_table("file:/t/../u/a", "file:///t", true).is_err());
    }
}
