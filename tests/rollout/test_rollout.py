"""The guarded rollout on the live sandbox: all-new or all-old, never paused, first error reported."""

from __future__ import annotations

from pathlib import Path

from rollguard.core.resources import DEPLOYMENT_CONFIGS, EVENTS
from tests.helpers.cluster import (
    CRASH,
    DC,
    NEW,
    OLD,
    SELECTOR,
    all_on,
    create_group,
    dc_body,
    image_args,
    make_group,
    rollguard,
    view,
)


def test_second_dc_crashes_group_reverts_then_next_run_succeeds(sandbox, namespace, client, tmp_path: Path):
    """Reference section 1: three DCs, the second one's new image crashes."""
    create_group(client, namespace, [dc_body(f"dc{i}", OLD) for i in (1, 2, 3)])
    result = rollguard(
        sandbox.kubeconfig,
        "rollout",
        "-n",
        namespace,
        "-l",
        SELECTOR,
        "--image",
        f"dc/dc1={NEW}",
        "--image",
        f"dc/dc2={CRASH}",
        "--image",
        f"dc/dc3={NEW}",
        report=tmp_path / "report.json",
    )
    assert result.code == 1, result.stdout + result.stderr
    for name in ("dc1", "dc2", "dc3"):
        state = view(client, namespace, DC, name)
        assert state.images == {"app": OLD}, name
        assert not state.paused
        assert state.complete and state.latest_phase == "Complete", name
    assert result.report["status"] == "reverted"
    assert "dc/dc2" in result.report["error"] and "CrashLoopBackOff" in result.report["error"]
    assert {w["outcome"] for w in result.report["workloads"]} == {"reverted"}
    audit = [
        e for e in client.list(EVENTS, namespace=namespace)["items"] if e["reason"] == "RollguardReverted"
    ]
    assert sorted(e["involvedObject"]["name"] for e in audit) == ["dc1", "dc2", "dc3"]
    assert all(result.report["run_id"] in e["message"] and "cause: dc/dc2" in e["message"] for e in audit)

    again = rollguard(
        sandbox.kubeconfig,
        "rollout",
        "-n",
        namespace,
        "-l",
        SELECTOR,
        "--image",
        f"dc/dc1={NEW}",
        "--image",
        f"dc/dc2={NEW}",
        "--image",
        f"dc/dc3={NEW}",
        report=tmp_path / "again.json",
    )
    assert again.code == 0, again.stdout + again.stderr
    assert all(view(client, namespace, DC, n).images == {"app": NEW} for n in ("dc1", "dc2", "dc3"))
    assert again.report["status"] == "succeeded"
    pods = [p for w in again.report["workloads"] for p in w["pods"]]
    assert pods and all(p["node"] and p["ip"] and p["containers"][0]["image_id"] for p in pods)


def test_mixed_group_with_paused_dc_is_taken_over(sandbox, namespace, client, tmp_path: Path):
    make_group(client, namespace)
    client.patch(
        DEPLOYMENT_CONFIGS, "dc2", {"spec": {"paused": True}}, namespace=namespace
    )  # an earlier tool
    result = rollguard(
        sandbox.kubeconfig,
        "rollout",
        "-n",
        namespace,
        "-l",
        SELECTOR,
        *image_args(NEW),
        report=tmp_path / "r.json",
    )
    assert result.code == 0, result.stdout + result.stderr
    all_on(client, namespace, NEW)
    dc2 = next(w for w in result.report["workloads"] if w["name"] == "dc2")
    assert dc2["paused_before"] and not dc2["paused"]
    assert any("taken over" in note for note in dc2["notes"])


def test_mixed_group_failure_reverts_deployment_and_paused_dc(sandbox, namespace, client, tmp_path: Path):
    make_group(client, namespace)
    client.patch(DEPLOYMENT_CONFIGS, "dc2", {"spec": {"paused": True}}, namespace=namespace)
    result = rollguard(
        sandbox.kubeconfig,
        "rollout",
        "-n",
        namespace,
        "-l",
        SELECTOR,
        "--image",
        f"dc/dc1={NEW}",
        "--image",
        f"dc/dc2={NEW}",
        "--image",
        f"deploy/web={CRASH}",
        report=tmp_path / "r.json",
    )
    assert result.code == 1, result.stdout + result.stderr
    all_on(client, namespace, OLD)
    assert "deployment/web" in result.report["error"]


def test_on_paused_refuse_changes_nothing(sandbox, namespace, client):
    """Every paused workload is named (issue 31), with the one command that resumes them all."""
    create_group(client, namespace, [dc_body("dc1", OLD), dc_body("dc2", OLD)])
    for name in ("dc1", "dc2"):
        client.patch(DEPLOYMENT_CONFIGS, name, {"spec": {"paused": True}}, namespace=namespace)
    result = rollguard(
        sandbox.kubeconfig,
        "rollout",
        "-n",
        namespace,
        "-l",
        SELECTOR,
        "--image",
        f"dc/dc1={NEW}",
        "--on-paused",
        "refuse",
    )
    assert result.code == 2
    assert "dc/dc1, dc/dc2 are paused" in result.stderr, result.stderr
    assert f"rollguard resume -n {namespace} dc/dc1 dc/dc2" in result.stderr
    for name in ("dc1", "dc2"):
        state = view(client, namespace, DC, name)
        assert state.paused and state.images == {"app": OLD}
