//! The floor rule of `docs/src/concepts/architecture.md`: a module imports only from its own floor and the
//! floors below. The floors are read from the document's `floors` block, so the test and the
//! document cannot disagree.

use std::collections::BTreeMap;
use std::path::Path;

/// Each module's floor, and whether its floor is a line of siblings (`# apps` after it) whose
/// modules may not import each other.
fn floors() -> BTreeMap<String, (usize, bool)> {
    let doc = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/src/concepts/architecture.md"))
        .unwrap();
    let block = doc.split("```floors\n").nth(1).expect("a ```floors block in docs/src/concepts/architecture.md");
    let block = block.split("```").next().unwrap();
    let mut out = BTreeMap::new();
    for (i, line) in block.lines().enumerate() {
        let (names, comment) = line.split_once('#').unwrap_or((line, ""));
        let siblings = comment.contains("apps");
        for name in names.split_whitespace() {
            out.insert(name.to_string(), (i, siblings));
        }
    }
    out
}

/// `code` with comments and the contents of string and char literals blanked out (newlines
/// kept), so that what is left is code: a `//` inside a string starts no comment, and a
/// `crate::` inside a string or comment is no import.
fn code_only(code: &str) -> String {
    let c: Vec<char> = code.chars().collect();
    let mut out = String::with_capacity(code.len());
    let blank = |ch: char| if ch == '\n' { '\n' } else { ' ' };
    let mut i = 0;
    while i < c.len() {
        let next = c.get(i + 1).copied();
        match c[i] {
            '/' if next == Some('/') => {
                while i < c.len() && c[i] != '\n' {
                    out.push(' ');
                    i += 1;
                }
            }
            '/' if next == Some('*') => {
                let mut depth = 0;
                while i < c.len() {
                    if c[i] == '/' && c.get(i + 1) == Some(&'*') {
                        depth += 1;
                        out.push_str("  ");
                        i += 2;
                    } else if c[i] == '*' && c.get(i + 1) == Some(&'/') {
                        depth -= 1;
                        out.push_str("  ");
                        i += 2;
                        if depth == 0 {
                            break;
                        }
                    } else {
                        out.push(blank(c[i]));
                        i += 1;
                    }
                }
            }
            'r' if (next == Some('"') || next == Some('#'))
                && (i == 0 || !(c[i - 1].is_alphanumeric() || c[i - 1] == '_')) =>
            {
                // A raw string r"..." or r#"..."#: ends at a quote followed by as many hashes.
                let mut j = i + 1;
                let mut hashes = 0;
                while c.get(j) == Some(&'#') {
                    hashes += 1;
                    j += 1;
                }
                if c.get(j) != Some(&'"') {
                    out.push(c[i]);
                    i += 1;
                    continue;
                }
                out.push('"');
                j += 1;
                while j < c.len() && !(c[j] == '"' && (1..=hashes).all(|k| c.get(j + k) == Some(&'#'))) {
                    out.push(blank(c[j]));
                    j += 1;
                }
                out.push('"');
                i = j + 1 + hashes;
            }
            '"' => {
                out.push('"');
                i += 1;
                while i < c.len() && c[i] != '"' {
                    if c[i] == '\\' {
                        out.push(' ');
                        i += 1;
                    }
                    if i < c.len() {
                        out.push(blank(c[i]));
                        i += 1;
                    }
                }
                out.push('"');
                i += 1;
            }
            // A char literal ('x', '\n', '\u{..}'); a lifetime ('a) has no closing quote.
            '\'' if next == Some('\\') || c.get(i + 2) == Some(&'\'') => {
                out.push(' ');
                i += 1;
                while i < c.len() && c[i] != '\'' {
                    if c[i] == '\\' {
                        out.push(' ');
                        i += 1;
                    }
                    out.push(' ');
                    i += 1;
                }
                out.push(' ');
                i += 1;
            }
            ch => {
                out.push(ch);
                i += 1;
            }
        }
    }
    out
}

/// Every top-level module a `crate::` path of `code` names, with its line: `crate::delta::x`
/// names `delta`; a grouped `crate::{delta::x, storage::{y, z}}` (over one line or many) names
/// `delta` and `storage`. Comments and literals are skipped.
fn crate_paths(code: &str) -> Vec<(usize, String)> {
    let code = code_only(code);
    let line_of = |at: usize| code[..at].matches('\n').count() + 1;
    let ident = |s: &str| s.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect::<String>();
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(i) = code[from..].find("crate::") {
        let at = from + i + "crate::".len();
        from = at;
        let rest = &code[at..];
        if let Some(group) = rest.strip_prefix('{') {
            // The names at the group's top level: each item's first segment.
            let (mut depth, mut item_start) = (0usize, true);
            for (k, ch) in group.char_indices() {
                match ch {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => item_start = true,
                    c if item_start && (c.is_ascii_alphanumeric() || c == '_') => {
                        item_start = false;
                        let name = ident(&group[k..]);
                        out.push((line_of(at + 1 + k), name));
                    }
                    _ => {}
                }
            }
        } else {
            let name = ident(rest);
            if !name.is_empty() {
                out.push((line_of(at), name));
            }
        }
    }
    out
}

