//! Every seed example of an older form converts to a valid kubeflow.org/v1 TFJob with the
//! expected replicas and run policy, and says what it changed and dropped.

use serde_json::{Value, json};

use super::*;
use crate::crd::check::check;
use crate::crd::validation::{parse_tfjob, validate};

macro_rules! seed {
    ($file:literal) => {
        include_str!(concat!("../../tests/fixtures/seeds/", $file))
    };
}

/// The converted spec's replicas as (type, replicas, restartPolicy).
fn replicas(doc: &Value) -> Vec<(String, Value, Value)> {
    doc["spec"]["tfReplicaSpecs"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(t, r)| (t.clone(), r["replicas"].clone(), r["restartPolicy"].clone()))
        .collect()
}

fn one(text: &str) -> Converted {
    let doc: Value = serde_saphyr::from_str(text).unwrap();
    convert_document(doc).unwrap_or_else(|e| panic!("{e}"))
}

fn assert_valid(doc: &Value) {
    let c = check(doc);
    assert!(
        c.unknown.is_empty() && c.invalid.is_empty(),
        "{:?} {:?}",
        c.unknown,
        c.invalid
    );
    let job = parse_tfjob(doc.clone()).unwrap();
    if job.metadata.name.is_some() {
        assert_eq!(validate(&job).map(drop), Ok(()), "{doc}");
    }
}

fn has(notes: &Notes, want: &Note) -> bool {
    notes.0.contains(want)
}

#[test]
fn seeds_of_every_older_form_convert_to_valid_v1() {
    // (fixture, form, replicas, runPolicy, notes to check)
    let null = Value::Null;
    let cases = [
        (
            seed!("011-v1alpha1-example-job.yaml"),
            Form::V1Alpha1,
            vec![
                ("Master", json!(1), json!("OnFailure")),
                ("PS", json!(2), json!("OnFailure")),
                ("Worker", json!(1), json!("OnFailure")),
            ],
            null.clone(),
            1,
        ),
        (
            seed!("012-v1alpha1-tf-smoke-gpu.yaml"),
            Form::V1Alpha1,
            vec![("Master", null.clone(), json!("OnFailure"))],
            null.clone(),
            0,
        ),
        (
            seed!("013-v1alpha1-example-job-get-output.yaml"),
            Form::V1Alpha1,
            vec![
                ("Master", json!(1), json!("OnFailure")),
                ("PS", json!(2), json!("OnFailure")),
                ("Worker", json!(1), json!("OnFailure")),
            ],
            null.clone(),
            1,
        ),
        (
            seed!("014-v1beta1-example-tfjob.yaml"),
            Form::KubeflowBeta("v1beta1"),
            vec![("Master", json!(1), null.clone())],
            null.clone(),
            1,
        ),
        (
            seed!("015-v1beta1-module6-ex1-gpu.yaml"),
            Form::KubeflowBeta("v1beta1"),
            vec![("Master", json!(1), null.clone())],
            null.clone(),
            1,
        ),
        (
            seed!("016-t9k-tensorflow-example.yaml"),
            Form::T9k,
            vec![("Worker", json!(4), json!("OnFailure"))],
            null.clone(),
            0,
        ),
        (
            seed!("017-t9k-tensorflow-example-scheduler-tensorboard.yaml"),
            Form::T9k,
            vec![("Worker", json!(4), json!("OnFailure"))],
            json!({"schedulingPolicy": {"queue": "default"}}),
            0,
        ),
        (
            seed!("008-mnist-get-output-legacy-fields.yaml"),
            Form::EarlyV1,
            vec![("Worker", json!(1), json!("Never"))],
            json!({"cleanPodPolicy": "None"}),
            0,
        ),
    ];
    for (text, form, want_replicas, run_policy, checks) in cases {
        let c = one(text);
        assert_eq!(c.from, form);
        assert_eq!(c.doc["apiVersion"], "kubeflow.org/v1");
        assert_eq!(c.doc["kind"], "TFJob");
        let got = replicas(&c.doc);
        let want: Vec<(String, Value, Value)> = want_replicas
            .into_iter()
            .map(|(t, n, p)| (t.to_string(), n, p))
            .collect();
        assert_eq!(got, want, "{text}");
        assert_eq!(c.doc["spec"]["runPolicy"], run_policy, "{text}");
        assert_eq!(c.notes.checks(), checks, "{:#?}", c.notes);
        assert!(c.doc.get("status").is_none());
        assert_valid(&c.doc);
        let again = convert_document(c.doc.clone()).unwrap();
        assert_eq!(
            (again.from, again.notes.0.len() - again.notes.checks()),
            (Form::Current, 0),
            "a fixed point: {:#?}",
            again.notes
        );
        assert_eq!(again.doc, c.doc);
    }
}

