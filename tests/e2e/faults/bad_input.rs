//! Bad input: a property test over arbitrary TFJob-shaped documents (wrong types, missing
//! fields, odd keys, huge numbers, unicode names): reading, validating and rendering never
//! panic; every invalid document gets a message naming a field; every valid one renders.

use proptest::collection::{btree_map, vec};
use proptest::prelude::*;
use serde_json::{Map, Value, json};
use tfjob_operator::crd::validation::{parse_tfjob, validate};

/// A value of the wrong type for almost any field.
fn junk() -> BoxedStrategy<Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        (-1e30f64..1e30).prop_map(Value::from),
        "\\PC{0,12}".prop_map(Value::from),
        Just(json!([])),
        Just(json!({})),
        Just(json!([1, "two", null])),
    ]
    .boxed()
}

/// Set `key` when `value` is present.
fn field(map: &mut Map<String, Value>, key: &str, value: Option<Value>) {
    if let Some(v) = value {
        map.insert(key.to_string(), v);
    }
}

fn name() -> BoxedStrategy<Value> {
    prop_oneof![
        12 => "[a-z][a-z0-9-]{0,14}[a-z0-9]".prop_map(Value::from),
        1 => "[a-z]{50,70}".prop_map(Value::from),
        1 => "[A-Z][A-Za-z0-9_.]{0,10}".prop_map(Value::from),
        1 => "\\PC{1,10}".prop_map(Value::from),
        1 => Just(json!("")),
        1 => Just(json!("-bad-")),
    ]
    .boxed()
}

fn one_of(values: &'static [&'static str]) -> BoxedStrategy<Value> {
    proptest::sample::select(values)
        .prop_map(Value::from)
        .boxed()
}

/// An optional field: absent or present.
fn maybe(value: BoxedStrategy<Value>, present: u32) -> BoxedStrategy<Option<Value>> {
    prop_oneof![10 - present => Just(None), present => value.prop_map(Some)].boxed()
}

fn container(name: Value) -> BoxedStrategy<Value> {
    let port = (one_of(&["tfjob-port", "http"]), 1i64..65536)
        .prop_map(|(name, port)| json!({"name": name, "containerPort": port}));
    let ports = maybe(vec(port, 0..3).prop_map(Value::from).boxed(), 3);
    (Just(name), ports)
        .prop_map(|(name, ports)| {
            let mut c = Map::new();
            c.insert("name".into(), name);
            c.insert("image".into(), json!("busybox:1.36"));
            field(&mut c, "ports", ports);
            Value::Object(c)
        })
        .boxed()
}

fn template() -> BoxedStrategy<Value> {
    let containers = prop_oneof![
        6 => container(json!("tensorflow")).prop_map(|c| vec![c]),
        2 => (container(json!("tensorflow")), container(json!("sidecar"))).prop_map(|(a, b)| vec![a, b]),
        1 => container(json!("main")).prop_map(|c| vec![c]),
        1 => Just(vec![]),
    ];
    let labels = btree_map("[a-z]{1,5}", "[a-z0-9]{0,5}", 0..3);
    let pod_policy = maybe(one_of(&["Always", "Never"]), 2);
    (containers, labels, pod_policy)
        .prop_map(|(containers, labels, policy)| {
            let mut spec = Map::new();
            spec.insert("containers".into(), json!(containers));
            field(&mut spec, "restartPolicy", policy);
            json!({"metadata": {"labels": labels}, "spec": spec})
        })
        .boxed()
}

fn replica_spec() -> BoxedStrategy<Value> {
    (
        maybe(
            prop_oneof![3 => Just(json!(1)), 1 => (0i64..4).prop_map(Value::from)].boxed(),
            7,
        ),
        maybe(one_of(&["Never", "OnFailure", "Always", "ExitCode"]), 6),
        template(),
    )
        .prop_map(|(replicas, policy, template)| {
            let mut s = Map::new();
            field(&mut s, "replicas", replicas);
            field(&mut s, "restartPolicy", policy);
            s.insert("template".into(), template);
            Value::Object(s)
        })
        .boxed()
}

