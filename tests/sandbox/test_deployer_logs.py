"""The deployer pod's log as the emulation's deployer prints it: what `oc logs dc/NAME` shows on OpenShift.

Mirrors openshift/oc pkg/cli/deployer/deployer.go (`--> Success`, the error as kcmdutil.CheckErr prints
it), pkg/cli/deployer/strategy/rolling/rolling.go and rolling_updater.go (the updater's lines through
`rollingUpdaterWriter`: `--> Scaling up NEW from 0 to N, scaling down OLD from N to 0 (keep K pods
available, don't exceed M pods)`, then `    Scaling NEW up to I`, `    Scaling OLD down to J`, and the
progress deadline's error), pkg/cli/deployer/strategy/recreate/recreate.go (its `--> Scaling` lines and
the update acceptor's rejection, support/acceptor.go). No hooks: lifecycle hooks are not emulated. Live
cluster state: the RC phases and the pods' logs through the API server (`pods/P/log`, served by the
stand-in kubelet); waits on conditions. Pure texts: sandbox/openshift/deployerlog.py.
"""

from __future__ import annotations

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from sandbox.openshift.kube import Kube
from tests.helpers.openshift_api import APP, DCS, RCS, create_dc, dc_body, set_image, wait_for, wait_rc

pytestmark = pytest.mark.cluster


def deployer_log(k8s: client.ApiClient, namespace: str, rc: str) -> list[str]:
    return str(client.CoreV1Api(k8s).read_namespaced_pod_log(f"{rc}-deploy", namespace)).splitlines()


def test_rolling_rollout_logs_the_updaters_steps_then_success(
    kube: Kube, k8s: client.ApiClient, namespace: str
) -> None:
    create_dc(kube, namespace, dc_body("web", f"{APP}:v1", replicas=2))
    wait_rc(kube, namespace, "web-1", "Complete")
    # the first rollout has no RC to roll from: the Rolling strategy hands it to Recreate (rolling.go)
    assert deployer_log(k8s, namespace, "web-1") == ["--> Scaling web-1 to 2", "--> Success"]
    set_image(kube, namespace, "web", f"{APP}:v2")
    wait_rc(kube, namespace, "web-2", "Complete")
    lines = deployer_log(k8s, namespace, "web-2")
    # maxSurge 25% of 2 rounds up to 1, maxUnavailable 25% down to 0: keep 2 available, at most 3 pods
    assert lines[0] == (
        "--> Scaling up web-2 from 0 to 2, scaling down web-1 from 2 to 0 "
        "(keep 2 pods available, don't exceed 3 pods)"
    )
    assert lines[1] == "    Scaling web-2 up to 1"
    assert lines[-1] == "--> Success"
    steps = lines[1:-1]
    assert all(s.startswith(("    Scaling web-2 up to ", "    Scaling web-1 down to ")) for s in steps), lines
    assert "    Scaling web-2 up to 2" in steps and steps[-1] == "    Scaling web-1 down to 0"
    # the log is the deployer's own: no line of what the image would print
    assert not any(s.startswith("INFO") for s in lines)


def test_failed_rolling_rollout_logs_the_progress_deadline(
    kube: Kube, k8s: client.ApiClient, namespace: str
) -> None:
    strategy = {"rollingParams": {"timeoutSeconds": 3}}
    create_dc(kube, namespace, dc_body("web", f"{APP}:v1", strategy=strategy))
    wait_rc(kube, namespace, "web-1", "Complete")
    set_image(kube, namespace, "web", f"{APP}:v2-crash")
    wait_rc(kube, namespace, "web-2", "Failed")
    lines = deployer_log(k8s, namespace, "web-2")
    assert lines == [
        "--> Scaling up web-2 from 0 to 1, scaling down web-1 from 1 to 0 (keep 1 pods available, don't exceed 2 pods)",
        "    Scaling web-2 up to 1",
        "error: timed out waiting for any update progress to be made",
    ]


def test_failed_recreate_rollout_logs_the_acceptors_rejection(
    kube: Kube, k8s: client.ApiClient, namespace: str
) -> None:
    strategy = {"type": "Recreate", "recreateParams": {"timeoutSeconds": 3}}
    create_dc(kube, namespace, dc_body("web", f"{APP}:v1", replicas=2, strategy=strategy))
    wait_rc(kube, namespace, "web-1", "Complete")
    assert deployer_log(k8s, namespace, "web-1") == ["--> Scaling web-1 to 2", "--> Success"]
    set_image(kube, namespace, "web", f"{APP}:v2-crash")
    wait_rc(kube, namespace, "web-2", "Failed")
    assert deployer_log(k8s, namespace, "web-2") == [
        "--> Scaling web-1 down to zero",
        "--> Scaling web-2 to 1 before performing acceptance check",
        f"error: update acceptor rejected web-2: pods for rc '{namespace}/web-2' took longer than 3 seconds "
        "to become available",
    ]
    pod = client.CoreV1Api(k8s).read_namespaced_pod("web-2-deploy", namespace)
    (status,) = pod.status.container_statuses
    assert status.state.terminated.exit_code == 1
    assert status.state.terminated.message.startswith("error: update acceptor rejected web-2")


