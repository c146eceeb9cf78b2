//! The house rules of ARCHITECTURE.md that a machine can check, over every crate of the
//! workspace: no import cycle between modules (parents included), no source file over 800
//! lines outside tests, no function over 150 lines. Each rule is shown able to fail on a
//! small broken example.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

const MAX_FILE_LINES: usize = 800;
const MAX_FN_LINES: usize = 150;

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Every crate's `src` folder.
fn crate_sources() -> Vec<PathBuf> {
    let root = workspace();
    let mut out = vec![root.join("kernels/src")];
    for group in ["engine", "plugins"] {
        let mut dirs: Vec<PathBuf> = std::fs::read_dir(root.join(group))
            .expect("workspace folder")
            .map(|e| e.expect("entry").path().join("src"))
            .filter(|p| p.is_dir())
            .collect();
        dirs.sort();
        out.extend(dirs);
    }
    out
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).expect("source folder") {
        let p = e.expect("entry").path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The module path of a file relative to its crate's `src` (`lib.rs` is the root).
fn module_of(src: &Path, file: &Path) -> Vec<String> {
    let rel = file
        .strip_prefix(src)
        .expect("under src")
        .with_extension("");
    let mut parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if matches!(
        parts.last().map(String::as_str),
        Some("lib" | "main" | "mod")
    ) {
        parts.pop();
    }
    parts
}

/// The text before an inline `#[cfg(test)] mod ... {` (test modules may use anything).
fn non_test(text: &str) -> &str {
    let mut at = 0;
    while let Some(i) = text[at..].find("#[cfg(test)]") {
        let start = at + i;
        let rest = text[start + "#[cfg(test)]".len()..].trim_start();
        if rest.starts_with("mod ") && rest.lines().next().is_some_and(|l| l.ends_with('{')) {
            return &text[..start];
        }
        at = start + 1;
    }
    text
}

fn ident_at(s: &str) -> Option<&str> {
    let end = s
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(s.len());
    (end > 0).then(|| &s[..end])
}

/// The modules `code` (in module `me`) refers to: `crate::a::b`, `crate::{a, b}`,
/// `super::x`, `super::{..}` and, from a parent, `child::`. Comment lines are skipped.
fn references(me: &[String], code: &str, modules: &BTreeSet<Vec<String>>) -> BTreeSet<Vec<String>> {
    let mut out = BTreeSet::new();
    let longest = |path: Vec<String>, out: &mut BTreeSet<Vec<String>>| {
        for n in (0..=path.len()).rev() {
            if modules.contains(&path[..n]) {
                if path[..n] != *me {
                    out.insert(path[..n].to_vec());
                }
                return;
            }
        }
    };
    for line in code.lines().filter(|l| !l.trim_start().starts_with("//")) {
        for (prefix, base) in [
            ("crate::", Vec::new()),
            ("super::", me[..me.len().saturating_sub(1)].to_vec()),
        ] {
            let mut at = 0;
            while let Some(i) = line[at..].find(prefix) {
                let start = at + i;
                at = start + prefix.len();
                if start > 0
                    && line[..start].ends_with(|c: char| c.is_ascii_alphanumeric() || c == '_')
                {
                    continue;
                }
                let rest = &line[at..];
                if let Some(list) = rest.strip_prefix('{') {
                    let list = list.split('}').next().unwrap_or("");
                    for item in list.split(',') {
                        let first = item.trim().split("::").next().unwrap_or("").trim();
                        let mut p = base.clone();
                        p.push(first.to_string());
                        longest(p, &mut out);
                    }
                } else if rest.starts_with('*') {
                    longest(base.clone(), &mut out);
                } else {
                    let mut p = base.clone();
                    p.extend(rest.split("::").map_while(ident_at).map(str::to_string));
                    longest(p, &mut out);
                }
            }
        }
        // A parent naming its child: `child::item`.
        let mut at = 0;
        while let Some(i) = line[at..].find("::") {
            let end = at + i;
            at = end + 2;
            let head = line[..end]
                .rsplit(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .next()
                .unwrap_or("");
            let before = &line[..end - head.len()];
            if head.is_empty() || before.ends_with("::") {
                continue;
            }
            let mut p = me.to_vec();
            p.push(head.to_string());
            if modules.contains(&p) {
                out.insert(p);
            }
        }
    }
    out
}

/// A cycle in the module graph, if there is one.
fn find_cycle(edges: &BTreeMap<Vec<String>, BTreeSet<Vec<String>>>) -> Option<Vec<Vec<String>>> {
    fn visit(
        u: &Vec<String>,
        edges: &BTreeMap<Vec<String>, BTreeSet<Vec<String>>>,
        state: &mut BTreeMap<Vec<String>, u8>,
        stack: &mut Vec<Vec<String>>,
    ) -> Option<Vec<Vec<String>>> {
        state.insert(u.clone(), 1);
        stack.push(u.clone());
        for v in edges.get(u).into_iter().flatten() {
            match state.get(v) {
                Some(1) => {
                    let from = stack.iter().position(|x| x == v).unwrap_or(0);
                    let mut cyc = stack[from..].to_vec();
                    cyc.push(v.clone());
                    return Some(cyc);
                }
                Some(_) => {}
                None => {
                    if let Some(c) = visit(v, edges, state, stack) {
                        return Some(c);
                    }
                }
            }
        }
        stack.pop();
        state.insert(u.clone(), 2);
        None
    }
    let mut state = BTreeMap::new();
    for u in edges.keys() {
        if !state.contains_key(u)
            && let Some(c) = visit(u, edges, &mut state, &mut Vec::new())
        {
            return Some(c);
        }
    }
    None
}

/// The module graph of one crate from its files' texts.
fn graph(files: &[(Vec<String>, String)]) -> BTreeMap<Vec<String>, BTreeSet<Vec<String>>> {
    let modules: BTreeSet<Vec<String>> = files.iter().map(|(m, _)| m.clone()).collect();
    files
        .iter()
        .filter(|(m, _)| m.last().is_none_or(|l| !l.ends_with("tests")))
        .map(|(m, text)| (m.clone(), references(m, non_test(text), &modules)))
        .collect()
}

/// Functions longer than the limit: (first line, name, lines).
fn long_functions(text: &str) -> Vec<(usize, String, usize)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        let t = l.trim_start();
        let indent = &l[..l.len() - t.len()];
        let sig = ["pub(crate) fn ", "pub(super) fn ", "pub fn ", "fn "]
            .iter()
            .find_map(|p| t.strip_prefix(p));
        let Some(rest) = sig else { continue };
        let name = ident_at(rest).unwrap_or("?").to_string();
        // A declaration without a body (a trait method) ends with `;` before any `{`.
        let opens = lines[i..]
            .iter()
            .map(|x| x.trim_end())
            .find(|x| x.ends_with('{') || x.ends_with(';') || x.ends_with('}'));
        if opens.is_some_and(|x| x.ends_with(';')) {
            continue;
        }
        let close = format!("{indent}}}");
        if let Some(j) = lines[i + 1..].iter().position(|x| **x == close)
            && j + 2 > MAX_FN_LINES
        {
            out.push((i + 1, name, j + 2));
        }
    }
    out
}

