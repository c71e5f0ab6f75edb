"""Hopeless is known early, transient is waited out (issue 24, point 5), on the live sandbox.

Pods the API refuses to create (here the namespace's ResourceQuota, enforced by the sandbox's real
kube-apiserver; the ReplicaSet and replication managers are the real kube-controller-manager's) never
come: rollguard fails such a rollout once the refusal has lasted `rollguard.core.readiness.REFUSAL_GRACE` (45 s),
naming the quota, instead of waiting for the platform's 600 s deadline. A deployer pod's single
ErrImagePull is not such a verdict: the kubelet retries the pull, and OpenShift waits.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from rollguard.cluster.client import Client
from rollguard.core.resources import PODS, Resource
from tests.helpers.cluster import (
    DC,
    DEPLOYMENT,
    NEW,
    OLD,
    SELECTOR,
    create_group,
    dc_body,
    deployment_body,
    rolled_out,
    rollguard,
    view,
    wait_until,
)
from tests.helpers.scenarios import deployer_image_format

QUOTAS = Resource("", "v1", "resourcequotas", "ResourceQuota")


def exhaust_quota(client: Client, namespace: str, pods: int) -> None:
    """A ResourceQuota of ``pods`` pods, in force once the quota controller has counted what runs."""
    client.create(
        QUOTAS, {"metadata": {"name": "pods"}, "spec": {"hard": {"pods": str(pods)}}}, namespace=namespace
    )
    wait_until(
        client, QUOTAS, namespace, "pods",
        lambda q: (q.get("status") or {}).get("hard", {}).get("pods") == str(pods)
        and "pods" in (q.get("status") or {}).get("used", {}),
        what="to be counted",
    )  # fmt: skip


def test_a_deployment_whose_new_pods_the_quota_refuses_fails_early_naming_it(
    sandbox, namespace, client, tmp_path: Path
):
    """kube-controller-manager's ReplicaSet controller records a refused pod as the ReplicaSet's
    ReplicaFailure condition (FailedCreate), which the deployment controller copies to the Deployment;
    the rollout would otherwise wait for progressDeadlineSeconds (600 s). The revert needs no new pod
    (the old ReplicaSet still runs), so it completes: exit 1, all-old."""
    create_group(client, namespace, [deployment_body("web", OLD)])
    rolled_out(client, DEPLOYMENT, namespace, "web")
    exhaust_quota(client, namespace, 1)  # the old pod: the surge pod of the new version is refused
    result = rollguard(
        sandbox.kubeconfig, "rollout", "-n", namespace, "-l", SELECTOR, "--image", f"deploy/web={NEW}",
        "--timeout", "150s", report=tmp_path / "report.json",
    )  # fmt: skip
    assert result.code == 1, result.stdout + result.stderr
    error = result.report["error"]
    assert error.startswith("deployment/web: its pods cannot be created: "), error
    assert "exceeded quota: pods" in error, error
    assert result.report["status"] == "reverted"
    state = view(client, namespace, DEPLOYMENT, "web")
    assert state.images == {"app": OLD} and not state.paused


def test_a_dc_whose_pods_the_quota_refuses_fails_early_and_so_does_its_revert(
    sandbox, namespace, client, tmp_path: Path
):
    """A DC's RC pods are created by kube-controller-manager's replication manager, which records a
    refusal as the RC's ReplicaFailure condition; the deployer's rolling updater would wait for
    timeoutSeconds (600 s). With a quota of two pods (the old pod and a deployer pod) the revert, a new
    rollout of the old template, is refused too: it ends unverified, exit 3, naming the quota, instead of
    hanging. Which pod the revert is refused depends on a race OpenShift has as well: cancelling api-2
    deletes its deployer pod, and the slot it frees goes either to api-3's deployer pod (whose RC's pods
    are then refused) or to the pod api-2's replication manager keeps retrying (api-2 stays scaled to 1:
    neither the cancel nor the failure scales it down, openshift-controller-manager
    pkg/apps/deploymentconfig/deploymentconfig_controller.go cancelRunningRollouts, reconcileDeployments;
    oc pkg/cli/deployer/deployer.go scales older RCs down only when a deployer pod runs), and api-3's
    deployer pod is refused. `status` then says what the run found: stuck, naming the refusal."""
    create_group(client, namespace, [dc_body("api", OLD)])
    rolled_out(client, DC, namespace, "api")
    wait_until(client, PODS, namespace, "api-1-deploy", lambda p: p["status"].get("phase") == "Succeeded")
    client.delete(PODS, "api-1-deploy", namespace=namespace)  # kept after a rollout; not this test's
    exhaust_quota(client, namespace, 2)
    result = rollguard(
        sandbox.kubeconfig, "rollout", "-n", namespace, "-l", SELECTOR, "--image", f"dc/api={NEW}",
        "--timeout", "150s", report=tmp_path / "report.json",
    )  # fmt: skip
    assert result.code == 3, result.stdout + result.stderr
    error = result.report["error"]
    assert error.startswith('dc/api: replication controller "api-2" cannot create its pods: '), error
    assert "exceeded quota: pods" in error, error
    assert any(
        e.startswith("revert of dc/api not verified: ") and "exceeded quota: pods" in e
        for e in result.report["errors"]
    ), result.report["errors"]
    assert result.report["status"] == "inconsistent"
    reverted = next(e for e in result.report["errors"] if e.startswith("revert of dc/api not verified: "))
    if 'deployer pod "api-3-deploy" cannot be created' in reverted:  # the cancelled api-2 won the slot
        assert 'replication controller "api-2" (failed) is still scaled to 1' in reverted, reverted
    # `status` (and drift-check, and the TUI, which share the state model) say what the run found: stuck
    # on the quota, not `progressing` until the platform's 600 s deadline
    data = json.loads(rollguard(sandbox.kubeconfig, "status", "-n", namespace, "-o", "json").stdout)
    (api,) = data[0]["workloads"]
    findings = {f["name"]: f["reason"] for f in api["findings"]}
    assert "stuck" in findings and "progressing" not in findings, findings
    assert findings["stuck"].startswith(
        (
            'replication controller "api-3" cannot create its pods: ',
            'deployer pod "api-3-deploy" cannot be created',
        )
    ), findings
    assert "exceeded quota: pods" in findings["stuck"] or "its Events say why" in findings["stuck"], findings
    drift = rollguard(sandbox.kubeconfig, "drift-check", "-n", namespace)
    assert drift.code == 1 and "stuck" in drift.stdout and "api-3" in drift.stdout, (
        drift.stdout + drift.stderr
    )


def test_a_dc_whose_deployer_pod_the_quota_refuses_says_so_early(sandbox, namespace, client, tmp_path: Path):
    """openshift-controller-manager pkg/apps/deployer/deployer_controller.go retries a refused deployer
    pod, leaving the RC New with a FailedCreate Event on the DC ("Error creating deployer pod: ..."), until
    timeoutSeconds (600 s) after the RC's creation. rollguard names the refusal from that Event."""
    create_group(client, namespace, [dc_body("api", OLD)])
    rolled_out(client, DC, namespace, "api")
    wait_until(client, PODS, namespace, "api-1-deploy", lambda p: p["status"].get("phase") == "Succeeded")
    client.delete(PODS, "api-1-deploy", namespace=namespace)
    exhaust_quota(client, namespace, 1)
    result = rollguard(
        sandbox.kubeconfig, "rollout", "-n", namespace, "-l", SELECTOR, "--image", f"dc/api={NEW}",
        "--timeout", "150s", report=tmp_path / "report.json",
    )  # fmt: skip
    assert result.code == 3, result.stdout + result.stderr
    error = result.report["error"]
    assert error.startswith('dc/api: deployer pod "api-2-deploy" cannot be created'), error
    assert 'Error creating deployer pod: pods "api-2-deploy" is forbidden: exceeded quota: pods' in error, (
        error
    )
    assert view(client, namespace, DC, "api").images == {"app": OLD}


