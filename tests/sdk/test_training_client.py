"""Kubeflow's Python SDK (kubeflow-training 1.9.4, TrainingClient) against the operator.

Every call a notebook or a pipeline makes on TFJobs, on whichever tier tests/sdk/run started:
the simulator (tfjob-sim) or the real control plane (testcluster), the operator watching
TFJOB_SDK_NAMESPACE. Pods are scripted by `sim.tfjob.dev/<key>` annotations in their
templates (the same keys on both tiers); get_job_logs needs a real kubelet (TFJOB_SDK_NODE=1).
"""

import json
import os
import uuid

import pytest
from conftest import KUBECTL, NAMESPACE, TIER, eventually, kubectl
from kubeflow.training import models
from kubernetes import client as k8s

RUN = "sim.tfjob.dev/run-seconds"
LONG = "3600"
# Polling every second: the SDK's default of 15 s would make every wait 15 s long.
POLL = 1
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def unique(prefix):
    return f"{prefix}-{uuid.uuid4().hex[:6]}"


def template(annotations=None, image="busybox:1.36", command=None):
    return models.V1PodTemplateSpec(
        metadata=models.V1ObjectMeta(annotations=annotations or {}),
        spec=models.V1PodSpec(
            containers=[
                models.V1Container(
                    name="tensorflow",
                    image=image,
                    command=command or ["sh", "-c", "sleep 1"],
                )
            ]
        ),
    )


def tfjob(name, replicas, run_policy=None, labels=None):
    """A KubeflowOrgV1TFJob: replicas maps a type to (count, pod annotations)."""
    return models.KubeflowOrgV1TFJob(
        api_version="kubeflow.org/v1",
        kind="TFJob",
        metadata=models.V1ObjectMeta(name=name, namespace=NAMESPACE, labels=labels),
        spec=models.KubeflowOrgV1TFJobSpec(
            run_policy=run_policy or models.KubeflowOrgV1RunPolicy(),
            tf_replica_specs={
                t: models.KubeflowOrgV1ReplicaSpec(
                    replicas=n, restart_policy="Never", template=template(a)
                )
                for t, (n, a) in replicas.items()
            },
        ),
    )


def true_types(conditions):
    return [c.type for c in conditions if c.status == "True"]


def pod_names(tc, name, **filters):
    return sorted(tc.get_job_pod_names(name, **filters))


def live_pod_names(tc, name):
    """Pods of the job that exist and are not being deleted."""
    return sorted(
        p.metadata.name
        for p in tc.get_job_pods(name)
        if p.metadata.deletion_timestamp is None
    )


def update_run_policy(tc, name, **fields):
    """get_job, edit runPolicy, update_job: the SDK's way (a merge patch of the whole
    object, resourceVersion included). A status write by the operator in between makes the
    patch conflict (409): read again and retry, as a user would."""
    for _ in range(5):
        job = tc.get_job(name)
        for k, v in fields.items():
            setattr(job.spec.run_policy, k, v)
        try:
            tc.update_job(job, name)
            return
        except RuntimeError as e:
            if "409" not in str(e) and "Conflict" not in str(e):
                raise
    pytest.fail(f"update_job of {name} conflicted 5 times in a row")


