"""SIGTERM (Tekton's step timeout) during apply, during the watch and during the revert.

Tekton sends SIGTERM, then SIGKILL after the pod's grace period. rollguard must revert within a
bounded grace and exit 1, or, when the grace is too short (ROLLGUARD_TERM_GRACE, or a second SIGTERM
during the revert), exit 3 with a journal that says exactly what is left; SIGKILL during the revert
leaves the journal saying "reverting", and the next run repairs the group.
"""

from __future__ import annotations

import signal
import time
from pathlib import Path

import pytest

from tests.helpers import chaos as h
from tests.helpers.cluster import IMAGE, journal_reaches, make_group

SLOW_OLD = f"{IMAGE}:v1-slow20"  # a revert to it takes 20 s
GRACE = 30  # Tekton's default terminationGracePeriodSeconds


def terminate(
    proc, report: Path, *, second: int | None = None, grace: float = GRACE
) -> tuple[h.Result, float]:
    """SIGTERM now (and ``second`` signal a moment later, once the revert runs); the exit and its delay."""
    sent = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    if second is not None:
        proc.send_signal(second)
    result = h.finish(proc, report, timeout=grace + 60)
    return result, time.monotonic() - sent


def assert_reverted(result, took: float, grace: float = GRACE) -> None:
    assert result.code == 1, result.stdout[-2000:] + result.stderr[-1000:]
    assert took < grace, f"took {took:.1f}s after SIGTERM, more than the {grace}s grace"
    assert result.report["status"] == "reverted"
    assert "SIGTERM" in result.report["error"], result.report["error"]


def test_sigterm_during_apply_reverts_and_exits_1(client, sandbox, proxy, tmp_path, ledger_entry, namespace):
    """SIGTERM arrives as the first workload write is answered, the others still on their way."""
    kubeconfig = proxy.kubeconfig(sandbox.kubeconfig, tmp_path / "kubeconfig")
    make_group(client, namespace)
    report = tmp_path / "r.json"
    run = h.start_rollout(kubeconfig, namespace, f"{IMAGE}:v2-slow5", report=report)
    sent = []
    proxy.after_mutation_matching(
        lambda r: r.method == "PUT" and r.resource in ("deployments", "deploymentconfigs"),
        lambda _r: (sent.append(time.monotonic()), run.send_signal(signal.SIGTERM)),
    )
    result = h.finish(run, report, timeout=GRACE + 60)
    assert sent, "the run never wrote a workload"
    took = time.monotonic() - sent[0]
    assert_reverted(result, took)
    verdict = h.assert_consistent(client, sandbox.kubeconfig, namespace, (h.OLD,))
    ledger_entry.case(
        "SIGTERM during apply",
        faults={"SIGTERM": 1},
        states=verdict.checks + 2,
        detail=f"exit 1 {took:.1f}s after SIGTERM",
    )


@pytest.mark.chaos
def test_sigterm_during_watch_reverts_and_exits_1(client, sandbox, proxy, tmp_path, ledger_entry, namespace):
    kubeconfig = proxy.kubeconfig(sandbox.kubeconfig, tmp_path / "kubeconfig")
    make_group(client, namespace)
    report = tmp_path / "r.json"
    run = h.start_rollout(kubeconfig, namespace, f"{IMAGE}:v2-slow60", report=report)
    journal_reaches(client, namespace, "watching")
    result, took = terminate(run, report)
    assert_reverted(result, took)
    verdict = h.assert_consistent(client, sandbox.kubeconfig, namespace, (h.OLD,))
    ledger_entry.case(
        "SIGTERM during watch",
        faults={"SIGTERM": 1},
        states=verdict.checks + 2,
        detail=f"exit 1 {took:.1f}s after SIGTERM",
    )


@pytest.mark.chaos
def test_sigterm_during_revert_keeps_reverting(client, sandbox, proxy, tmp_path, ledger_entry, namespace):
    """A crash starts the revert; SIGTERM during it must not stop it: exit 1, all old."""
    kubeconfig = proxy.kubeconfig(sandbox.kubeconfig, tmp_path / "kubeconfig")
    make_group(client, namespace, f"{IMAGE}:v1-slow8")
    report = tmp_path / "r.json"
    run = h.start_rollout(kubeconfig, namespace, h.NEW, crash_second=h.NEWER_CRASH, report=report)
    journal_reaches(client, namespace, "reverting")
    result, took = terminate(run, report)
    assert result.code == 1, result.stdout[-2000:] + result.stderr[-1000:]
    assert result.report["status"] == "reverted" and "dc/dc2" in result.report["error"], result.report
    assert took < GRACE
    verdict = h.assert_consistent(client, sandbox.kubeconfig, namespace, (f"{IMAGE}:v1-slow8",))
    ledger_entry.case(
        "SIGTERM during revert",
        faults={"SIGTERM": 1},
        states=verdict.checks + 2,
        detail=f"exit 1 {took:.1f}s after SIGTERM; first error (the crash) kept",
    )


