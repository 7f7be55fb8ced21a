//! `cargo xtask shape`: the rules of the source's shape, kept by CI
//! (docs/dev/development.md, "Layers"):
//!
//! - no function longer than [`MAX_FN_LINES`] lines in `src/` or `read/`
//!   (from `fn` to its closing brace; tests included);
//! - no import circle between files of one crate (`use` and paths in code:
//!   `crate::`, `self::`, `super::` and a child module's name; a folder's
//!   `mod.rs` using its own parts is no arrow, a part using it is);
//! - no arrow up: a file of `src/` imports only files of its own folder
//!   and of the layers below it ([`LAYERS`]).
//!
//! Each broken rule is printed, with the file and line, and the task
//! fails. Functions within ten lines of the bound are listed too, as a
//! warning (they are where the next change breaks the rule).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use syn::visit::Visit;

/// Longest function allowed, in lines.
pub const MAX_FN_LINES: usize = 100;

/// The top-level modules of `src/` from the bottom up (docs/dev/
/// development.md): a file may import files of its own module and of
/// modules of a lower rank, never of one of the same rank or higher.
pub const LAYERS: &[(&str, u8)] = &[
    ("file", 1),
    ("escape", 1),
    ("postfix", 1),
    ("config", 2),
    ("engine", 3),
    ("store", 4),
    ("worker", 5),
    ("milter", 6),
    ("replay", 6),
    ("pinned", 6),
    ("http", 7),
    ("cli", 8),
    ("", 9),
];

/// What the check found.
#[derive(Debug, Default)]
pub struct Report {
    /// Broken rules, one line each.
    pub broken: Vec<String>,
    /// Functions near the bound.
    pub near: Vec<String>,
}

/// Checks the crates rooted at `roots` (each a `src` folder holding
/// `lib.rs`); `layered` is the one [`LAYERS`] applies to.
pub fn check(roots: &[PathBuf], layered: &Path) -> Result<Report, String> {
    let mut report = Report::default();
    for root in roots {
        let files = crate_files(root)?;
        let mut graph: BTreeMap<PathBuf, BTreeSet<PathBuf>> = BTreeMap::new();
        for (file, module) in &files {
            let text =
                std::fs::read_to_string(file).map_err(|e| format!("{}: {e}", file.display()))?;
            let ast = syn::parse_file(&text).map_err(|e| format!("{}: {e}", file.display()))?;
            let mut v = Visitor {
                module: module.clone(),
                children: children(root, module),
                paths: Vec::new(),
                fns: Vec::new(),
            };
            v.visit_file(&ast);
            for (name, line, lines) in v.fns {
                let at = format!("{}:{line}: fn {name}: {lines} lines", file.display());
                if lines > MAX_FN_LINES {
                    report
                        .broken
                        .push(format!("{at} (more than {MAX_FN_LINES})"));
                } else if lines > MAX_FN_LINES - 10 {
                    report.near.push(at);
                }
            }
            let edges = graph.entry(file.clone()).or_default();
            for (path, line) in v.paths {
                let Some(target) = resolve(root, &path) else {
                    continue;
                };
                // A folder's face (`mod.rs`, `lib.rs`) declares and hands on
                // its parts: its arrows down into its own folder are not
                // imports (a part's arrow to its face is).
                let face = file
                    .file_name()
                    .is_some_and(|n| n == "mod.rs" || n == "lib.rs");
                let own_part = face && file.parent().is_some_and(|d| target.starts_with(d));
                if target == *file || own_part {
                    continue;
                }
                if root == layered {
                    if let Some(why) = arrow_up(module, &path) {
                        report
                            .broken
                            .push(format!("{}:{line}: arrow up: {why}", file.display()));
                    }
                }
                if std::env::var_os("SHAPE_DEBUG").is_some() {
                    eprintln!(
                        "{} -> {} ({})",
                        file.display(),
                        target.display(),
                        path.join("::")
                    );
                }
                edges.insert(target);
            }
        }
        for circle in circles(&graph) {
            let names: Vec<String> = circle.iter().map(|p| p.display().to_string()).collect();
            report
                .broken
                .push(format!("import circle: {}", names.join(" -> ")));
        }
    }
    Ok(report)
}