def test_follow_of_a_running_deployer_gets_its_lines_until_it_exits(
    kube: Kube, k8s: client.ApiClient, namespace: str
) -> None:
    create_dc(kube, namespace, dc_body("web", f"{APP}:v1"))
    wait_rc(kube, namespace, "web-1", "Complete")
    set_image(kube, namespace, "web", f"{APP}:v2-slow3")  # ready 3 s after start: the rollout waits for it
    wait_rc(kube, namespace, "web-2", "Running")
    wait_for(
        kube,
        f"/api/v1/namespaces/{namespace}/pods",
        "web-2-deploy",
        lambda p: p["status"].get("phase") == "Running",
    )
    resp = client.CoreV1Api(k8s).read_namespaced_pod_log(
        "web-2-deploy", namespace, follow=True, _preload_content=False
    )
    try:
        got = [line.decode().rstrip("\n") for line in resp]  # ends when the process exits
    finally:
        resp.release_conn()
    assert got[0].startswith("--> Scaling up web-2 from 0 to 1, scaling down web-1 from 1 to 0")
    assert got[-1] == "--> Success"
    wait_rc(kube, namespace, "web-2", "Complete")


def test_cancelled_rollouts_deployer_pod_and_its_log_are_gone(
    kube: Kube, k8s: client.ApiClient, namespace: str
) -> None:
    """A cancelled rollout's deployer pod is deleted (openshift-controller-manager deployer_controller.go),
    so the log `oc logs dc/web` would read (deploylog/rest.go: a Failed RC's deployer pod) is not found."""
    create_dc(kube, namespace, dc_body("web", f"{APP}:v1"))
    wait_rc(kube, namespace, "web-1", "Complete")
    set_image(kube, namespace, "web", f"{APP}:v2-slow30")
    wait_rc(kube, namespace, "web-2", "Running")
    kube.request(
        "PATCH", f"{RCS.format(ns=namespace)}/web-2",
        {"metadata": {"annotations": {"openshift.io/deployment.cancelled": "true"}}},
        content_type="application/merge-patch+json",
    )  # fmt: skip
    wait_rc(kube, namespace, "web-2", "Failed")
    with pytest.raises(ApiException) as err:
        deployer_log(k8s, namespace, "web-2")
    assert err.value.status == 404
    assert wait_for(kube, DCS.format(ns=namespace), "web", lambda d: d["status"]["latestVersion"] == 2)


def test_pods_that_cannot_be_created_fail_the_scale_wait_and_their_warnings_are_logged(
    kube: Kube, k8s: client.ApiClient, namespace: str
) -> None:
    """recreate.go scaleAndWait (the RC never gets its pod: `couldn't scale ... context deadline
    exceeded`) and strategy/util/events.go RecordConfigWarnings (`-->  Reason: RC message` for each
    Warning event about the RC, recorded on the DC too, as the strategy returns)."""
    body = dc_body("web", f"{APP}:v1", strategy={"type": "Recreate", "recreateParams": {"timeoutSeconds": 3}})
    body["spec"]["template"]["spec"]["serviceAccountName"] = "nosuch"  # the RC's pods are refused
    create_dc(kube, namespace, body)
    wait_rc(kube, namespace, "web-1", "Failed")
    lines = deployer_log(k8s, namespace, "web-1")
    assert lines[0] == "--> Scaling web-1 to 1"
    assert lines[-1] == "error: couldn't scale web-1 to 1: context deadline exceeded"
    warnings = lines[1:-1]
    assert warnings and all(w.startswith("-->  FailedCreate: web-1 Error creating: ") for w in warnings), (
        lines
    )
    assert 'serviceaccount "nosuch" not found' in warnings[0]
    assert _event_appears(
        kube, namespace, "involvedObject.kind=DeploymentConfig,involvedObject.name=web,reason=FailedCreate",
        lambda e: e["source"].get("component") == "web-1-deploy",
    )  # fmt: skip


def _event_appears(kube: Kube, namespace: str, selector: str, match, timeout: float = 30) -> bool:
    """An Event matching ``selector`` and ``match`` is there or arrives within ``timeout`` seconds (the
    emulation posts events in the background: watched for, not looked at once)."""
    path = f"/api/v1/namespaces/{namespace}/events"
    page = kube.get(path, fieldSelector=selector)
    if any(match(e) for e in page["items"]):
        return True
    for ev in kube.watch(path, page["metadata"]["resourceVersion"], int(timeout), fieldSelector=selector):
        if ev["type"] == "ADDED" and match(ev["object"]):
            return True
    return False
