//! No import cycle between the crate's source files (RULES: a file's
//! imports point one way; a `mod.rs` that re-exports its children while
//! they import from it is a cycle). The crate's own check, run by every
//! `cargo test`, so CI needs nothing installed: it reads every `.rs` file
//! under `src/`, and under `tests/cli/` and `tests/common/`, the end-to-end
//! tests' two trees (but files named `tests*.rs` and the code after a
//! `#[cfg(test)] mod NAME {`), takes each path it names (the leaves of
//! its `use` trees, and `crate::`, `super::` and `self::` paths in its
//! code), resolves it to the file that defines the module (through the
//! `pub use` re-exports of a `mod.rs`, to the file that really defines the
//! name), and fails naming every group of files that reach each other.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Cycles that others are removing, tolerated inside these folders (from
/// the repository's root: `src/engine/s3/`) only until they land; a cycle
/// anywhere else fails. None now: issue 50 removed
/// engine/s3/'s (and engine/s3/swift/'s).
const BEING_REMOVED: &[(&str, &str)] = &[];

/// A module: the path of names from the crate root (`["studies", "suite"]`).
type Module = Vec<String>;

/// The crate's files: each module's file, whether it is a folder's
/// (`mod.rs`, `lib.rs`, `main.rs`), its text and its declared children.
struct Tree {
    files: BTreeMap<Module, PathBuf>,
    folder: BTreeMap<Module, bool>,
    text: BTreeMap<Module, String>,
    children: BTreeMap<Module, BTreeSet<String>>,
}

impl Tree {
    fn read(src: &Path) -> Tree {
        let mut tree =
            Tree { files: BTreeMap::new(), folder: BTreeMap::new(), text: BTreeMap::new(), children: BTreeMap::new() };
        let mut dirs = vec![src.to_path_buf()];
        while let Some(dir) = dirs.pop() {
            for entry in std::fs::read_dir(&dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    dirs.push(path);
                    continue;
                }
                let name = path.file_name().unwrap().to_string_lossy().to_string();
                if !name.ends_with(".rs") || name.starts_with("tests") {
                    continue;
                }
                let rel = path.strip_prefix(src).unwrap().with_extension("");
                let mut module: Module = rel.iter().map(|p| p.to_string_lossy().to_string()).collect();
                let folder = matches!(module.last().map(String::as_str), Some("mod" | "lib" | "main"));
                if folder {
                    module.pop();
                }
                if module.is_empty() && name == "main.rs" {
                    module.push("<main>".into());
                }
                let text = code_of(&std::fs::read_to_string(&path).unwrap());
                tree.children.insert(module.clone(), declared_children(&text));
                tree.text.insert(module.clone(), text);
                tree.folder.insert(module.clone(), folder);
                tree.files.insert(module, path);
            }
        }
        tree
    }

    /// The module `parts` (as written in `module`) names, from the root;
    /// None for an outside crate's path.
    fn absolute(&self, module: &Module, parts: &[String]) -> Option<Vec<String>> {
        let folder = self.folder.get(module).copied().unwrap_or(false);
        let here = module.clone();
        let parent: Vec<String> =
            if folder { module.clone() } else { module[..module.len().saturating_sub(1)].to_vec() };
        let (head, rest) = parts.split_first()?;
        match head.as_str() {
            "crate" => Some(rest.to_vec()),
            "self" => Some([here, rest.to_vec()].concat()),
            "super" => {
                let (mut base, mut rest) = (parent, rest);
                while rest.first().is_some_and(|p| p == "super") {
                    base.pop();
                    rest = &rest[1..];
                }
                Some([base, rest.to_vec()].concat())
            }
            child if self.children.get(module).is_some_and(|c| c.contains(child)) => {
                Some([here, parts.to_vec()].concat())
            }
            _ => None,
        }
    }

    /// The longest prefix of `parts` that is a file's module.
    fn file_of(&self, parts: &[String]) -> Option<Module> {
        (0..=parts.len()).rev().map(|i| parts[..i].to_vec()).find(|m| self.files.contains_key(m))
    }

    /// The file that defines `name` when `module` re-exports it (`pub use`),
    /// followed through further re-exports.
    fn defined_in(&self, module: &Module, name: &str, seen: &mut Vec<Module>) -> Option<Module> {
        for tree in statements(&self.text[module], true) {
            for leaf in leaves(&tree) {
                if leaf.last().map(String::as_str) != Some(name) {
                    continue;
                }
                let Some(full) = self.absolute(module, &leaf) else { continue };
                let Some(file) = self.file_of(&full[..full.len() - 1]) else { continue };
                if &file != module && !seen.contains(&file) {
                    seen.push(module.clone());
                    return self.defined_in(&file, name, seen).or(Some(file));
                }
            }
        }
        None
    }

    /// Every file each file names, with the names that tie them.
    fn edges(&self) -> BTreeMap<Module, BTreeMap<Module, BTreeSet<String>>> {
        let mut out = BTreeMap::new();
        for module in self.files.keys() {
            let mut targets: BTreeMap<Module, BTreeSet<String>> = BTreeMap::new();
            for leaf in named_paths(&self.text[module]) {
                let Some(full) = self.absolute(module, &leaf) else { continue };
                let Some(mut file) = self.file_of(&full) else { continue };
                if file.is_empty() {
                    continue;
                }
                if self.folder[&file] && full.len() > file.len() {
                    file = self.defined_in(&file, &full[file.len()], &mut Vec::new()).unwrap_or(file);
                }
                if &file != module {
                    targets.entry(file).or_default().insert(full.last().cloned().unwrap_or_default());
                }
            }
            out.insert(module.clone(), targets);
        }
        out
    }
}

