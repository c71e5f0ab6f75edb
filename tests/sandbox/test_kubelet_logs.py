"""Container logs through the API server: `GET pods/P/log` is proxied to the stand-in kubelet.

Mirrors kubernetes pkg/registry/core/pod/strategy.go (`LogLocation`: the node's InternalIP from
`--kubelet-preferred-address-types`, the port of `status.daemonEndpoints.kubeletEndpoint`),
pkg/kubelet/server/server.go (`/containerLogs/{podNamespace}/{podID}/{containerName}`, PodLogOptions from
the query) and pkg/kubelet/kubelet_pods.go (`validateContainerLogStatus`: which container instance, and
`previous terminated container "C" in pod "P" not found`). Pure log content: tests/unit/test_kubelet_logs.py.
"""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from rollguard.cluster.client import Client, LogOptions
from rollguard.core.errors import NoLog
from sandbox.cluster import Sandbox
from tests.helpers.kubelet import APP, make_pod, wait_for, waiting_reason

pytestmark = pytest.mark.cluster


def test_running_container_log_and_tail(k8s: client.ApiClient, namespace: str) -> None:
    core = client.CoreV1Api(k8s)
    make_pod(core, namespace, "web", f"{APP}:v7")
    wait_for(core.list_namespaced_pod, namespace, name="web", until=lambda p: p.status.phase == "Running")
    text = core.read_namespaced_pod_log("web", namespace, container="app")
    lines = text.splitlines()
    assert lines[0] == f"INFO starting app v7 (image {APP}:v7)"
    assert "INFO app v7 ready" in lines
    # the node is reached where its status says the kubelet listens
    node = core.read_node("fake-node")
    assert [a.address for a in node.status.addresses if a.type == "InternalIP"] == ["127.0.0.1"]
    assert node.status.daemon_endpoints.kubelet_endpoint.port > 0
    tail = core.read_namespaced_pod_log("web", namespace, tail_lines=2, timestamps=True).splitlines()
    full = core.read_namespaced_pod_log("web", namespace, timestamps=True).splitlines()
    assert len(tail) == 2
    i = full.index(tail[0])  # the last two lines then; the full read, later, may have more after them
    assert full[i + 1] == tail[1] and i >= len(full) - 4
    with pytest.raises(ApiException) as err:
        core.read_namespaced_pod_log("web", namespace, previous=True)
    assert err.value.status == 400
    assert 'previous terminated container \\"app\\" in pod \\"web\\" not found' in err.value.body


def test_crash_loop_keeps_the_previous_containers_log(k8s: client.ApiClient, namespace: str) -> None:
    core = client.CoreV1Api(k8s)
    make_pod(core, namespace, "bad", f"{APP}:v3-crash")
    wait_for(
        core.list_namespaced_pod,
        namespace,
        name="bad",
        until=lambda p: waiting_reason(p) == "CrashLoopBackOff",
    )
    previous = core.read_namespaced_pod_log("bad", namespace, previous=True, timestamps=True).splitlines()
    assert previous[-1].endswith(
        "FATAL app v3-crash: cannot start: dial tcp 10.0.0.12:5432: connect: connection refused"
    )
    assert "INFO starting app v3-crash" in previous[0]
    stamp = datetime.strptime(previous[0].split()[0][:19], "%Y-%m-%dT%H:%M:%S").replace(tzinfo=UTC)
    assert abs(stamp.timestamp() - time.time()) < 120
    # in back-off the container is waiting: the kubelet serves the last terminated instance's log
    assert core.read_namespaced_pod_log("bad", namespace).splitlines()[-1].startswith("FATAL")


def test_follow_receives_a_line_written_after_the_request(k8s: client.ApiClient, namespace: str) -> None:
    core = client.CoreV1Api(k8s)
    make_pod(core, namespace, "web", f"{APP}:v7")
    wait_for(core.list_namespaced_pod, namespace, name="web", until=lambda p: p.status.phase == "Running")
    asked = time.time()
    resp = core.read_namespaced_pod_log(
        "web", namespace, follow=True, timestamps=True, tail_lines=0, _preload_content=False
    )
    try:
        first = resp.readline().decode()  # blocks until the container logs its next line
    finally:
        resp.release_conn()
    stamp = datetime.strptime(first.split()[0][:26], "%Y-%m-%dT%H:%M:%S.%f").replace(tzinfo=UTC)
    assert stamp.timestamp() > asked - 0.01
    assert '"GET /healthz HTTP/1.1" 200' in first


def test_pull_error_says_the_container_is_waiting(k8s: client.ApiClient, namespace: str) -> None:
    core = client.CoreV1Api(k8s)
    make_pod(core, namespace, "gone", f"{APP}@sha256:{'0' * 64}")
    wait_for(core.list_namespaced_pod, namespace, name="gone", until=lambda p: waiting_reason(p) is not None)
    with pytest.raises(ApiException) as err:
        core.read_namespaced_pod_log("gone", namespace)
    assert err.value.status == 400
    assert "is waiting to start" in err.value.body


def test_client_pod_log_maps_the_refusal_and_stops_a_follow(
    k8s: client.ApiClient, sandbox: Sandbox, namespace: str
) -> None:
    """rollguard's `Client.pod_log`: the 400 becomes NoLog with the kubelet's sentence; `stop` cuts a follow."""
    core, rg_client = client.CoreV1Api(k8s), Client.connect(kubeconfig=str(sandbox.kubeconfig))
    make_pod(core, namespace, "web", f"{APP}:v7")
    wait_for(core.list_namespaced_pod, namespace, name="web", until=lambda p: p.status.phase == "Running")
    with pytest.raises(NoLog, match='previous terminated container "app" in pod "web" not found'):
        list(rg_client.pod_log("web", namespace=namespace, options=LogOptions("app", previous=True)))
    stop = threading.Event()
    got: list[str] = []
    for line in rg_client.pod_log(
        "web", namespace=namespace, options=LogOptions("app", follow=True), stop=stop
    ):
        got.append(line)
        if "GET /healthz" in line:
            stop.set()  # from here the stream ends, although the container goes on logging
    assert got[0].startswith("INFO starting app v7") and "GET /healthz" in got[-1]
