//! Label and field selectors of list/watch requests, parsed and matched like kube-apiserver
//! (grammar and semantics of apimachinery's `labels.Parse` / `fields.ParseSelector`). Pure, no I/O.

use serde_json::{Map, Value};

/// One requirement of a label selector, e.g. `app in (a,b)`.
#[derive(Clone, Debug, PartialEq)]
enum LabelOp {
    In(Vec<String>),
    NotIn(Vec<String>),
    Exists,
    DoesNotExist,
    GreaterThan(i64),
    LessThan(i64),
}

#[derive(Clone, Debug, PartialEq)]
struct LabelRequirement {
    key: String,
    op: LabelOp,
}

/// A parsed `labelSelector` query; requirements are AND-ed. Empty matches everything.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LabelSelector {
    requirements: Vec<LabelRequirement>,
}

impl LabelSelector {
    /// Parses the selector syntax of `labels.Parse`. Err = message for a 400 BadRequest.
    pub fn parse(s: &str) -> Result<Self, String> {
        let tokens = lex(s)?;
        let requirements = Parser { tokens, pos: 0 }.parse()?;
        Ok(Self { requirements })
    }

    /// Whether `labels` (an object's `metadata.labels`, None = no labels) satisfies every
    /// requirement. As in Kubernetes, `!=` and `notin` match objects without the label.
    pub fn matches(&self, labels: Option<&Map<String, Value>>) -> bool {
        self.requirements.iter().all(|r| {
            let value = labels.and_then(|l| l.get(&r.key)).and_then(Value::as_str);
            requirement_matches(&r.op, value)
        })
    }

    /// True when the selector has no requirement (matches everything).
    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }
}

fn requirement_matches(op: &LabelOp, value: Option<&str>) -> bool {
    match (op, value) {
        (LabelOp::In(values), Some(v)) => values.iter().any(|x| x == v),
        (LabelOp::In(_), None) => false,
        (LabelOp::NotIn(values), Some(v)) => !values.iter().any(|x| x == v),
        (LabelOp::NotIn(_), None) => true,
        (LabelOp::Exists, v) => v.is_some(),
        (LabelOp::DoesNotExist, v) => v.is_none(),
        (LabelOp::GreaterThan(n), Some(v)) => v.parse::<i64>().is_ok_and(|x| x > *n),
        (LabelOp::LessThan(n), Some(v)) => v.parse::<i64>().is_ok_and(|x| x < *n),
        (LabelOp::GreaterThan(_) | LabelOp::LessThan(_), None) => false,
    }
}

#[derive(Clone, Debug, PartialEq)]
enum Token {
    Ident(String),
    In,
    NotIn,
    Bang,
    NotEquals,
    Equals,
    DoubleEquals,
    Greater,
    Less,
    Comma,
    Open,
    Close,
    End,
}

impl Token {
    /// The literal the real parser quotes in its error messages.
    fn literal(&self) -> &str {
        match self {
            Token::Ident(s) => s,
            Token::In => "in",
            Token::NotIn => "notin",
            Token::Bang => "!",
            Token::NotEquals => "!=",
            Token::Equals => "=",
            Token::DoubleEquals => "==",
            Token::Greater => ">",
            Token::Less => "<",
            Token::Comma => ",",
            Token::Open => "(",
            Token::Close => ")",
            Token::End => "",
        }
    }

    /// In value position the keywords `in`/`notin` are plain identifiers (`x in (in)`).
    fn as_value(&self) -> Option<&str> {
        match self {
            Token::Ident(s) => Some(s),
            Token::In => Some("in"),
            Token::NotIn => Some("notin"),
            _ => None,
        }
    }
}

fn is_special(c: char) -> bool {
    matches!(c, '=' | '!' | '(' | ')' | ',' | '>' | '<')
}

fn lex(s: &str) -> Result<Vec<Token>, String> {
    let chars: Vec<char> = s.chars().collect();
    let mut tokens = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_whitespace() {
            i += 1;
        } else if is_special(c) {
            let next = chars.get(i + 1).copied();
            let (token, len) = match (c, next) {
                ('!', Some('=')) => (Token::NotEquals, 2),
                ('=', Some('=')) => (Token::DoubleEquals, 2),
                ('!', _) => (Token::Bang, 1),
                ('=', _) => (Token::Equals, 1),
                ('>', _) => (Token::Greater, 1),
                ('<', _) => (Token::Less, 1),
                (',', _) => (Token::Comma, 1),
                ('(', _) => (Token::Open, 1),
                _ => (Token::Close, 1),
            };
            tokens.push(token);
            i += len;
        } else {
            let start = i;
            while i < chars.len() && !chars[i].is_whitespace() && !is_special(chars[i]) {
                i += 1;
            }
            let word: String = chars[start..i].iter().collect();
            tokens.push(match word.as_str() {
                "in" => Token::In,
                "notin" => Token::NotIn,
                _ => Token::Ident(word),
            });
        }
    }
    tokens.push(Token::End);
    Ok(tokens)
}