@pytest.mark.chaos
@pytest.mark.parametrize("how", ["short-grace", "second-sigterm"])
def test_grace_too_short_exits_3_with_accurate_journal(
    client, sandbox, proxy, tmp_path, ledger_entry, namespace, how
):
    """The old version needs 20 s to come back; the grace is 5 s (or a second SIGTERM cuts it)."""
    kubeconfig = proxy.kubeconfig(sandbox.kubeconfig, tmp_path / "kubeconfig")
    make_group(client, namespace, SLOW_OLD)
    report = tmp_path / "r.json"
    env = {"ROLLGUARD_TERM_GRACE": "5" if how == "short-grace" else "300"}
    cmd = ["rollout", "-n", namespace, "-l", h.SELECTOR, *h.image_args(f"{IMAGE}:v2-slow60")]
    run = h.start(kubeconfig, *cmd, report=report, env=env)
    journal_reaches(client, namespace, "watching")
    if how == "short-grace":
        result, took = terminate(run, report)
    else:
        run.send_signal(signal.SIGTERM)
        journal_reaches(client, namespace, "reverting")
        result, took = terminate(run, report)
    assert result.code == 3, result.stdout[-2000:] + result.stderr[-1000:]
    assert took < 15, f"took {took:.1f}s"
    assert result.report["status"] == "inconsistent" and "SIGTERM" in result.report["error"]
    record = h.journal(client, namespace)
    assert record["run"]["state"] == "inconsistent"
    for key, entry in record["workloads"].items():
        # Accurate: each workload is either verified back, or marked unverified with why.
        assert entry["phase"] in ("reverted", "error"), (key, entry)
        assert entry["verified"]["images"] == {"app": SLOW_OLD}
        if entry["phase"] == "error":
            assert entry["note"], (key, entry)
    assert any(e["phase"] == "error" for e in record["workloads"].values())
    # The journal names what is left; the repair command brings the group back.
    h.expire_lease(client, namespace)
    repaired = h.finish(h.start(kubeconfig, "revert", "-n", namespace, "-l", h.SELECTOR), timeout=120)
    assert repaired.code == 0, repaired.stdout[-2000:] + repaired.stderr
    verdict = h.assert_consistent(client, sandbox.kubeconfig, namespace, (SLOW_OLD,))
    ledger_entry.case(
        f"grace too short ({how})",
        faults={"SIGTERM": 1 if how == "short-grace" else 2},
        states=verdict.checks + 4,
        detail=f"exit 3 {took:.1f}s after SIGTERM; revert repaired",
    )


@pytest.mark.chaos
def test_sigkill_during_revert_leaves_journal_reverting(
    client, sandbox, proxy, tmp_path, ledger_entry, namespace
):
    """SIGTERM, then the platform's SIGKILL mid-revert: the journal says 'reverting'; the next run repairs."""
    kubeconfig = proxy.kubeconfig(sandbox.kubeconfig, tmp_path / "kubeconfig")
    make_group(client, namespace, SLOW_OLD)
    run = h.start_rollout(kubeconfig, namespace, f"{IMAGE}:v2-slow60")
    journal_reaches(client, namespace, "watching")
    run.send_signal(signal.SIGTERM)
    journal_reaches(client, namespace, "reverting")
    run.send_signal(signal.SIGKILL)
    run.wait(timeout=10)
    record = h.journal(client, namespace)
    assert record["run"]["state"] == "reverting"
    assert all(e["verified"]["images"] == {"app": SLOW_OLD} for e in record["workloads"].values())
    h.expire_lease(client, namespace)
    again = h.finish(h.start_rollout(kubeconfig, namespace, h.NEWER), timeout=150)
    assert again.code == 0, again.stdout[-2000:] + again.stderr
    verdict = h.assert_consistent(client, sandbox.kubeconfig, namespace, (h.NEWER,))
    ledger_entry.case(
        "SIGKILL during revert",
        faults={"SIGTERM": 1, "SIGKILL": 1},
        states=verdict.checks + 2,
        detail="journal 'reverting' left; next rollout carried it forward and succeeded",
    )