fn replica_specs() -> BoxedStrategy<Value> {
    let key = prop_oneof![
        12 => one_of(&["Worker", "Worker", "Worker", "PS", "PS", "Chief", "Master", "Evaluator"]),
        3 => one_of(&["worker", "WORKER", "ps", "chief", "MASTER", "evaluator"]),
        1 => one_of(&["Launcher", "", "Worker "]),
        1 => "\\PC{1,6}".prop_map(Value::from),
    ]
    .prop_map(|k| k.as_str().unwrap_or_default().to_string());
    prop_oneof![
        12 => btree_map(key, replica_spec(), 1..4).prop_map(|m| json!(m)),
        1 => Just(json!({})),
    ]
    .boxed()
}

fn run_policy() -> BoxedStrategy<Value> {
    let int = || maybe((0i64..100).prop_map(Value::from).boxed(), 4);
    let managed = maybe(
        one_of(&[
            "kubeflow.org/training-operator",
            "kueue.x-k8s.io/multikueue",
            "someone/else",
        ]),
        2,
    );
    (
        maybe(one_of(&["All", "Running", "None"]), 6),
        int(),
        maybe((1i64..100).prop_map(Value::from).boxed(), 4),
        int(),
        maybe(any::<bool>().prop_map(Value::from).boxed(), 4),
        managed,
    )
        .prop_map(|(clean, backoff, deadline, ttl, suspend, managed)| {
            let mut p = Map::new();
            field(&mut p, "cleanPodPolicy", clean);
            field(&mut p, "backoffLimit", backoff);
            field(&mut p, "activeDeadlineSeconds", deadline);
            field(&mut p, "ttlSecondsAfterFinished", ttl);
            field(&mut p, "suspend", suspend);
            field(&mut p, "managedBy", managed);
            Value::Object(p)
        })
        .boxed()
}

/// A TFJob as users write them, mostly valid (validation still refuses some: bad names,
/// unknown replica types, no replica deciding success, a container missing).
fn clean_tfjob() -> BoxedStrategy<Value> {
    let metadata = (name(), maybe(Just(json!("gen-")).boxed(), 1)).prop_map(|(name, generate)| {
        let mut m = Map::new();
        m.insert("name".into(), name);
        field(&mut m, "generateName", generate);
        Value::Object(m)
    });
    let spec = (
        replica_specs(),
        maybe(run_policy(), 5),
        maybe(one_of(&["", "AllWorkers"]), 2),
        maybe(any::<bool>().prop_map(Value::from).boxed(), 2),
    )
        .prop_map(|(specs, policy, success, dynamic)| {
            let mut s = Map::new();
            s.insert("tfReplicaSpecs".into(), specs);
            field(&mut s, "runPolicy", policy);
            field(&mut s, "successPolicy", success);
            field(&mut s, "enableDynamicWorker", dynamic);
            Value::Object(s)
        });
    (metadata, spec)
        .prop_map(|(metadata, spec)| {
            json!({"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "metadata": metadata, "spec": spec})
        })
        .boxed()
}

/// JSON pointers of every node of `v` but the root.
fn pointers(v: &Value, at: String, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            for (k, child) in m {
                let p = format!("{at}/{}", k.replace('~', "~0").replace('/', "~1"));
                out.push(p.clone());
                pointers(child, p, out);
            }
        }
        Value::Array(a) => {
            for (i, child) in a.iter().enumerate() {
                let p = format!("{at}/{i}");
                out.push(p.clone());
                pointers(child, p, out);
            }
        }
        _ => {}
    }
}

/// One change to a document: at the node picked by `pick`, `op` 0 replaces it with `junk`,
/// 1 removes it, 2 adds an odd key beside its fields (or replaces a scalar).
#[derive(Clone, Debug)]
struct Mutation {
    pick: usize,
    op: u8,
    junk: Value,
    key: String,
}

fn mutation() -> BoxedStrategy<Mutation> {
    (any::<usize>(), 0u8..3, junk(), "[a-zA-Z\\PC]{1,8}")
        .prop_map(|(pick, op, junk, key)| Mutation {
            pick,
            op,
            junk,
            key,
        })
        .boxed()
}

fn mutate(doc: &mut Value, m: &Mutation) {
    let mut all = Vec::new();
    pointers(doc, String::new(), &mut all);
    let Some(at) = all.get(m.pick % all.len().max(1)).cloned() else {
        return;
    };
    let (parent, last) = at.rsplit_once('/').unwrap_or(("", &at));
    let last = last.replace("~1", "/").replace("~0", "~");
    match m.op {
        0 => {
            if let Some(node) = doc.pointer_mut(&at) {
                *node = m.junk.clone();
            }
        }
        1 => match doc.pointer_mut(parent) {
            Some(Value::Object(map)) => {
                map.remove(&last);
            }
            Some(Value::Array(items)) => {
                if let Ok(i) = last.parse::<usize>()
                    && i < items.len()
                {
                    items.remove(i);
                }
            }
            _ => {}
        },
        _ => match doc.pointer_mut(&at) {
            Some(Value::Object(map)) => {
                map.insert(m.key.clone(), m.junk.clone());
            }
            Some(node) => *node = m.junk.clone(),
            None => {}
        },
    }
}