/// Runs the check on `repo`'s `src/` and `read/src/` and prints it.
pub fn run(repo: &Path) -> Result<bool, String> {
    let src = repo.join("src");
    let report = check(&[src.clone(), repo.join("read/src")], &src)?;
    let mut out = String::new();
    for n in &report.near {
        let _ = writeln!(out, "shape: near the bound: {n}");
    }
    for b in &report.broken {
        let _ = writeln!(out, "shape: {b}");
    }
    print!("{out}");
    if report.broken.is_empty() {
        println!(
            "shape: ok (functions at most {MAX_FN_LINES} lines, no import circle, no arrow up)"
        );
    }
    Ok(report.broken.is_empty())
}

/// The `.rs` files of the crate rooted at `root`, with their module paths.
fn crate_files(root: &Path) -> Result<Vec<(PathBuf, Vec<String>)>, String> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let entries = std::fs::read_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        for entry in entries {
            let path = entry.map_err(|e| e.to_string())?.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let module = module_of(root, &path);
                out.push((path, module));
            }
        }
    }
    out.sort();
    Ok(out)
}

/// The module path of `file` under `root`: `engine/index/window.rs` is
/// `engine::index::window`, a `mod.rs` its folder's, `lib.rs` the root.
fn module_of(root: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(root).unwrap_or(file);
    let mut parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if let Some(last) = parts.pop() {
        let stem = last.trim_end_matches(".rs");
        if !matches!(stem, "mod" | "lib" | "main") {
            parts.push(stem.to_owned());
        }
    }
    parts
}

/// The child modules of `module` that have files of their own.
fn children(root: &Path, module: &[String]) -> BTreeSet<String> {
    let dir = module.iter().fold(root.to_path_buf(), |d, m| d.join(m));
    let mut out = BTreeSet::new();
    if let Ok(entries) = std::fs::read_dir(&dir) {
        for e in entries.flatten() {
            let p = e.path();
            let name = p
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
            if p.is_dir() || (p.extension().is_some_and(|x| x == "rs") && name != "mod") {
                out.insert(name);
            }
        }
    }
    out
}

/// The file that holds the longest prefix of `path` (a module path from
/// the crate's root) that is a module with a file, if any but the root.
fn resolve(root: &Path, path: &[String]) -> Option<PathBuf> {
    for n in (1..=path.len()).rev() {
        let base = path[..n].iter().fold(root.to_path_buf(), |d, m| d.join(m));
        let file = base.with_extension("rs");
        if file.is_file() {
            return Some(file);
        }
        let dir = base.join("mod.rs");
        if dir.is_file() {
            return Some(dir);
        }
    }
    None
}

/// Why importing `path` from `module` runs up the layers, if it does.
fn arrow_up(module: &[String], path: &[String]) -> Option<String> {
    let rank = |m: Option<&String>| {
        let name = m.map_or("", String::as_str);
        LAYERS
            .iter()
            .find(|(n, _)| *n == name)
            .map_or(0, |(_, r)| *r)
    };
    let (from, to) = (module.first(), path.first());
    if from == to || to.is_none() {
        return None;
    }
    let (rf, rt) = (rank(from), rank(to));
    (rt >= rf).then(|| {
        format!(
            "{} (layer {rf}) imports {} (layer {rt})",
            from.map_or("the crate root", String::as_str),
            path.join("::")
        )
    })
}

