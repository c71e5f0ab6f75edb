"""The stand-in kubelet's pod status timeline and watch handling, without a cluster."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from sandbox import podstatus
from sandbox.kubelet import Kubelet
from sandbox.podstatus import Container, PodRun

T0 = 1_800_000_000.0


def run_of(behaviour: Any, restart_policy: str = "Always") -> PodRun:
    c = Container(
        "app", "registry.local/team/app:v1", behaviour, "registry.local/team/app@sha256:" + "a" * 64
    )
    return PodRun("uid-1", "ns", "pod", [c], [], restart_policy, T0, "10.128.0.1")


def container(status: dict[str, Any]) -> dict[str, Any]:
    (st,) = status["containerStatuses"]
    return dict(st)


def condition(status: dict[str, Any], kind: str) -> dict[str, Any]:
    return next(c for c in status["conditions"] if c["type"] == kind)


@pytest.mark.parametrize(
    ("elapsed", "expected"),
    [(1.0, (1, 1.0)), (1.9, (1, 1.0)), (2.0, (2, 2.0)), (4.0, (3, 4.0)), (8.0, (4, 8.0)), (16.0, (5, 16.0)),
     (31.0, (6, 24.0))],
)  # fmt: skip
def test_crash_restarts_back_off_1_2_4_then_every_8_seconds(
    elapsed: float, expected: tuple[int, float]
) -> None:
    assert podstatus.crashes(elapsed) == expected


def test_ready_image_is_ready_at_once() -> None:
    status, nxt = run_of(("ready",)).status(T0)
    assert nxt is None and status["phase"] == "Running" and container(status)["ready"]
    assert condition(status, "Ready")["status"] == "True" and condition(status, "Ready")["reason"] is None


def test_slow_image_runs_unready_then_gets_ready() -> None:
    run = run_of(("slow", 2))
    status, nxt = run.status(T0 + 1)
    assert nxt == T0 + 2 and status["phase"] == "Running"
    assert (
        container(status)["started"]
        and not container(status)["ready"]
        and "running" in container(status)["state"]
    )
    assert condition(status, "ContainersReady")["reason"] == "ContainersNotReady"
    status, nxt = run.status(T0 + 2)
    assert nxt is None and condition(status, "Ready")["status"] == "True"
    assert condition(status, "Ready")["lastTransitionTime"] == podstatus.ts(T0 + 2)


def test_crash_image_runs_then_crash_loops() -> None:
    run = run_of(("crash",))
    status, nxt = run.status(T0 + 0.5)
    assert (
        nxt == T0 + 1 and "running" in container(status)["state"] and container(status)["restartCount"] == 0
    )
    status, nxt = run.status(T0 + 2.5)
    st = container(status)
    assert nxt == T0 + 4 and status["phase"] == "Running" and not st["ready"]
    assert st["restartCount"] == 2 and st["state"]["waiting"]["reason"] == "CrashLoopBackOff"
    assert st["state"]["waiting"]["message"].startswith(
        "back-off 20s restarting failed container=app pod=pod_ns("
    )
    assert (
        st["lastState"]["terminated"]["exitCode"] == 1 and st["lastState"]["terminated"]["reason"] == "Error"
    )


def test_crash_image_with_restart_policy_never_fails_the_pod() -> None:
    status, nxt = run_of(("crash",), restart_policy="Never").status(T0 + 3)
    assert nxt is None and status["phase"] == "Failed"
    assert container(status)["state"]["terminated"]["exitCode"] == 1


def test_pull_error_then_back_off() -> None:
    run = run_of(("pull-error", "ErrImagePull"))
    run.containers[0].image = "registry.local/team/app@sha256:" + "0" * 64
    status, nxt = run.status(T0)
    assert nxt == T0 + 1 and status["phase"] == "Pending"
    assert container(status)["state"]["waiting"]["reason"] == "ErrImagePull"
    status, nxt = run.status(T0 + 1)
    assert nxt is None and container(status)["state"]["waiting"]["reason"] == "ImagePullBackOff"
    assert condition(status, "Ready")["status"] == "False"


class FakeResponse:
    def __init__(self, events: list[dict[str, Any]]) -> None:
        self.body = b"".join(json.dumps(e).encode() + b"\n" for e in events)

    def stream(self, _amt: None, decode_content: bool) -> Any:
        yield from (self.body[i : i + 7] for i in range(0, len(self.body), 7))  # split mid-line on purpose

    def release_conn(self) -> None:
        pass


class FakeCore:
    def __init__(self, result: FakeResponse | Exception) -> None:
        self.result = result

    def list_pod_for_all_namespaces(self, **_kw: Any) -> FakeResponse:
        if isinstance(self.result, Exception):
            raise self.result
        return self.result


def kubelet_with(result: FakeResponse | Exception, tmp_path: Path) -> Kubelet:
    k = Kubelet(client.ApiClient(), tmp_path)
    k.core = FakeCore(result)
    return k


def test_watch_resumes_from_the_last_resource_version(tmp_path: Path) -> None:
    pod = {"metadata": {"uid": "0000-0001", "name": "p", "namespace": "n", "resourceVersion": "41"}}
    events = [
        {"type": "DELETED", "object": pod},
        {"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "42"}}},
    ]
    k = kubelet_with(FakeResponse(events), tmp_path)
    assert k._watch("40") == "42"
    assert k.queues[k._shard("0000-0001")].get_nowait() == ("forget", "0000-0001")


def test_watch_asks_for_a_relist_on_410_gone(tmp_path: Path) -> None:
    gone = {"type": "ERROR", "object": {"kind": "Status", "code": 410, "message": "too old resource version"}}
    assert kubelet_with(FakeResponse([gone]), tmp_path)._watch("1") == ""
    assert kubelet_with(client.ApiException(status=410), tmp_path)._watch("1") == ""


@pytest.mark.parametrize(
    ("behaviour", "policy", "at", "phase", "exit_code"),
    [
        (("ready",), "Never", 0.5, "Running", None),
        (("ready",), "Never", 1.0, "Succeeded", 0),
        (("slow", 5), "Never", 4.0, "Running", None),
        (("slow", 5), "Never", 5.0, "Succeeded", 0),
        (("exit", 1, 3), "Never", 3.0, "Failed", 1),
        (("exit", 0, 3), "OnFailure", 3.0, "Succeeded", 0),
        (("ready",), "Always", 100.0, "Running", None),
    ],
)  # fmt: skip
def test_a_pod_that_runs_to_completion_completes_by_its_images_rules(
    behaviour: Any, policy: str, at: float, phase: str, exit_code: int | None
) -> None:
    """Hook pods (restartPolicy Never, OnFailure for the Retry policy) and a Custom strategy's deployer
    pod run to completion: their process ends when its image (and command) says."""
    status, _nxt = run_of(behaviour, restart_policy=policy).status(T0 + at)
    assert status["phase"] == phase
    terminated = container(status)["state"].get("terminated")
    assert (terminated or {}).get("exitCode") == exit_code


def test_a_failing_retry_hook_is_restarted_by_the_kubelet() -> None:
    """restartPolicy OnFailure (a hook's Retry policy): a failed process is restarted, a crash loop."""
    status, _nxt = run_of(("exit", 1, 1), restart_policy="OnFailure").status(T0 + 3)
    assert status["phase"] == "Running"
    assert container(status)["state"]["waiting"]["reason"] == "CrashLoopBackOff"


def test_a_flaky_pull_fails_once_then_runs() -> None:
    first, _nxt = run_of(("flaky-pull",)).status(T0 + 0.5)
    assert container(first)["state"]["waiting"]["reason"] == "ErrImagePull" and first["phase"] == "Pending"
    backing_off, _ = run_of(("flaky-pull",)).status(T0 + 2)
    assert container(backing_off)["state"]["waiting"]["reason"] == "ImagePullBackOff"
    later, _ = run_of(("flaky-pull",)).status(T0 + 3)
    assert later["phase"] == "Running" and container(later)["ready"]


@pytest.mark.parametrize(
    ("code", "policy", "phase", "state"),
    [(0, "Never", "Succeeded", "terminated"), (3, "Never", "Failed", "terminated"),
     (0, "OnFailure", "Succeeded", "terminated"), (3, "OnFailure", "Running", "waiting"),
     (0, "Always", "Running", "waiting")],
)  # fmt: skip
def test_a_batch_process_ends_as_its_restart_policy_says(
    code: int, policy: str, phase: str, state: str
) -> None:
    """`-exit<N>` (a Job's test image), after the kubelet's getPhase (k8s pkg/kubelet/kubelet_pods.go)
    and restart decision (pkg/kubelet/kuberuntime/kuberuntime_manager.go computePodActions: Never keeps
    every exit, OnFailure restarts a non-zero one, Always restarts even a 0)."""
    run = run_of(("exit", code), policy)
    running, _ = run.status(T0 + 0.5)
    assert running["phase"] == "Running" and container(running)["ready"]
    status, nxt = run.status(T0 + 1.5)
    st = container(status)
    assert status["phase"] == phase and state in st["state"]
    if state == "terminated":
        assert st["state"]["terminated"]["exitCode"] == code and nxt is None
        assert st["state"]["terminated"]["reason"] == ("Completed" if code == 0 else "Error")
        assert condition(status, "Ready")["reason"] == "PodCompleted"
    else:
        assert st["restartCount"] == 1 and st["lastState"]["terminated"]["exitCode"] == code


def test_a_process_that_dies_later_is_ready_first_then_crash_loops() -> None:
    """`-dies<N>`: a release that passes its rollout and breaks N s later (what --bake must catch)."""
    run = run_of(("dies", 8))
    status, nxt = run.status(T0 + 7.5)
    assert (
        status["phase"] == "Running" and container(status)["ready"] and container(status)["restartCount"] == 0
    )
    assert nxt == T0 + 8.0
    status, _ = run.status(T0 + 8.5)
    st = container(status)
    assert not st["ready"] and st["restartCount"] == 1
    assert st["state"]["waiting"]["reason"] == "CrashLoopBackOff"
    assert st["lastState"]["terminated"]["finishedAt"] == podstatus.ts(T0 + 8.0)