#[test]
fn v1alpha1_mappings() {
    let c = one(seed!("013-v1alpha1-example-job-get-output.yaml"));
    let spec = &c.doc["spec"];
    assert_eq!(
        spec["tfReplicaSpecs"]["PS"]["template"]["spec"]["containers"][0]["image"],
        "tensorflow/tensorflow:1.3.0"
    );
    let cmd = &spec["tfReplicaSpecs"]["PS"]["template"]["spec"]["containers"][0]["command"];
    assert_eq!(cmd[0], "python");
    assert!(cmd[2].as_str().unwrap().contains("TF_CONFIG"));
    assert!(
        spec["tfReplicaSpecs"]["PS"]["template"]["spec"]["containers"][0]
            .get("volumeMounts")
            .is_none(),
        "the generated PS's ConfigMap mount is gone"
    );
    assert!(
        spec["tfReplicaSpecs"]["Master"]["template"]["spec"]
            .get("restartPolicy")
            .is_none(),
        "lifted to the replica"
    );
    assert_eq!(
        c.doc["metadata"],
        json!({"name": "example-job", "namespace": "default"})
    );
    for note in [
        Note::Changed(
            "spec.replicaSpecs[0] (tfReplicaType MASTER) -> spec.tfReplicaSpecs.Master".into(),
        ),
        Note::Changed("kubeflow.org/v1alpha1 TFJob -> kubeflow.org/v1 TFJob".into()),
        Note::Dropped(
            "spec.replicaSpecs[0].tfPort: 2222, the port kubeflow.org/v1 uses by default".into(),
        ),
        Note::Dropped(
            "spec.RuntimeId: kubeflow.org/v1 names every pod and service <name>-<type>-<index>"
                .into(),
        ),
        Note::Dropped("status: written by the controller, never by a manifest".into()),
    ] {
        assert!(has(&c.notes, &note), "{note:?} in {:#?}", c.notes);
    }

    // tfPort, terminationPolicy, schedulerName, an unset type, a duplicate type.
    let doc = json!({"apiVersion": "kubeflow.org/v1alpha1", "kind": "TFJob", "metadata": {"name": "j"},
    "spec": {"schedulerName": "volcano", "terminationPolicy": {"chief": {"replicaName": "WORKER", "replicaIndex": 1}},
        "replicaSpecs": [
            {"template": {"spec": {"containers": [{"name": "tensorflow", "image": "i"}], "restartPolicy": "Never"}}},
            {"tfReplicaType": "WORKER", "replicas": 3, "tfPort": 3333,
                "template": {"spec": {"containers": [{"name": "tensorflow", "image": "i", "ports": [{"name": "tfjob-port", "containerPort": 1}]}]}}},
        ]}});
    let c = convert_document(doc).unwrap();
    let specs = &c.doc["spec"]["tfReplicaSpecs"];
    assert_eq!(specs["Master"]["restartPolicy"], "Never");
    assert_eq!(
        specs["Master"]["template"]["spec"]["schedulerName"],
        "volcano"
    );
    assert_eq!(
        specs["Worker"]["template"]["spec"]["containers"][0]["ports"],
        json!([{"name": "tfjob-port", "containerPort": 3333}])
    );
    assert_eq!(
        c.notes.checks(),
        2,
        "terminationPolicy and the Worker's missing restartPolicy: {:#?}",
        c.notes
    );
    let dup = json!({"apiVersion": "kubeflow.org/v1alpha1", "kind": "TFJob", "spec": {"replicaSpecs": [
        {"tfReplicaType": "WORKER", "template": {}}, {"tfReplicaType": "WORKER", "template": {}}]}});
    assert!(
        convert_document(dup)
            .unwrap_err()
            .starts_with("spec.replicaSpecs[1]: a second Worker replica spec")
    );
}

