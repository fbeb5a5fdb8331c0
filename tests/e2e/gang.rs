//! End to end: gang scheduling (issue "Gang scheduling", docs/behaviour.md §8). The operator
//! runs with `--gang-scheduler-name`; each job gets its PodGroup (scheduler-plugins' or
//! Volcano's) before its pods, owned by it, following its spec, gone on suspend and when the
//! job finishes. On the simulator the PodGroup CRDs are installed from `tests/fixtures`; on
//! the real tier `testcluster/up` installs them and runs scheduler-plugins' scheduler, which
//! `a_gang_that_does_not_fit_waits_unbound_and_binds_all_together_when_capacity_comes`
//! needs (it is skipped on the simulator, whose kubelet places every pod).

use crate::support::{TestCluster, annotate, eventually, job, settle, until};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DeleteParams, DynamicObject, PostParams};
use serde_json::{Value, json};
use tfjob_operator::crd::ConditionType;
use tfjob_operator::reconcile::build::gang::Gang;

pub(crate) const PLUGINS_CRD: &str =
    include_str!("../fixtures/podgroup-crds/scheduling.x-k8s.io_podgroups.yaml");
const VOLCANO_CRD: &str =
    include_str!("../fixtures/podgroup-crds/scheduling.volcano.sh_podgroups.yaml");
const RUN: &str = "sim.tfjob.dev/run-seconds";

fn plugins() -> Gang {
    Gang::SchedulerPlugins {
        scheduler_name: "scheduler-plugins-scheduler".into(),
    }
}

/// The PodGroups of `gang` in the test's namespace.
fn podgroups(c: &TestCluster, gang: &Gang) -> Api<DynamicObject> {
    Api::namespaced_with(c.client.clone(), &c.namespace, &gang.api_resource())
}

/// Installs a PodGroup CRD on the simulator (the real tier has both already).
async fn install_crd(c: &TestCluster, yaml: &str) {
    if !c.simulated() {
        return;
    }
    let crd: CustomResourceDefinition = serde_saphyr::from_str(yaml).expect("CRD fixture");
    let name = crd.metadata.name.clone().unwrap_or_default();
    let crds: Api<CustomResourceDefinition> = Api::all(c.client.clone());
    match crds.create(&PostParams::default(), &crd).await {
        Ok(_) => {}
        Err(kube::Error::Api(s)) if s.code == 409 => {}
        Err(e) => panic!("installing {name}: {e}"),
    }
    until(&crds, &name, "CRD established", |crd| {
        let conditions = crd?.status.as_ref()?.conditions.as_ref()?;
        conditions
            .iter()
            .any(|c| c.type_ == "Established" && c.status == "True")
            .then_some(())
    })
    .await;
}

/// Whether the real tier runs the gang scheduler (`testcluster/up` without `TESTCLUSTER_GANG=0`).
fn real_gang_ready(c: &TestCluster) -> bool {
    c.real.is_some() && std::env::var("TESTCLUSTER_GANG").as_deref() == Ok("1")
}

/// Skips a test on a real cluster started without gang scheduling.
fn skipped_without_gang(c: &TestCluster, test: &str) -> bool {
    let skip = c.real.is_some() && !real_gang_ready(c);
    if skip {
        eprintln!(
            "{test}: skipped: this cluster has no gang scheduling (testcluster/up with TESTCLUSTER_GANG=0)"
        );
    }
    skip
}

/// A cluster for a gang test with `crd` installed and no operator yet; None (the test is
/// skipped) on a real cluster started without gang scheduling.
pub(crate) async fn gang_cluster(test: &str, crd: &str) -> Option<TestCluster> {
    let c = TestCluster::without_operator(test).await;
    if skipped_without_gang(&c, test) {
        return None;
    }
    install_crd(&c, crd).await;
    Some(c)
}

/// Sets the resources of replica type `t`'s `tensorflow` container.
fn resources(spec: &mut Value, t: &str, resources: Value) {
    spec["spec"]["tfReplicaSpecs"][t]["template"]["spec"]["containers"][0]["resources"] = resources;
}

async fn until_group(
    api: &Api<DynamicObject>,
    name: &str,
    what: &str,
    check: impl Fn(&DynamicObject) -> bool,
) -> DynamicObject {
    until(api, name, what, |g| g.filter(|g| check(g)).cloned()).await
}

