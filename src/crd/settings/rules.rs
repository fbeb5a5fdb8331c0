//! Failure rules (`tfjob-operator.dev/failure-rules`, docs/recovery.md): an ordered list, one
//! rule per line, each a YAML flow mapping a person writes by hand:
//!
//! ```yaml
//! tfjob-operator.dev/failure-rules: |
//!   - {replicaTypes: [PS], action: FailJob}
//!   - {replicaTypes: [Worker], exitCodes: [137], action: RestartReplica}
//!   - {disruption: true, action: RestartUncharged}
//! ```
//!
//! One rule per line, in this flow form only, so that the API server can check it at
//! admission (a ValidatingAdmissionPolicy in `config/`: CEL has no YAML parser, but it can
//! match a line): what the policy accepts and what this parser accepts are the same text.
//! Pure.

use std::collections::BTreeSet;

use crate::crd::ReplicaType;
use crate::crd::check::suggestion;
use crate::crd::field_error::FieldError;

/// What a matching rule does with a failure. (The default stands in only while a rule is
/// read: a rule without an action is refused.)
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum RuleAction {
    /// The failed replica's pod is restarted alone, counted against the restart budget.
    #[default]
    RestartReplica,
    /// Every pod of the job restarts together as the next attempt, counted.
    RestartJob,
    /// The job fails at once.
    FailJob,
    /// Restarted within the job's restart scope, not counted against its budget.
    RestartUncharged,
}

impl RuleAction {
    pub const NAMES: [&'static str; 4] = [
        "RestartReplica",
        "RestartJob",
        "FailJob",
        "RestartUncharged",
    ];

    fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "RestartReplica" => Self::RestartReplica,
            "RestartJob" => Self::RestartJob,
            "FailJob" => Self::FailJob,
            "RestartUncharged" => Self::RestartUncharged,
            _ => return None,
        })
    }

    pub fn as_str(self) -> &'static str {
        Self::NAMES[self as usize]
    }
}

/// One rule: every criterion given must hold for a failure to match (none given: every
/// failure matches).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FailureRule {
    pub replica_types: Option<BTreeSet<ReplicaType>>,
    /// The `tensorflow` container's exit code is in one of these ranges (inclusive); a
    /// failure without an exit code (an eviction, a pod deleted) does not match.
    pub exit_codes: Option<Vec<(i32, i32)>>,
    /// The failure is (true) or is not (false) a disruption.
    pub disruption: Option<bool>,
    /// The `tensorflow` container's terminated reason (`OOMKilled`, `Error`) is one of these.
    pub container_reasons: Option<BTreeSet<String>>,
    pub action: RuleAction,
}

/// The keys of a rule, in the order the documentation gives them.
pub const RULE_KEYS: [&str; 5] = [
    "replicaTypes",
    "exitCodes",
    "disruption",
    "containerReasons",
    "action",
];

/// The form of one rule, for hints.
pub const RULE_FORM: &str = "- {replicaTypes: [...], exitCodes: [...], disruption: true|false, \
                             containerReasons: [...], action: RestartReplica|RestartJob|FailJob|RestartUncharged}";

/// Reads the rules of the annotation's `text`; problems are named from `path`
/// (`metadata.annotations[tfjob-operator.dev/failure-rules]`) and the rule's index.
pub fn parse(path: &str, text: &str) -> Result<Vec<FailureRule>, Vec<FieldError>> {
    let mut rules = Vec::new();
    let mut errors = Vec::new();
    let lines = text.lines().map(str::trim);
    for line in lines.filter(|l| !l.is_empty() && !l.starts_with('#')) {
        let at = format!("{path}[{}]", rules.len());
        match rule(&at, line) {
            Ok(r) => rules.push(r),
            Err(e) => {
                errors.extend(e);
                rules.push(FailureRule::default());
            }
        }
    }
    if rules.is_empty() && errors.is_empty() {
        errors.push(FieldError::new(
            path,
            format!("Required value: at least one rule, one per line: {RULE_FORM}"),
        ));
    }
    match errors.is_empty() {
        true => Ok(rules),
        false => Err(errors),
    }
}

/// One line: `- {key: value, ...}`.
fn rule(at: &str, line: &str) -> Result<FailureRule, Vec<FieldError>> {
    let body = line
        .strip_prefix('-')
        .map(blank_start)
        .and_then(|l| l.strip_prefix('{'))
        .and_then(|l| l.strip_suffix('}'));
    let Some(body) = body else {
        let hint = format!("Invalid value: {line:?}: a rule is one line of the form {RULE_FORM}");
        return Err(vec![FieldError::new(at, hint)]);
    };
    let mut r = FailureRule::default();
    let mut errors = Vec::new();
    let mut seen = BTreeSet::new();
    for item in split_top(body) {
        let Some((key, value)) = item.split_once(':') else {
            let hint = format!("Invalid value: {item:?}: expected `key: value`");
            errors.push(FieldError::new(at, hint));
            continue;
        };
        let (key, value) = (unquote(key), blank(value));
        let path = format!("{at}.{key}");
        if !seen.insert(key.to_string()) {
            errors.push(FieldError::new(&path, "Duplicate value: given twice"));
            continue;
        }
        if let Err(e) = r.read(&path, key, value) {
            errors.extend(e);
        }
    }
    if !seen.contains("action") {
        let supported = RuleAction::NAMES.join(", ");
        errors.push(FieldError::new(
            format!("{at}.action"),
            format!("Required value: one of {supported}"),
        ));
    }
    match errors.is_empty() {
        true => Ok(r),
        false => Err(errors),
    }
}