#[test]
fn kubeflow_beta_and_early_v1_mappings() {
    let doc = json!({"apiVersion": "kubeflow.org/v1beta2", "kind": "TFJob", "metadata": {"name": "j"},
        "spec": {"cleanPodPolicy": "All", "ttlSecondsAfterFinished": 60, "activeDeadlineSeconds": 600,
            "backoffLimit": 3, "tfRpcLayer": "grpc+verbs", "successPolicy": "AllWorkers",
            "tfReplicaSpecs": {"ps": {"replicas": 1, "template": {}}, "Worker": {"replicas": 2, "restartPolicy": "ExitCode", "template": {}}}}});
    let c = convert_document(doc).unwrap();
    assert_eq!(
        c.doc["spec"]["runPolicy"],
        json!({"cleanPodPolicy": "All", "ttlSecondsAfterFinished": 60, "activeDeadlineSeconds": 600, "backoffLimit": 3})
    );
    assert_eq!(c.doc["spec"]["successPolicy"], "AllWorkers");
    assert_eq!(
        replicas(&c.doc),
        [
            ("PS".to_string(), json!(1), Value::Null),
            ("Worker".to_string(), json!(2), json!("ExitCode"))
        ]
    );
    assert!(has(
        &c.notes,
        &Note::Changed("spec.tfReplicaSpecs.ps -> spec.tfReplicaSpecs.PS".into())
    ));
    assert!(has(
        &c.notes,
        &Note::Dropped("spec.tfRpcLayer: kubeflow.org/v1 writes no rpcLayer into TF_CONFIG; set it in the training program".into())
    ));
    let bad = json!({"apiVersion": "kubeflow.org/v1beta1", "kind": "TFJob", "spec": {"tfReplicaSpecs": {"Launcher": {}}}});
    assert!(
        convert_document(bad)
            .unwrap_err()
            .contains("\"Launcher\" is not a TensorFlow replica type")
    );
}

