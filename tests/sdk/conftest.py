"""Fixtures of the Python SDK tier (tests/sdk/run sets the environment).

TFJOB_SDK_TIER       sim | real | cluster (what runs the cluster; for messages)
TFJOB_SDK_NAMESPACE  the namespace the operator watches; every test's jobs go there
TFJOB_SDK_KUBECTL    the kubectl to use (the test cluster's own when there is one)
TFJOB_SDK_NODE       1 on a cluster with a real kubelet (get_job_logs needs container logs)
TFJOB_SDK_IMAGE      the image of the logs test's pods (default busybox:1.36)
TESTCLUSTER_KUEUE    1 when the real tier runs Kueue (the queue_name test)
KUBECONFIG           the cluster, as its admin
"""

import os
import subprocess
import time

import pytest
from kubeflow.training import TrainingClient
from kubernetes import client as k8s
from kubernetes import config as k8s_config

NAMESPACE = os.environ.get("TFJOB_SDK_NAMESPACE", "tfjob-sdk")
TIER = os.environ.get("TFJOB_SDK_TIER", "unknown")
KUBECTL = os.environ.get("TFJOB_SDK_KUBECTL", "kubectl")


@pytest.fixture(scope="session")
def tc():
    """The SDK's client, as a notebook would make it: kubeconfig, namespace, kind TFJob."""
    return TrainingClient(
        config_file=os.environ["KUBECONFIG"], namespace=NAMESPACE, job_kind="TFJob"
    )


@pytest.fixture(scope="session")
def api():
    """The plain Kubernetes client, for what the SDK does not read (raw objects)."""
    k8s_config.load_kube_config(config_file=os.environ["KUBECONFIG"])
    return k8s.ApiClient()


def kubectl(*args, stdin=None):
    """Runs kubectl against the tier's cluster; returns stdout (fails the test on error)."""
    out = subprocess.run(
        [KUBECTL, *args], input=stdin, capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, f"kubectl {' '.join(args)}: {out.stderr}"
    return out.stdout


def eventually(what, check, timeout=60, interval=0.2):
    """Polls check() until it returns a truthy value (returned), or fails after timeout s."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = check()
        if last:
            return last
        time.sleep(interval)
    pytest.fail(f"timed out after {timeout} s waiting for {what}; last: {last!r}")