def test_object_form_read_filter_suspend_resume_delete(tc):
    """create_job(job=...), get_job, list_jobs, get_job_conditions, is_job_*,
    wait_for_job_conditions, get_job_pods with each filter, update_job (suspend, resume),
    delete_job: the life of one job."""
    name = unique("obj")
    long = {RUN: LONG}
    tc.create_job(job=tfjob(name, {"PS": (1, long), "Worker": (2, long)}))

    job = tc.get_job(name)
    assert isinstance(job, models.KubeflowOrgV1TFJob)
    assert job.metadata.name == name
    assert sorted(job.spec.tf_replica_specs) == ["PS", "Worker"]
    assert job.spec.tf_replica_specs["Worker"].replicas == 2
    assert name in [j.metadata.name for j in tc.list_jobs()]

    job = tc.wait_for_job_conditions(
        name, expected_conditions={"Running"}, wait_timeout=60, polling_interval=POLL
    )
    conditions = tc.get_job_conditions(job=job)
    assert true_types(conditions) == ["Created", "Running"]
    # The newest condition is last: the SDK logs conditions[-1] as the job's state.
    assert conditions[-1].type == "Running"
    assert tc.is_job_created(name) and tc.is_job_running(name)
    assert not tc.is_job_succeeded(name)
    assert not tc.is_job_failed(name)
    assert not tc.is_job_restarting(name)

    # Every filter of get_job_pods (and get_job_pod_names), on PS 1 + Worker 2.
    ps, w0, w1 = f"{name}-ps-0", f"{name}-worker-0", f"{name}-worker-1"
    eventually("3 pods", lambda: len(tc.get_job_pods(name)) == 3)
    assert pod_names(tc, name) == [ps, w0, w1]
    # No chief: worker 0 is the master (Kubeflow's IsMasterRole).
    assert pod_names(tc, name, is_master=True) == [w0]
    assert pod_names(tc, name, replica_type="ps") == [ps]
    assert pod_names(tc, name, replica_type="worker") == [w0, w1]
    assert pod_names(tc, name, replica_type="worker", replica_index=1) == [w1]
    assert pod_names(tc, name, replica_index=0) == [ps, w0]
    assert pod_names(tc, name, is_master=True, replica_type="ps") == []
    pods = tc.get_job_pods(name, replica_type="worker", replica_index=0, timeout=30)
    assert [p.metadata.name for p in pods] == [w0]
    assert pods[0].metadata.labels["training.kubeflow.org/job-role"] == "master"
    # The SDK itself accepts only lower-case ps, chief, worker for TFJobs (no evaluator).
    with pytest.raises(ValueError):
        tc.get_job_pods(name, replica_type="evaluator")

    # Suspend through update_job: pods go, the job says Suspended and no longer Running.
    update_run_policy(tc, name, suspend=True)
    eventually("no pods while suspended", lambda: live_pod_names(tc, name) == [])
    job = eventually(
        "Suspended True",
        lambda: (j := tc.get_job(name))
        and "Suspended" in true_types(tc.get_job_conditions(job=j))
        and j,
    )
    assert job.spec.run_policy.suspend is True
    assert not tc.is_job_running(job=job)
    assert tc.get_job_conditions(job=job)[-1].type == "Suspended"

    # Resume: the pods come back and the job runs again.
    update_run_policy(tc, name, suspend=False)
    eventually("3 pods again", lambda: len(live_pod_names(tc, name)) == 3)
    tc.wait_for_job_conditions(
        name, expected_conditions={"Running"}, wait_timeout=60, polling_interval=POLL
    )
    job = tc.get_job(name)
    assert job.spec.run_policy.suspend is False
    assert "Suspended" not in true_types(tc.get_job_conditions(job=job))

    tc.delete_job(name)
    eventually("the job gone", lambda: name not in [j.metadata.name for j in tc.list_jobs()])
    with pytest.raises(RuntimeError):
        tc.get_job(name)
    eventually("its pods gone", lambda: live_pod_names(tc, name) == [], timeout=90)


def test_simple_args_form_runs_to_success(tc):
    """create_job(name=, base_image=, num_workers=, num_ps_replicas=, num_chief_replicas=,
    labels=, annotations=): the SDK writes the TFJob (container `tensorflow`, runPolicy {})
    and the job runs to Succeeded; the chief is the master."""
    name = unique("simple")
    tc.create_job(
        name=name,
        base_image="busybox:1.36",
        num_workers=2,
        num_ps_replicas=1,
        num_chief_replicas=1,
        labels={"team": "sdk"},
        annotations={"note": "simple-args"},
    )
    job = tc.get_job(name)
    assert sorted(job.spec.tf_replica_specs) == ["Chief", "PS", "Worker"]
    for spec in job.spec.tf_replica_specs.values():
        [container] = spec.template.spec.containers
        assert (container.name, container.image) == ("tensorflow", "busybox:1.36")
    assert job.metadata.labels["team"] == "sdk"
    assert job.metadata.annotations["note"] == "simple-args"

    job = tc.wait_for_job_conditions(name, wait_timeout=90, polling_interval=POLL)
    assert tc.is_job_succeeded(job=job)
    assert tc.get_job_conditions(job=job)[-1].type == "Succeeded"
    assert not tc.is_job_failed(job=job)
    assert pod_names(tc, name, is_master=True) == [f"{name}-chief-0"]
    assert pod_names(tc, name, replica_type="chief") == [f"{name}-chief-0"]
    tc.delete_job(name)


