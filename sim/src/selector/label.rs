//! Label selectors (`labelSelector`): `=`, `==`, `!=`, `in`, `notin`, exists, `!key`, `>`, `<` (pure).

use serde_json::{Map, Value};

use super::lexer::{Token, lex, validate_label_key, validate_label_value};

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
}