/// A TFJob-shaped document: a clean one, changed in up to three places.
fn tfjob() -> BoxedStrategy<Value> {
    (
        clean_tfjob(),
        prop_oneof![3 => Just(vec![]), 3 => vec(mutation(), 1..2), 2 => vec(mutation(), 2..4)],
    )
        .prop_map(|(mut doc, mutations)| {
            for m in &mutations {
                mutate(&mut doc, m);
            }
            doc
        })
        .boxed()
}

const ROOTS: [&str; 4] = ["spec", "metadata", "apiVersion", "kind"];

/// Whether `text` names a field: one of the document's top-level fields as a path (`spec.…`,
/// `metadata.name`, `apiVersion: …`) or quoted (`` `spec` ``).
fn names_a_field(text: &str) -> bool {
    ROOTS.iter().any(|root| {
        text.match_indices(root).any(|(i, _)| {
            let before = text[..i].chars().next_back();
            let after = text[i + root.len()..].chars().next();
            before.is_none_or(|c| " `'\"(".contains(c))
                && after.is_none_or(|c| ".[`'\":".contains(c))
        })
    })
}

/// Replicas the job would render (a replica spec without `replicas` has 1).
fn total_replicas(job: &tfjob_operator::crd::TFJob) -> i64 {
    job.spec
        .tf_replica_specs
        .iter()
        .map(|(_, s)| i64::from(s.replicas.unwrap_or(1)))
        .sum()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 768, ..ProptestConfig::default() })]

    /// Arbitrary TFJob-shaped JSON: `parse_tfjob` and `validate` never panic; a document they
    /// refuse gets messages naming a field (`spec.tfReplicaSpecs[Worker].replicas: …`); one
    /// they and the CRD's schema (unknown fields included) accept renders (`tfjob-operator render`) into a pod and a
    /// service per replica.
    #[test]
    fn arbitrary_tfjob_documents_never_panic_and_every_invalid_one_names_a_field(doc in tfjob()) {
        // (CPU-bound: it waits while the soak test loads the machine on purpose)
        let _turn = crate::support::faults::shared_blocking();
        match parse_tfjob(doc.clone()) {
            Err(e) => {
                let text = e.to_string();
                prop_assert!(!e.message.is_empty(), "empty message for {doc}");
                prop_assert!(names_a_field(&text), "{text:?} names no field, for {doc}");
            }
            Ok(job) => match validate(&job) {
                Err(errors) => {
                    prop_assert!(!errors.is_empty());
                    for e in &errors {
                        prop_assert!(
                            (e.path.starts_with("spec") || e.path.starts_with("metadata"))
                                && names_a_field(&e.to_string())
                                && !e.message.is_empty(),
                            "{e} names no field, for {doc}"
                        );
                    }
                }
                Ok(_) => {
                    let replicas = total_replicas(&job);
                    // The CRD's schema (what the API server checks before the operator ever
                    // sees a job) refuses some documents the operator's own rules let pass, a
                    // container without a name say; `render` checks both.
                    let checked = tfjob_operator::crd::check::check(&doc);
                    let schema: Vec<String> = checked.invalid.iter().map(ToString::to_string)
                        .chain(checked.unknown)
                        .collect();
                    for e in &schema {
                        prop_assert!(names_a_field(e), "{e} names no field, for {doc}");
                    }
                    // Millions of replicas are valid; rendering them is not this test's job.
                    if schema.is_empty() && replicas <= 64 {
                        let rendered = tfjob_operator::render::render(&doc.to_string(), None);
                        prop_assert!(rendered.is_ok(), "a valid job does not render: {rendered:?}, for {doc}");
                        let out = rendered.unwrap_or_default();
                        let pods = out.matches("kind: Pod").count() as i64;
                        let services = out.matches("kind: Service").count() as i64;
                        prop_assert_eq!((pods, services), (replicas, replicas), "for {}", doc);
                    }
                }
            },
        }
    }
}