def test_a_failed_job_makes_wait_raise_and_is_job_failed_true(tc):
    """wait_for_job_conditions raises RuntimeError as soon as the job is Failed, unless Failed
    is expected; is_job_failed."""
    name = unique("fail")
    tc.create_job(
        job=tfjob(name, {"Worker": (1, {"sim.tfjob.dev/exit-code": "1", RUN: "0.5"})})
    )
    with pytest.raises(RuntimeError, match="is Failed"):
        tc.wait_for_job_conditions(name, wait_timeout=60, polling_interval=POLL)
    job = tc.wait_for_job_conditions(
        name, expected_conditions={"Failed"}, wait_timeout=10, polling_interval=POLL
    )
    assert tc.is_job_failed(job=job)
    assert not tc.is_job_succeeded(job=job)
    conditions = tc.get_job_conditions(job=job)
    assert conditions[-1].type == "Failed"
    assert conditions[-1].reason == "TFJobFailed"
    tc.delete_job(name)


def test_a_restarting_job_is_job_restarting(tc):
    """restartPolicy ExitCode with a retryable exit code (137): the operator recreates the
    pod and the job is Restarting while the new pod starts (scripted to take 8 s)."""
    name = unique("restart")
    job = tfjob(
        name,
        {
            "Worker": (
                1,
                {
                    "sim.tfjob.dev/exit-code": "137",
                    "sim.tfjob.dev/start-seconds": "8",
                    RUN: "0.5",
                },
            )
        },
        run_policy=models.KubeflowOrgV1RunPolicy(backoff_limit=5),
    )
    job.spec.tf_replica_specs["Worker"].restart_policy = "ExitCode"
    tc.create_job(job=job)
    job = tc.wait_for_job_conditions(
        name, expected_conditions={"Restarting"}, wait_timeout=60, polling_interval=POLL
    )
    assert tc.is_job_restarting(job=job)
    assert not tc.is_job_running(job=job)
    assert tc.get_job_conditions(job=job)[-1].type == "Restarting"
    tc.delete_job(name)


def test_a_tfjob_applied_without_run_policy_works_with_get_and_list(tc, api):
    """Kubeflow's own examples/simple.yaml has no spec.runPolicy; applied with kubectl, the
    CRD's default ({}) lets get_job and list_jobs read it (the SDK's model requires the
    field: without the default one such job breaks list_jobs for the whole namespace)."""
    path = os.path.join(REPO, "examples", "simple.yaml")
    with open(path) as f:
        assert "runPolicy" not in f.read()
    kubectl("-n", NAMESPACE, "apply", "-f", path)
    job = tc.get_job("tfjob-simple")
    assert job.spec.run_policy is not None
    assert "tfjob-simple" in [j.metadata.name for j in tc.list_jobs()]
    # The API server filled it in (the manifest has none): {} and its own default suspend.
    raw = k8s.CustomObjectsApi(api).get_namespaced_custom_object(
        "kubeflow.org", "v1", NAMESPACE, "tfjobs", "tfjob-simple"
    )
    assert raw["spec"]["runPolicy"] == {"suspend": False}, json.dumps(raw["spec"])
    tc.wait_for_job_conditions("tfjob-simple", wait_timeout=90, polling_interval=POLL)
    kubectl("-n", NAMESPACE, "delete", "-f", path, "--wait=false")


def test_get_job_logs_reads_the_masters_tensorflow_container(tc):
    """get_job_logs: the `tensorflow` container's log of the pod labelled job-role=master
    (worker 0 without a chief), or of the pods the filters name. Needs a real kubelet."""
    if os.environ.get("TFJOB_SDK_NODE") != "1":
        pytest.skip(f"needs a real kubelet (the real-node tier, TFJOB_SDK_NODE=1); tier: {TIER}")
    name = unique("logs")
    image = os.environ.get("TFJOB_SDK_IMAGE", "busybox:1.36")
    say = ["sh", "-c", 'echo "tfjob-sdk-logs from $(hostname)"']
    job = tfjob(name, {"Worker": (2, {})})
    for spec in job.spec.tf_replica_specs.values():
        spec.template = template(image=image, command=say)
        # A second container: get_job_logs must read `tensorflow` only.
        spec.template.spec.containers.append(
            models.V1Container(name="sidecar", image=image, command=["sh", "-c", "echo sidecar"])
        )
    tc.create_job(job=job)
    tc.wait_for_job_conditions(name, wait_timeout=180, polling_interval=POLL)
    logs, events = tc.get_job_logs(name)
    assert logs == {f"{name}-worker-0": f"tfjob-sdk-logs from {name}-worker-0\n"}
    assert events == {}
    logs, _ = tc.get_job_logs(name, is_master=False, replica_type="worker", replica_index=1)
    assert logs == {f"{name}-worker-1": f"tfjob-sdk-logs from {name}-worker-1\n"}
    _, events = tc.get_job_logs(name, verbose=True)
    assert f"tfjob/{name}" in events, events
    tc.delete_job(name)


