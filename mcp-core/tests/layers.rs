//! The folders are layers: wire → schema → caller → result → registry → server → transport →
//! testing (the host tests' client, above everything). Each module may use only the ones before
//! it; this test reads the sources and fails on a `crate::` path that reaches forward (in code,
//! not in doc comments). Inside `wire`, `schema` and `server` the modules are layers too, in the
//! orders below.
#![allow(missing_docs, clippy::restriction, reason = "a test")]

use std::fs;
use std::path::{Path, PathBuf};

const LAYERS: [&str; 8] = [
    "wire",
    "schema",
    "caller",
    "result",
    "registry",
    "server",
    "transport",
    "testing",
];

/// The production sources under `dir`: a `tests` folder and the crate's test helpers hold only
/// code compiled for `cargo test`, which may reach anywhere, so they are not read.
fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            if !is_test_only(&path) {
                files(&path, out);
            }
        } else if path.extension().is_some_and(|e| e == "rs") && !is_test_only(&path) {
            out.push(path);
        }
    }
}

/// `src/**/tests/`, `src/**/test.rs` and `src/test_support.rs`: test code (declared
/// `#[cfg(test)]`).
fn is_test_only(path: &Path) -> bool {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    (path.is_dir() && name == "tests") || name == "test_support.rs" || name == "test.rs"
}

/// The layer a source file belongs to, by its first path component under `src/`.
fn layer_of(src: &Path, file: &Path) -> Option<usize> {
    let first = file.strip_prefix(src).ok()?.components().next()?;
    let name = first.as_os_str().to_str()?.trim_end_matches(".rs");
    LAYERS.iter().position(|l| *l == name)
}

/// `crate::name` paths used in code lines (comments and tests excluded).
fn uses(text: &str) -> Vec<(usize, String)> {
    let code = text.split("#[cfg(test)]").next().unwrap_or(text);
    let mut found = Vec::new();
    for (n, line) in code.lines().enumerate() {
        let line = line.trim_start();
        if line.starts_with("//") {
            continue;
        }
        for (at, _) in line.match_indices("crate::") {
            let rest = &line[at + "crate::".len()..];
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            found.push((n + 1, name));
        }
    }
    found
}

#[test]
fn no_layer_reaches_forward() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut all = Vec::new();
    files(&src, &mut all);
    let mut checked = 0;
    let mut problems = Vec::new();
    for file in &all {
        let Some(mine) = layer_of(&src, file) else {
            continue;
        };
        checked += 1;
        let text = fs::read_to_string(file).unwrap();
        for (line, name) in uses(&text) {
            if let Some(theirs) = LAYERS.iter().position(|l| *l == name)
                && theirs > mine
            {
                problems.push(format!(
                    "{}:{line}: {} uses crate::{name}",
                    file.strip_prefix(&src).unwrap().display(),
                    LAYERS[mine]
                ));
            }
        }
    }
    assert!(checked > 20, "only {checked} files found under {src:?}");
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// Every folder and file the test leaves out is declared `#[cfg(test)]` where its parent names
/// it: what the layer check skips is never production code.
#[test]
fn only_test_code_is_left_out() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut all = Vec::new();
    every_path(&src, &mut all);
    let skipped: Vec<_> = all.iter().filter(|p| is_test_only(p)).collect();
    assert!(!skipped.is_empty(), "no test folder found under {src:?}");
    for path in skipped {
        let name = path.file_stem().unwrap().to_str().unwrap();
        let parent = path.parent().unwrap();
        let declaring = if parent == src {
            src.join("lib.rs")
        } else {
            parent.join("mod.rs")
        };
        let text = fs::read_to_string(&declaring).unwrap();
        let declared = [
            format!("#[cfg(test)]\nmod {name};"),
            format!("#[cfg(test)]\npub(crate) mod {name};"),
        ];
        assert!(
            declared.iter().any(|d| text.contains(d)),
            "{} is skipped by the layer check but {} does not declare it with #[cfg(test)]",
            path.display(),
            declaring.display()
        );
    }
}

fn every_path(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            every_path(&path, out);
        }
        out.push(path);
    }
}

#[test]
fn the_check_can_fail() {
    let forward = "use crate::server::Principal;\n/// crate::server in a doc\nfn f() {}";
    assert_eq!(uses(forward), vec![(1, "server".to_string())]);
}

/// The modules of `wire`, bottom first: each may use only those before it. The checking pass
/// (`check`) is under both parsers, so `json` and `frame` do not call each other, and `request`
/// classifies what `frame` recorded without `frame` knowing it.
const WIRE: [&str; 9] = [
    "swar", "protocol", "escape", "check", "json", "frame", "request", "writer", "response",
];

/// The modules of `schema`, bottom first: what the keywords check and how a check fails
/// (`value`), the wording of refusals (`message`), the keywords (the folder `keyword/`, one
/// module each), the output schemas, then the validator, which runs the keywords.
const SCHEMA: [&str; 5] = ["value", "message", "keyword", "output", "validate"];

