//! Import cycles between the files of a crate, and crate dependencies that
//! point up the layers (issue 31, item 1). `cargo test -p xtask` fails on
//! either; `cargo run -p xtask -- import-cycles` lists them.
//!
//! A file imports another when it names a path into it through `crate::`,
//! `super::` or `self::` (in a `use` or inline). A path resolves to the
//! deepest module file it reaches (`crate::kernel::sched::Task` is
//! `kernel/sched/mod.rs`; an item of `kernel/mod.rs` is that file). A
//! parent declaring `mod child;` is not an import, nor is a bare `super`;
//! test modules (`#[cfg(test)] mod ... { }`) may import anything and are
//! skipped. Cycles are the strongly connected sets of two or more files.
//!
//! Left out: paths without `crate`/`super`/`self` (a `use child::Item` from
//! a parent into its own child cannot close a cycle unless the child names
//! the parent, which it must do through `super` or `crate`), macros, and
//! glob re-exports' transitive reach.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A module of a crate: its path segments (`["kernel", "sched"]`; empty for
/// the crate root).
pub type ModPath = Vec<String>;

/// One crate's files and the imports between them.
#[derive(Debug, Default)]
pub struct CrateGraph {
    /// Edges: module file to the module files it imports.
    pub edges: BTreeMap<ModPath, BTreeSet<ModPath>>,
}

/// Comments, string and char literals blanked; `#[cfg(test)] mod x { }`
/// blocks removed.
pub fn strip(src: &str) -> String {
    let b = src.as_bytes();
    let mut out = String::with_capacity(src.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'/' if b.get(i + 1) == Some(&b'/') => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                let mut depth = 0;
                while i < b.len() {
                    if b[i] == b'/' && b.get(i + 1) == Some(&b'*') {
                        depth += 1;
                        i += 2;
                    } else if b[i] == b'*' && b.get(i + 1) == Some(&b'/') {
                        depth -= 1;
                        i += 2;
                        if depth == 0 {
                            break;
                        }
                    } else {
                        i += 1;
                    }
                }
                out.push(' ');
            }
            // A char literal ('"', '\'', 'x'); a lifetime ('a) has no
            // closing quote right after its first character.
            b'\'' if b.get(i + 2) == Some(&b'\'') || b.get(i + 1) == Some(&b'\\') => {
                let close = b[i + 1..]
                    .iter()
                    .skip(1)
                    .position(|&c| c == b'\'')
                    .map_or(b.len(), |p| i + 2 + p);
                i = close + 1;
                out.push_str("' '");
            }
            b'"' => {
                // A raw string's hashes are not needed: the paths we look
                // for never contain quotes, and an r#"..."# body is blanked
                // up to its first quote, which is enough for `use` lines.
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
                i += 1;
                out.push_str("\"\"");
            }
            _ => {
                let ch = src[i..].chars().next().unwrap_or(' ');
                out.push(ch);
                i += ch.len_utf8();
            }
        }
    }
    remove_test_modules(&out)
}

/// Removes `#[cfg(test)] mod NAME { ... }` blocks (balanced braces).
fn remove_test_modules(src: &str) -> String {
    let mut out = String::with_capacity(src.len());
    let mut rest = src;
    while let Some(at) = rest.find("#[cfg(test)]") {
        let after = &rest[at + "#[cfg(test)]".len()..];
        let trimmed = after.trim_start();
        let is_mod_block = trimmed.starts_with("mod ")
            && trimmed
                .find(['{', ';'])
                .is_some_and(|p| trimmed.as_bytes()[p] == b'{');
        if !is_mod_block {
            out.push_str(&rest[..at + "#[cfg(test)]".len()]);
            rest = after;
            continue;
        }
        out.push_str(&rest[..at]);
        let open = after.find('{').unwrap_or(after.len());
        let mut depth = 0usize;
        let mut end = after.len();
        for (k, c) in after[open..].char_indices() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = open + k + 1;
                        break;
                    }
                }
                _ => {}
            }
        }
        rest = &after[end..];
    }
    out.push_str(rest);
    out
}

