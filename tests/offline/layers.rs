//! The layers of `src/` and `sim/src/`, read from the source files as text (no compiler):
//! no import circle between files, and no API client, async runtime or I/O module in a pure
//! folder. A file's imports are its `use` trees and inline `crate::`/`super::`/`self::` paths,
//! resolved to the file that defines the named module or item (through `pub use` re-exports);
//! a folder's `mod.rs` counts as the folder's file. Inline `mod tests` blocks and out-of-line
//! test files are left out: tests may read anything.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// Folders whose files must stay pure, relative to `src/`.
const PURE: &[&str] = &[
    "child",
    "crd",
    "reconcile/plan",
    "reconcile/build",
    "kueue/plan",
];

/// What a pure file may not name: an API client, the async runtime, the I/O layers.
const IMPURE_WORDS: &[&str] = &[
    "kube::Api",
    "kube::Client",
    "Client",
    "Api<",
    "tokio",
    "std::fs",
    "std::net",
];

#[test]
fn src_has_no_import_circle() {
    let crate_ = Crate::read(&root().join("src"));
    let circles = crate_.circles();
    assert!(
        circles.is_empty(),
        "import circles in src/:\n{}",
        circles.join("\n")
    );
}

#[test]
fn sim_has_no_import_circle() {
    let crate_ = Crate::read(&root().join("sim/src"));
    let circles = crate_.circles();
    assert!(
        circles.is_empty(),
        "import circles in sim/src/:\n{}",
        circles.join("\n")
    );
}

#[test]
fn pure_folders_name_no_client_runtime_or_io_layer() {
    let crate_ = Crate::read(&root().join("src"));
    let mut found = Vec::new();
    for (file, module) in &crate_.files {
        if !is_pure(file) {
            continue;
        }
        for word in IMPURE_WORDS {
            if mentions(&module.code, word) {
                found.push(format!("{file} names `{word}`"));
            }
        }
        for target in &module.imports {
            if !is_pure(target) {
                found.push(format!("{file} imports {target}, which is not pure"));
            }
        }
    }
    assert!(
        found.is_empty(),
        "pure folders reach outside:\n{}",
        found.join("\n")
    );
}

/// The checker itself finds what it is meant to find.
#[test]
fn the_checker_sees_a_circle_and_a_client() {
    let dir = std::env::temp_dir().join(format!("layers-{}", std::process::id()));
    let write = |path: &str, text: &str| {
        let p = dir.join(path);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, text).unwrap();
    };
    write("lib.rs", "pub mod a;\npub mod b;\npub mod crd;\n");
    write("a.rs", "use crate::b::{B, other::C};\npub struct A;\n");
    write("b/mod.rs", "pub mod other;\npub struct B;\n");
    write(
        "b/other.rs",
        "pub struct C;\nfn f() -> crate::a::A { crate::a::A }\n",
    );
    write("crd/mod.rs", "pub mod spec;\npub use spec::*;\n");
    write("crd/spec.rs", "use kube::Client;\npub struct Spec;\n");
    let crate_ = Crate::read(&dir);
    assert_eq!(crate_.circles(), ["a.rs ↔ b/other.rs"]);
    assert!(mentions(&crate_.files["crd/spec.rs"].code, "Client"));
    assert!(!mentions("struct ClientSide;", "Client"));
    fs::remove_dir_all(&dir).unwrap();
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn is_pure(file: &str) -> bool {
    PURE.iter()
        .any(|p| file.starts_with(&format!("{p}/")) || file == format!("{p}.rs"))
}

/// `word` as a whole path or name in `code` (not part of a longer identifier).
fn mentions(code: &str, word: &str) -> bool {
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    code.match_indices(word).any(|(i, _)| {
        let before = code[..i].chars().next_back();
        let after = code[i + word.len()..].chars().next();
        let starts_inside = before.is_some_and(ident);
        let ends_inside = word.ends_with(ident) && after.is_some_and(ident);
        !(starts_inside || ends_inside)
    })
}

/// One source file: its module path, its code without comments and strings, and the files it
/// imports.
struct Module {
    path: Vec<String>,
    code: String,
    imports: BTreeSet<String>,
}

struct Crate {
    /// By file, relative to the crate's `src/`.
    files: BTreeMap<String, Module>,
    /// Module path → file.
    by_path: BTreeMap<Vec<String>, String>,
}