fn sources(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            sources(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

#[test]
fn no_module_imports_from_a_floor_above_its_own() {
    let floors = floors();
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    let mut wrong = Vec::new();
    for file in &files {
        let rel = file.strip_prefix(&src).unwrap();
        let top = rel.components().next().unwrap().as_os_str().to_string_lossy();
        let module = top.trim_end_matches(".rs").to_string();
        let Some(&(own, siblings)) = floors.get(&module) else {
            wrong.push(format!("{}: module {module} is on no floor", rel.display()));
            continue;
        };
        let code = std::fs::read_to_string(file).unwrap();
        for (line, name) in crate_paths(&code) {
            match floors.get(&name) {
                Some(&(f, _)) if f == own && siblings && name != module => wrong.push(format!(
                    "{}:{line}: {module} imports crate::{name}, another app (apps never import each other)",
                    rel.display()
                )),
                Some(&(f, _)) if f <= own => {}
                Some(_) => {
                    wrong.push(format!("{}:{line}: {module} imports crate::{name}, a floor above", rel.display()))
                }
                // Items of lib.rs itself (`crate::Result`, `crate::ENGINE_INFO`).
                None if name.chars().next().is_some_and(|c| c.is_ascii_uppercase()) => {}
                None => wrong.push(format!("{}:{line}: crate::{name} is on no floor", rel.display())),
            }
        }
    }
    assert!(wrong.is_empty(), "floor rule broken:\n{}", wrong.join("\n"));
}

#[test]
fn the_rule_sees_code_and_not_comments() {
    let found = crate_paths("use crate::delta::x; // crate::cli\n/// [`crate::feed`]\nlet a = crate::storage::f();");
    assert_eq!(found, vec![(1, "delta".to_string()), (3, "storage".to_string())]);
}

#[test]
fn the_rule_sees_grouped_imports_and_code_after_strings() {
    let named = |code: &str| crate_paths(code).into_iter().map(|(l, n)| format!("{l}:{n}")).collect::<Vec<_>>();
    assert_eq!(named("use crate::{delta::x, storage::{a, b}, cli};"), ["1:delta", "1:storage", "1:cli"]);
    assert_eq!(
        named("use crate::{\n    feed::changes,\n    // crate::cli\n    serve::{x, y::z},\n};"),
        ["2:feed", "4:serve"]
    );
    // A `//` inside a string starts no comment: the path after it is code.
    assert_eq!(named(r#"let u = "s3://b"; crate::serve::x();"#), ["1:serve"]);
    assert_eq!(named(r##"let u = r#"a "// crate::cli"#; crate::feed::x();"##), ["1:feed"]);
    // Paths inside strings, chars and block comments are not imports; lifetimes are not chars.
    assert_eq!(
        named("let s = \"crate::cli\"; let c = '\"'; /* crate::serve */ fn f<'a>(x: &'a crate::ops::T) {}"),
        ["1:ops"]
    );
    assert_eq!(named("let c = '\\''; crate::ingest::x();"), ["1:ingest"]);
}

/// Test modules share helpers through `tests/support/` (and the comparator and the S3
/// emulator, which are shared by design), never by importing from each other.
#[test]
fn test_modules_import_helpers_only_from_support() {
    let shared = ["support", "compare", "s3_emulator"];
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    let mut wrong = Vec::new();
    for e in std::fs::read_dir(&dir).unwrap().flatten() {
        let path = e.path();
        if path.extension().is_none_or(|x| x != "rs") {
            continue;
        }
        let own = path.file_stem().unwrap().to_string_lossy().into_owned();
        let code = std::fs::read_to_string(&path).unwrap();
        for (line, name) in crate_paths(&code) {
            if name != own && !shared.contains(&name.as_str()) && own != "layout" {
                wrong.push(format!("tests/{own}.rs:{line}: imports crate::{name}"));
            }
        }
    }
    assert!(wrong.is_empty(), "test modules importing from each other:\n{}", wrong.join("\n"));
}

/// The Kafka listener's wire level imports nothing of the listener, and its frame reader only
/// the wire level (and the oversize drain, which stands on it): the floors its `mod.rs` names.
#[test]
fn the_kafka_wire_and_frame_codec_import_nothing_above_them() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/serve/kafka");
    let siblings = |file: &str| -> Vec<String> {
        let code = code_only(&std::fs::read_to_string(dir.join(file)).unwrap());
        let code = code.split("#[cfg(test)]").next().unwrap_or_default().to_string();
        let mut found: Vec<String> = code
            .match_indices("super::")
            .map(|(i, _)| code[i + 7..].chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect())
            .collect();
        found.sort();
        found.dedup();
        found
    };
    assert_eq!(siblings("wire.rs"), Vec::<String>::new());
    assert_eq!(siblings("oversize.rs"), vec!["wire"]);
    assert_eq!(siblings("frame.rs"), vec!["oversize", "wire"]);
}
