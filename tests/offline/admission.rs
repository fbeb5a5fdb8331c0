//! The ValidatingAdmissionPolicy of `config/admission` refuses exactly what the operator
//! refuses in our `tfjob-operator.dev/` annotations (`crd::settings`), with the operator's field
//! paths: its CEL is evaluated here with kube-cel (the Kubernetes CEL libraries in Rust) over a
//! table of cases and over generated failure rules. The real API server evaluates it in
//! `tests/e2e/admission.rs` on the real tier.

use std::collections::{BTreeMap, HashMap};

use kube_cel::KubeCelExt;
use kube_cel::cel::{Context, Program, Value};
use proptest::prelude::*;
use serde_json::json;
use tfjob_operator::crd::settings::JobSettings;

const POLICY: &str = include_str!("../../config/admission/policy.yaml");

/// What the policy says of a TFJob with these annotations: None, or the first refusal.
fn policy_verdict(annotations: &BTreeMap<String, String>) -> Option<String> {
    static PARSED: std::sync::OnceLock<serde_json::Value> = std::sync::OnceLock::new();
    let policy = PARSED.get_or_init(|| serde_saphyr::from_str(POLICY).expect("policy YAML"));
    let spec = &policy["spec"];
    let object = json!({"metadata": {"name": "j", "annotations": annotations}});
    let mut ctx = Context::default().with_all();
    ctx.add_variable("object", kube_cel::cel::to_value(&object).unwrap())
        .unwrap();
    let mut variables: HashMap<String, Value> = HashMap::new();
    for v in spec["variables"].as_array().unwrap() {
        let name = v["name"].as_str().unwrap();
        let value = run(&ctx, v["expression"].as_str().unwrap());
        variables.insert(name.to_string(), value);
        ctx.add_variable_from_value("variables", Value::from(variables.clone()));
    }
    for check in spec["validations"].as_array().unwrap() {
        match run(&ctx, check["expression"].as_str().unwrap()) {
            Value::Bool(true) => {}
            Value::Bool(false) => {
                let message = match check["messageExpression"].as_str() {
                    Some(expression) => match run(&ctx, expression) {
                        Value::String(s) => s.to_string(),
                        other => panic!("message {expression}: {other:?}"),
                    },
                    None => check["message"].as_str().unwrap().to_string(),
                };
                return Some(message);
            }
            other => panic!("{check}: {other:?}"),
        }
    }
    None
}

fn run(ctx: &Context, expression: &str) -> Value {
    let program = Program::compile(expression).unwrap_or_else(|e| panic!("{expression}: {e}"));
    program
        .execute(ctx)
        .unwrap_or_else(|e| panic!("{expression}: {e}"))
}

/// What the operator says: None, or its first problem (without the "did you mean" hint,
/// which CEL cannot compute).
fn operator_verdict(annotations: &BTreeMap<String, String>) -> Option<String> {
    let errors = JobSettings::of(Some(annotations)).err()?;
    let first = errors[0].to_string();
    Some(match first.split_once(" (did you mean") {
        Some((head, tail)) => head.to_string() + tail.split_once(')').map_or("", |(_, t)| t),
        None => first,
    })
}

fn annotations(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (format!("tfjob-operator.dev/{k}"), v.to_string()))
        .collect()
}

#[test]
fn the_policy_refuses_what_the_operator_refuses_with_its_words() {
    // (annotations, whether the policy's message is the operator's word for word)
    let cases: Vec<(Vec<(&str, &str)>, bool)> = vec![
        (vec![], true),
        (
            vec![("restart-scope", "Job"), ("max-job-restarts", "0")],
            true,
        ),
        (vec![("restart-scop", "Job")], true),
        (vec![("restart-scope", "job")], true),
        (vec![("restart-on", "Any")], true),
        (vec![("restart-on", "Any"), ("restart-scope", "Job")], true),
        (vec![("restart-on", "always")], true),
        (vec![("max-job-restarts", "-1")], true),
        (vec![("max-job-restarts", "+3")], true),
        (vec![("max-job-restarts", " 3")], true),
        (vec![("max-job-restarts", "3000000000")], true),
        (vec![("startup-deadline-seconds", "0")], true),
        (vec![("startup-deadline-seconds", "soon")], true),
        (vec![("wait-for-evaluator-seconds", "600")], true),
        (vec![("wait-for-evaluator-seconds", "")], true),
        (vec![("failure-rules", "# none\n\n")], true),
        (
            vec![(
                "failure-rules",
                "- {replicaTypes: [PS], action: FailJob}\n  # a comment\n\
                 - {\"replicaTypes\": [\"Worker\", Chief], exitCodes: [137, 129-143], action: \"RestartReplica\"}\n\
                 -{disruption: true,action : RestartUncharged}\r\n\
                 - { containerReasons: [OOMKilled, Error], action: RestartJob }",
            )],
            true,
        ),
        (
            vec![("failure-rules", "- replicaTypes: [PS]\n  action: FailJob")],
            true,
        ),
        (
            vec![("failure-rules", "- {action: FailJob}\n- {action: Fail}")],
            false,
        ),
        (
            vec![("failure-rules", "- {exitCodes: [255-129], action: FailJob}")],
            false,
        ),
        (vec![("failure-rules", "- {replicaTypes: [PS]}")], false),
        (
            vec![("failure-rules", "- {action: FailJob, action: FailJob}")],
            false,
        ),
    ];
    for (pairs, same_words) in cases {
        let a = annotations(&pairs);
        let (policy, operator) = (policy_verdict(&a), operator_verdict(&a));
        assert_eq!(
            policy.is_some(),
            operator.is_some(),
            "{pairs:?}: {policy:?} vs {operator:?}"
        );
        if same_words {
            assert_eq!(policy, operator, "{pairs:?}");
        }
        if let Some(message) = policy {
            let path = operator.unwrap().split(": ").next().unwrap().to_string();
            let at = path.split('.').next().unwrap();
            assert!(message.starts_with(at), "{message} does not name {at}");
        }
    }
}