impl Crate {
    fn read(src: &Path) -> Self {
        let mut files = BTreeMap::new();
        for file in rust_files(src) {
            let rel = file
                .strip_prefix(src)
                .unwrap()
                .to_string_lossy()
                .replace('\\', "/");
            if rel == "main.rs" || is_test_file(&rel) {
                continue;
            }
            let text = fs::read_to_string(&file).unwrap();
            let code = without_tests(&strip_comments_and_strings(&text));
            files.insert(
                rel.clone(),
                Module {
                    path: module_path(&rel),
                    code,
                    imports: BTreeSet::new(),
                },
            );
        }
        let by_path = files
            .iter()
            .map(|(f, m)| (m.path.clone(), f.clone()))
            .collect();
        let mut crate_ = Crate { files, by_path };
        let imports: Vec<(String, BTreeSet<String>)> = crate_
            .files
            .iter()
            .map(|(f, m)| (f.clone(), crate_.imports_of(f, m)))
            .collect();
        for (f, i) in imports {
            crate_.files.get_mut(&f).unwrap().imports = i;
        }
        crate_
    }

    fn imports_of(&self, file: &str, module: &Module) -> BTreeSet<String> {
        let mut out = BTreeSet::new();
        for path in paths_in(&without_reexports(&module.code, &module.path, self)) {
            if let Some(target) = self.resolve(&module.path, &path, 0)
                && target != file
            {
                out.insert(target);
            }
        }
        out
    }

    /// The file that defines what `path` (as written in module `from`) names.
    fn resolve(&self, from: &[String], path: &[String], depth: usize) -> Option<String> {
        let mut abs: Vec<String> = match path.first()?.as_str() {
            "crate" => Vec::new(),
            "self" => from.to_vec(),
            "super" => from[..from.len().checked_sub(1)?].to_vec(),
            _ => {
                // A relative path starting at a child module; anything else is another crate.
                let mut child = from.to_vec();
                child.push(path[0].clone());
                if !self.by_path.contains_key(&child) {
                    return None;
                }
                from.to_vec()
            }
        };
        let mut rest = &path[usize::from(matches!(path[0].as_str(), "crate" | "self" | "super"))..];
        while rest.first().is_some_and(|s| s == "super") {
            abs.pop();
            rest = &rest[1..];
        }
        // The longest prefix that is a module file; the next segment may be an item it
        // re-exports from elsewhere.
        for segment in rest {
            let mut next = abs.clone();
            next.push(segment.clone());
            if self.by_path.contains_key(&next) {
                abs = next;
                continue;
            }
            let module = self.by_path.get(&abs)?;
            return Some(
                self.defining_file(&abs, segment, depth)
                    .unwrap_or_else(|| module.clone()),
            );
        }
        self.by_path.get(&abs).cloned()
    }

    /// Follows `pub use` of `module` to the file that defines `item`.
    fn defining_file(&self, module: &[String], item: &str, depth: usize) -> Option<String> {
        if depth > 8 {
            return None;
        }
        let file = self.by_path.get(module)?;
        let code = &self.files[file].code;
        if defines(code, item) {
            return Some(file.clone());
        }
        for used in pub_uses(code) {
            let last = used.last()?;
            if last == item || last == "*" {
                let mut target = used.clone();
                if last == "*" {
                    target.pop();
                }
                target.push(item.to_string());
                if let Some(found) = self.resolve(module, &target, depth + 1) {
                    let found_module = &self.files[&found];
                    if defines(&found_module.code, item) || last == item {
                        return Some(found);
                    }
                }
            }
        }
        None
    }

    /// Every group of files that import each other round a circle (a strongly connected
    /// component of the import graph), as `a.rs ↔ b.rs ↔ …`.
    fn circles(&self) -> Vec<String> {
        let names: Vec<&String> = self.files.keys().collect();
        let index: BTreeMap<&String, usize> =
            names.iter().enumerate().map(|(i, n)| (*n, i)).collect();
        let edges: Vec<Vec<usize>> = names
            .iter()
            .map(|n| {
                self.files[*n]
                    .imports
                    .iter()
                    .filter_map(|t| index.get(t).copied())
                    .collect()
            })
            .collect();
        let mut tarjan = Tarjan {
            edges: &edges,
            index: vec![None; names.len()],
            low: vec![0; names.len()],
            stack: Vec::new(),
            on_stack: vec![false; names.len()],
            next: 0,
            groups: Vec::new(),
        };
        for v in 0..names.len() {
            if tarjan.index[v].is_none() {
                tarjan.visit(v);
            }
        }
        let mut out: Vec<String> = tarjan
            .groups
            .into_iter()
            .filter(|g| g.len() > 1)
            .map(|g| {
                let mut files: Vec<&str> = g.iter().map(|&i| names[i].as_str()).collect();
                files.sort();
                files.join(" ↔ ")
            })
            .collect();
        out.sort();
        out
    }
}

