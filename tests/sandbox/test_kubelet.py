"""The stand-in kubelet against the live sandbox: real rollouts and fault injection by image."""

from __future__ import annotations

import time

import pytest
from kubernetes import client, watch

from sandbox import registry
from sandbox.cluster import Sandbox
from tests.helpers.kubelet import APP, make_pod, wait_for, waiting_reason

pytestmark = pytest.mark.cluster


def condition(pod: client.V1Pod, kind: str) -> str | None:
    return next((c.status for c in pod.status.conditions or [] if c.type == kind), None)


def test_node_is_registered_and_ready(k8s: client.ApiClient) -> None:
    node = client.CoreV1Api(k8s).read_node("fake-node")
    assert {c.type: c.status for c in node.status.conditions}["Ready"] == "True"


def test_deployment_rolls_out(k8s: client.ApiClient, namespace: str) -> None:
    apps, core = client.AppsV1Api(k8s), client.CoreV1Api(k8s)
    labels = {"app": "web"}
    apps.create_namespaced_deployment(namespace, {
        "metadata": {"name": "web"},
        "spec": {"replicas": 3, "selector": {"matchLabels": labels}, "template": {
            "metadata": {"labels": labels}, "spec": {"containers": [{"name": "web", "image": f"{APP}:v1"}]}}},
    })  # fmt: skip

    def rolled_out(d: client.V1Deployment) -> bool:  # the `kubectl rollout status` rule
        s = d.status
        return bool(d.metadata.generation <= (s.observed_generation or 0) and s.updated_replicas == 3
                    and s.replicas == 3 and s.available_replicas == 3)  # fmt: skip

    wait_for(apps.list_namespaced_deployment, namespace, name="web", until=rolled_out)
    pods = core.list_namespaced_pod(namespace).items
    assert len(pods) == 3
    assert len({p.status.pod_ip for p in pods}) == 3
    for p in pods:
        assert p.status.phase == "Running" and p.status.host_ip and p.status.start_time
        (st,) = p.status.container_statuses
        assert st.ready and st.restart_count == 0 and st.state.running
        assert st.image == f"{APP}:v1"
        assert st.image_id == f"{APP}@{registry.digest_of(f'{APP}:v1')}"
        assert st.container_id.startswith("cri-o://")


def test_slow_image_gets_ready_after_n_seconds(k8s: client.ApiClient, namespace: str) -> None:
    core = client.CoreV1Api(k8s)
    make_pod(core, namespace, "slow", f"{APP}:v2-slow2")
    started = wait_for(core.list_namespaced_pod, namespace, name="slow",
                       until=lambda p: p.status.phase == "Running")  # fmt: skip
    assert condition(started, "Ready") == "False" and condition(started, "ContainersReady") == "False"
    assert started.status.container_statuses[0].started
    t0 = time.monotonic()
    ready = wait_for(
        core.list_namespaced_pod, namespace, name="slow", until=lambda p: condition(p, "Ready") == "True"
    )
    assert time.monotonic() - t0 > 1.0
    transition = next(c.last_transition_time for c in ready.status.conditions if c.type == "Ready")
    assert (transition - ready.status.start_time).total_seconds() >= 2


def test_crash_image_crash_loops(k8s: client.ApiClient, namespace: str) -> None:
    core = client.CoreV1Api(k8s)
    make_pod(core, namespace, "crash", f"{APP}:v2-crash")
    seen_ready = []

    def restarted_twice(p: client.V1Pod) -> bool:
        seen_ready.append(condition(p, "Ready") == "True")
        st = (p.status.container_statuses or [None])[0]
        return bool(st and st.restart_count >= 2 and waiting_reason(p) == "CrashLoopBackOff")

    pod = wait_for(core.list_namespaced_pod, namespace, name="crash", until=restarted_twice)
    st = pod.status.container_statuses[0]
    assert not any(seen_ready) and not st.ready and pod.status.phase == "Running"
    assert st.state.waiting.message.startswith("back-off ") and "container=app" in st.state.waiting.message
    assert st.last_state.terminated.exit_code == 1 and st.last_state.terminated.reason == "Error"
    more = wait_for(core.list_namespaced_pod, namespace, name="crash",
                    until=lambda p: p.status.container_statuses[0].restart_count > st.restart_count)  # fmt: skip
    assert waiting_reason(more) == "CrashLoopBackOff"


def test_image_pinned_by_digest_keeps_the_behaviour_of_its_tag(
    k8s: client.ApiClient, namespace: str, sandbox: Sandbox
) -> None:
    core = client.CoreV1Api(k8s)
    pinned = sandbox.pin(f"{APP}:v2-crash")
    make_pod(core, namespace, "pinned", pinned)
    pod = wait_for(core.list_namespaced_pod, namespace, name="pinned",
                   until=lambda p: waiting_reason(p) == "CrashLoopBackOff")  # fmt: skip
    assert pod.status.container_statuses[0].image_id == pinned


def test_unknown_digest_fails_to_pull(k8s: client.ApiClient, namespace: str) -> None:
    core = client.CoreV1Api(k8s)
    make_pod(core, namespace, "nopull", f"{APP}@sha256:{'0' * 64}")
    reasons: list[str | None] = []

    def backing_off(p: client.V1Pod) -> bool:
        reasons.append(waiting_reason(p))
        return reasons[-1] == "ImagePullBackOff"

    pod = wait_for(core.list_namespaced_pod, namespace, name="nopull", until=backing_off)
    assert "ErrImagePull" in reasons
    assert pod.status.phase == "Pending" and condition(pod, "Ready") == "False"


def test_malformed_image_is_an_invalid_image_name(k8s: client.ApiClient, namespace: str) -> None:
    core = client.CoreV1Api(k8s)
    make_pod(core, namespace, "invalid", "registry.local/Team/App:v1")
    wait_for(
        core.list_namespaced_pod,
        namespace,
        name="invalid",
        until=lambda p: waiting_reason(p) == "InvalidImageName",
    )


def test_pod_deletion_is_finalized(k8s: client.ApiClient, namespace: str) -> None:
    core = client.CoreV1Api(k8s)
    make_pod(core, namespace, "doomed", f"{APP}:v1")
    wait_for(
        core.list_namespaced_pod, namespace, name="doomed", until=lambda p: condition(p, "Ready") == "True"
    )
    deleting = core.delete_namespaced_pod("doomed", namespace)  # default grace period: 30 s
    assert deleting.metadata.deletion_timestamp
    w = watch.Watch()
    rv = deleting.metadata.resource_version
    for event in w.stream(core.list_namespaced_pod, namespace, resource_version=rv, timeout_seconds=10):
        if event["type"] == "DELETED" and event["object"].metadata.name == "doomed":
            w.stop()
            break
    else:
        pytest.fail("the pod was not deleted within 10 s")