/// The text that counts: up to the first `#[cfg(test)] mod NAME {`, each
/// line's `//` comment left out.
fn code_of(text: &str) -> String {
    let mut cut = text.len();
    let mut from = 0;
    while let Some(at) = text[from..].find("#[cfg(test)]") {
        let start = from + at;
        let after = text[start + "#[cfg(test)]".len()..].trim_start();
        let after = after.strip_prefix("pub").map_or(after, |rest| match rest.trim_start().strip_prefix('(') {
            Some(inner) => inner.split_once(')').map_or(rest, |(_, r)| r),
            None => rest,
        });
        let after = after.trim_start();
        if let Some(rest) = after.strip_prefix("mod") {
            let rest = rest.trim_start();
            let name_len = rest.find(|c: char| !(c.is_alphanumeric() || c == '_')).unwrap_or(rest.len());
            if name_len > 0 && rest[name_len..].trim_start().starts_with('{') {
                cut = start;
                break;
            }
        }
        from = start + 1;
    }
    text[..cut].lines().map(|l| l.split_once("//").map_or(l, |(code, _)| code)).collect::<Vec<_>>().join("\n")
}

/// The modules a file declares (`mod NAME;`, `pub(crate) mod NAME;`).
fn declared_children(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for line in text.lines() {
        let mut rest = line.trim_start();
        if let Some(r) = rest.strip_prefix("pub") {
            rest = r.trim_start();
            if let Some(r) = rest.strip_prefix('(') {
                rest = r.split_once(')').map_or("", |(_, r)| r).trim_start();
            }
        }
        if let Some(r) = rest.strip_prefix("mod ") {
            let r = r.trim();
            if let Some(name) = r.strip_suffix(';') {
                let name = name.trim();
                if !name.is_empty() && name.chars().all(|c| c.is_alphanumeric() || c == '_') {
                    out.insert(name.to_string());
                }
            }
        }
    }
    out
}

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Whether `word` starts at byte `at` of `text` as a whole word.
fn word_at(text: &str, at: usize, word: &str) -> bool {
    text[at..].starts_with(word)
        && !text[..at].chars().next_back().is_some_and(is_ident)
        && !text[at + word.len()..].chars().next().is_some_and(is_ident)
}

/// The trees of a file's `use` statements (only `pub use` ones with
/// `public`): the text between `use` and `;`.
fn statements(text: &str, public: bool) -> Vec<String> {
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(at) = text[from..].find("use") {
        let start = from + at;
        from = start + 3;
        if !word_at(text, start, "use") || !text[from..].starts_with(char::is_whitespace) {
            continue;
        }
        if public {
            let before = text[..start].trim_end();
            let visible = before.ends_with("pub")
                && !before[..before.len() - 3].chars().next_back().is_some_and(is_ident)
                || (before.ends_with(')') && before.rfind("pub(").is_some_and(|p| !before[p..].contains('\n')));
            if !visible {
                continue;
            }
        }
        if let Some(end) = text[from..].find(';') {
            out.push(text[from..from + end].to_string());
        }
    }
    out
}