#[test]
fn t9k_mappings() {
    let doc = json!({"apiVersion": "batch.tensorstack.dev/v1beta1", "kind": "TensorFlowTrainingJob",
    "metadata": {"name": "t"},
    "spec": {
        "replicaSpecs": [
            {"type": "chief", "template": {"spec": {"containers": [{"name": "tensorflow", "image": "i"}]}}},
            {"type": "ps", "replicas": 2, "restartPolicy": "Always", "template": {}},
        ],
        "runPolicy": {"cleanUpPolicy": "Unfinished", "backoffLimit": 2, "activeDeadlineSeconds": 60},
        "runMode": {"pause": {"enabled": true, "resumeSpecs": [{"type": "chief", "command": ["x"]}]}, "debug": {"enabled": false}},
        "scheduler": {"t9kScheduler": {"queue": "q", "priority": 50}},
        "tensorboardSpec": {"image": "tb"},
    }});
    let c = convert_document(doc).unwrap();
    assert_eq!(
        c.doc["spec"]["runPolicy"],
        json!({"cleanPodPolicy": "Running", "backoffLimit": 2, "activeDeadlineSeconds": 60,
            "suspend": true, "schedulingPolicy": {"queue": "q"}})
    );
    assert_eq!(
        replicas(&c.doc),
        [
            ("Chief".to_string(), Value::Null, Value::Null),
            ("PS".to_string(), json!(2), json!("Always"))
        ]
    );
    let dropped: Vec<&String> = c
        .notes
        .0
        .iter()
        .filter_map(|n| match n {
            Note::Dropped(t) => Some(t),
            _ => None,
        })
        .collect();
    let starts: Vec<&str> = dropped
        .iter()
        .map(|t| t.split(':').next().unwrap())
        .collect();
    assert_eq!(
        starts,
        [
            "spec.runMode.pause.resumeSpecs",
            "spec.runMode.debug",
            "spec.scheduler.t9kScheduler.priority 50",
            "spec.tensorboardSpec"
        ]
    );
    for cleanup in [("All", "All"), ("None", "None")] {
        let doc = json!({"apiVersion": "batch.tensorstack.dev/v1beta1", "kind": "TensorFlowTrainingJob",
            "spec": {"replicaSpecs": [{"type": "worker", "template": {}}], "runPolicy": {"cleanUpPolicy": cleanup.0}}});
        assert_eq!(
            convert_document(doc).unwrap().doc["spec"]["runPolicy"]["cleanPodPolicy"],
            cleanup.1
        );
    }
    let debugging = json!({"apiVersion": "batch.tensorstack.dev/v1beta1", "kind": "TensorFlowTrainingJob",
        "spec": {"replicaSpecs": [{"type": "worker", "template": {}}], "runMode": {"debug": {"enabled": true}}}});
    assert_eq!(convert_document(debugging).unwrap().notes.checks(), 1);
    let launcher = json!({"apiVersion": "batch.tensorstack.dev/v1beta1", "kind": "TensorFlowTrainingJob",
        "spec": {"replicaSpecs": [{"type": "launcher"}]}});
    assert!(convert_document(launcher).is_err());
}

#[test]
fn whole_manifests_keep_other_kinds_and_report_every_problem() {
    let pvc = "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: data}\n";
    let text = format!("{pvc}---\n{}", seed!("014-v1beta1-example-tfjob.yaml"));
    let out = convert(&text, "in.yaml").unwrap();
    let docs: Vec<Value> = serde_saphyr::from_multiple(&out.yaml).unwrap();
    assert_eq!(docs.len(), 2);
    assert_eq!(docs[0]["kind"], "PersistentVolumeClaim");
    assert_eq!(docs[1]["apiVersion"], "kubeflow.org/v1");
    assert_eq!(
        out.summary,
        [
            "in.yaml, document 1: kind PersistentVolumeClaim \"data\": not a TFJob, unchanged",
            "in.yaml, document 2: a kubeflow.org/v1beta1 TFJob \"example-tfjob\": converted, 3 notes, 1 note to check",
        ]
    );
    assert!(out.yaml.contains(
        "# Converted by `tfjob-operator convert` from a kubeflow.org/v1beta1 TFJob (in.yaml, document 2).\n# Changed:\n"
    ));
    let current = convert(seed!("005-tfjob-dist.yaml"), "x").unwrap();
    assert!(
        current.summary[0].ends_with("already kubeflow.org/v1, unchanged"),
        "{:?}",
        current.summary
    );
    assert!(!current.yaml.starts_with('#'));
    let bad = format!(
        "{}---\n{}",
        "apiVersion: kubeflow.org/v1alpha1\nkind: TFJob\nspec: {replicaSpecs: 3}\n",
        "apiVersion: kubeflow.org/v1beta1\nkind: TFJob\nspec: {}\n"
    );
    assert_eq!(
        convert(&bad, "x").unwrap_err(),
        [
            "document 1: spec.replicaSpecs: must be a list of replica specs",
            "document 2: spec.tfReplicaSpecs: Required value"
        ]
    );
    assert_eq!(convert("", "x").unwrap_err(), ["no document in the input"]);
}
