//! The JSONPath subset of CRD printer columns (client-go's jsonpath as kube-apiserver runs it):
//! `.a.b`, `.a[0]`, `.a[-1]`, `.a[-1:]`, `.a[1:3]`, `.a[*].b`, `.a['x.y']`, `.a[?(@.t=="v")].b`,
//! optionally wrapped in `{}` and rooted at `$`. Missing keys yield no result. Pure, no I/O.

use serde_json::Value;

#[derive(Clone, Debug, PartialEq)]
enum Segment {
    Field(String),
    Index(i64),
    Slice(Option<i64>, Option<i64>),
    Wildcard,
    /// `[?(@.path == literal)]`, `!=`, or bare `[?(@.path)]` (exists).
    Filter(Vec<Segment>, Option<(bool, Value)>),
}

/// All values `path` selects in `obj`, in document order; empty when nothing matches or the
/// path is not in the supported subset.
pub fn jsonpath(obj: &Value, path: &str) -> Vec<Value> {
    let Some(segments) = parse(path) else {
        return Vec::new();
    };
    eval(obj, &segments).into_iter().cloned().collect()
}

fn parse(path: &str) -> Option<Vec<Segment>> {
    let p = path.trim();
    let p = p
        .strip_prefix('{')
        .and_then(|s| s.strip_suffix('}'))
        .unwrap_or(p)
        .trim();
    let p = p.strip_prefix('$').unwrap_or(p);
    parse_segments(p)
}

fn parse_segments(mut p: &str) -> Option<Vec<Segment>> {
    let mut out = Vec::new();
    while !p.is_empty() {
        if let Some(rest) = p.strip_prefix('[') {
            let end = closing_bracket(rest)?;
            out.push(parse_bracket(&rest[..end])?);
            p = &rest[end + 1..];
        } else if let Some(rest) = p.strip_prefix('.') {
            let end = rest.find(['.', '[']).unwrap_or(rest.len());
            let name = &rest[..end];
            match name {
                "" => {}
                "*" => out.push(Segment::Wildcard),
                _ => out.push(Segment::Field(name.to_string())),
            }
            p = &rest[end..];
        } else {
            return None;
        }
    }
    Some(out)
}

/// Index of the `]` closing the bracket that `s` starts inside, skipping quoted text.
fn closing_bracket(s: &str) -> Option<usize> {
    let mut quote: Option<char> = None;
    let mut depth = 0usize;
    for (i, c) in s.char_indices() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '\'' | '"') => quote = Some(c),
            (None, '[') => depth += 1,
            (None, ']') if depth == 0 => return Some(i),
            (None, ']') => depth -= 1,
            _ => {}
        }
    }
    None
}

fn unquote(s: &str) -> Option<&str> {
    let s = s.trim();
    s.strip_prefix('\'')
        .and_then(|r| r.strip_suffix('\''))
        .or_else(|| s.strip_prefix('"').and_then(|r| r.strip_suffix('"')))
}

fn parse_bracket(inner: &str) -> Option<Segment> {
    let inner = inner.trim();
    if inner == "*" {
        return Some(Segment::Wildcard);
    }
    if let Some(name) = unquote(inner) {
        return Some(Segment::Field(name.to_string()));
    }
    if let Some(filter) = inner.strip_prefix("?(").and_then(|r| r.strip_suffix(')')) {
        return parse_filter(filter);
    }
    if let Some((start, end)) = inner.split_once(':') {
        let bound = |s: &str| -> Option<Option<i64>> {
            let s = s.split(':').next().unwrap_or("").trim();
            if s.is_empty() {
                Some(None)
            } else {
                s.parse().ok().map(Some)
            }
        };
        return Some(Segment::Slice(bound(start)?, bound(end)?));
    }
    inner.parse().ok().map(Segment::Index)
}

fn parse_filter(f: &str) -> Option<Segment> {
    let (lhs, cmp) = if let Some((l, r)) = f.split_once("!=") {
        (l, Some((false, r)))
    } else if let Some((l, r)) = f.split_once("==") {
        (l, Some((true, r)))
    } else {
        (f, None)
    };
    let rel = parse_segments(lhs.trim().strip_prefix('@')?)?;
    let cmp = match cmp {
        None => None,
        Some((eq, lit)) => {
            let lit = lit.trim();
            let value = match unquote(lit) {
                Some(s) => Value::String(s.to_string()),
                None => serde_json::from_str(lit).ok()?,
            };
            Some((eq, value))
        }
    };
    Some(Segment::Filter(rel, cmp))
}