struct Parser {
    tokens: Vec<Token>,
    pos: usize,
}

impl Parser {
    fn peek(&self) -> &Token {
        self.tokens.get(self.pos).unwrap_or(&Token::End)
    }

    fn next(&mut self) -> Token {
        let t = self.peek().clone();
        self.pos += 1;
        t
    }

    fn parse(mut self) -> Result<Vec<LabelRequirement>, String> {
        let mut out = Vec::new();
        loop {
            let t = self.peek().clone();
            if t == Token::End {
                return Ok(out);
            }
            if t.as_value().is_none() && t != Token::Bang {
                return Err(format!(
                    "found '{}', expected: !, identifier, or 'end of string'",
                    t.literal()
                ));
            }
            let r = self
                .requirement()
                .map_err(|e| format!("unable to parse requirement: {e}"))?;
            out.push(r);
            match self.next() {
                Token::End => return Ok(out),
                Token::Comma => {
                    let t2 = self.peek();
                    if t2.as_value().is_none() && *t2 != Token::Bang {
                        let lit = t2.literal().to_string();
                        return Err(format!("found '{lit}', expected: identifier after ','"));
                    }
                }
                other => {
                    return Err(format!(
                        "found '{}', expected: ',' or 'end of string'",
                        other.literal()
                    ));
                }
            }
        }
    }

    fn requirement(&mut self) -> Result<LabelRequirement, String> {
        let negated = *self.peek() == Token::Bang;
        if negated {
            self.pos += 1;
        }
        let key_token = self.next();
        let Some(key) = key_token.as_value().map(str::to_string) else {
            return Err(format!(
                "found '{}', expected: identifier",
                key_token.literal()
            ));
        };
        validate_label_key(&key)?;
        let at_end = matches!(self.peek(), Token::End | Token::Comma);
        if negated || at_end {
            // `!key` is unary: whatever follows is the caller's problem, as in the real parser.
            let op = if negated {
                LabelOp::DoesNotExist
            } else {
                LabelOp::Exists
            };
            return Ok(LabelRequirement { key, op });
        }
        let op = self.operator(&key)?;
        Ok(LabelRequirement { key, op })
    }

    fn operator(&mut self, key: &str) -> Result<LabelOp, String> {
        match self.next() {
            Token::In => Ok(LabelOp::In(self.value_set(key)?)),
            Token::NotIn => Ok(LabelOp::NotIn(self.value_set(key)?)),
            Token::Equals | Token::DoubleEquals => Ok(LabelOp::In(vec![self.exact_value(key)?])),
            Token::NotEquals => Ok(LabelOp::NotIn(vec![self.exact_value(key)?])),
            Token::Greater => Ok(LabelOp::GreaterThan(self.integer_value()?)),
            Token::Less => Ok(LabelOp::LessThan(self.integer_value()?)),
            other => Err(format!(
                "found '{}', expected: in, notin, =, ==, !=, gt, lt",
                other.literal()
            )),
        }
    }

    fn exact_value(&mut self, key: &str) -> Result<String, String> {
        if matches!(self.peek(), Token::End | Token::Comma) {
            return Ok(String::new());
        }
        let t = self.next();
        let value = t
            .as_value()
            .ok_or_else(|| format!("found '{}', expected: identifier", t.literal()))?;
        validate_label_value(key, value)?;
        Ok(value.to_string())
    }

    fn integer_value(&mut self) -> Result<i64, String> {
        let t = self.next();
        let value = t
            .as_value()
            .ok_or_else(|| format!("found '{}', expected: identifier", t.literal()))?;
        value
            .parse::<i64>()
            .map_err(|_| format!("for 'Gt', 'Lt' operators, the value must be an integer: {value}"))
    }