/// `a::{b, c::{d, e}}` as `[a::b, a::c::d, a::c::e]`.
pub fn expand_use(tree: &str) -> Vec<String> {
    let tree = tree.trim();
    let Some(open) = tree.find('{') else {
        return vec![tree.to_string()];
    };
    let (prefix, body) = (&tree[..open], &tree[open + 1..]);
    let body = body.strip_suffix('}').unwrap_or(body);
    let mut parts = Vec::new();
    let (mut depth, mut cur) = (0i32, String::new());
    for c in body.chars() {
        match c {
            ',' if depth == 0 => parts.push(std::mem::take(&mut cur)),
            '{' => {
                depth += 1;
                cur.push(c);
            }
            '}' => {
                depth -= 1;
                cur.push(c);
            }
            _ => cur.push(c),
        }
    }
    parts.push(cur);
    parts
        .iter()
        .filter(|p| !p.trim().is_empty())
        .flat_map(|p| expand_use(&format!("{prefix}{}", p.trim())))
        .collect()
}

/// Every `crate::`/`super::`/`self::` path in stripped source: the trees of
/// `use` items (expanded) and inline paths.
pub fn paths_in(src: &str) -> Vec<String> {
    let mut paths = Vec::new();
    let mut rest = src;
    while let Some(at) = rest.find("use ") {
        let word_start = at == 0 || !is_ident(rest.as_bytes()[at - 1]);
        let tail = &rest[at + 4..];
        match (word_start, tail.find(';')) {
            (true, Some(end)) => {
                paths.extend(expand_use(&tail[..end]));
                rest = &tail[end..];
            }
            _ => rest = tail,
        }
    }
    let b = src.as_bytes();
    for kw in ["crate::", "super::", "self::"] {
        let mut from = 0;
        while let Some(p) = src[from..].find(kw) {
            let at = from + p;
            from = at + kw.len();
            if at > 0 && (is_ident(b[at - 1]) || b[at - 1] == b':') {
                continue;
            }
            let end = src[at..]
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':'))
                .map_or(src.len(), |e| at + e);
            paths.push(src[at..end].to_string());
        }
    }
    paths
}

fn is_ident(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// The module file `path` (as written in module `from`) reaches, if any.
fn resolve(path: &str, from: &ModPath, mods: &BTreeSet<ModPath>) -> Option<ModPath> {
    let segs: Vec<&str> = path
        .split("::")
        .map(|s| s.split(" as ").next().unwrap_or("").trim())
        .filter(|s| !s.is_empty() && *s != "*")
        .collect();
    let (mut base, mut rest) = match segs.first()? {
        &"crate" => (Vec::new(), &segs[1..]),
        &"super" | &"self" => (from.clone(), &segs[..]),
        _ => return None,
    };
    while let Some(&s) = rest.first() {
        match s {
            "super" => {
                base.pop();
            }
            "self" => {}
            _ => break,
        }
        rest = &rest[1..];
    }
    // A bare `super`/`self`/`crate` is not an import of that file.
    if rest.is_empty() {
        return None;
    }
    let mut full = base;
    full.extend(rest.iter().map(|s| s.to_string()));
    (0..=full.len())
        .rev()
        .map(|k| full[..k].to_vec())
        .find(|m| mods.contains(m))
}

/// The module files under `src` (a crate's `src/`).
fn module_files(src: &Path) -> Vec<(ModPath, PathBuf)> {
    let mut out = Vec::new();
    let mut stack = vec![src.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                let rel = p.strip_prefix(src).unwrap_or(&p).with_extension("");
                let mut segs: ModPath = rel
                    .components()
                    .map(|c| c.as_os_str().to_string_lossy().to_string())
                    .collect();
                if segs.last().is_some_and(|s| s == "mod") {
                    segs.pop();
                }
                if segs == ["lib"] || segs == ["main"] {
                    segs.clear();
                }
                out.push((segs, p));
            }
        }
    }
    out.sort();
    out
}

/// The import graph of the crate whose sources are under `src`.
pub fn crate_graph(src: &Path) -> Result<CrateGraph, String> {
    let files = module_files(src);
    let mods: BTreeSet<ModPath> = files.iter().map(|(m, _)| m.clone()).collect();
    let mut g = CrateGraph::default();
    for (m, path) in &files {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let targets = g.edges.entry(m.clone()).or_default();
        for p in paths_in(&strip(&text)) {
            if let Some(t) = resolve(&p, m, &mods) {
                if &t != m {
                    targets.insert(t);
                }
            }
        }
    }
    Ok(g)
}