/// Every path a `use` tree names, one per leaf (`a::{b, c::d as e}` is
/// `a::b` and `a::c::d`; a glob ends at its module).
fn leaves(tree: &str) -> Vec<Vec<String>> {
    let tree = tree.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut out = Vec::new();
    flatten(tree.trim(), &[], &mut out);
    out
}

fn flatten(tree: &str, prefix: &[String], out: &mut Vec<Vec<String>>) {
    let tree = tree.trim();
    if let (Some(open), true) = (tree.find('{'), tree.ends_with('}')) {
        let base: Vec<String> =
            tree[..open].split("::").map(str::trim).filter(|p| !p.is_empty()).map(str::to_string).collect();
        let prefix = [prefix.to_vec(), base].concat();
        let (mut depth, mut item) = (0, String::new());
        for c in tree[open + 1..tree.len() - 1].chars() {
            match c {
                ',' if depth == 0 => {
                    if !item.trim().is_empty() {
                        flatten(&item, &prefix, out);
                    }
                    item.clear();
                    continue;
                }
                '{' => depth += 1,
                '}' => depth -= 1,
                _ => {}
            }
            item.push(c);
        }
        if !item.trim().is_empty() {
            flatten(&item, &prefix, out);
        }
        return;
    }
    let tree = tree.split(" as ").next().unwrap_or(tree);
    let parts = tree.split("::").map(str::trim).filter(|p| !p.is_empty() && *p != "*").map(str::to_string);
    out.push([prefix.to_vec(), parts.collect()].concat());
}

/// Every path a file names: its `use` trees' leaves, and each
/// `crate::...`, `super::...` or `self::...` in its code.
fn named_paths(text: &str) -> Vec<Vec<String>> {
    let mut out: Vec<Vec<String>> = statements(text, false).iter().flat_map(|t| leaves(t)).collect();
    // Left to right, each path taken whole: `super::super::x` is one path,
    // not also `super::x`.
    let mut at = 0;
    while at < text.len() {
        let Some(head) = ["crate", "super", "self"].into_iter().find(|h| word_at(text, at, h)) else {
            at += text[at..].chars().next().map_or(1, char::len_utf8);
            continue;
        };
        let mut parts = vec![head.to_string()];
        let mut i = at + head.len();
        while text[i..].starts_with("::") {
            let name_start = i + 2;
            let len = text[name_start..].find(|c: char| !is_ident(c)).unwrap_or(text.len() - name_start);
            if len == 0 {
                break;
            }
            parts.push(text[name_start..name_start + len].to_string());
            i = name_start + len;
        }
        if parts.len() > 1 {
            out.push(parts);
            at = i;
        } else {
            at += head.len();
        }
    }
    out
}

/// The groups of more than one file that reach each other (Tarjan).
fn cycles(edges: &BTreeMap<Module, BTreeMap<Module, BTreeSet<String>>>) -> Vec<Vec<Module>> {
    struct Walk<'a> {
        edges: &'a BTreeMap<Module, BTreeMap<Module, BTreeSet<String>>>,
        index: BTreeMap<Module, usize>,
        low: BTreeMap<Module, usize>,
        stack: Vec<Module>,
        found: Vec<Vec<Module>>,
    }
    impl Walk<'_> {
        fn visit(&mut self, v: &Module) {
            let n = self.index.len();
            self.index.insert(v.clone(), n);
            self.low.insert(v.clone(), n);
            self.stack.push(v.clone());
            for w in self.edges.get(v).into_iter().flat_map(|t| t.keys()) {
                if !self.index.contains_key(w) {
                    self.visit(w);
                    let low = self.low[v].min(self.low[w]);
                    self.low.insert(v.clone(), low);
                } else if self.stack.contains(w) {
                    let low = self.low[v].min(self.index[w]);
                    self.low.insert(v.clone(), low);
                }
            }
            if self.low[v] == self.index[v] {
                let mut group = Vec::new();
                while let Some(w) = self.stack.pop() {
                    let last = &w == v;
                    group.push(w);
                    if last {
                        break;
                    }
                }
                if group.len() > 1 {
                    group.sort();
                    self.found.push(group);
                }
            }
        }
    }
    let mut walk = Walk { edges, index: BTreeMap::new(), low: BTreeMap::new(), stack: Vec::new(), found: Vec::new() };
    for v in edges.keys() {
        if !walk.index.contains_key(v) {
            walk.visit(v);
        }
    }
    walk.found
}