/// The import circles of `graph` (its strongly connected components of
/// more than one file), each in a loop order.
fn circles(graph: &BTreeMap<PathBuf, BTreeSet<PathBuf>>) -> Vec<Vec<PathBuf>> {
    // Tarjan's algorithm, iterative enough for a crate's few hundred files.
    struct State<'a> {
        graph: &'a BTreeMap<PathBuf, BTreeSet<PathBuf>>,
        index: BTreeMap<&'a PathBuf, usize>,
        low: BTreeMap<&'a PathBuf, usize>,
        stack: Vec<&'a PathBuf>,
        on: BTreeSet<&'a PathBuf>,
        next: usize,
        out: Vec<Vec<PathBuf>>,
    }
    fn visit<'a>(s: &mut State<'a>, v: &'a PathBuf) {
        s.index.insert(v, s.next);
        s.low.insert(v, s.next);
        s.next += 1;
        s.stack.push(v);
        s.on.insert(v);
        let graph = s.graph;
        for w in graph.get(v).into_iter().flatten() {
            let Some((w, _)) = graph.get_key_value(w) else {
                continue;
            };
            if !s.index.contains_key(w) {
                visit(s, w);
                let lw = s.low[w];
                let lv = s.low.get_mut(v).expect("visited");
                *lv = (*lv).min(lw);
            } else if s.on.contains(w) {
                let iw = s.index[w];
                let lv = s.low.get_mut(v).expect("visited");
                *lv = (*lv).min(iw);
            }
        }
        if s.low[v] == s.index[v] {
            let mut scc = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on.remove(w);
                scc.push(w.clone());
                if w == v {
                    break;
                }
            }
            if scc.len() > 1 {
                scc.reverse();
                s.out.push(scc);
            }
        }
    }
    let mut s = State {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on: BTreeSet::new(),
        next: 0,
        out: Vec::new(),
    };
    for v in graph.keys() {
        if !s.index.contains_key(v) {
            visit(&mut s, v);
        }
    }
    s.out
}

/// Collects a file's functions (name, first line, lines) and the module
/// paths it names (from the crate's root, with the line).
struct Visitor {
    module: Vec<String>,
    children: BTreeSet<String>,
    paths: Vec<(Vec<String>, usize)>,
    fns: Vec<(String, usize, usize)>,
}

impl Visitor {
    /// `segments` as a path from the crate's root, when it is one of ours.
    fn absolute(&self, segments: &[String]) -> Option<Vec<String>> {
        let first = segments.first()?;
        match first.as_str() {
            "crate" => Some(segments[1..].to_vec()),
            "self" => Some(self.module.iter().chain(&segments[1..]).cloned().collect()),
            "super" => {
                let mut base = self.module.clone();
                let mut rest = segments;
                while rest.first().is_some_and(|s| s == "super") {
                    base.pop()?;
                    rest = &rest[1..];
                }
                Some(base.into_iter().chain(rest.iter().cloned()).collect())
            }
            child if self.children.contains(child) && segments.len() > 1 => {
                Some(self.module.iter().chain(segments).cloned().collect())
            }
            _ => None,
        }
    }

    fn note(&mut self, segments: &[String], line: usize) {
        if let Some(p) = self.absolute(segments) {
            self.paths.push((p, line));
        }
    }

    fn function(&mut self, name: &syn::Ident, start: proc_macro2::Span, block: &syn::Block) {
        let first = start.start().line;
        let last = block.brace_token.span.close().end().line;
        self.fns
            .push((name.to_string(), first, last.saturating_sub(first) + 1));
    }
}

/// The paths a `use` tree names, each whole.
fn use_paths(tree: &syn::UseTree, prefix: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
    match tree {
        syn::UseTree::Path(p) => {
            prefix.push(p.ident.to_string());
            use_paths(&p.tree, prefix, out);
            prefix.pop();
        }
        syn::UseTree::Name(n) => {
            let mut p = prefix.clone();
            if n.ident != "self" {
                p.push(n.ident.to_string());
            }
            out.push(p);
        }
        syn::UseTree::Rename(r) => {
            let mut p = prefix.clone();
            p.push(r.ident.to_string());
            out.push(p);
        }
        syn::UseTree::Glob(_) => out.push(prefix.clone()),
        syn::UseTree::Group(g) => {
            for t in &g.items {
                use_paths(t, prefix, out);
            }
        }
    }
}