#[test]
fn no_module_imports_a_module_that_imports_it_back() {
    let mut edges = 0;
    for src in crate_sources() {
        let mut paths = Vec::new();
        rust_files(&src, &mut paths);
        let files: Vec<(Vec<String>, String)> = paths
            .iter()
            .map(|p| {
                (
                    module_of(&src, p),
                    std::fs::read_to_string(p).expect("read"),
                )
            })
            .collect();
        let g = graph(&files);
        edges += g.values().map(BTreeSet::len).sum::<usize>();
        if let Some(c) = find_cycle(&g) {
            let names: Vec<String> = c
                .iter()
                .map(|m| {
                    if m.is_empty() {
                        "crate".into()
                    } else {
                        m.join("::")
                    }
                })
                .collect();
            panic!("{}: module cycle {}", src.display(), names.join(" -> "));
        }
    }
    // The graph is not empty by accident (a parsing slip would make the check vacuous).
    assert!(edges > 150, "only {edges} import edges found");
}

#[test]
fn the_cycle_check_catches_a_cycle() {
    let files = vec![
        (vec![], "mod a;\nmod b;\npub use a::X;\n".to_string()),
        (
            vec!["a".to_string()],
            "use crate::b::Y;\npub struct X;\n".to_string(),
        ),
        (
            vec!["b".to_string()],
            "use super::a::X;\npub struct Y;\n".to_string(),
        ),
    ];
    assert!(
        find_cycle(&graph(&files)).is_some(),
        "a <-> b must be found"
    );
    // A child using its parent's item while the parent re-exports the child: a cycle too.
    let files = vec![
        (vec![], "mod a;\npub use a::X;\npub struct Z;\n".to_string()),
        (
            vec!["a".to_string()],
            "use crate::Z;\npub struct X;\n".to_string(),
        ),
    ];
    assert!(
        find_cycle(&graph(&files)).is_some(),
        "crate <-> a must be found"
    );
    let files = vec![
        (vec![], "mod a;\nmod b;\npub use a::X;\n".to_string()),
        (
            vec!["a".to_string()],
            "use crate::b::Y;\npub struct X;\n".to_string(),
        ),
        (vec!["b".to_string()], "pub struct Y;\n".to_string()),
    ];
    assert!(find_cycle(&graph(&files)).is_none(), "a -> b only");
}