/// A PodGroup of scheduler-plugins for every job, made before its pods and owned by it; the
/// pods carry its label and scheduler; it goes when the job has finished.
#[tokio::test]
async fn a_job_gets_its_podgroup_first_owned_by_it_and_its_pods_join_it() {
    let Some(mut c) = gang_cluster("gang-objects", PLUGINS_CRD).await else {
        return;
    };
    c.start_operator_with(&["--gang-scheduler-name", "scheduler-plugins"]);
    let mut spec = job("go", &[("PS", 1, "Never"), ("Worker", 2, "Never")]);
    resources(
        &mut spec,
        "PS",
        json!({"requests": {"cpu": "500m", "memory": "1Gi"}}),
    );
    resources(
        &mut spec,
        "Worker",
        json!({"requests": {"cpu": "1", "memory": "2Gi"}}),
    );
    annotate(&mut spec, "PS", RUN, "3600");
    annotate(&mut spec, "Worker", RUN, "2");
    spec["spec"]["runPolicy"] = json!({"schedulingPolicy": {"scheduleTimeoutSeconds": 60}});
    let created = c.create(spec).await;
    let groups = podgroups(&c, &plugins());
    let group = until_group(&groups, "go", "the PodGroup", |_| true).await;
    assert_eq!(
        group.data["spec"],
        json!({"minMember": 3, "minResources": {"cpu": "2500m", "memory": "5Gi"}, "scheduleTimeoutSeconds": 60})
    );
    let owners = group.metadata.owner_references.clone().unwrap_or_default();
    assert_eq!(owners.len(), 1, "{owners:?}");
    let owner = &owners[0];
    assert_eq!(
        (
            owner.kind.as_str(),
            owner.name.as_str(),
            owner.controller,
            owner.block_owner_deletion
        ),
        ("TFJob", "go", Some(true), Some(true))
    );
    assert_eq!(Some(&owner.uid), created.metadata.uid.as_ref());

    c.until_pods_are("go", &["go-ps-0", "go-worker-0", "go-worker-1"])
        .await;
    let group_created = group
        .metadata
        .creation_timestamp
        .clone()
        .expect("created")
        .0;
    for name in ["go-ps-0", "go-worker-0", "go-worker-1"] {
        let pod: Pod = c.pods().get(name).await.expect("pod");
        let labels = pod.metadata.labels.clone().unwrap_or_default();
        assert_eq!(
            labels
                .get("scheduling.x-k8s.io/pod-group")
                .map(String::as_str),
            Some("go"),
            "{name}"
        );
        let spec = pod.spec.as_ref().expect("spec");
        assert_eq!(
            spec.scheduler_name.as_deref(),
            Some("scheduler-plugins-scheduler"),
            "{name}"
        );
        let pod_created = pod.metadata.creation_timestamp.clone().expect("created").0;
        assert!(pod_created >= group_created, "{name} before its PodGroup");
    }
    c.until_event("go", "SuccessfulCreatePodGroup", "Created PodGroup: go")
        .await;

    c.until_condition("go", ConditionType::Succeeded).await;
    c.until_gone(&groups, "go", "the PodGroup of a finished job")
        .await;
    c.until_event("go", "SuccessfulDeletePodGroup", "Deleted PodGroup: go")
        .await;
}

/// A whole-job restart (`restart-scope: Job`) keeps the job's PodGroup: the new attempt's pods
/// join the same group.
#[tokio::test]
async fn a_whole_job_restart_keeps_the_podgroup() {
    let Some(mut c) = gang_cluster("gang-restart", PLUGINS_CRD).await else {
        return;
    };
    c.start_operator_with(&["--gang-scheduler-name", "scheduler-plugins"]);
    c.script_pod_in_turn(
        "gr-worker-1",
        &[
            &[("run-seconds", "1"), ("exit-code", "137")],
            &[("run-seconds", "1")],
        ],
    );
    c.script_pod_in_turn(
        "gr-worker-0",
        &[&[("run-seconds", "3600")], &[("run-seconds", "1")]],
    );
    let mut spec = job("gr", &[("Worker", 2, "ExitCode")]);
    spec["metadata"]["annotations"] = json!({"tfjob-operator.dev/restart-scope": "Job"});
    resources(&mut spec, "Worker", json!({"requests": {"cpu": "100m"}}));
    c.create(spec).await;
    let groups = podgroups(&c, &plugins());
    let first = until_group(&groups, "gr", "the PodGroup", |_| true).await;
    let done = c.until_condition("gr", ConditionType::Succeeded).await;
    assert_eq!(done.status.as_ref().unwrap().restart_attempt, Some(1));
    let events = c.events_of("gr").await;
    let made: Vec<_> = events
        .iter()
        .filter(|(reason, _)| reason == "SuccessfulCreatePodGroup")
        .collect();
    assert_eq!(made.len(), 1, "the PodGroup was made again: {events:?}");
    let deleted = events
        .iter()
        .filter(|(r, _)| r == "SuccessfulDeletePodGroup");
    assert!(
        deleted.count() <= 1,
        "deleted during the restart: {events:?}"
    );
    assert!(first.metadata.uid.is_some());
}