/// Each cycle of the tree under `src`, as its files (relative to `src`)
/// and the names that tie them.
fn cycles_under(src: &Path) -> Vec<(Vec<String>, Vec<String>)> {
    let tree = Tree::read(src);
    let edges = tree.edges();
    let name = |m: &Module| tree.files[m].strip_prefix(src).unwrap().to_string_lossy().to_string();
    cycles(&edges)
        .into_iter()
        .map(|group| {
            let mut ties = Vec::new();
            for m in &group {
                for (t, names) in &edges[m] {
                    if group.contains(t) {
                        let names: Vec<&str> = names.iter().map(String::as_str).collect();
                        ties.push(format!("{} -> {}: {}", name(m), name(t), names.join(", ")));
                    }
                }
            }
            let mut files: Vec<String> = group.iter().map(name).collect();
            files.sort();
            (files, ties)
        })
        .collect()
}

/// The crate's source, and the two trees of its end-to-end tests (the
/// test binary's modules, and the helpers it includes by path).
const TREES: [&str; 3] = ["src", "tests/cli", "tests/common"];

#[test]
fn no_file_imports_from_a_file_that_imports_from_it() {
    let tolerated =
        |files: &[String]| BEING_REMOVED.iter().any(|(folder, _)| files.iter().all(|f| f.starts_with(folder)));
    let found: Vec<String> = TREES
        .iter()
        .flat_map(|tree| {
            let root = Path::new(env!("CARGO_MANIFEST_DIR")).join(tree);
            let in_tree = move |f: &String| format!("{tree}/{f}");
            cycles_under(&root).into_iter().map(move |(files, ties)| (files.iter().map(in_tree).collect(), ties))
        })
        .filter(|(files, _): &(Vec<String>, Vec<String>)| !tolerated(files))
        .map(|(files, ties)| format!("{} files: {}\n  {}", files.len(), files.join(", "), ties.join("\n  ")))
        .collect();
    assert!(
        found.is_empty(),
        "import cycles between files (move what both use to a file below them, an impl next to its type):\n{}",
        found.join("\n")
    );
}

/// The check on small trees: a child importing what its `mod.rs` defines
/// while the `mod.rs` re-exports the child is a cycle; the same name
/// moved to a file below both is not; a re-export is followed to the file
/// that defines the name, and test code is left out.
#[test]
fn the_check_finds_a_cycle_through_a_mod_rs_and_none_without() {
    let write = |dir: &Path, files: &[(&str, &str)]| {
        for (path, text) in files {
            let p = dir.join(path);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        }
    };
    let cyclic = tempfile::tempdir().unwrap();
    write(
        cyclic.path(),
        &[
            ("lib.rs", "pub mod a;\n"),
            ("a/mod.rs", "mod b;\npub use b::Thing;\npub const KIND: u8 = 1;\n"),
            ("a/b.rs", "use super::KIND;\npub struct Thing(u8);\n"),
        ],
    );
    let found = cycles_under(cyclic.path());
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].0, ["a/b.rs", "a/mod.rs"]);
    assert!(found[0].1.contains(&"a/b.rs -> a/mod.rs: KIND".to_string()), "{:?}", found[0].1);
    let fixed = tempfile::tempdir().unwrap();
    write(
        fixed.path(),
        &[
            ("lib.rs", "pub mod a;\n"),
            ("a/mod.rs", "mod b;\nmod kind;\npub use b::Thing;\npub use kind::KIND;\n"),
            ("a/kind.rs", "pub const KIND: u8 = 1;\n"),
            // Named through the re-export in mod.rs: resolved to kind.rs.
            (
                "a/b.rs",
                "use super::KIND;\npub struct Thing(u8);\n#[cfg(test)]\nmod tests {\n    use crate::a::Thing;\n}\n",
            ),
            ("a/tests.rs", "use crate::a::b::Thing;\n"),
        ],
    );
    assert_eq!(cycles_under(fixed.path()), Vec::new());
}