    /// `(a, b, c)`; empty members are the empty string, as in the real parser (`(,a)`, `()`).
    fn value_set(&mut self, key: &str) -> Result<Vec<String>, String> {
        let t = self.next();
        if t != Token::Open {
            return Err(format!("found '{}' expected: '('", t.literal()));
        }
        let mut values: Vec<String> = Vec::new();
        let mut expect_value = true;
        loop {
            let t = self.next();
            match (&t, expect_value) {
                (Token::Close, _) => {
                    if expect_value {
                        values.push(String::new());
                    }
                    break;
                }
                (Token::Comma, true) => values.push(String::new()),
                (Token::Comma, false) => expect_value = true,
                (_, true) if t.as_value().is_some() => {
                    let v = t.as_value().unwrap_or_default();
                    validate_label_value(key, v)?;
                    values.push(v.to_string());
                    expect_value = false;
                }
                _ => return Err(format!("found '{}', expected: ',' or ')'", t.literal())),
            }
        }
        values.sort();
        values.dedup();
        Ok(values)
    }
}

fn is_dns_label_like(s: &str, extra: &[char]) -> bool {
    let alnum = |c: char| c.is_ascii_alphanumeric();
    s.chars().next().is_some_and(alnum)
        && s.chars().last().is_some_and(alnum)
        && s.chars().all(|c| alnum(c) || extra.contains(&c))
}

/// `[prefix/]name`: name ≤ 63 chars of `[A-Za-z0-9_.-]`, prefix a DNS subdomain ≤ 253.
fn validate_label_key(key: &str) -> Result<(), String> {
    let (prefix, name) = match key.split_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, key),
    };
    let prefix_ok = prefix.is_none_or(|p| {
        p.len() <= 253
            && is_dns_label_like(p, &['-', '.'])
            && p.chars().all(|c| !c.is_ascii_uppercase())
    });
    let name_ok = name.len() <= 63 && is_dns_label_like(name, &['-', '_', '.']);
    if prefix_ok && name_ok {
        return Ok(());
    }
    Err(format!(
        "Invalid value: \"{key}\": name part must consist of alphanumeric characters, '-', '_' \
         or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or \
         'my.name',  or '123-abc', regex used for validation is \
         '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
    ))
}

fn validate_label_value(key: &str, value: &str) -> Result<(), String> {
    if value.is_empty() || (value.len() <= 63 && is_dns_label_like(value, &['-', '_', '.'])) {
        return Ok(());
    }
    Err(format!(
        "values[0][{key}]: Invalid value: \"{value}\": a valid label must be an empty string or \
         consist of alphanumeric characters, '-', '_' or '.', and must start and end with an \
         alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for \
         validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
    ))
}

/// One `field=value` / `field!=value` term of a field selector.
#[derive(Clone, Debug, PartialEq)]
struct FieldTerm {
    field: String,
    value: String,
    negated: bool,
}

/// A parsed `fieldSelector` for one kind; terms are AND-ed.
#[derive(Clone, Debug, PartialEq)]
pub struct FieldSelector {
    kind: String,
    terms: Vec<FieldTerm>,
}

impl FieldSelector {
    /// Parses `k=v`, `k==v`, `k!=v` terms joined by `,` (values may escape `\,` `\=` `\\`) and
    /// checks each field is selectable for `kind`. Err = message for a 400 BadRequest.
    pub fn parse(s: &str, kind: &str) -> Result<Self, String> {
        let mut terms = Vec::new();
        for part in split_unescaped(s, ',') {
            if part.trim().is_empty() {
                continue;
            }
            let term = parse_field_term(&part)
                .ok_or_else(|| format!("invalid selector: '{s}'; can't understand '{part}'"))?;
            if !field_supported(kind, &term.field) {
                return Err(format!("field label not supported: {}", term.field));
            }
            terms.push(term);
        }
        Ok(Self {
            kind: kind.to_string(),
            terms,
        })
    }

    /// Whether `obj` satisfies every term. A missing field reads as the empty string, as the
    /// real server's field sets do (`spec.nodeName=` selects unscheduled pods).
    pub fn matches(&self, obj: &Value) -> bool {
        self.terms.iter().all(|t| {
            let actual = field_value(&self.kind, obj, &t.field);
            (actual == t.value) != t.negated
        })
    }
}

/// Splits on `sep` not preceded by a backslash; escapes are kept for the term parser.
fn split_unescaped(s: &str, sep: char) -> Vec<String> {
    let mut parts = vec![String::new()];
    let mut escaped = false;
    for c in s.chars() {
        if !escaped && c == sep {
            parts.push(String::new());
            continue;
        }
        escaped = !escaped && c == '\\';
        if let Some(last) = parts.last_mut() {
            last.push(c);
        }
    }
    parts
}

fn parse_field_term(part: &str) -> Option<FieldTerm> {
    let (field, value, negated) = if let Some((f, v)) = split_operator(part, "!=") {
        (f, v, true)
    } else if let Some((f, v)) = split_operator(part, "==") {
        (f, v, false)
    } else {
        let (f, v) = split_operator(part, "=")?;
        (f, v, false)
    };
    let value = unescape_field_value(&value)?;
    Some(FieldTerm {
        field: field.trim().to_string(),
        value,
        negated,
    })
}

