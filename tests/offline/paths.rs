//! Every repository path the docs and comments name exists, and every Markdown link leads
//! somewhere: a file moved or renamed must not leave stale mentions behind. The failure lists
//! each stale mention with its file and line.
//!
//! Where: every Markdown file of the repository (outside `target/` and hidden folders other
//! than `.github`), all its lines, code blocks included; and the comment lines (`//`, `///`,
//! `//!`) of every Rust file under `src/`, `sim/`, `tests/`, `examples/` and `benches/`.
//!
//! What counts as a repository path (`paths_in`):
//! - a word that starts with one of the top-level folders in `TOP_LEVEL` followed by `/`, made
//!   of letters, digits and `_ . / -`, and not preceded by any of those (so `sim/tests/sim/` is
//!   one path, and `sigs.k8s.io/kueue@v0.17.0/config/` or a URL is none); backticks around it
//!   do not matter;
//! - an upper-case Markdown file name standing alone, such as `README.md` or `CONTRIBUTING.md`.
//!
//! A trailing `.`, `,`, `:` or `;` and a `:line` or `:line-line` suffix are dropped. A word
//! followed by `*`, `<`, `{` or `…`, or containing `...`, is a pattern or a placeholder, not a
//! path. A path exists when it does relative to the repository root, to the directory of the
//! file naming it, or to the crate that file belongs to (paths in `sim/README.md` and in
//! `sim/src/` comments may start at `sim/`). Paths still to be made are listed in `PLANNED`.
//!
//! Markdown links `[text](target)` outside code blocks, other than URLs and `mailto:`, must
//! name an existing file or folder relative to the linking file; a `#anchor` must be a heading
//! of the target Markdown file (or of the linking one), by GitHub's rule (`anchor_of`).

use std::collections::HashSet;
use std::path::{Path, PathBuf};

/// The repository's top-level folders a path may start with.
const TOP_LEVEL: &[&str] = &[
    "src",
    "sim",
    "tests",
    "examples",
    "benches",
    "config",
    "crds",
    "docs",
    "testcluster",
    "charts",
    ".ci",
    ".github",
    ".cargo",
];

/// Paths the docs may name before they exist, with the work that makes them. Remove an entry
/// once its path is there.
const PLANNED: &[(&str, &str)] = &[];

fn path_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '/' | '-')
}

/// The repository paths named in one line of text (see the module's doc).
fn paths_in(line: &str) -> Vec<String> {
    let mut found = Vec::new();
    let chars: Vec<(usize, char)> = line.char_indices().collect();
    let mut i = 0;
    while i < chars.len() {
        let (start, c) = chars[i];
        if !path_char(c) || (i > 0 && path_char(chars[i - 1].1)) {
            i += 1;
            continue;
        }
        // A whole word of path characters, from a word start.
        let mut j = i;
        while j < chars.len() && path_char(chars[j].1) {
            j += 1;
        }
        let end = chars.get(j).map_or(line.len(), |&(at, _)| at);
        let next = chars.get(j).map(|&(_, c)| c);
        let word = &line[start..end];
        i = j;
        if matches!(next, Some('*' | '<' | '{' | '…')) || word.contains("...") {
            continue;
        }
        let word = word.trim_end_matches(['.', ',', ':', ';']);
        let word = strip_line_suffix(word);
        let top = TOP_LEVEL
            .iter()
            .any(|t| word.strip_prefix(t).is_some_and(|r| r.starts_with('/')));
        if top || is_top_level_doc(word) {
            found.push(word.to_string());
        }
    }
    found
}

/// `tests/e2e/kueue/mod.rs:12` and `src/main.rs:3-9` name the file.
fn strip_line_suffix(word: &str) -> &str {
    match word.rsplit_once(':') {
        Some((path, line))
            if !line.is_empty() && line.chars().all(|c| c.is_ascii_digit() || c == '-') =>
        {
            path
        }
        _ => word,
    }
}

/// `README.md`, `CONTRIBUTING.md`: an upper-case name ending in `.md`, without a folder.
fn is_top_level_doc(word: &str) -> bool {
    word.strip_suffix(".md").is_some_and(|stem| {
        stem.starts_with(|c: char| c.is_ascii_uppercase())
            && stem.chars().all(|c| c.is_ascii_uppercase() || c == '_')
    })
}

