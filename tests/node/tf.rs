//! Real TensorFlow across pods: what TF reports, read from the pods' logs.

use serde_json::{Value, json};

use crate::cluster::{Namespace, Node, Replica, finished, report, reports, tf_job};

/// TF_CONFIG's `cluster` as the operator must write it for JOB in NS: `<job>-<type>-<i>.<ns>.svc
/// [.domain]:<port>` per replica.
fn cluster_addresses(
    ns: &str,
    job: &str,
    types: &[(&str, i32)],
    domain: Option<&str>,
    port: i32,
) -> Value {
    let mut cluster = serde_json::Map::new();
    for (t, n) in types {
        let suffix = domain.map(|d| format!(".{d}")).unwrap_or_default();
        let list: Vec<Value> = (0..*n)
            .map(|i| json!(format!("{job}-{t}-{i}.{ns}.svc{suffix}:{port}")))
            .collect();
        cluster.insert(t.to_string(), json!(list));
    }
    Value::Object(cluster)
}

/// The pod IP of NS/POD.
fn pod_ip(ns: &Namespace, pod: &str) -> String {
    ns.get(&["pod", pod])["status"]["podIP"]
        .as_str()
        .unwrap_or_else(|| panic!("{pod} has no IP"))
        .to_string()
}

/// Runs a 2-worker MultiWorkerMirroredStrategy job to its end and checks what both workers'
/// TensorFlow reports; returns the workers' logs.
fn mwms_job(
    node: &Node,
    ns: &Namespace,
    job: &str,
    domain: Option<&str>,
    port: Option<i32>,
) -> Vec<String> {
    let mut worker = Replica::new("Worker", 2, "Never", &["mwms", "--steps", "20"]);
    worker.port = port;
    let mut object = tf_job(node, &ns.name, job, &[worker]);
    // The job succeeds when worker 0 does; worker 1, a moment behind, must keep its pod (and
    // log) rather than be deleted as still running (cleanPodPolicy Running, seen under load).
    object["spec"]["runPolicy"] = json!({"cleanPodPolicy": "None"});
    node.apply(&object);
    let done = ns.wait_finished(job, 240);
    assert_eq!(
        finished(&done),
        Some("Succeeded"),
        "{}\n{}",
        done["status"],
        ns.describe()
    );
    ns.wait_pods_finished(60);

    let want_cluster = cluster_addresses(
        &ns.name,
        job,
        &[("worker", 2)],
        domain,
        port.unwrap_or(2222),
    );
    let mut logs = Vec::new();
    let mut sums = Vec::new();
    for i in 0..2 {
        let pod = format!("{job}-worker-{i}");
        // `kubectl logs`, as a user reads a worker's output (through the kubelet).
        let log = ns.logs(&pod, false);
        let r = reports(&log);
        // Every peer's name resolved before TensorFlow started (train.py, `wait_for_peers`).
        let dns = report(&r, "dns_wait", &log);
        assert_eq!(dns["unresolved"], json!([]), "{pod}: {dns}");
        let tf_config = &report(&r, "tf_config", &log)["tf_config"];
        assert_eq!(
            tf_config["cluster"], want_cluster,
            "{pod}: TF_CONFIG cluster"
        );
        assert_eq!(
            tf_config["task"],
            json!({"type": "worker", "index": i}),
            "{pod}: TF_CONFIG task"
        );
        // Every peer's address resolved (CoreDNS, through the headless Services) to its pod.
        let resolved = &report(&r, "peers", &log)["resolved"];
        for j in 0..2 {
            let peer = format!("{job}-worker-{j}");
            let host = want_cluster["worker"][j]
                .as_str()
                .unwrap()
                .rsplit_once(':')
                .unwrap()
                .0
                .to_string();
            assert_eq!(
                resolved[&host],
                json!([pod_ip(ns, &peer)]),
                "{pod} resolving {host}"
            );
        }
        let resolver = report(&r, "resolver", &log);
        assert_eq!(resolver["task_type"], "worker");
        assert_eq!(resolver["task_id"], i);
        assert_eq!(resolver["tf_version"], "2.21.0");
        assert_eq!(
            report(&r, "strategy", &log)["num_replicas_in_sync"],
            2,
            "{pod}: MultiWorkerMirroredStrategy must see both workers"
        );
        let done = report(&r, "done", &log);
        assert_eq!(done["steps"], 20);
        let (first, last) = (
            done["loss_first"].as_f64().unwrap(),
            done["loss_last"].as_f64().unwrap(),
        );
        assert!(
            last < first / 10.0,
            "{pod}: the loss must fall: {first} -> {last}"
        );
        sums.push(done["weights_sha256"].as_str().unwrap().to_string());
        logs.push(log);
    }
    // Each worker trained on its own data: only the all-reduce makes their weights equal.
    assert_eq!(sums[0], sums[1], "the two workers' final weights differ");
    logs
}