/// Finds the first unescaped `op` in `part`.
fn split_operator(part: &str, op: &str) -> Option<(String, String)> {
    let mut escaped = false;
    for (i, c) in part.char_indices() {
        if !escaped && part[i..].starts_with(op) {
            return Some((part[..i].to_string(), part[i + op.len()..].to_string()));
        }
        escaped = !escaped && c == '\\';
    }
    None
}

fn unescape_field_value(v: &str) -> Option<String> {
    let mut out = String::new();
    let mut chars = v.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.next() {
                Some(e @ ('\\' | ',' | '=')) => out.push(e),
                _ => return None,
            }
        } else {
            out.push(c);
        }
    }
    Some(out)
}

const POD_FIELDS: &[&str] = &[
    "spec.nodeName",
    "spec.restartPolicy",
    "spec.schedulerName",
    "spec.serviceAccountName",
    "spec.hostNetwork",
    "status.phase",
    "status.podIP",
    "status.nominatedNodeName",
];

const EVENT_FIELDS: &[&str] = &[
    "involvedObject.kind",
    "involvedObject.namespace",
    "involvedObject.name",
    "involvedObject.uid",
    "involvedObject.apiVersion",
    "involvedObject.resourceVersion",
    "involvedObject.fieldPath",
    "reason",
    "reportingComponent",
    "source",
    "type",
];

fn field_supported(kind: &str, field: &str) -> bool {
    let per_kind: &[&str] = match kind {
        "Pod" => POD_FIELDS,
        "Event" => EVENT_FIELDS,
        "Namespace" => &["status.phase"],
        _ => &[],
    };
    matches!(field, "metadata.name" | "metadata.namespace") || per_kind.contains(&field)
}