#[test]
fn files_and_functions_stay_small() {
    let root = workspace();
    let mut paths = Vec::new();
    for src in crate_sources() {
        rust_files(&src, &mut paths);
    }
    rust_files(&root.join("engine/cli/tests"), &mut paths);
    let mut problems = Vec::new();
    for p in &paths {
        let text = std::fs::read_to_string(p).expect("read");
        let is_test_file = p.components().any(|c| c.as_os_str() == "tests")
            || p.file_name().is_some_and(|n| n == "tests.rs");
        let lines = non_test(&text).lines().count();
        if !is_test_file && lines > MAX_FILE_LINES {
            problems.push(format!("{}: {lines} lines outside tests", p.display()));
        }
        for (line, name, len) in long_functions(&text) {
            problems.push(format!("{}:{line}: fn {name} has {len} lines", p.display()));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_size_checks_catch_a_long_function() {
    let body: String = (0..160).map(|i| format!("    let x{i} = {i};\n")).collect();
    let text = format!(
        "trait T {{\n    fn declared(&self);\n}}\n\nfn long() {{\n{body}}}\n\nfn short() {{\n}}\n"
    );
    let found = long_functions(&text);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].1, "long");
    let with_tests = "fn a() {}\n#[cfg(test)]\nmod tests {\n    fn b() {}\n}\n";
    assert_eq!(non_test(with_tests).lines().count(), 1);
}

/// The crates' layers, lowest first (ARCHITECTURE.md's diagram): a crate depends only on
/// crates of lower layers, so the three product lines (`kinsey-learn`, `kinsey-stats`,
/// `kinsey-decay`) sit side by side and none reaches another or up.
const LAYERS: &[&[&str]] = &[
    &["kinsey-core", "kinsey-fuzz"],
    &["kinsey-kernels", "kinsey-backend"],
    &[
        "kinsey-dp",
        "kinsey-backend-mock",
        "kinsey-backend-tfhe",
        "kinsey-backend-paillier",
    ],
    &["kinsey-data"],
    &["kinsey-learn", "kinsey-stats", "kinsey-decay"],
    &["kinsey-protocol"],
    &["kinsey-bench"],
    &["kinsey"],
    &["kinsey-cli", "kinsey-python"],
];

/// The layer of crate `name`, if it is one of the workspace's.
fn layer(name: &str) -> Option<usize> {
    LAYERS.iter().position(|l| l.contains(&name))
}

/// A manifest's package name and its `[dependencies]` on kinsey crates (not the dev- or
/// build-dependencies: tests may reach anywhere).
fn manifest_deps(toml: &str) -> (String, Vec<String>) {
    let mut name = String::new();
    let mut deps = Vec::new();
    let mut section = "";
    for line in toml.lines() {
        let t = line.trim();
        if t.starts_with('[') {
            section = t;
            continue;
        }
        if section == "[package]" && t.starts_with("name") && name.is_empty() {
            name = t.split('"').nth(1).unwrap_or("").to_string();
        }
        if section == "[dependencies]" && t.starts_with("kinsey") {
            let dep = t.split(['.', ' ', '=']).next().unwrap_or("");
            deps.push(dep.to_string());
        }
    }
    (name, deps)
}

/// Each dependency that does not point to a lower layer: `crate -> dep`.
fn upward(manifests: &[(String, Vec<String>)]) -> Vec<String> {
    let mut bad = Vec::new();
    for (name, deps) in manifests {
        for d in deps {
            match (layer(name), layer(d)) {
                (Some(a), Some(b)) if b < a => {}
                _ => bad.push(format!("{name} -> {d}")),
            }
        }
    }
    bad
}

/// Every workspace manifest with its kinsey dependencies.
fn manifests() -> Vec<(String, Vec<String>)> {
    let root = workspace();
    let mut dirs = vec![
        root.join("kernels"),
        root.join("kinsey"),
        root.join("python"),
    ];
    for group in ["engine", "plugins"] {
        let Ok(rd) = std::fs::read_dir(root.join(group)) else {
            continue;
        };
        dirs.extend(
            rd.flatten()
                .map(|e| e.path())
                .filter(|p| p.join("Cargo.toml").is_file()),
        );
    }
    dirs.iter()
        .filter_map(|d| std::fs::read_to_string(d.join("Cargo.toml")).ok())
        .map(|t| manifest_deps(&t))
        .collect()
}

#[test]
fn crates_depend_only_downwards_and_the_product_lines_side_by_side() {
    let m = manifests();
    assert!(m.len() >= 15, "{m:?}");
    for (name, _) in &m {
        assert!(layer(name).is_some(), "{name}: add it to LAYERS");
    }
    assert_eq!(upward(&m), Vec::<String>::new());
    // The check fails on a line reaching another, and on an upward dependency.
    let broken = vec![
        ("kinsey-decay".to_string(), vec!["kinsey-stats".to_string()]),
        ("kinsey-dp".to_string(), vec!["kinsey-data".to_string()]),
    ];
    assert_eq!(upward(&broken).len(), 2);
}

/// The engine crates of the product lines and their measurements: the CLI reaches them
/// through the facade (`kinsey::`) only.
const BEHIND_THE_FACADE: &[&str] = &[
    "kinsey_learn",
    "kinsey_stats",
    "kinsey_protocol",
    "kinsey_decay",
    "kinsey_bench",
];

/// The names of [`BEHIND_THE_FACADE`] that `text` (a source file, or a manifest with `-`
/// for `_`) mentions.
fn behind_the_facade(text: &str) -> Vec<&'static str> {
    BEHIND_THE_FACADE
        .iter()
        .copied()
        .filter(|k| text.contains(k) || text.contains(&k.replace('_', "-")))
        .collect()
}