/// Tarjan's strongly connected components.
struct Tarjan<'a> {
    edges: &'a [Vec<usize>],
    index: Vec<Option<usize>>,
    low: Vec<usize>,
    stack: Vec<usize>,
    on_stack: Vec<bool>,
    next: usize,
    groups: Vec<Vec<usize>>,
}

impl Tarjan<'_> {
    fn visit(&mut self, v: usize) {
        self.index[v] = Some(self.next);
        self.low[v] = self.next;
        self.next += 1;
        self.stack.push(v);
        self.on_stack[v] = true;
        for &w in &self.edges[v] {
            match self.index[w] {
                None => {
                    self.visit(w);
                    self.low[v] = self.low[v].min(self.low[w]);
                }
                Some(i) if self.on_stack[w] => self.low[v] = self.low[v].min(i),
                Some(_) => {}
            }
        }
        if Some(self.low[v]) == self.index[v] {
            let mut group = Vec::new();
            while let Some(w) = self.stack.pop() {
                self.on_stack[w] = false;
                group.push(w);
                if w == v {
                    break;
                }
            }
            self.groups.push(group);
        }
    }
}

fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(d) = dirs.pop() {
        for entry in fs::read_dir(&d).unwrap() {
            let p = entry.unwrap().path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|e| e == "rs") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// Out-of-line unit tests: `tests.rs`, `*_tests.rs`, or anything under a `tests/` folder.
fn is_test_file(rel: &str) -> bool {
    let name = rel.rsplit('/').next().unwrap_or(rel);
    name == "tests.rs" || name.ends_with("_tests.rs") || rel.split('/').any(|s| s == "tests")
}

/// `reconcile/plan/mod.rs` → `[reconcile, plan]`; `lib.rs` → `[]`.
fn module_path(rel: &str) -> Vec<String> {
    let rel = rel.trim_end_matches(".rs");
    let mut parts: Vec<String> = rel.split('/').map(str::to_string).collect();
    if matches!(parts.last().map(String::as_str), Some("mod" | "lib")) {
        parts.pop();
    }
    parts
}

/// The code with comments, string and char literals blanked (so paths in docs don't count).
fn strip_comments_and_strings(text: &str) -> String {
    let b: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        let next = b.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < b.len() && b[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < b.len() {
                if b[i] == '/' && b.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if b[i] == '*' && b.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
        } else if c == 'r'
            && (next == Some('#') || next == Some('"'))
            && !b
                .get(i.wrapping_sub(1))
                .is_some_and(|p| p.is_alphanumeric() || *p == '_')
        {
            // Raw string r#"..."#.
            let mut j = i + 1;
            let mut hashes = 0;
            while b.get(j) == Some(&'#') {
                hashes += 1;
                j += 1;
            }
            if b.get(j) != Some(&'"') {
                out.push(c);
                i += 1;
                continue;
            }
            j += 1;
            loop {
                if j >= b.len() {
                    break;
                }
                if b[j] == '"' && (0..hashes).all(|k| b.get(j + 1 + k) == Some(&'#')) {
                    j += 1 + hashes;
                    break;
                }
                j += 1;
            }
            out.push_str("\"\"");
            i = j;
        } else if c == '"' {
            i += 1;
            while i < b.len() && b[i] != '"' {
                if b[i] == '\\' {
                    i += 1;
                }
                if b.get(i) == Some(&'\n') {
                    out.push('\n');
                }
                i += 1;
            }
            i += 1;
            out.push_str("\"\"");
        } else if c == '\''
            && (b.get(i + 2) == Some(&'\'')
                || (next == Some('\\') && b.get(i + 3).is_some_and(|&x| x == '\'')))
        {
            // A char literal ('a' or '\n'); lifetimes ('a) are left alone.
            i += if next == Some('\\') { 4 } else { 3 };
            out.push_str("' '");
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

/// The code without `#[cfg(test)]`-gated inline modules (their `super::*` is no dependency).
fn without_tests(code: &str) -> String {
    let mut out = String::new();
    let mut rest = code;
    while let Some(at) = rest.find("#[cfg(test)]") {
        out.push_str(&rest[..at]);
        let after = &rest[at..];
        // Only a `mod NAME {` block right after the attribute is cut; other items stay.
        let body = after["#[cfg(test)]".len()..].trim_start();
        let is_block = body.starts_with("mod ")
            && body
                .find('{')
                .is_some_and(|b| body.find(';').is_none_or(|s| b < s));
        if !is_block {
            out.push_str("#[cfg(test)]");
            rest = &after["#[cfg(test)]".len()..];
            continue;
        }
        let open = after.find('{').unwrap();
        let mut depth = 0;
        let mut end = after.len();
        for (i, ch) in after[open..].char_indices() {
            match ch {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = open + i + 1;
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

/// The code without `pub use` statements of the module's own children: a folder's `mod.rs`
/// showing its children's items is their facade, not a dependency on them.
fn without_reexports(code: &str, module: &[String], crate_: &Crate) -> String {
    let mut out = code.to_string();
    for (public, tree) in use_trees(code) {
        if !public {
            continue;
        }
        let first = tree
            .trim_start_matches("self::")
            .split("::")
            .next()
            .unwrap_or("")
            .trim()
            .to_string();
        let mut child = module.to_vec();
        child.push(first);
        let statement = format!("use {}", tree.split(' ').next().unwrap_or(""));
        if crate_.by_path.contains_key(&child)
            && let Some(at) = out.find(&statement)
        {
            let end = out[at..].find(';').map_or(out.len(), |e| at + e);
            out.replace_range(at..end, "");
        }
    }
    out
}

/// Every path a file names: each leaf of its `use` trees, and every inline path starting with
/// `crate::`, `super::` or `self::`.
fn paths_in(code: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    for (_, tree) in use_trees(code) {
        expand_text(&tree, &mut Vec::new(), &mut out);
    }
    for start in ["crate::", "super::", "self::"] {
        for (i, _) in code.match_indices(start) {
            if code[..i]
                .chars()
                .next_back()
                .is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':')
            {
                continue;
            }
            let path: String = code[i..]
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':')
                .collect();
            let segments: Vec<String> = path
                .split("::")
                .filter(|s| !s.is_empty())
                .map(str::to_string)
                .collect();
            out.push(segments);
        }
    }
    out
}

/// The `pub use` trees of a file, expanded to paths (the last segment may be `*`).
fn pub_uses(code: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    for (_, tree) in use_trees(code).into_iter().filter(|(public, _)| *public) {
        expand_text(&tree, &mut Vec::new(), &mut out);
    }
    out
}

/// The text of each `use ...;` statement, with whether it is `pub` (any visibility).
fn use_trees(code: &str) -> Vec<(bool, String)> {
    let mut out = Vec::new();
    for (i, _) in code.match_indices("use ") {
        let line_start = code[..i].rfind(['\n', ';', '{', '}']).map_or(0, |p| p + 1);
        let before = code[line_start..i].trim();
        let public = before.starts_with("pub");
        if !(before.is_empty() || public)
            || code[..i]
                .chars()
                .next_back()
                .is_some_and(|c| c.is_alphanumeric() || c == '_')
        {
            continue;
        }
        let Some(end) = code[i..].find(';') else {
            continue;
        };
        let words: Vec<&str> = code[i + 4..i + end].split_whitespace().collect();
        out.push((public, words.join(" ")));
    }
    out
}

/// `a::{b, c::{d, e as f}}` → `[a, b]`, `[a, c, d]`, `[a, c, e]`.
fn expand_text(text: &str, prefix: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
    let text = text.trim().trim_start_matches("::");
    match text.find('{') {
        None => {
            let text = text.split(" as ").next().unwrap_or(text);
            let mut path = prefix.clone();
            path.extend(
                text.split("::")
                    .map(str::trim)
                    .filter(|s| !s.is_empty() && *s != "self")
                    .map(str::to_string),
            );
            if !path.is_empty() {
                out.push(path);
            }
        }
        Some(open) => {
            let head: Vec<String> = text[..open]
                .split("::")
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_string)
                .collect();
            let inner = &text[open + 1..text.rfind('}').unwrap_or(text.len())];
            let n = prefix.len();
            prefix.extend(head);
            for part in split_top(inner) {
                let part = part.trim();
                if part == "self" {
                    out.push(prefix.clone());
                } else if !part.is_empty() {
                    expand_text(part, prefix, out);
                }
            }
            prefix.truncate(n);
        }
    }
}

/// Splits `a, b::{c, d}, e` at its top-level commas.
fn split_top(s: &str) -> Vec<String> {
    let mut parts = vec![String::new()];
    let mut depth = 0;
    for c in s.chars() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(String::new());
                continue;
            }
            _ => {}
        }
        parts.last_mut().unwrap().push(c);
    }
    parts
}

/// Whether the file defines an item named `item` (a type, function, constant, module, macro).
fn defines(code: &str, item: &str) -> bool {
    [
        "struct ",
        "enum ",
        "fn ",
        "const ",
        "static ",
        "type ",
        "trait ",
        "mod ",
        "union ",
        "macro_rules! ",
    ]
    .iter()
    .any(|kw| {
        code.match_indices(&format!("{kw}{item}")).any(|(i, m)| {
            let after = code[i + m.len()..].chars().next();
            !after.is_some_and(|c| c.is_alphanumeric() || c == '_')
        })
    })
}
