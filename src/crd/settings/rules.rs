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

use super::syntax::{
    blank, blank_start, exit_codes, is_word, list, split_top, unquote, unsupported,
};

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
