"""API faults through the proxy: error answers, dropped connections, lost replies, cut watches.

rollguard must retry what is safe to retry, resume each cut watch from the last resourceVersion it
saw, and never report a success that did not happen: every run's report is checked against the live
cluster, and the group must end consistent whatever the exit code.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from rollguard.cluster.client import Client
from tests.helpers import chaos as h
from tests.helpers.cluster import IMAGE, make_group, view
from tests.helpers.proxy import FaultPlan, FaultProxy

WORKLOAD_WRITES = frozenset({"deploymentconfigs", "deployments"})

PLANS = {
    # transient errors on every verb, watch requests included, plus cut watches
    "errors": FaultPlan(
        rates={"500": 0.06, "503": 0.06, "429": 0.05, "drop_before": 0.05},
        verbs=frozenset({"get", "list", "watch", "create", "update", "patch", "delete"}),
        max_faults=40,
        watch_cut_after=(0, 6),
        max_watch_cuts=12,
    ),
    # replies to writes lost after the server did the work: the unsafe case for blind retries
    "lost-replies": FaultPlan(rates={"drop_after": 0.35}, mutating_only=True, max_faults=8),
    # someone else wins a write race on each workload now and then
    "conflicts": FaultPlan(
        rates={"409": 0.5}, verbs=frozenset({"update"}), resources=WORKLOAD_WRITES, max_faults=6
    ),
    # watches only: cut after a few events, mid-line
    "cut-watches": FaultPlan(watch_cut_after=(0, 3), max_watch_cuts=25, max_faults=25),
}
SEEDS = (1, 2, 3)
SLOW3 = f"{IMAGE}:v2-slow3"


def check_resumes(proxy: FaultProxy) -> int:
    """Every cut watch was re-established from the last resourceVersion relayed to rollguard."""
    checked = 0
    watches = proxy.watches()
    for index, cut in enumerate(watches):
        if not cut.cut:
            continue
        later = [w for w in watches[index + 1 :] if w.path == cut.path]
        if not later:
            continue  # the run ended before it needed the watch again
        wanted = cut.last_rv or cut.resumed_from
        relisted = any(
            r.verb == "list" and r.path == cut.path and r.seq < later[0].seq and r.seq > cut.seq
            for r in proxy.records
        )
        assert relisted or later[0].resumed_from == wanted, (
            f"watch {cut.path} cut after rv {wanted}; resumed from {later[0].resumed_from!r}"
        )
        checked += 1
    return checked


def check_report_against_live(client: Client, namespace: str, result: h.Result, new: str = h.NEW) -> int:
    """The report says what the cluster shows: no success that did not happen."""
    report = result.report
    assert report, "no report written"
    status = {0: "succeeded", 1: "reverted", 2: "refused", 3: "inconsistent"}[result.code]
    assert report["status"] == status, (report["status"], result.code)
    checks = 0
    for w in report.get("workloads", []):
        live = view(client, namespace, w["kind"], w["name"])
        assert w["images_after"] == live.images, (w["name"], w["images_after"], live.images)
        assert w["paused"] == live.paused
        if report["status"] == "succeeded":
            assert w["outcome"] == "rolled-out" and live.complete and live.images == {"app": new}, w
        checks += 1
    return checks


def fault_case(
    client: Client, sandbox, proxy: FaultProxy, tmp: Path, namespace: str, plan_name: str, seed: int
) -> tuple[Counter[str], int, str]:
    kubeconfig = proxy.kubeconfig(sandbox.kubeconfig, tmp / "kubeconfig")
    make_group(client, namespace)
    proxy.reset(PLANS[plan_name], seed=seed)
    report = tmp / f"{plan_name}-{seed}.json"
    result = h.finish(
        h.start_rollout(kubeconfig, namespace, h.NEW, report=report),
        report,
    )
    faults = Counter(proxy.faults)
    resumed = check_resumes(proxy)
    proxy.reset()  # checks go around the proxy
    assert result.code in (0, 1), f"exit {result.code}\n{result.stdout[-2500:]}\n{result.stderr[-1500:]}"
    assert "Traceback" not in result.stderr
    checks = check_report_against_live(client, namespace, result)
    verdict = h.assert_consistent(client, sandbox.kubeconfig, namespace, (h.NEW, h.OLD))
    return (
        faults,
        checks + verdict.checks + resumed,
        (
            f"exit {result.code}, group on {verdict.side.rsplit(':', 1)[-1]}, {resumed} watch resumptions checked"
        ),
    )


def run_plan(
    client, sandbox, proxy, tmp_path, namespace, entry, plan_name: str, seed: int, *, must_succeed: bool
) -> None:
    faults, states, account = fault_case(client, sandbox, proxy, tmp_path, namespace, plan_name, seed)
    detail = f"{plan_name} seed {seed}: {dict(faults)}; {account}"
    entry.case(f"{plan_name} seed {seed}", faults=faults, states=states, detail=detail)
    assert sum(faults.values()) > 0, "no fault was injected"
    if must_succeed:
        assert account.startswith("exit 0"), f"every fault here is retryable: {detail}"


def test_transient_errors_and_cut_watches_are_survived(
    client, sandbox, proxy, tmp_path, namespace, ledger_entry
):
    """The slice: one seed of 5xx/429/dropped connections on every verb, plus cut watches."""
    run_plan(client, sandbox, proxy, tmp_path, namespace, ledger_entry, "errors", 7, must_succeed=True)


@pytest.mark.chaos
@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("plan_name", sorted(PLANS))
def test_faults(client, sandbox, proxy, tmp_path, namespace, ledger_entry, plan_name, seed):
    # Every fault here is one a correct client survives with the rollout intact.
    run_plan(client, sandbox, proxy, tmp_path, namespace, ledger_entry, plan_name, seed, must_succeed=True)


@pytest.mark.chaos
@pytest.mark.parametrize("seed", (11,))
def test_cut_watches_resume_from_last_resource_version(
    client, sandbox, proxy, tmp_path, namespace, ledger_entry, seed
):
    kubeconfig = proxy.kubeconfig(sandbox.kubeconfig, tmp_path / "kubeconfig")
    make_group(client, namespace)
    proxy.reset(PLANS["cut-watches"], seed=seed)
    report = tmp_path / "r.json"
    result = h.finish(
        h.start_rollout(kubeconfig, namespace, SLOW3, report=report),
        report,
    )
    resumed = check_resumes(proxy)
    cuts = proxy.faults["watch_cut"]
    proxy.reset()
    assert result.code == 0, result.stdout[-2500:] + result.stderr[-1000:]
    assert cuts >= 3 and resumed >= 3, (cuts, resumed)
    states = check_report_against_live(client, namespace, result, SLOW3)
    verdict = h.assert_consistent(client, sandbox.kubeconfig, namespace, (SLOW3,))
    ledger_entry.case(
        f"cut watches seed {seed}",
        faults={"watch_cut": cuts},
        states=states + verdict.checks + resumed,
        detail=f"{cuts} watches cut mid-line, {resumed} resumptions checked against the last resourceVersion",
    )