impl<'ast> Visit<'ast> for Visitor {
    fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
        // An inline module (`mod tests { .. }`): its paths are relative to
        // it (`use super::*` is this file).
        if m.content.is_some() {
            self.module.push(m.ident.to_string());
            let children = std::mem::take(&mut self.children);
            syn::visit::visit_item_mod(self, m);
            self.children = children;
            self.module.pop();
        }
    }

    fn visit_item_use(&mut self, u: &'ast syn::ItemUse) {
        let mut out = Vec::new();
        use_paths(&u.tree, &mut Vec::new(), &mut out);
        let line = u.use_token.span.start().line;
        for p in out {
            self.note(&p, line);
        }
    }

    // `pub(super)` names no import.
    fn visit_visibility(&mut self, _: &'ast syn::Visibility) {}

    fn visit_path(&mut self, p: &'ast syn::Path) {
        let segments: Vec<String> = p.segments.iter().map(|s| s.ident.to_string()).collect();
        if let Some(first) = p.segments.first() {
            self.note(&segments, first.ident.span().start().line);
        }
        syn::visit::visit_path(self, p);
    }

    fn visit_item_fn(&mut self, f: &'ast syn::ItemFn) {
        self.function(&f.sig.ident, f.sig.fn_token.span, &f.block);
        syn::visit::visit_item_fn(self, f);
    }

    fn visit_impl_item_fn(&mut self, f: &'ast syn::ImplItemFn) {
        self.function(&f.sig.ident, f.sig.fn_token.span, &f.block);
        syn::visit::visit_impl_item_fn(self, f);
    }

    fn visit_trait_item_fn(&mut self, f: &'ast syn::TraitItemFn) {
        if let Some(block) = &f.default {
            self.function(&f.sig.ident, f.sig.fn_token.span, block);
        }
        syn::visit::visit_trait_item_fn(self, f);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn crate_with(files: &[(&str, &str)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for (name, text) in files {
            let path = dir.path().join(name);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        dir
    }

    fn long_fn(lines: usize) -> String {
        let mut s = String::from("pub fn long() {\n");
        for i in 0..lines - 2 {
            s.push_str(&format!("    let _x{i} = {i};\n"));
        }
        s.push_str("}\n");
        s
    }

    /// Each rule fails on the smallest crate that breaks it, and passes
    /// on one that keeps it.
    #[test]
    fn each_rule_fails_when_broken() {
        let ok = crate_with(&[
            ("lib.rs", "pub mod config;\npub mod engine;\n"),
            ("config/mod.rs", "pub struct Config;\n"),
            (
                "engine/mod.rs",
                "use crate::config::Config;\npub mod a;\npub fn f(_: Config) { a::g() }\n",
            ),
            ("engine/a.rs", &long_fn(MAX_FN_LINES).replace("long", "g")),
        ]);
        let r = check(&[ok.path().to_owned()], ok.path()).unwrap();
        assert!(r.broken.is_empty(), "{:?}", r.broken);
        assert_eq!(r.near.len(), 1, "{:?}", r.near);

        let long = crate_with(&[("lib.rs", &long_fn(MAX_FN_LINES + 1))]);
        let r = check(&[long.path().to_owned()], long.path()).unwrap();
        assert_eq!(r.broken.len(), 1);
        assert!(r.broken[0].contains("101 lines"), "{:?}", r.broken);

        let circle = crate_with(&[
            ("lib.rs", "pub mod engine;\n"),
            ("engine/mod.rs", "pub mod a;\npub mod b;\n"),
            ("engine/a.rs", "use super::b::B;\npub struct A;\n"),
            ("engine/b.rs", "pub struct B(crate::engine::a::A);\n"),
        ]);
        let r = check(&[circle.path().to_owned()], circle.path()).unwrap();
        assert_eq!(r.broken.len(), 1, "{:?}", r.broken);
        assert!(r.broken[0].starts_with("import circle"), "{:?}", r.broken);

        let up = crate_with(&[
            ("lib.rs", "pub mod config;\npub mod engine;\n"),
            ("config/mod.rs", "pub const N: u64 = crate::engine::N;\n"),
            ("engine/mod.rs", "pub const N: u64 = 1;\n"),
        ]);
        let r = check(&[up.path().to_owned()], up.path()).unwrap();
        assert_eq!(r.broken.len(), 1, "{:?}", r.broken);
        assert!(r.broken[0].contains("arrow up"), "{:?}", r.broken);
    }

    /// The repository keeps the rules (what CI runs).
    #[test]
    fn the_repository_keeps_its_shape() {
        let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let src = repo.join("src");
        let r = check(&[src.clone(), repo.join("read/src")], &src).unwrap();
        assert!(r.broken.is_empty(), "{}", r.broken.join("\n"));
    }
}
