//! The docs site (`docs/`, mdBook) and the README hold together: every relative link reaches
//! a file and, with a `#fragment`, a heading in it; every page is in the table of contents;
//! every configuration example loads through the configuration loader; and the site builds.
//! (The generated reference pages are checked against the code by the library's unit tests.)

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The README and every page of the site.
fn pages() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "md") {
                out.push(path);
            }
        }
    }
    let mut out = vec![root().join("README.md")];
    walk(&root().join("docs/src"), &mut out);
    out.sort();
    out
}

/// Markdown text outside fenced code blocks and inline code.
fn prose(text: &str) -> String {
    let mut out = String::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if !fenced {
            let mut code = false;
            out.extend(line.chars().filter(|&c| {
                if c == '`' {
                    code = !code;
                }
                !code && c != '`'
            }));
            out.push('\n');
        }
    }
    out
}

/// The anchors of a page's headings, as mdBook and GitHub make them.
fn anchors(text: &str) -> BTreeSet<String> {
    let mut fenced = false;
    let mut out = BTreeSet::new();
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        } else if !fenced && line.starts_with('#') {
            let title = line.trim_start_matches('#').trim();
            let title = title.replace('`', "");
            out.insert(
                title
                    .to_lowercase()
                    .chars()
                    .filter_map(|c| match c {
                        ' ' => Some('-'),
                        c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
                        _ => None,
                    })
                    .collect(),
            );
        }
    }
    out
}

/// The targets of a page's Markdown links, `[text](target)`, in its prose.
fn links(text: &str) -> Vec<String> {
    let prose = prose(text);
    let mut out = Vec::new();
    let mut rest = prose.as_str();
    while let Some(at) = rest.find("](") {
        rest = &rest[at + 2..];
        if let Some(end) = rest.find(')') {
            out.push(rest[..end].to_string());
        }
    }
    out
}

#[test]
fn every_link_reaches_a_file_and_a_heading() {
    let mut broken = Vec::new();
    for page in pages() {
        let text = std::fs::read_to_string(&page).unwrap();
        for target in links(&text) {
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            let (path, fragment) = target.split_once('#').unwrap_or((&target, ""));
            let file = if path.is_empty() { page.clone() } else { page.parent().unwrap().join(path) };
            let what = format!("{}: ({target})", page.strip_prefix(root()).unwrap().display());
            if !file.exists() {
                broken.push(format!("{what}: no such file"));
            } else if !fragment.is_empty() && file.extension().is_some_and(|e| e == "md") {
                let heads = anchors(&std::fs::read_to_string(&file).unwrap());
                if !heads.contains(fragment) {
                    broken.push(format!("{what}: no heading #{fragment}"));
                }
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn every_page_is_in_the_table_of_contents() {
    let summary = std::fs::read_to_string(root().join("docs/src/SUMMARY.md")).unwrap();
    let listed: BTreeSet<String> = links(&summary).into_iter().collect();
    let src = root().join("docs/src");
    let missing: Vec<String> = pages()
        .iter()
        .filter_map(|p| p.strip_prefix(&src).ok())
        .map(|p| p.display().to_string())
        .filter(|p| p != "SUMMARY.md" && !listed.contains(p))
        .collect();
    assert!(missing.is_empty(), "pages missing from SUMMARY.md: {missing:?}");
}

/// The fenced blocks of `lang` in every page, with the page they are on.
fn blocks(lang: &str) -> Vec<(PathBuf, String)> {
    let mut out = Vec::new();
    for page in pages() {
        let text = std::fs::read_to_string(&page).unwrap();
        let found = crate::support::fenced_blocks(&text).into_iter().filter(|(l, _)| l == lang);
        out.extend(found.map(|(_, block)| (page.clone(), block)));
    }
    out
}

/// Every configuration example in the docs loads (each key known, each value of its type),
/// and a complete pipeline (one naming its brokers) resolves as `deltabus run` would.
#[test]
fn every_configuration_example_loads() {
    let dir = tempfile::tempdir().unwrap();
    let mut failed = Vec::new();
    let examples = blocks("toml");
    assert!(examples.len() >= 8, "{} examples", examples.len());
    for (i, (page, text)) in examples.iter().enumerate() {
        let file = dir.path().join(format!("example-{i}.toml"));
        std::fs::write(&file, without_secrets(text)).unwrap();
        let loaded = deltabus::config::Config::load_with_env(Some(&file), Vec::new()).and_then(|c| {
            if text.contains("brokers") {
                c.resolved_pipelines()?;
            }
            Ok(c)
        });
        if let Err(e) = loaded {
            let page = page.strip_prefix(root()).unwrap().display().to_string();
            failed.push(format!("{page}:\n{text}-> {e}"));
        }
    }
    assert!(failed.is_empty(), "examples that do not load:\n{}", failed.join("\n"));
}

/// `text` with each `${...}` secret reference (an environment variable or a mounted file, which
/// the test does not have) replaced by a literal value.
fn without_secrets(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find("${") {
        out.push_str(&rest[..at]);
        let Some(end) = rest[at..].find('}') else { break };
        out.push_str("secret");
        rest = &rest[at + end + 1..];
    }
    out.push_str(rest);
    out
}

/// `mdbook build` makes the site without a warning.
#[test]
fn the_site_builds() {
    let mdbook = root().join(".tools/bin/mdbook");
    if !crate::support::required(mdbook.exists(), "mdBook is not installed", "scripts/setup.sh builds it") {
        return;
    }
    let out_dir = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(&mdbook)
        .arg("build")
        .arg(root().join("docs"))
        .arg("--dest-dir")
        .arg(out_dir.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(!stderr.contains("WARN") && !stderr.contains("ERROR"), "{stderr}");
    assert!(out_dir.path().join("reference/cli.html").exists());
}