/// Items of a rule as people write them: each key once, quoted or not, spaced or not.
const GOOD_ITEMS: [&str; 12] = [
    "replicaTypes: [PS]",
    "\"replicaTypes\": [Worker, \"Chief\"]",
    "exitCodes: [137]",
    "exitCodes: [129-255, 1]",
    "exitCodes: [\"138\", 007]",
    "disruption: true",
    "disruption: false",
    "containerReasons: [OOMKilled]",
    "containerReasons: [\"Error\", Completed]",
    "action: \"RestartJob\"",
    "action : RestartUncharged",
    "action:FailJob",
];

/// Mistakes people make in an item.
const BAD_ITEMS: [&str; 16] = [
    "replicaTypes: [Ps]",
    "replicaTypes: []",
    "replicaTypes: [PS,]",
    "replicaType: [PS]",
    "exitCodes: [255-129]",
    "exitCodes: [256]",
    "exitCodes: [0137]",
    "exitCodes: [-1]",
    "exitCodes: 137",
    "disruption: \"true\"",
    "disruption: yes",
    "containerReasons: [OOM-Killed]",
    "action: Restart",
    "action FailJob",
    "action: [FailJob]",
    "\"action: FailJob\"",
];

fn item() -> impl Strategy<Value = &'static str> {
    prop_oneof![
        4 => prop::sample::select(GOOD_ITEMS.to_vec()),
        1 => prop::sample::select(BAD_ITEMS.to_vec()),
    ]
}

/// A rule line, mostly well formed: a few items, usually ending with an action.
fn rule() -> impl Strategy<Value = String> {
    let items = prop::collection::vec(item(), 0..3);
    let action = prop::option::weighted(
        0.7,
        prop::sample::select(vec!["action: FailJob", "action: RestartReplica"]),
    );
    let sep = prop::sample::select(vec![", ", ",", " ,\t", "\t, "]);
    let open = prop_oneof![6 => Just("- {"), 1 => prop::sample::select(vec!["-{", "-  { ", "{", "- [", "-\t{", "* {"])];
    let close =
        prop_oneof![6 => Just("}"), 1 => prop::sample::select(vec![" }", "}}", "]", "\t}", "},"])];
    (open, items, action, sep, close).prop_map(|(open, mut items, action, sep, close)| {
        items.extend(action);
        format!("{open}{}{close}", items.join(sep))
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// Whatever the rules, the policy and the operator agree on refusing them.
    #[test]
    fn the_policy_and_the_operator_agree_on_generated_failure_rules(
        rules in prop::collection::vec(rule(), 1..4)
    ) {
        let a = annotations(&[("failure-rules", &rules.join("\n"))]);
        let (policy, operator) = (policy_verdict(&a), operator_verdict(&a));
        prop_assert_eq!(policy.is_some(), operator.is_some(), "{:?}: {:?} vs {:?}", rules, policy, operator);
    }
}

#[test]
fn the_binding_binds_the_policy_to_deny() {
    let binding: serde_json::Value =
        serde_saphyr::from_str(include_str!("../../config/admission/binding.yaml")).unwrap();
    let policy: serde_json::Value = serde_saphyr::from_str(POLICY).unwrap();
    assert_eq!(binding["spec"]["policyName"], policy["metadata"]["name"]);
    assert_eq!(binding["spec"]["validationActions"], json!(["Deny"]));
}