fn eval<'a>(obj: &'a Value, segments: &[Segment]) -> Vec<&'a Value> {
    segments.iter().fold(vec![obj], |current, seg| {
        current.into_iter().flat_map(|v| step(v, seg)).collect()
    })
}

fn resolve_index(i: i64, len: usize) -> Option<usize> {
    let len = i64::try_from(len).ok()?;
    let r = if i < 0 { i + len } else { i };
    if (0..len).contains(&r) {
        usize::try_from(r).ok()
    } else {
        None
    }
}

fn step<'a>(v: &'a Value, seg: &Segment) -> Vec<&'a Value> {
    match (seg, v) {
        (Segment::Field(name), Value::Object(m)) => m.get(name).into_iter().collect(),
        (Segment::Index(i), Value::Array(items)) => resolve_index(*i, items.len())
            .and_then(|i| items.get(i))
            .into_iter()
            .collect(),
        (Segment::Slice(start, end), Value::Array(items)) => slice(items, *start, *end),
        (Segment::Wildcard, Value::Array(items)) => items.iter().collect(),
        (Segment::Wildcard, Value::Object(m)) => m.values().collect(),
        (Segment::Filter(rel, cmp), Value::Array(items)) => items
            .iter()
            .filter(|item| filter_matches(item, rel, cmp.as_ref()))
            .collect(),
        _ => Vec::new(),
    }
}

/// Python-style slice bounds, clamped to the array.
fn slice(items: &[Value], start: Option<i64>, end: Option<i64>) -> Vec<&Value> {
    let len = i64::try_from(items.len()).unwrap_or(i64::MAX);
    let clamp = |b: i64| (if b < 0 { b + len } else { b }).clamp(0, len);
    let s = clamp(start.unwrap_or(0));
    let e = clamp(end.unwrap_or(len));
    let (Ok(s), Ok(e)) = (usize::try_from(s), usize::try_from(e)) else {
        return Vec::new();
    };
    if s >= e {
        Vec::new()
    } else {
        items[s..e].iter().collect()
    }
}

fn filter_matches(item: &Value, rel: &[Segment], cmp: Option<&(bool, Value)>) -> bool {
    let found = eval(item, rel);
    match cmp {
        None => !found.is_empty(),
        Some((eq, lit)) => found.first().is_some_and(|v| (*v == lit) == *eq),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn printer_column_paths() {
        let obj = json!({
            "metadata": {"name": "j", "labels": {"app": "x", "a.b/c": "dotted"}},
            "spec": {"replicas": 3},
            "status": {"conditions": [
                {"type": "Created", "status": "True"},
                {"type": "Running", "status": "False"}
            ]}
        });
        let cases = [
            (".metadata.name", vec![json!("j")]),
            ("{.metadata.name}", vec![json!("j")]),
            ("$.spec.replicas", vec![json!(3)]),
            (".metadata.labels.app", vec![json!("x")]),
            (".metadata.labels['a.b/c']", vec![json!("dotted")]),
            (".metadata.labels[\"a.b/c\"]", vec![json!("dotted")]),
            (".status.conditions[0].type", vec![json!("Created")]),
            (".status.conditions[-1].type", vec![json!("Running")]),
            (".status.conditions[-1:].type", vec![json!("Running")]),
            (".status.conditions[0:1].type", vec![json!("Created")]),
            (
                ".status.conditions[*].type",
                vec![json!("Created"), json!("Running")],
            ),
            (
                ".status.conditions[?(@.type==\"Running\")].status",
                vec![json!("False")],
            ),
            (
                ".status.conditions[?(@.type!='Running')].type",
                vec![json!("Created")],
            ),
            (".status.conditions[5].type", vec![]),
            (".status.missing", vec![]),
            (".spec.replicas.deeper", vec![]),
            ("not a path", vec![]),
        ];
        for (path, want) in cases {
            assert_eq!(jsonpath(&obj, path), want, "path {path}");
        }
    }

    #[test]
    fn last_element_slice_of_an_empty_list_is_empty() {
        assert!(jsonpath(&json!({"c": []}), ".c[-1:].type").is_empty());
        assert!(jsonpath(&json!({}), ".c[-1:].type").is_empty());
    }
}