@pytest.fixture
def flaky_deployer_image(client: Client) -> Iterator[Callable[[], None]]:
    """Makes the cluster's deployer image one whose first pull fails (a registry hiccup: the sandbox
    registry's `-flakypull` rule); repaired after the test whatever happens."""

    with deployer_image_format(client, "registry.local/mirror/origin-${component}-flakypull:v4") as flaky:
        yield flaky


def test_a_deployer_pods_single_err_image_pull_is_no_verdict(
    sandbox, namespace, client, tmp_path: Path, flaky_deployer_image
):
    """The kubelet retries a failed pull (ErrImagePull, then ImagePullBackOff between retries); the
    deployer controller (openshift-controller-manager pkg/apps/deployer/deployer_controller.go) keeps the
    RC Pending meanwhile. A deployer pod whose first pull fails and whose retry succeeds rolls out."""
    create_group(client, namespace, [dc_body("api", OLD)])
    rolled_out(client, DC, namespace, "api")
    flaky_deployer_image()
    result = rollguard(
        sandbox.kubeconfig, "rollout", "-n", namespace, "-l", SELECTOR, "--image", f"dc/api={NEW}",
        "--timeout", "120s", report=tmp_path / "report.json",
    )  # fmt: skip
    assert result.code == 0, result.stdout + result.stderr
    assert view(client, namespace, DC, "api").images == {"app": NEW}


LIMIT_RANGES = Resource("", "v1", "limitranges", "LimitRange")


def test_pods_a_limit_range_refuses_fail_the_rollout_early_naming_it(
    sandbox, namespace, client, tmp_path: Path
):
    """The LimitRanger admission plugin of the sandbox's kube-apiserver refuses a pod over the namespace's
    maximum; the ReplicaSet controller records it as ReplicaFailure (FailedCreate), as for a quota."""
    body = deployment_body("web", OLD)
    body["spec"]["template"]["spec"]["containers"][0]["resources"] = {"limits": {"cpu": "200m"}}
    create_group(client, namespace, [body])
    rolled_out(client, DEPLOYMENT, namespace, "web")
    limits = {"limits": [{"type": "Container", "max": {"cpu": "100m"}}]}
    client.create(LIMIT_RANGES, {"metadata": {"name": "small"}, "spec": limits}, namespace=namespace)
    result = rollguard(
        sandbox.kubeconfig, "rollout", "-n", namespace, "-l", SELECTOR, "--image", f"deploy/web={NEW}",
        "--timeout", "150s", report=tmp_path / "report.json",
    )  # fmt: skip
    assert result.code == 1, result.stdout + result.stderr
    error = result.report["error"]
    assert error.startswith("deployment/web: its pods cannot be created: "), error
    assert "maximum cpu usage per Container is 100m" in error, error
    assert view(client, namespace, DEPLOYMENT, "web").images == {"app": OLD}
