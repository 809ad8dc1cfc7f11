//! The floor rule of `docs/architecture.md`: a module imports only from its own floor and the
//! floors below. The floors are read from the document's `floors` block, so the test and the
//! document cannot disagree.

use std::collections::BTreeMap;
use std::path::Path;

fn floors() -> BTreeMap<String, usize> {
    let doc = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/architecture.md")).unwrap();
    let block = doc.split("```floors\n").nth(1).expect("a ```floors block in docs/architecture.md");
    let block = block.split("```").next().unwrap();
    let mut out = BTreeMap::new();
    for (i, line) in block.lines().enumerate() {
        for name in line.split_whitespace() {
            out.insert(name.to_string(), i);
        }
    }
    out
}

/// Every `crate::<name>` a line of code names (comments skipped).
fn crate_paths(code: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (n, line) in code.lines().enumerate() {
        let line = line.split("//").next().unwrap_or_default();
        let mut rest = line;
        while let Some(i) = rest.find("crate::") {
            rest = &rest[i + "crate::".len()..];
            let name: String = rest.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
            if !name.is_empty() {
                out.push((n + 1, name));
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
        let Some(own) = floors.get(&module) else {
            wrong.push(format!("{}: module {module} is on no floor", rel.display()));
            continue;
        };
        let code = std::fs::read_to_string(file).unwrap();
        for (line, name) in crate_paths(&code) {
            match floors.get(&name) {
                Some(f) if f <= own => {}
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