/// Strongly connected sets of two or more modules (Tarjan), each sorted.
pub fn cycles(g: &CrateGraph) -> Vec<Vec<ModPath>> {
    struct State<'a> {
        g: &'a CrateGraph,
        index: BTreeMap<&'a ModPath, usize>,
        low: BTreeMap<&'a ModPath, usize>,
        stack: Vec<&'a ModPath>,
        on_stack: BTreeSet<&'a ModPath>,
        out: Vec<Vec<ModPath>>,
    }
    fn visit<'a>(s: &mut State<'a>, v: &'a ModPath) {
        let n = s.index.len();
        s.index.insert(v, n);
        s.low.insert(v, n);
        s.stack.push(v);
        s.on_stack.insert(v);
        let g = s.g;
        for w in g.edges.get(v).into_iter().flatten() {
            if !s.index.contains_key(w) {
                visit(s, w);
                let lw = s.low[w];
                let lv = s.low.get_mut(v).expect("visited");
                *lv = (*lv).min(lw);
            } else if s.on_stack.contains(w) {
                let iw = s.index[w];
                let lv = s.low.get_mut(v).expect("visited");
                *lv = (*lv).min(iw);
            }
        }
        if s.low[v] == s.index[v] {
            let mut comp = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack.remove(w);
                comp.push(w.clone());
                if w == v {
                    break;
                }
            }
            if comp.len() > 1 {
                comp.sort();
                s.out.push(comp);
            }
        }
    }
    let mut s = State {
        g,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        out: Vec::new(),
    };
    for v in g.edges.keys() {
        if !s.index.contains_key(v) {
            visit(&mut s, v);
        }
    }
    s.out.sort();
    s.out
}

/// The workspace's crates bottom-up: a crate may depend (also as a
/// dev-dependency) only on crates of a lower layer (docs/design: imports
/// point down). A new crate must be placed here.
pub const LAYERS: &[&[&str]] = &[
    &["numalab-knobs", "numalab-topology", "numalab-record"],
    &["numalab-workload"],
    &["numalab-sim", "numalab-real", "numalab-report"],
    &["numalab-plot", "numalab-fuzz"],
    &["numalab"],
    &["numalab-py", "xtask"],
];

/// Layer of a crate, if it is placed.
fn layer(name: &str) -> Option<usize> {
    LAYERS.iter().position(|l| l.contains(&name))
}

/// The workspace crates' manifests: (package name, numalab crates it
/// depends on in any dependency table).
pub fn crate_deps(root: &Path) -> Result<Vec<(String, Vec<String>)>, String> {
    let mut manifests: Vec<PathBuf> = std::fs::read_dir(root.join("crates"))
        .map_err(|e| format!("{}: {e}", root.join("crates").display()))?
        .flatten()
        .map(|e| e.path().join("Cargo.toml"))
        .filter(|p| p.exists())
        .collect();
    manifests.push(root.join("python/Cargo.toml"));
    manifests.push(root.join("xtask/Cargo.toml"));
    manifests.sort();
    let mut out = Vec::new();
    for m in manifests {
        let text = std::fs::read_to_string(&m).map_err(|e| format!("{}: {e}", m.display()))?;
        let doc: toml::Table = text.parse().map_err(|e| format!("{}: {e}", m.display()))?;
        let name = doc
            .get("package")
            .and_then(|p| p.get("name"))
            .and_then(|n| n.as_str())
            .ok_or_else(|| format!("{}: no package name", m.display()))?
            .to_string();
        let mut deps = BTreeSet::new();
        for table in ["dependencies", "dev-dependencies", "build-dependencies"] {
            if let Some(t) = doc.get(table).and_then(|t| t.as_table()) {
                deps.extend(t.keys().filter(|k| k.starts_with("numalab")).cloned());
            }
        }
        out.push((name, deps.into_iter().collect()));
    }
    Ok(out)
}

/// Dependencies that do not point down the layers, as messages.
pub fn layer_violations(deps: &[(String, Vec<String>)]) -> Vec<String> {
    let mut bad = Vec::new();
    for (name, ds) in deps {
        let Some(l) = layer(name) else {
            bad.push(format!("crate {name} has no layer in xtask's LAYERS"));
            continue;
        };
        for d in ds {
            match layer(d) {
                Some(ld) if ld < l => {}
                Some(_) => bad.push(format!("{name} depends on {d}, which is not below it")),
                None => bad.push(format!("{name} depends on {d}, which has no layer")),
            }
        }
    }
    bad
}