/// The modules of `server`, bottom first. What every method reads of a request (`era`,
/// `params`) and what the dispatch's stages hand each other (`flow`) are under the writers of
/// answers (`respond`), which are under the methods; `capacities` names the storage of the
/// parts it builds a server from; `dispatch` routes to everything. (`mod.rs`, the face, names
/// them all.)
const SERVER: [&str; 20] = [
    "era",
    "params",
    "config",
    "session",
    "message",
    "cache",
    "live",
    "flow",
    "respond",
    "initialize",
    "list",
    "refusal",
    "confirm",
    "conversation",
    "tasks",
    "capacities",
    "resources",
    "prepare",
    "call",
    "dispatch",
];

/// Module paths in code lines (comments and tests excluded) that start with one of `prefixes`
/// (`super::`, `crate::wire::`), grouped imports (`super::{a, b::C}`) included: the first name
/// after the prefix, which is a module when it is one of the folder's.
fn module_uses(text: &str, prefixes: &[&str]) -> Vec<(usize, String)> {
    let code = text.split("#[cfg(test)]").next().unwrap_or(text);
    let name = |s: &str| -> String {
        s.trim()
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect()
    };
    let mut found = Vec::new();
    for (n, line) in code.lines().enumerate() {
        let line = line.trim_start();
        if line.starts_with("//") {
            continue;
        }
        for prefix in prefixes {
            for (at, _) in line.match_indices(prefix) {
                let rest = &line[at + prefix.len()..];
                if let Some(group) = rest.strip_prefix('{') {
                    let group = group.split('}').next().unwrap_or("");
                    found.extend(group.split(',').map(|s| (n + 1, name(s))));
                } else {
                    found.push((n + 1, name(rest)));
                }
            }
        }
    }
    found.retain(|(_, name)| !name.is_empty());
    found
}

/// The problems of `src/{folder}`: a file whose module has no place in `order`, or a path to a
/// module after its own. A subfolder is one module (its files are placed together); its files'
/// `super::` paths are to their own folder and are not read.
fn one_way(folder: &str, order: &[&str]) -> (usize, Vec<String>) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("src")
        .join(folder);
    let own = format!("crate::{folder}::");
    let mut sources = Vec::new();
    files(&dir, &mut sources);
    let (mut checked, mut problems) = (0, Vec::new());
    for path in sources {
        let relative = path.strip_prefix(&dir).unwrap();
        let nested = relative.components().count() > 1;
        let module = relative
            .components()
            .next()
            .unwrap()
            .as_os_str()
            .to_str()
            .unwrap()
            .trim_end_matches(".rs")
            .to_string();
        if module == "mod" {
            continue;
        }
        let Some(mine) = order.iter().position(|m| *m == module) else {
            problems.push(format!(
                "{folder}/{module} has no place in the order: put it there"
            ));
            continue;
        };
        checked += 1;
        let prefixes: &[&str] = if nested { &[&own] } else { &["super::", &own] };
        let text = fs::read_to_string(&path).unwrap();
        for (line, name) in module_uses(&text, prefixes) {
            if let Some(theirs) = order.iter().position(|m| *m == name)
                && theirs > mine
            {
                problems.push(format!(
                    "{folder}/{}:{line}: {module} uses {name}",
                    relative.display()
                ));
            }
        }
    }
    (checked, problems)
}

#[test]
fn wire_modules_depend_one_way() {
    let (checked, problems) = one_way("wire", &WIRE);
    assert_eq!(checked, WIRE.len(), "{problems:?}");
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn schema_modules_depend_one_way() {
    let (checked, problems) = one_way("schema", &SCHEMA);
    assert!(checked > SCHEMA.len(), "{problems:?}");
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn server_modules_depend_one_way() {
    let (checked, problems) = one_way("server", &SERVER);
    assert_eq!(checked, SERVER.len(), "{problems:?}");
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_module_check_can_fail() {
    // The circle the wire's order was written against: the checker calling back into the frame.
    let json = "use super::swar;\n/// super::frame in a doc\nlet end = super::frame::check_value(t, 0, 0, 8)?;\nuse super::{check::skip_ws, request::Message};";
    assert_eq!(
        module_uses(json, &["super::", "crate::wire::"]),
        vec![
            (1, "swar".to_string()),
            (3, "frame".to_string()),
            (4, "check".to_string()),
            (4, "request".to_string()),
        ]
    );
    // And one the server's was: the answer's writer reading the era from the dispatch.
    let respond = "use super::dispatch::Era;\nuse crate::server::{era::Era, Capacities};";
    assert_eq!(
        module_uses(respond, &["super::", "crate::server::"]),
        vec![
            (1, "dispatch".to_string()),
            (2, "era".to_string()),
            (2, "Capacities".to_string()),
        ]
    );
}