/// Scale and minAvailable changes update the PodGroup; suspending deletes it with the pods,
/// resuming makes it again before them; deleting the job takes it by garbage collection.
#[tokio::test]
async fn the_podgroup_follows_scale_and_min_available_goes_on_suspend_and_with_the_job() {
    let Some(mut c) = gang_cluster("gang-follows", PLUGINS_CRD).await else {
        return;
    };
    c.start_operator_with(&["--gang-scheduler-name", "scheduler-plugins"]);
    let mut spec = job("gf", &[("Worker", 2, "Never")]);
    resources(&mut spec, "Worker", json!({"requests": {"cpu": "1"}}));
    annotate(&mut spec, "Worker", RUN, "3600");
    c.create(spec).await;
    let groups = podgroups(&c, &plugins());
    let spec_is = |want: Value| move |g: &DynamicObject| g.data["spec"] == want;
    let first = until_group(
        &groups,
        "gf",
        "minMember 2",
        spec_is(json!({"minMember": 2, "minResources": {"cpu": "2"}})),
    )
    .await;
    c.until_pods_are("gf", &["gf-worker-0", "gf-worker-1"])
        .await;

    let scale = json!({"spec": {"tfReplicaSpecs": {"Worker": {"replicas": 4}}}});
    c.merge_patch_job("gf", scale).await;
    until_group(
        &groups,
        "gf",
        "minMember 4 after scaling",
        spec_is(json!({"minMember": 4, "minResources": {"cpu": "4"}})),
    )
    .await;
    c.until_event("gf", "SuccessfulUpdatePodGroup", "Updated PodGroup: gf")
        .await;
    let min = json!({"spec": {"runPolicy": {"schedulingPolicy": {"minAvailable": 3}}}});
    c.merge_patch_job("gf", min).await;
    until_group(
        &groups,
        "gf",
        "minMember 3 from minAvailable",
        spec_is(json!({"minMember": 3, "minResources": {"cpu": "3"}})),
    )
    .await;

    c.merge_patch_job("gf", json!({"spec": {"runPolicy": {"suspend": true}}}))
        .await;
    c.until_condition("gf", ConditionType::Suspended).await;
    c.until_gone(&groups, "gf", "the PodGroup of a suspended job")
        .await;
    c.until_pods_are("gf", &[]).await;

    c.merge_patch_job("gf", json!({"spec": {"runPolicy": {"suspend": false}}}))
        .await;
    let again = until_group(&groups, "gf", "the PodGroup again on resume", |g| {
        g.metadata.uid != first.metadata.uid && g.metadata.deletion_timestamp.is_none()
    })
    .await;
    assert_eq!(again.data["spec"]["minMember"], 3);
    c.until_pods_are(
        "gf",
        &["gf-worker-0", "gf-worker-1", "gf-worker-2", "gf-worker-3"],
    )
    .await;

    c.jobs()
        .delete("gf", &DeleteParams::background())
        .await
        .expect("deleting the job");
    c.until_gone(
        &groups,
        "gf",
        "the PodGroup of a deleted job (garbage collection)",
    )
    .await;
}