def test_get_job_logs_verbose_lists_the_jobs_events(tc):
    """get_job_logs(verbose=True) also returns the job's events (core/v1 Events whose
    involvedObject is the TFJob), keyed `tfjob/<name>`. With cleanPodPolicy All the finished
    job has no pods left, so no log is read and no kubelet is needed."""
    name = unique("events")
    tc.create_job(
        job=tfjob(
            name,
            {"Worker": (1, {RUN: "0.5"})},
            run_policy=models.KubeflowOrgV1RunPolicy(clean_pod_policy="All"),
        )
    )
    tc.wait_for_job_conditions(name, wait_timeout=60, polling_interval=POLL)
    eventually("its pods gone", lambda: tc.get_job_pods(name) == [])
    logs, events = tc.get_job_logs(name, verbose=True)
    assert logs == {}
    messages = events.get(f"tfjob/{name}", [])
    assert any(f"Created pod: {name}-worker-0" in m for m in messages), events
    tc.delete_job(name)


def test_create_job_with_queue_name_goes_through_kueue(tc, api):
    """create_job(queue_name=...) labels the job for Kueue (and checks the LocalQueue
    exists); Kueue admits it and the job runs to success, its Workload Finished."""
    if TIER == "sim" or os.environ.get("TESTCLUSTER_KUEUE") != "1":
        pytest.skip(f"needs the real control plane with Kueue (TESTCLUSTER_KUEUE=1); tier: {TIER}")
    custom = k8s.CustomObjectsApi(api)
    group, version = "kueue.x-k8s.io", "v1beta2"
    queue = unique("sdk-cq")
    flavor = f"{queue}-default"
    custom.create_cluster_custom_object(
        group, version, "resourceflavors",
        {"apiVersion": f"{group}/{version}", "kind": "ResourceFlavor", "metadata": {"name": flavor}},
    )
    custom.create_cluster_custom_object(
        group, version, "clusterqueues",
        {
            "apiVersion": f"{group}/{version}",
            "kind": "ClusterQueue",
            "metadata": {"name": queue},
            "spec": {
                "namespaceSelector": {},
                "resourceGroups": [{
                    "coveredResources": ["cpu"],
                    "flavors": [{"name": flavor, "resources": [{"name": "cpu", "nominalQuota": "4"}]}],
                }],
            },
        },
    )
    custom.create_namespaced_custom_object(
        group, version, NAMESPACE, "localqueues",
        {
            "apiVersion": f"{group}/{version}",
            "kind": "LocalQueue",
            "metadata": {"name": "sdk-queue"},
            "spec": {"clusterQueue": queue},
        },
    )
    try:
        name = unique("queued")
        job = tfjob(name, {"Worker": (1, {RUN: "1"})},
                    run_policy=models.KubeflowOrgV1RunPolicy(suspend=True))
        job.spec.tf_replica_specs["Worker"].template.spec.containers[0].resources = (
            models.V1ResourceRequirements(requests={"cpu": "1"})
        )
        tc.create_job(job=job, queue_name="sdk-queue")
        assert tc.get_job(name).metadata.labels["kueue.x-k8s.io/queue-name"] == "sdk-queue"
        job = tc.wait_for_job_conditions(name, wait_timeout=90, polling_interval=POLL)
        assert job.spec.run_policy.suspend is False

        def finished():
            workloads = custom.list_namespaced_custom_object(group, version, NAMESPACE, "workloads")
            for w in workloads["items"]:
                owners = [o["name"] for o in w["metadata"].get("ownerReferences", [])]
                conditions = {c["type"]: c["status"] for c in w.get("status", {}).get("conditions", [])}
                if name in owners and conditions.get("Finished") == "True":
                    return w
            return None

        eventually("the job's Workload Finished", finished)
        tc.delete_job(name)
    finally:
        custom.delete_namespaced_custom_object(group, version, NAMESPACE, "localqueues", "sdk-queue")
        custom.delete_cluster_custom_object(group, version, "clusterqueues", queue)
        custom.delete_cluster_custom_object(group, version, "resourceflavors", flavor)