/// Every cycle of every crate under `root/crates` (and python/, xtask/),
/// as lines `CRATE: a, b, c`.
pub fn workspace_cycles(root: &Path) -> Result<Vec<String>, String> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(root.join("crates"))
        .map_err(|e| format!("{}: {e}", root.join("crates").display()))?
        .flatten()
        .map(|e| e.path())
        .collect();
    dirs.push(root.join("python"));
    dirs.push(root.join("xtask"));
    dirs.sort();
    let mut lines = Vec::new();
    for d in dirs {
        let src = d.join("src");
        if !src.is_dir() {
            continue;
        }
        let name = d
            .file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().to_string());
        for c in cycles(&crate_graph(&src)?) {
            let files: Vec<String> = c
                .iter()
                .map(|m| {
                    if m.is_empty() {
                        "lib".into()
                    } else {
                        m.join("/")
                    }
                })
                .collect();
            lines.push(format!("{name}: {}", files.join(", ")));
        }
    }
    Ok(lines)
}

/// The workspace root (xtask's parent).
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn graph(files: &[(&str, &str)]) -> CrateGraph {
        let d = tempfile::tempdir().unwrap();
        for (p, text) in files {
            let path = d.path().join(p);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        crate_graph(d.path()).unwrap()
    }

    #[test]
    fn use_trees_expand() {
        assert_eq!(
            expand_use("crate::a::{b, c::{d, e as f}}"),
            ["crate::a::b", "crate::a::c::d", "crate::a::c::e as f"]
        );
    }

    #[test]
    fn a_two_file_cycle_is_found_and_a_chain_is_not() {
        let g = graph(&[
            ("lib.rs", "mod a; mod b; mod c;"),
            ("a.rs", "use crate::b::X;"),
            ("b.rs", "pub struct X; fn f() { let _ = super::a::Y; }"),
            ("c.rs", "use crate::a::Y;"),
        ]);
        let c = cycles(&g);
        assert_eq!(c.len(), 1);
        assert_eq!(c[0], vec![vec!["a".to_string()], vec!["b".to_string()]]);
    }

    #[test]
    fn comments_strings_tests_and_bare_super_are_not_imports() {
        let g = graph(&[
            ("lib.rs", "mod a; mod b;"),
            (
                "a.rs",
                "// use crate::b::X;\nconst S: &str = \"crate::b::X\";\nuse super::*;\n",
            ),
            (
                "b.rs",
                "use crate::a::Y;\n#[cfg(test)]\nmod tests { use crate::a::Z; }\n",
            ),
        ]);
        assert!(cycles(&g).is_empty());
        assert!(g.edges[&vec!["a".to_string()]].is_empty());
    }

    #[test]
    fn a_path_resolves_to_the_deepest_module_file() {
        let g = graph(&[
            ("lib.rs", "mod k;"),
            ("k/mod.rs", "mod s; use self::s::T;"),
            ("k/s.rs", "use crate::k::Kernel;"),
        ]);
        assert_eq!(cycles(&g).len(), 1, "k/mod.rs and k/s.rs import each other");
    }

    #[test]
    fn layers_catch_a_dependency_up() {
        let deps = vec![
            (
                "numalab-sim".to_string(),
                vec!["numalab-record".to_string()],
            ),
            (
                "numalab-record".to_string(),
                vec!["numalab-sim".to_string()],
            ),
        ];
        let bad = layer_violations(&deps);
        assert_eq!(bad.len(), 1);
        assert!(bad[0].contains("numalab-record depends on numalab-sim"));
    }

    #[test]
    fn the_workspace_has_no_import_cycle() {
        let lines = workspace_cycles(&workspace_root()).unwrap();
        assert!(lines.is_empty(), "import cycles:\n{}", lines.join("\n"));
    }

    #[test]
    fn the_workspace_crates_depend_only_downward() {
        let bad = layer_violations(&crate_deps(&workspace_root()).unwrap());
        assert!(bad.is_empty(), "{}", bad.join("\n"));
    }
}
