// PLACEHOLDER: replaced by the owner's version on merge
//! Label and field selectors (placeholder subset; pure, no I/O).
use serde_json::{Map, Value};

#[derive(Clone, Debug)]
enum Req {
    Eq(String, String),
    Ne(String, String),
    Exists(String),
    NotExists(String),
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
}

#[derive(Clone, Debug, Default)]
pub struct LabelSelector {
    reqs: Vec<Req>,
}

fn split_top(s: &str) -> Vec<String> {
    let (mut out, mut cur, mut depth) = (Vec::new(), String::new(), 0);
    for c in s.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                out.push(std::mem::take(&mut cur));
                continue;
            }
            _ => {}
        }
        cur.push(c);
    }
    if !cur.trim().is_empty() {
        out.push(cur);
    }
    out
}

fn set(v: &str) -> Vec<String> {
    v.trim()
        .trim_start_matches('(')
        .trim_end_matches(')')
        .split(',')
        .map(|s| s.trim().to_string())
        .collect()
}

impl LabelSelector {
    pub fn parse(s: &str) -> Result<Self, String> {
        let mut reqs = Vec::new();
        if s.matches('(').count() != s.matches(')').count() {
            return Err(format!("unable to parse requirement: unbalanced parentheses in {s}"));
        }
        for part in split_top(s) {
            let p = part.trim();
            if let Some((k, v)) = p.split_once("!=") {
                reqs.push(Req::Ne(k.trim().into(), v.trim().into()));
            } else if let Some((k, v)) = p.split_once("==").or_else(|| p.split_once('=')) {
                reqs.push(Req::Eq(k.trim().into(), v.trim().into()));
            } else if let Some((k, v)) = p.split_once(" notin ") {
                reqs.push(Req::NotIn(k.trim().into(), set(v)));
            } else if let Some((k, v)) = p.split_once(" in ") {
                reqs.push(Req::In(k.trim().into(), set(v)));
            } else if let Some(k) = p.strip_prefix('!') {
                reqs.push(Req::NotExists(k.trim().into()));
            } else if !p.is_empty() && !p.contains(' ') {
                reqs.push(Req::Exists(p.into()));
            } else {
                return Err(format!("unable to parse requirement: {p}"));
            }
        }
        Ok(Self { reqs })
    }
    pub fn matches(&self, labels: Option<&Map<String, Value>>) -> bool {
        let get = |k: &str| labels.and_then(|l| l.get(k)).and_then(Value::as_str);
        self.reqs.iter().all(|r| match r {
            Req::Eq(k, v) => get(k) == Some(v),
            Req::Ne(k, v) => get(k) != Some(v),
            Req::Exists(k) => get(k).is_some(),
            Req::NotExists(k) => get(k).is_none(),
            Req::In(k, vs) => get(k).is_some_and(|x| vs.iter().any(|v| v == x)),
            Req::NotIn(k, vs) => !get(k).is_some_and(|x| vs.iter().any(|v| v == x)),
        })
    }
}

#[derive(Clone, Debug, Default)]
pub struct FieldSelector {
    reqs: Vec<(String, bool, String)>,
}

impl FieldSelector {
    pub fn parse(s: &str, _kind: &str) -> Result<Self, String> {
        let mut reqs = Vec::new();
        for p in s.split(',').filter(|p| !p.trim().is_empty()) {
            if let Some((k, v)) = p.split_once("!=") {
                reqs.push((k.trim().to_string(), false, v.trim().to_string()));
            } else if let Some((k, v)) = p.split_once("==").or_else(|| p.split_once('=')) {
                reqs.push((k.trim().to_string(), true, v.trim().to_string()));
            } else {
                return Err(format!("invalid selector: '{s}'; can't understand '{p}'"));
            }
        }
        Ok(Self { reqs })
    }
    pub fn matches(&self, obj: &Value) -> bool {
        self.reqs.iter().all(|(path, eq, want)| {
            let mut cur = obj;
            for seg in path.split('.') {
                cur = cur.get(seg).unwrap_or(&Value::Null);
            }
            let got = match cur {
                Value::String(s) => s.clone(),
                Value::Null => String::new(),
                other => other.to_string(),
            };
            (got == *want) == *eq
        })
    }
}