/// Without the PodGroup CRD the job says so (one Warning event series, a `ReplicaFailure`
/// condition), creates no pods and does not spin; once the CRD is installed it goes on.
#[tokio::test]
async fn without_the_podgroup_crd_the_job_says_so_waits_quietly_and_goes_on_once_it_is_installed() {
    let mut c = TestCluster::without_operator("gang-no-crd").await;
    if !c.simulated() {
        eprintln!(
            "gang-no-crd: skipped on the real tier: its API server has the PodGroup CRDs, which other tests use at the same time"
        );
        return;
    }
    c.start_operator_with(&[
        "--gang-scheduler-name",
        "volcano",
        "--max-error-backoff",
        "1",
    ]);
    let mut spec = job("gm", &[("Worker", 2, "Never")]);
    annotate(&mut spec, "Worker", RUN, "2");
    c.create(spec).await;
    let want = "Error creating PodGroup gm: the CRD podgroups.scheduling.volcano.sh is not installed; \
                the job's pods wait for it (install the gang scheduler's PodGroup CRD, or run the \
                operator without --gang-scheduler-name)";
    until(
        &c.jobs(),
        "gm",
        "ReplicaFailure naming the missing CRD",
        |j| {
            let (reason, message) =
                crate::support::reason_and_message(j?, ConditionType::ReplicaFailure)?;
            (reason == "FailedCreatePodGroup" && message == want).then_some(())
        },
    )
    .await;
    c.until_event("gm", "FailedCreatePodGroup", want).await;
    assert!(
        c.pod_names("gm").await.is_empty(),
        "no pod without its PodGroup"
    );

    // Retried with backoff (at most 1 s here): a few passes, no writes but the event series.
    let mark = c.mark();
    settle().await;
    let requests = c.operator_requests_since(&mark);
    assert!(requests.writes() <= 4, "{requests:?}");
    let events = c.events_about("gm").await;
    let warnings = events
        .iter()
        .filter(|e| e.reason.as_deref() == Some("FailedCreatePodGroup"));
    assert_eq!(
        warnings.count(),
        1,
        "one event (series) about the missing CRD"
    );
    assert!(c.pod_names("gm").await.is_empty());

    install_crd(&c, VOLCANO_CRD).await;
    let groups = podgroups(&c, &Gang::Volcano);
    until_group(&groups, "gm", "the PodGroup once the CRD is there", |_| {
        true
    })
    .await;
    c.until_condition("gm", ConditionType::Succeeded).await;
    let done = c.jobs().get("gm").await.expect("job");
    assert!(
        crate::support::condition(&done, ConditionType::ReplicaFailure).is_none(),
        "cleared"
    );
}

/// A Volcano PodGroup as Volcano's own CRD takes it (the real tier installs Volcano v1.10.0's;
/// the simulator checks the same schema from the fixture): minMember from minAvailable,
/// minResources of the first pods, queue and priority class; the pods carry the group and
/// queue annotations. Volcano's scheduler does not run here: the pods stay Pending.
#[tokio::test]
async fn a_volcano_podgroup_is_accepted_by_volcano_s_crd_with_the_expected_fields() {
    let Some(mut c) = gang_cluster("gang-volcano", VOLCANO_CRD).await else {
        return;
    };
    c.start_operator_with(&["--gang-scheduler-name", "volcano"]);
    let mut spec = job("vc", &[("PS", 1, "Never"), ("Worker", 2, "Never")]);
    resources(
        &mut spec,
        "PS",
        json!({"requests": {"cpu": "500m", "memory": "1Gi"}}),
    );
    resources(
        &mut spec,
        "Worker",
        json!({"limits": {"cpu": "1", "memory": "2Gi", "nvidia.com/gpu": "1"}}),
    );
    annotate(&mut spec, "PS", RUN, "3600");
    annotate(&mut spec, "Worker", RUN, "3600");
    spec["spec"]["runPolicy"] = json!({"schedulingPolicy": {"minAvailable": 2, "queue": "research", "priorityClass": "high"}});
    c.create(spec).await;
    let groups = podgroups(&c, &Gang::Volcano);
    let group = until_group(&groups, "vc", "the Volcano PodGroup", |_| true).await;
    assert_eq!(
        group.types.as_ref().map(|t| t.api_version.as_str()),
        Some("scheduling.volcano.sh/v1beta1")
    );
    assert_eq!(
        group.data["spec"],
        json!({
            "minMember": 2,
            "minResources": {"cpu": "1500m", "memory": "3Gi", "nvidia.com/gpu": "1"},
            "queue": "research",
            "priorityClassName": "high"
        }),
        "the PS and one worker, kept as written by Volcano's schema"
    );
    c.until_pods_are("vc", &["vc-ps-0", "vc-worker-0", "vc-worker-1"])
        .await;
    let pod: Pod = c.pods().get("vc-worker-1").await.expect("pod");
    let annotations = pod.metadata.annotations.clone().unwrap_or_default();
    assert_eq!(
        annotations
            .get("scheduling.k8s.io/group-name")
            .map(String::as_str),
        Some("vc")
    );
    assert_eq!(
        annotations
            .get("scheduling.volcano.sh/queue-name")
            .map(String::as_str),
        Some("research")
    );
    assert_eq!(
        annotations.get("volcano.sh/task-spec").map(String::as_str),
        Some("worker")
    );
    assert_eq!(
        pod.spec.and_then(|s| s.scheduler_name).as_deref(),
        Some("volcano")
    );

    c.jobs()
        .delete("vc", &DeleteParams::background())
        .await
        .expect("deleting the job");
    c.until_gone(
        &groups,
        "vc",
        "the PodGroup of a deleted job (garbage collection)",
    )
    .await;
}