/// The string the real server's field set holds for `field` of `obj`.
fn field_value(kind: &str, obj: &Value, field: &str) -> String {
    let path = match (kind, field) {
        ("Event", "source") => "source.component",
        ("Event", "reportingComponent") => "reportingComponent",
        _ => field,
    };
    let mut cur = obj;
    for seg in path.split('.') {
        match cur.get(seg) {
            Some(v) => cur = v,
            None => return String::new(),
        }
    }
    match cur {
        Value::String(s) => s.clone(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn labels(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn label_selector_matching_table() {
        let l = labels(json!({"app": "web", "tier": "front", "n": "5"}));
        let cases: &[(&str, bool)] = &[
            ("", true),
            ("app=web", true),
            ("app==web", true),
            ("app = web", true),
            ("app=db", false),
            ("app!=db", true),
            ("app!=web", false),
            ("missing!=x", true),
            ("app", true),
            ("missing", false),
            ("!missing", true),
            ("!app", false),
            ("app in (web,db)", true),
            ("app in ( db , web )", true),
            ("app in (db)", false),
            ("missing in (web)", false),
            ("app notin (db)", true),
            ("app notin (web,db)", false),
            ("missing notin (web)", true),
            ("app=web,tier=front", true),
            ("app=web, tier=back", false),
            ("app=web,!missing,tier", true),
            ("n>3", true),
            ("n<3", false),
            ("missing>1", false),
            ("app in (in)", false),
        ];
        for (sel, want) in cases {
            let parsed = LabelSelector::parse(sel).unwrap_or_else(|e| panic!("{sel}: {e}"));
            assert_eq!(parsed.matches(Some(&l)), *want, "selector {sel:?}");
        }
    }

    #[test]
    fn label_selector_against_object_without_labels() {
        let cases: &[(&str, bool)] = &[
            ("a=b", false),
            ("a!=b", true),
            ("!a", true),
            ("a", false),
            ("a notin (b)", true),
        ];
        for (sel, want) in cases {
            let parsed = LabelSelector::parse(sel).unwrap_or_else(|e| panic!("{sel}: {e}"));
            assert_eq!(parsed.matches(None), *want, "selector {sel:?}");
        }
    }

    #[test]
    fn empty_value_and_empty_set_members() {
        let l = labels(json!({"a": ""}));
        let cases: &[(&str, bool)] = &[
            ("a=", true),
            ("a in ()", true),
            ("a in (,x)", true),
            ("a in (x)", false),
        ];
        for (sel, want) in cases {
            let parsed = LabelSelector::parse(sel).unwrap_or_else(|e| panic!("{sel}: {e}"));
            assert_eq!(parsed.matches(Some(&l)), *want, "selector {sel:?}");
        }
    }

    #[test]
    fn invalid_label_selectors_are_rejected_with_parser_messages() {
        let cases: &[(&str, &str)] = &[
            (
                "a in",
                "unable to parse requirement: found '' expected: '('",
            ),
            (
                "a in (b",
                "unable to parse requirement: found '', expected: ',' or ')'",
            ),
            (
                "a b",
                "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=",
            ),
            ("a=b,", "found '', expected: identifier after ','"),
            (
                ",a",
                "found ',', expected: !, identifier, or 'end of string'",
            ),
            (
                "=b",
                "found '=', expected: !, identifier, or 'end of string'",
            ),
            ("a=b c", "found 'c', expected: ',' or 'end of string'"),
            (
                "a=(b)",
                "unable to parse requirement: found '(', expected: identifier",
            ),
            (
                "-bad=x",
                "unable to parse requirement: Invalid value: \"-bad\"",
            ),
            ("a=b c d", "found 'c'"),
            ("a>x", "the value must be an integer"),
            ("!a=b", "found '=', expected: ',' or 'end of string'"),
            ("a=in-valid-", "values[0][a]: Invalid value: \"in-valid-\""),
        ];
        for (sel, want) in cases {
            let err = LabelSelector::parse(sel).expect_err(sel);
            assert!(
                err.contains(want),
                "selector {sel:?}: got {err:?}, want {want:?}"
            );
        }
    }

    fn pod() -> Value {
        json!({
            "metadata": {"name": "p1", "namespace": "ns"},
            "spec": {"restartPolicy": "Never"},
            "status": {"phase": "Running"}
        })
    }

    #[test]
    fn field_selector_matching_table() {
        let cases: &[(&str, bool)] = &[
            ("", true),
            ("metadata.name=p1", true),
            ("metadata.name==p1", true),
            ("metadata.name!=p1", false),
            ("metadata.namespace=ns,status.phase=Running", true),
            ("status.phase!=Succeeded,status.phase!=Failed", true),
            ("status.phase=Pending", false),
            ("spec.nodeName=", true),
            ("spec.nodeName!=", false),
            ("spec.restartPolicy=Never", true),
        ];
        for (sel, want) in cases {
            let parsed = FieldSelector::parse(sel, "Pod").unwrap_or_else(|e| panic!("{sel}: {e}"));
            assert_eq!(parsed.matches(&pod()), *want, "selector {sel:?}");
        }
    }

    #[test]
    fn field_selector_for_events_reads_involved_object_and_source() {
        let ev = json!({
            "metadata": {"name": "e", "namespace": "ns"},
            "involvedObject": {"kind": "TFJob", "name": "job", "uid": "u1"},
            "source": {"component": "tfjob-operator"},
            "type": "Normal", "reason": "Created"
        });
        let cases: &[(&str, bool)] = &[
            ("involvedObject.kind=TFJob,involvedObject.name=job", true),
            ("involvedObject.uid=u2", false),
            ("source=tfjob-operator", true),
            ("type=Warning", false),
            ("reason=Created", true),
            ("involvedObject.namespace=", true),
        ];
        for (sel, want) in cases {
            let parsed =
                FieldSelector::parse(sel, "Event").unwrap_or_else(|e| panic!("{sel}: {e}"));
            assert_eq!(parsed.matches(&ev), *want, "selector {sel:?}");
        }
    }

    #[test]
    fn field_selector_values_may_be_escaped() {
        let obj = json!({"metadata": {"name": "a,b=c"}});
        let sel = FieldSelector::parse(r"metadata.name=a\,b\=c", "ConfigMap").expect("parses");
        assert!(sel.matches(&obj));
    }

    #[test]
    fn unsupported_or_malformed_field_selectors_are_rejected() {
        let cases: &[(&str, &str, &str)] = &[
            (
                "spec.nodeName=x",
                "TFJob",
                "field label not supported: spec.nodeName",
            ),
            (
                "status.phase=Running",
                "Service",
                "field label not supported: status.phase",
            ),
            (
                "involvedObject.kind=Pod",
                "Pod",
                "field label not supported: involvedObject.kind",
            ),
            (
                "metadata.name",
                "Pod",
                "invalid selector: 'metadata.name'; can't understand",
            ),
            (r"metadata.name=a\x", "Pod", "can't understand"),
        ];
        for (sel, kind, want) in cases {
            let err = FieldSelector::parse(sel, kind).expect_err(sel);
            assert!(err.contains(want), "{sel:?} on {kind}: got {err:?}");
        }
    }
}