impl FailureRule {
    fn read(&mut self, path: &str, key: &str, value: &str) -> Result<(), Vec<FieldError>> {
        let one = |message: String| vec![FieldError::new(path, message)];
        match key {
            "replicaTypes" => {
                let names = ReplicaType::ALL.map(ReplicaType::as_str);
                let types = list(path, value, |s| {
                    ReplicaType::ALL
                        .into_iter()
                        .find(|t| t.as_str() == s)
                        .ok_or_else(|| unsupported(s, &names))
                })?;
                self.replica_types = Some(types.into_iter().collect());
            }
            "exitCodes" => self.exit_codes = Some(list(path, value, exit_codes)?),
            "disruption" => match value {
                "true" => self.disruption = Some(true),
                "false" => self.disruption = Some(false),
                _ => return Err(one(unsupported(value, &["true", "false"]))),
            },
            "containerReasons" => {
                let reasons = list(path, value, |s| match is_word(s) {
                    true => Ok(s.to_string()),
                    false => Err(format!(
                        "Invalid value: {s:?}: a reason is a word, as Kubernetes writes it (OOMKilled, Error)"
                    )),
                })?;
                self.container_reasons = Some(reasons.into_iter().collect());
            }
            "action" => match RuleAction::parse(unquote(value)) {
                Some(a) => self.action = a,
                None => return Err(one(unsupported(unquote(value), &RuleAction::NAMES))),
            },
            _ => {
                return Err(one(format!(
                    "Unsupported value: {key:?}: not a key of a failure rule{}; supported: {}",
                    suggestion(key, RULE_KEYS.into_iter()),
                    RULE_KEYS.join(", ")
                )));
            }
        }
        Ok(())
    }
}

/// `[a, b, ...]`, each item read by `item`; problems named `path[i]`.
fn list<T>(
    path: &str,
    value: &str,
    item: impl Fn(&str) -> Result<T, String>,
) -> Result<Vec<T>, Vec<FieldError>> {
    let inner = value.strip_prefix('[').and_then(|v| v.strip_suffix(']'));
    let Some(inner) = inner else {
        let hint = format!("Invalid value: {value:?}: a list, written [a, b]");
        return Err(vec![FieldError::new(path, hint)]);
    };
    let items: Vec<&str> = inner.split(',').map(unquote).collect();
    if items.iter().all(|s| s.is_empty()) {
        return Err(vec![FieldError::new(
            path,
            "Required value: an empty list matches nothing",
        )]);
    }
    let mut out = Vec::new();
    let mut errors = Vec::new();
    for (i, s) in items.iter().enumerate() {
        match item(s) {
            Ok(v) => out.push(v),
            Err(m) => errors.push(FieldError::new(format!("{path}[{i}]"), m)),
        }
    }
    match errors.is_empty() {
        true => Ok(out),
        false => Err(errors),
    }
}

/// An exit code, `137`, or an inclusive range, `129-255`, within 0–255 (at most 3 digits).
fn exit_codes(s: &str) -> Result<(i32, i32), String> {
    let digits = |n: &str| (1..=3).contains(&n.len()) && n.bytes().all(|b| b.is_ascii_digit());
    let code = |n: &str| {
        let c = n.parse::<i32>().ok().filter(|_| digits(n));
        c.filter(|c| (0..=255).contains(c))
    };
    let range = match s.split_once('-') {
        Some((a, b)) => code(a).zip(code(b)).filter(|(a, b)| a <= b),
        None => code(s).map(|c| (c, c)),
    };
    range.ok_or_else(|| {
        format!("Invalid value: {s:?}: an exit code 0-255, or a range such as 129-255")
    })
}

/// The items of a flow mapping's body, split at the commas outside brackets.
fn split_top(body: &str) -> Vec<&str> {
    let (mut items, mut depth, mut start) = (Vec::new(), 0i32, 0);
    for (i, c) in body.char_indices() {
        match c {
            '[' => depth += 1,
            ']' => depth -= 1,
            ',' if depth == 0 => {
                items.push(blank(&body[start..i]));
                start = i + 1;
            }
            _ => {}
        }
    }
    items.push(blank(&body[start..]));
    items.retain(|s| !s.is_empty());
    items
}

/// Without the spaces and tabs around it (the only blanks a rule's line may hold inside).
fn blank(s: &str) -> &str {
    s.trim_matches([' ', '\t'])
}

fn blank_start(s: &str) -> &str {
    s.trim_start_matches([' ', '\t'])
}

/// A scalar without its double quotes, if it has them.
fn unquote(s: &str) -> &str {
    let s = blank(s);
    s.strip_prefix('"')
        .and_then(|s| s.strip_suffix('"'))
        .unwrap_or(s)
}

fn is_word(s: &str) -> bool {
    !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric())
}

fn unsupported(value: &str, supported: &[&str]) -> String {
    let supported: Vec<String> = supported.iter().map(|s| format!("{s:?}")).collect();
    format!(
        "Unsupported value: {value:?}: supported values: {}",
        supported.join(", ")
    )
}

impl FailureRule {
    /// Whether a failure of a type-`t` replica matches: its `tensorflow` exit code and
    /// terminated reason (if it exited), and whether it was a disruption.
    pub fn matches(
        &self,
        t: ReplicaType,
        exit_code: Option<i32>,
        reason: Option<&str>,
        disruption: bool,
    ) -> bool {
        let types = self.replica_types.as_ref();
        let codes = self.exit_codes.as_ref();
        let reasons = self.container_reasons.as_ref();
        types.is_none_or(|ts| ts.contains(&t))
            && codes.is_none_or(|cs| {
                exit_code.is_some_and(|c| cs.iter().any(|(a, b)| (*a..=*b).contains(&c)))
            })
            && self.disruption.is_none_or(|d| d == disruption)
            && reasons.is_none_or(|rs| reason.is_some_and(|r| rs.contains(r)))
    }
}