/// Nodes a test added; removed when it ends, however it ends.
struct Nodes(Vec<String>);

impl Drop for Nodes {
    fn drop(&mut self) {
        for node in &self.0 {
            let _ = node_command(&["remove", node, "--gc-now"]);
        }
    }
}

/// `testcluster/node ARGS` (real tier only): its stderr on failure.
fn node_command(args: &[&str]) -> Result<(), String> {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/testcluster/node");
    let out = std::process::Command::new(script)
        .args(args)
        .output()
        .map_err(|e| e.to_string())?;
    if out.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

/// The pods of job `job` that have a node.
async fn bound(c: &TestCluster, job: &str) -> Vec<String> {
    let lp =
        kube::api::ListParams::default().labels(&format!("training.kubeflow.org/job-name={job}"));
    let pods = c.pods().list(&lp).await.expect("listing pods").items;
    pods.into_iter()
        .filter(|p| p.spec.as_ref().and_then(|s| s.node_name.as_ref()).is_some())
        .filter_map(|p| p.metadata.name)
        .collect()
}

/// On the real scheduler (scheduler-plugins' Coscheduling): kwok nodes fit 3 of the job's 4
/// pods of 1 CPU, so none is bound, and the job says its gang waits; a 1-CPU node added, all 4
/// bind and the job runs to success.
#[tokio::test]
async fn a_gang_that_does_not_fit_waits_unbound_and_binds_all_together_when_capacity_comes() {
    let mut c = TestCluster::without_operator("gang-fit").await;
    if !real_gang_ready(&c) {
        eprintln!(
            "gang-fit: skipped: it needs a real gang scheduler (testcluster/e2e runs it; the simulator's kubelet places every pod)"
        );
        return;
    }
    // The gang's own nodes (labelled and tainted for it), as testcluster/selftest-gang does.
    let key = "testcluster.tfjob.dev/gang";
    let ns = c.namespace.clone();
    let mut nodes = Nodes(Vec::new());
    let add = |nodes: &mut Nodes, suffix: &str, cpu: &str| {
        let name = format!("{ns}-{suffix}");
        nodes.0.push(name.clone());
        let label = format!("{key}={ns}");
        let taint = format!("{key}={ns}:NoSchedule");
        node_command(&[
            "add", &name, "--cpu", cpu, "--label", &label, "--taint", &taint,
        ])
        .unwrap_or_else(|e| panic!("node add {name}: {e}"));
    };
    add(&mut nodes, "a", "3");
    c.start_operator_with(&["--gang-scheduler-name", "scheduler-plugins"]);
    let mut spec = job("fit", &[("Worker", 4, "Never")]);
    resources(&mut spec, "Worker", json!({"requests": {"cpu": "1"}}));
    annotate(&mut spec, "Worker", RUN, "2");
    let template = &mut spec["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"];
    template["nodeSelector"] = json!({key: ns});
    template["tolerations"] =
        json!([{"key": key, "operator": "Equal", "value": ns, "effect": "NoSchedule"}]);
    c.create(spec).await;
    let names = [
        "fit-worker-0",
        "fit-worker-1",
        "fit-worker-2",
        "fit-worker-3",
    ];
    c.until_pods_are("fit", &names).await;

    // The scheduler has tried: the pod that found no room is marked Unschedulable.
    eventually("a pod marked Unschedulable", || async {
        let pods = c.pods().list(&Default::default()).await.ok()?.items;
        pods.iter()
            .flat_map(|p| p.status.iter().flat_map(|s| s.conditions.iter().flatten()))
            .any(|cond| {
                cond.type_ == "PodScheduled" && cond.reason.as_deref() == Some("Unschedulable")
            })
            .then_some(())
    })
    .await;
    assert_eq!(
        bound(&c, "fit").await,
        Vec::<String>::new(),
        "3 of 4 fit: none bound"
    );
    let pod: Pod = c.pods().get("fit-worker-0").await.expect("pod");
    assert_eq!(
        pod.spec.and_then(|s| s.scheduler_name).as_deref(),
        Some("scheduler-plugins-scheduler")
    );

    // The job tells of its waiting gang, naming the PodGroup and its phase.
    let waiting = eventually("the GangWaiting event", || async {
        c.events_of("fit")
            .await
            .into_iter()
            .find(|(reason, _)| reason == "GangWaiting")
    })
    .await;
    assert!(
        waiting.1.starts_with("PodGroup fit is Scheduling: ")
            || waiting.1.starts_with("PodGroup fit is Pending: "),
        "{waiting:?}"
    );
    assert_eq!(
        bound(&c, "fit").await,
        Vec::<String>::new(),
        "still none bound"
    );
    let job_now = c.jobs().get("fit").await.expect("job");
    assert!(!crate::support::has_condition(
        &job_now,
        ConditionType::Running
    ));

    add(&mut nodes, "b", "1");
    eventually("all 4 bound", || async {
        (bound(&c, "fit").await.len() == 4).then_some(())
    })
    .await;
    c.until_condition("fit", ConditionType::Succeeded).await;
}

/// A gang that waits says so, naming its PodGroup and phase, and its deadline still fails
/// it; the finished job's PodGroup goes. On the simulator nothing places gangs, so the test
/// plays scheduler-plugins' PodGroup controller (phase `Scheduling`) and keeps the pods in
/// `ContainerCreating`; the real tier's gang waits for want of room, as above.
#[tokio::test]
async fn a_waiting_gang_is_reported_and_its_active_deadline_still_fires() {
    let Some(mut c) = gang_cluster("gang-deadline", PLUGINS_CRD).await else {
        return;
    };
    let key = "testcluster.tfjob.dev/gang";
    let ns = c.namespace.clone();
    let mut nodes = Nodes(Vec::new());
    if c.real.is_some() {
        let name = format!("{ns}-a");
        nodes.0.push(name.clone());
        let (label, taint) = (format!("{key}={ns}"), format!("{key}={ns}:NoSchedule"));
        node_command(&[
            "add", &name, "--cpu", "1", "--label", &label, "--taint", &taint,
        ])
        .unwrap_or_else(|e| panic!("node add {name}: {e}"));
    }
    c.start_operator_with(&["--gang-scheduler-name", "scheduler-plugins"]);
    let mut spec = job("gw", &[("Worker", 2, "Never")]);
    resources(&mut spec, "Worker", json!({"requests": {"cpu": "1"}}));
    annotate(&mut spec, "Worker", "sim.tfjob.dev/start-seconds", "3600");
    let template = &mut spec["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"];
    template["nodeSelector"] = json!({key: ns});
    template["tolerations"] =
        json!([{"key": key, "operator": "Equal", "value": ns, "effect": "NoSchedule"}]);
    spec["spec"]["runPolicy"] = json!({"activeDeadlineSeconds": 14});
    c.create(spec).await;
    let groups = podgroups(&c, &plugins());
    until_group(&groups, "gw", "the PodGroup", |_| true).await;
    c.until_pods_are("gw", &["gw-worker-0", "gw-worker-1"])
        .await;
    if c.simulated() {
        let phase = json!({"status": {"phase": "Scheduling"}});
        groups
            .patch_status("gw", &Default::default(), &kube::api::Patch::Merge(&phase))
            .await
            .expect("PodGroup status");
    }
    c.until_event(
        "gw",
        "GangWaiting",
        "PodGroup gw is Scheduling: the gang scheduler has not placed the job's pods, which \
         start only together (2 at least)",
    )
    .await;
    let failed = c.until_condition("gw", ConditionType::Failed).await;
    assert_eq!(
        crate::support::reason_and_message(&failed, ConditionType::Failed).map(|(_, m)| m),
        Some("Job gw has failed because it was active longer than specified deadline".into())
    );
    assert!(
        !crate::support::has_condition(&failed, ConditionType::Running),
        "never ran"
    );
    if c.real.is_some() {
        assert_eq!(bound(&c, "gw").await, Vec::<String>::new(), "none bound");
    }
    c.until_gone(&groups, "gw", "the PodGroup of the failed job")
        .await;
}