/// The CLI holds argument parsing, terminal output and plots only, over the facade
/// (issue 54): no source file of it names an engine crate of a product line, and its
/// manifest does not depend on one.
#[test]
fn the_cli_reaches_the_product_lines_through_the_facade_only() {
    // The check can fail: it flags an import and a manifest line.
    assert_eq!(
        behind_the_facade("use kinsey_learn::logreg;"),
        ["kinsey_learn"]
    );
    assert_eq!(
        behind_the_facade("kinsey-decay.workspace = true"),
        ["kinsey_decay"]
    );
    let root = workspace();
    let src = root.join("engine/cli/src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let named: Vec<String> = files
        .iter()
        .filter_map(|f| {
            let found = behind_the_facade(&std::fs::read_to_string(f).unwrap_or_default());
            (!found.is_empty()).then(|| format!("{}: {found:?}", f.display()))
        })
        .collect();
    assert!(
        named.is_empty(),
        "the CLI calls the facade (`kinsey::`), not the engine crates: {named:?}"
    );
    let manifest = std::fs::read_to_string(root.join("engine/cli/Cargo.toml")).expect("manifest");
    let (_, deps) = manifest_deps(&manifest);
    let direct: Vec<&String> = deps
        .iter()
        .filter(|d| !behind_the_facade(d).is_empty())
        .collect();
    assert!(
        direct.is_empty(),
        "engine/cli/Cargo.toml depends on {direct:?}: go through the facade"
    );
}

/// ARCHITECTURE.md stays a map (at most 250 lines), and each product line's README a
/// screen (at most 40 lines).
#[test]
fn the_map_and_the_product_lines_readmes_stay_short() {
    let root = workspace();
    let lines = |p: &str| {
        std::fs::read_to_string(root.join(p))
            .map(|t| t.lines().count())
            .unwrap_or(usize::MAX)
    };
    assert!(
        lines("ARCHITECTURE.md") <= 250,
        "{}",
        lines("ARCHITECTURE.md")
    );
    for readme in [
        "engine/stats/README.md",
        "engine/decay/README.md",
        "engine/learn/README.md",
    ] {
        assert!(lines(readme) <= 40, "{readme}: {}", lines(readme));
    }
}