/// GitHub's anchor of a heading: the text as rendered (code marks and emphasis stars
/// dropped), lower case, every character other than a letter, digit, space, `-` or `_`
/// dropped, spaces made `-`.
fn anchor_of(heading: &str) -> String {
    heading
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_'))
        .flat_map(char::to_lowercase)
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The anchors of a Markdown text's headings, repeats numbered as GitHub numbers them.
fn anchors(text: &str) -> HashSet<String> {
    let mut seen = HashSet::new();
    for (_, line, fenced) in markdown_lines(text) {
        if fenced {
            continue;
        }
        let hashes = line.chars().take_while(|&c| c == '#').count();
        let Some(title) = line[hashes..].strip_prefix(' ') else {
            continue;
        };
        if !(1..=6).contains(&hashes) {
            continue;
        }
        let base = anchor_of(title.trim().trim_end_matches('#').trim());
        let mut anchor = base.clone();
        let mut n = 0;
        while !seen.insert(anchor.clone()) {
            n += 1;
            anchor = format!("{base}-{n}");
        }
    }
    seen
}

/// A Markdown text's lines, numbered from 1, each saying whether it is inside a fenced code
/// block (the fences themselves count as inside).
fn markdown_lines(text: &str) -> Vec<(usize, &str, bool)> {
    let mut fenced = false;
    text.lines()
        .enumerate()
        .map(|(n, line)| {
            let fence = line.trim_start().starts_with("```");
            if fence {
                fenced = !fenced;
            }
            (n + 1, line, fenced || fence)
        })
        .collect()
}

/// The targets of a line's Markdown links, URLs and `mailto:` left out.
fn link_targets(line: &str) -> Vec<&str> {
    line.match_indices("](")
        .filter_map(|(at, _)| {
            let rest = &line[at + 2..];
            let target = &rest[..rest.find(')')?];
            let target = target.split_whitespace().next().unwrap_or("");
            let target = target.trim_start_matches('<').trim_end_matches('>');
            (!target.is_empty() && !target.contains("://") && !target.starts_with("mailto:"))
                .then_some(target)
        })
        .collect()
}

/// Files under `dir` whose name ends in `ext`, skipping `target/` and hidden folders other
/// than `.github`.
fn files(dir: &Path, ext: &str, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if path.is_dir() {
            if name != "target" && (!name.starts_with('.') || name == ".github") {
                files(&path, ext, out);
            }
        } else if name.ends_with(ext) {
            out.push(path);
        }
    }
}

/// Where a path named in `file` may be found: the repository root, the file's directory, and
/// the root of the crate the file belongs to.
fn bases(root: &Path, file: &Path) -> Vec<PathBuf> {
    let dir = file.parent().unwrap_or(root).to_path_buf();
    let mut bases = vec![root.to_path_buf(), dir.clone()];
    let mut up = Some(dir.as_path());
    while let Some(d) = up.filter(|d| *d != root) {
        if d.join("Cargo.toml").exists() {
            bases.push(d.to_path_buf());
            break;
        }
        up = d.parent();
    }
    bases
}

fn planned(path: &str) -> bool {
    let path = path.trim_end_matches('/');
    PLANNED
        .iter()
        .any(|(p, _)| path == *p || path.starts_with(&format!("{p}/")))
}