#[test]
fn mwms_two_workers_all_reduce_to_identical_weights_and_kubectl_logs_show_training() {
    let Some(node) = Node::here("mwms_two_workers") else {
        return;
    };
    let ns = node.namespace("mwms");
    let _operator = node.operator(&ns.name, &[]);
    let logs = mwms_job(&node, &ns, "mwms", None, None);
    // TensorFlow's own account of the collective: an all-reduce over a group of 2 (its INFO
    // line from cross_device_ops, on standard error, which `kubectl logs` shows too).
    for (i, log) in logs.iter().enumerate() {
        let line = log
            .lines()
            .find(|l| l.contains("Collective all_reduce tensors"))
            .unwrap_or_else(|| panic!("worker {i}: no collective all-reduce in its log:\n{log}"));
        assert!(line.contains("group_size = 2"), "worker {i}: {line}");
        for l in log.lines().filter(|l| {
            l.contains("MultiWorkerMirroredStrategy with cluster_spec")
                || l.contains("\"strategy\"")
        }) {
            eprintln!("worker {i}: {l}");
        }
        eprintln!("worker {i}: {line}");
    }
    // `kubectl logs` of worker 0 (no container named) shows the training steps.
    let plain = ns.kubectl(&["logs", "mwms-worker-0"]);
    let steps = reports(&plain)
        .iter()
        .filter(|r| r["event"] == "step")
        .count();
    assert_eq!(steps, 20, "kubectl logs mwms-worker-0:\n{plain}");
}

#[test]
fn mwms_custom_cluster_domain_and_port() {
    let Some(node) = Node::here("mwms_custom_cluster_domain_and_port") else {
        return;
    };
    let ns = node.namespace("domain");
    let domain = node.extra_domain.clone();
    let _operator = node.operator(&ns.name, &["--cluster-domain", &domain]);
    let logs = mwms_job(&node, &ns, "cd", Some(&domain), Some(2345));
    // TF's gRPC server listens on the port TF_CONFIG names.
    for (i, log) in logs.iter().enumerate() {
        let want = format!("cd-worker-{i}.{}.svc.{domain}:2345", ns.name);
        assert!(
            log.lines()
                .any(|l| l.contains("Started server with target") && l.contains(&want))
                || log.contains(&format!("grpc://{want}")),
            "worker {i}: TF never names {want} as its server:\n{log}"
        );
    }
}

#[test]
fn ps_strategy_chief_ps_two_workers_and_an_evaluator() {
    let Some(node) = Node::here("ps_strategy") else {
        return;
    };
    let ns = node.namespace("ps");
    let _operator = node.operator(&ns.name, &[]);
    let shared = node.scratch.join(&ns.name);
    let args = ["ps", "--steps", "20"];
    // Storage all tasks share, as a checkpoint directory must be: the chief asks for the
    // checkpoint, the parameter server (which holds the variables) writes it, the evaluator
    // reads it.
    let replicas = [("Chief", 1), ("PS", 1), ("Worker", 2), ("Evaluator", 1)].map(|(kind, n)| {
        let mut r = Replica::new(kind, n, "Never", &args);
        r.shared = Some(shared.clone());
        r
    });
    node.apply(&tf_job(&node, &ns.name, "ps", &replicas));
    let done = ns.wait_finished("ps", 300);
    assert_eq!(
        finished(&done),
        Some("Succeeded"),
        "{}\n{}",
        done["status"],
        ns.describe()
    );

    let log = ns.logs("ps-chief-0", false);
    let r = reports(&log);
    let strategy = report(&r, "strategy", &log);
    assert_eq!(strategy["kind"], "ParameterServerStrategy");
    // The variables live on the parameter server, not on the chief.
    for device in report(&r, "variables", &log)["devices"].as_array().unwrap() {
        assert!(
            device.as_str().unwrap().starts_with("/job:ps/"),
            "a variable is on {device}, not on /job:ps:\n{log}"
        );
    }
    let chief_done = report(&r, "done", &log);
    let (first, last) = (
        chief_done["loss_first"].as_f64().unwrap(),
        chief_done["loss_last"].as_f64().unwrap(),
    );
    assert!(last < first / 10.0, "the loss must fall: {first} -> {last}");

    // The evaluator: TF_CONFIG as TF expects it (its own task type, the training cluster),
    // and it evaluated exactly the weights the chief trained.
    let elog = ns.logs("ps-evaluator-0", false);
    let er = reports(&elog);
    let tf_config = &report(&er, "tf_config", &elog)["tf_config"];
    assert_eq!(tf_config["task"], json!({"type": "evaluator", "index": 0}));
    assert_eq!(
        tf_config["cluster"],
        cluster_addresses(
            &ns.name,
            "ps",
            &[("chief", 1), ("evaluator", 1), ("ps", 1), ("worker", 2)],
            None,
            2222
        )
    );
    let resolver = report(&er, "resolver", &elog);
    assert_eq!(resolver["task_type"], "evaluator");
    assert_eq!(resolver["task_id"], 0);
    let evaluated = report(&er, "evaluated", &elog);
    assert_eq!(
        evaluated["weights_sha256"], chief_done["weights_sha256"],
        "the evaluator read other weights than the chief trained"
    );
    assert!(
        evaluated["loss"].as_f64().unwrap() < first / 10.0,
        "{evaluated}"
    );
    let _ = std::fs::remove_dir_all(shared);
}
