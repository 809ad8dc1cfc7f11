//! Reads the keys and their docs out of the commented defaults file (`config/default.toml`).
//!
//! The file's conventions, which [`keys`] relies on:
//! - a table header is `[a.b]`, or `# [a.b]` when nothing in it is set by default;
//! - a key is `key = value`, or `# key = value` when it is not set by default;
//! - a key's doc is the comment block right above it (after a blank line or another key) and
//!   the comment after its value, continued on the lines below whose `#` is indented past
//!   the start of the value;
//! - a comment block right above a table header documents the table.

use super::reference::ConfigKey;

/// The comment lines at the top of the file (before the first table), as Markdown text.
pub(super) fn preamble(text: &str) -> String {
    let mut out = Vec::new();
    for line in text.lines() {
        if line.trim_start().starts_with('[') {
            break;
        }
        out.push(line.strip_prefix('#').map(|l| l.strip_prefix(' ').unwrap_or(l)).unwrap_or(line));
    }
    // The first line is the file's title; indented lines are examples, shown as code.
    let mut body = String::new();
    let mut in_code = false;
    for line in out.iter().skip(1) {
        let code = line.starts_with("  ");
        if code != in_code {
            body.push_str(if code { "\n```text\n" } else { "```\n\n" });
            in_code = code;
        }
        body.push_str(&if code { line.trim_start().to_string() } else { super::reference::prose(line) });
        body.push('\n');
    }
    if in_code {
        body.push_str("```\n");
    }
    body.trim().to_string()
}

/// Every key of the file in order, with its table, value and doc.
pub(super) fn keys(text: &str) -> Vec<ConfigKey> {
    let mut out: Vec<ConfigKey> = Vec::new();
    let mut section = String::new();
    let mut pending: Vec<String> = Vec::new();
    // Whether the lines continuing a comment belong to the last key (value or doc).
    let mut continuing = false;
    let mut open_braces = 0i32;
    for raw in text.lines() {
        let line = raw.trim_end();
        if line.trim().is_empty() {
            pending.clear();
            continuing = false;
            continue;
        }
        let commented = line.trim_start().starts_with('#');
        let body = if commented { uncomment(line) } else { line };
        if continuing && commented && is_continuation(line) {
            if let Some(last) = out.last_mut() {
                let text = body.trim().trim_start_matches('#').trim();
                if open_braces > 0 {
                    let (value, comment) = split_comment(text);
                    open_braces += braces(value);
                    last.value = format!("{} {}", last.value, value.trim());
                    last.doc = join(&last.doc, comment.unwrap_or_default().as_str());
                } else {
                    last.doc = join(&last.doc, text);
                }
            }
            continue;
        }
        if let Some(name) = header(body) {
            section = name;
            pending.clear();
            continuing = false;
            continue;
        }
        if let Some((key, value, comment)) = key_line(body) {
            open_braces = braces(&value);
            let doc = join(&pending.join(" "), comment.unwrap_or_default().as_str());
            out.push(ConfigKey { section: section.clone(), key, value, set: !commented, doc });
            pending.clear();
            continuing = true;
            continue;
        }
        continuing = false;
        if commented {
            let text = body.trim();
            if !text.is_empty() {
                pending.push(text.to_string());
            }
        }
    }
    out
}

/// The text after a line's leading `#` and one space.
fn uncomment(line: &str) -> &str {
    let rest = line.trim_start().strip_prefix('#').unwrap_or(line);
    rest.strip_prefix(' ').unwrap_or(rest)
}

/// A comment indented far enough to continue the comment after a value (`#` then at least
/// eight spaces and a `#`, or a line starting with at least eight spaces then `#`).
fn is_continuation(line: &str) -> bool {
    let lead = line.len() - line.trim_start().len();
    if lead >= 8 {
        return true;
    }
    let rest = line.trim_start().trim_start_matches('#');
    rest.len() - rest.trim_start().len() >= 8
}

/// `[a.b]` with an optional comment after it: the table name.
fn header(body: &str) -> Option<String> {
    let body = body.trim();
    let rest = body.strip_prefix('[')?;
    let end = rest.find(']')?;
    let name = &rest[..end];
    if name.is_empty() || name.contains(' ') {
        return None;
    }
    let after = rest[end + 1..].trim();
    (after.is_empty() || after.starts_with('#')).then(|| name.to_string())
}

/// `key = value   # comment`: the key, the value as written and the comment.
fn key_line(body: &str) -> Option<(String, String, Option<String>)> {
    let (key, rest) = body.split_once(" = ")?;
    let key = key.trim();
    if key.is_empty() || !key.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_') {
        return None;
    }
    let (value, comment) = split_comment(rest);
    Some((key.to_string(), value.trim().to_string(), comment))
}

/// Splits `value   # comment` at the first `#` outside quotes that follows a space.
fn split_comment(rest: &str) -> (&str, Option<String>) {
    let mut quote: Option<char> = None;
    let mut prev = ' ';
    for (i, c) in rest.char_indices() {
        match (quote, c) {
            (None, '"' | '\'') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            (None, '#') if prev == ' ' => return (&rest[..i], Some(rest[i + 1..].trim().to_string())),
            _ => {}
        }
        prev = c;
    }
    (rest, None)
}

fn braces(text: &str) -> i32 {
    text.chars().map(|c| i32::from(c == '{') - i32::from(c == '}')).sum()
}

fn join(a: &str, b: &str) -> String {
    match (a.is_empty(), b.is_empty()) {
        (true, _) => b.to_string(),
        (_, true) => a.to_string(),
        _ => format!("{a} {b}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_take_the_block_above_and_the_comment_after_with_its_continuation() {
        let text = "# Title\n# more\n\n[a]\n# Above.\nx = 1   # after\n        # continued\ny = \"a # b\"\n\n\
                    # The b table.\n# [a.b]   # in b\n# z = { k = 1,\n#         m = 2 }   # zed\n";
        let got = keys(text);
        let brief: Vec<(&str, &str, &str, bool, &str)> =
            got.iter().map(|k| (k.section.as_str(), k.key.as_str(), k.value.as_str(), k.set, k.doc.as_str())).collect();
        assert_eq!(
            brief,
            [
                ("a", "x", "1", true, "Above. after continued"),
                ("a", "y", "\"a # b\"", true, ""),
                ("a.b", "z", "{ k = 1, m = 2 }", false, "zed"),
            ]
        );
        assert_eq!(preamble(text), "more");
    }
}