/// Every stale path and broken link in the repository, as `file:line: what`.
fn stale(root: &Path) -> Vec<String> {
    let mut markdown = Vec::new();
    files(root, ".md", &mut markdown);
    let mut rust = Vec::new();
    for dir in ["src", "sim", "tests", "examples", "benches"] {
        files(&root.join(dir), ".rs", &mut rust);
    }
    let mut problems = Vec::new();
    let check = |file: &Path, n: usize, text: &str, problems: &mut Vec<String>| {
        let bases = bases(root, file);
        for path in paths_in(text) {
            if !planned(&path) && !bases.iter().any(|b| b.join(&path).exists()) {
                let shown = file.strip_prefix(root).unwrap_or(file).display();
                problems.push(format!("{shown}:{n}: `{path}` does not exist"));
            }
        }
    };
    for file in &rust {
        let text = std::fs::read_to_string(file).expect("a Rust file");
        for (n, line) in text.lines().enumerate() {
            if let Some(comment) = line.trim_start().strip_prefix("//") {
                check(file, n + 1, comment, &mut problems);
            }
        }
    }
    for file in &markdown {
        let text = std::fs::read_to_string(file).expect("a Markdown file");
        let shown = file.strip_prefix(root).unwrap_or(file).display();
        for (n, line, fenced) in markdown_lines(&text) {
            check(file, n, line, &mut problems);
            if fenced {
                continue;
            }
            for target in link_targets(line) {
                let (path, anchor) = target.split_once('#').unwrap_or((target, ""));
                let linked = if path.is_empty() {
                    file.clone()
                } else {
                    file.parent().unwrap_or(root).join(path)
                };
                if !linked.exists() {
                    if !planned(path) {
                        problems.push(format!("{shown}:{n}: link `{target}`: no such file"));
                    }
                } else if !anchor.is_empty()
                    && linked.extension().is_some_and(|e| e == "md")
                    && !anchors(&std::fs::read_to_string(&linked).unwrap_or_default())
                        .contains(anchor)
                {
                    problems.push(format!("{shown}:{n}: link `{target}`: no such heading"));
                }
            }
        }
    }
    problems.sort();
    problems
}

#[test]
fn every_path_and_link_in_the_docs_and_comments_exists() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let problems = stale(root);
    assert!(
        problems.is_empty(),
        "{} stale paths or links (point each at what exists now, or drop an obsolete \
         mention; the rules are at the top of tests/offline/paths.rs):\n{}",
        problems.len(),
        problems.join("\n")
    );
}

#[test]
fn paths_in_finds_repository_paths_and_nothing_else() {
    let cases: &[(&str, &[&str])] = &[
        (
            "see `tests/e2e/kueue.rs:12`, and src/runtime/leader.rs.",
            &["tests/e2e/kueue.rs", "src/runtime/leader.rs"],
        ),
        (
            "([docs/behaviour.md](docs/behaviour.md) §6.4), `testcluster/e2e --keep`",
            &["docs/behaviour.md", "docs/behaviour.md", "testcluster/e2e"],
        ),
        (
            "the layers of sim/tests/sim/: `src/x.rs:3-9`;",
            &["sim/tests/sim/", "src/x.rs"],
        ),
        (
            "README.md, not readme.md; BENCHMARKS.md:",
            &["README.md", "BENCHMARKS.md"],
        ),
        ("`.ci/run` runs `cargo test`", &[".ci/run"]),
        // Not ours: other repositories, URLs, words that only end like a top-level folder.
        (
            "sigs.k8s.io/kueue@v0.17.0/config/components/crd/bases/",
            &[],
        ),
        (
            "https://github.com/kubeflow/trainer/tree/master/docs/x.md",
            &[],
        ),
        ("a/src/b.rs, subtests/x, my-docs/y, kubeflow.org/v1", &[]),
        // Patterns and placeholders.
        (
            "`tests/e2e/kubeflow/*.rs`, tests/e2e/<name>.rs, src/{a,b}.rs",
            &[],
        ),
        ("sim/src/kubelet*.rs, `src/...`, docs/…", &[]),
    ];
    for (line, want) in cases {
        assert_eq!(paths_in(line), *want, "{line}");
    }
}

#[test]
fn anchors_and_links_follow_githubs_rules() {
    assert_eq!(
        anchor_of("6.6 Suspend and resume (the Kueue contract)"),
        "66-suspend-and-resume-the-kueue-contract"
    );
    assert_eq!(anchor_of("5. TF_CONFIG"), "5-tf_config");
    assert_eq!(anchor_of("Kubeflow's Python SDK"), "kubeflows-python-sdk");
    assert_eq!(anchor_of("What `convert` changes"), "what-convert-changes");
    assert_eq!(
        anchor_of("11. Older forms: `tfjob-operator convert`"),
        "11-older-forms-tfjob-operator-convert"
    );
    let text = "# A\n## Timings\n```\n# not a heading\n```\n### Timings\n";
    let found = anchors(text);
    let want: HashSet<String> = ["a", "timings", "timings-1"].map(String::from).into();
    assert_eq!(found, want);
    assert_eq!(
        link_targets("[a](b.md#c), [x](https://y.z/w) [z](#w) [m](mailto:q) [t](d/ \"title\")"),
        ["b.md#c", "#w", "d/"]
    );
}
