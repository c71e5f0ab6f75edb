"""Concurrency: several runs at once on one group, repairs during a rollout, a human editing a workload.

Exactly one run proceeds; every other one exits 2 naming the holder (the winner's run id), changes
nothing, and the group ends consistent.
"""

from __future__ import annotations

import re
import signal

import pytest

from rollguard.cluster.claims import REGISTER, claims_of
from rollguard.core.resources import DEPLOYMENT_CONFIGS, LEASES
from tests.helpers import chaos as h
from tests.helpers.cluster import DC, DEPLOYMENT, IMAGE, journal_reaches, make_group, view, wait_until
from tests.helpers.scenarios import pause, set_image

SLOW = f"{IMAGE}:v2-slow8"  # the winner outlives the losers' start-up


def race(kubeconfig, namespace: str, runs: int) -> tuple[h.Result, list[h.Result]]:
    procs = [h.start_rollout(kubeconfig, namespace, SLOW) for _ in range(runs)]
    results = [h.finish(p, timeout=180) for p in procs]
    winners = [r for r in results if r.code == 0]
    assert len(winners) == 1, [(r.code, r.stderr[-300:]) for r in results]
    losers = [r for r in results if r is not winners[0]]
    return winners[0], losers


def run_id(result: h.Result) -> str:
    found = re.search(r"run (\d{8}-\d{6}-[0-9a-f]{6})", result.stdout)
    assert found, result.stdout[:500]
    return found.group(1)


def assert_refused_naming(loser: h.Result, holder: str) -> None:
    assert loser.code == 2, loser.stdout[-1000:] + loser.stderr[-1000:]
    lines = [line for line in loser.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in loser.stderr, loser.stderr
    assert "locked by" in lines[0] and f"run {holder}" in lines[0], lines[0]


@pytest.mark.parametrize(
    "runs", [pytest.param(2, id="two"), pytest.param(5, id="five", marks=pytest.mark.chaos)]
)
def test_runs_at_once_one_proceeds(client, sandbox, proxy, tmp_path, namespace, ledger_entry, runs):
    kubeconfig = proxy.kubeconfig(sandbox.kubeconfig, tmp_path / "kubeconfig")
    make_group(client, namespace)
    winner, losers = race(kubeconfig, namespace, runs)
    holder = run_id(winner)
    for loser in losers:
        assert_refused_naming(loser, holder)
    # Only the winner wrote workloads: one PUT per workload through the proxy.
    writes = [r for r in proxy.mutating() if r.resource in ("deploymentconfigs", "deployments")]
    assert len(writes) == 3, [(r.method, r.path) for r in writes]
    verdict = h.assert_consistent(client, sandbox.kubeconfig, namespace, (SLOW,))
    ledger_entry.case(
        f"{runs} runs at once",
        faults={"concurrent run": runs - 1},
        states=verdict.checks + runs + 1,
        detail=f"1 proceeded, {runs - 1} refused naming run {holder}",
    )


REPAIRS = [
    ["revert", "-l", h.SELECTOR],
    ["resume", "dc/dc1"],
    ["redeploy", "deploy/web"],
    ["revert", "dc/dc2"],
]


@pytest.mark.chaos
def test_repairs_while_a_rollout_runs_are_refused(client, sandbox, proxy, tmp_path, namespace, ledger_entry):
    kubeconfig = proxy.kubeconfig(sandbox.kubeconfig, tmp_path / "kubeconfig")
    make_group(client, namespace)
    rollout = h.start_rollout(kubeconfig, namespace, f"{IMAGE}:v2-slow15")
    journal_reaches(client, namespace, "watching")
    holder = h.journal(client, namespace)["run"]["id"]
    before = len(proxy.mutating())
    refused = []
    for args in REPAIRS:
        result = h.finish(h.start(kubeconfig, *args[:1], "-n", namespace, *args[1:]), timeout=60)
        assert_refused_naming(result, holder)
        refused.append(" ".join(args))
    # Read-only commands meanwhile: they answer and write nothing.
    status = h.finish(h.start(kubeconfig, "status", "-n", namespace, "-l", h.SELECTOR), timeout=60)
    assert status.code == 0 and "locked by" in status.stdout, status.stdout + status.stderr
    others = [r for r in proxy.mutating()[before:] if r.resource not in ("leases", "configmaps")]
    assert not others, [(r.method, r.path) for r in others]
    done = h.finish(rollout, timeout=120)
    assert done.code == 0, done.stdout[-1500:] + done.stderr
    verdict = h.assert_consistent(client, sandbox.kubeconfig, namespace, (f"{IMAGE}:v2-slow15",))
    ledger_entry.case(
        "repairs during a rollout",
        faults={"concurrent repair": len(REPAIRS)},
        states=verdict.checks + len(REPAIRS) + 2,
        detail=f"refused naming run {holder}: {refused}",
    )


HUMAN = f"{IMAGE}:v9-hotfix"


@pytest.mark.parametrize(
    "when", ["before-its-write", pytest.param("after-its-write", marks=pytest.mark.chaos)]
)
def test_human_edit_during_the_rollout(client, sandbox, proxy, tmp_path, namespace, ledger_entry, when):
    """Someone sets dc2's image by hand while rollguard rolls the group out.

    Before rollguard's own write of dc2 (the human's edit lands right after the journal's create):
    rollguard must not overwrite it. After it (right after rollguard's dc2 write): the watch sees a
    template that is not the one rollguard wrote. Either way the user's edit wins (issue 14): dc2 is
    left as they set it, named as the cause and as ``edited`` in the report, the rest of the group is
    back on its last verified state, and since dc2 is not on it, exit 3 with a journal that says so.
    """
    kubeconfig = proxy.kubeconfig(sandbox.kubeconfig, tmp_path / "kubeconfig")
    make_group(client, namespace)
    report = tmp_path / "r.json"
    run = h.start_rollout(kubeconfig, namespace, f"{IMAGE}:v2-slow5", report=report)

    def human(_record) -> None:  # like `oc set image dc/dc2 app=...`: a patch, no precondition
        patch = {"spec": {"template": {"spec": {"containers": [{"name": "app", "image": HUMAN}]}}}}
        client.patch(DEPLOYMENT_CONFIGS, "dc2", patch, namespace=namespace)

    if when == "before-its-write":  # the journal's create: after preflight, before any workload write
        proxy.after_mutation_matching(lambda r: r.method == "POST" and r.resource == "configmaps", human)
    else:  # right after rollguard's own write of dc2 (the writes go out concurrently)
        proxy.after_mutation_matching(
            lambda r: r.method == "PUT" and r.path.endswith("/deploymentconfigs/dc2"), human
        )
    result = h.finish(run, report, timeout=120)
    assert not proxy.hook_errors, proxy.hook_errors
    assert result.code == 3, result.stdout[-2000:] + result.stderr[-1000:]
    assert "dc/dc2" in result.report["error"] and "someone else" in result.report["error"], result.report[
        "error"
    ]
    outcomes = {w["name"]: w["outcome"] for w in result.report["workloads"]}
    assert outcomes["dc2"] == "edited", outcomes
    assert view(client, namespace, DC, "dc2").images == {"app": HUMAN}  # the human's edit stands
    for kind, name in ((DC, "dc1"), (DEPLOYMENT, "web")):
        state = view(client, namespace, kind, name)
        assert state.images == {"app": h.OLD} and state.complete and not state.paused, state
    record = h.journal(client, namespace)
    assert record["run"]["state"] == "inconsistent" and record["workloads"]["dc/dc2"]["phase"] == "edited"
    assert not h.lease_live(client, namespace)
    ledger_entry.case(
        f"human edit {when}",
        faults={"human edit": 1},
        states=6,
        detail=f"exit 3, dc2 left on the edit, the rest reverted; cause: {result.report['error'][:100]}",
    )


@pytest.mark.chaos
def test_sigkill_of_the_winner_lets_the_next_run_in(
    client, sandbox, proxy, tmp_path, namespace, ledger_entry
):
    """Refused while the dead holder's lease is live; once it expired, the next run proceeds and repairs."""
    kubeconfig = proxy.kubeconfig(sandbox.kubeconfig, tmp_path / "kubeconfig")
    make_group(client, namespace)
    first = h.start_rollout(kubeconfig, namespace, SLOW)
    journal_reaches(client, namespace, "watching")
    holder = h.journal(client, namespace)["run"]["id"]
    first.send_signal(signal.SIGKILL)
    first.wait(timeout=10)
    early = h.finish(h.start_rollout(kubeconfig, namespace, h.NEWER))
    assert_refused_naming(early, holder)
    assert h.expire_lease(client, namespace)
    again = h.finish(h.start_rollout(kubeconfig, namespace, h.NEWER))
    assert again.code == 0, again.stdout[-1500:] + again.stderr
    verdict = h.assert_consistent(client, sandbox.kubeconfig, namespace, (h.NEWER,))
    ledger_entry.case(
        "dead holder, then the next run",
        faults={"SIGKILL": 1, "concurrent run": 1},
        states=verdict.checks + 1,
        detail=f"refused naming dead run {holder}; after expiry exit 0",
    )


@pytest.mark.chaos
def test_two_repairs_of_one_workload_and_a_killed_one(
    client, sandbox, proxy, tmp_path, namespace, ledger_entry
):
    """Repairs of named workloads in no group meet on their own Lease (task/run/repair.py repair_lease_name)
    and on the workloads' claims (task/cluster/claims.py): a second `resume dc/dc2` while the first watches is
    refused naming it and changes nothing; the first one SIGKILLed, the next is refused until the dead
    repair's Lease expired, then takes over its claim, finishes dc2 and leaves no Lease behind."""
    kubeconfig = proxy.kubeconfig(sandbox.kubeconfig, tmp_path / "kubeconfig")
    make_group(client, namespace)
    pause(client, namespace, "dc2")
    set_image(client, namespace, DC, "dc2", SLOW)  # waits while paused; slow once resumed
    first = h.start(kubeconfig, "resume", "dc/dc2", "-n", namespace)
    register = wait_until(client, LEASES, namespace, REGISTER, lambda o: "dc/dc2" in claims_of(o),
                          what="the repair's claim")  # fmt: skip
    wait_until(client, DEPLOYMENT_CONFIGS, namespace, "dc2", lambda o: not o["spec"].get("paused"),
               what="the first repair's write")  # fmt: skip
    holder = claims_of(register)["dc/dc2"]
    before = len(proxy.mutating())
    second = h.finish(h.start(kubeconfig, "resume", "dc/dc2", "-n", namespace), timeout=60)
    assert second.code == 2, second.stdout[-1000:] + second.stderr[-1000:]
    assert "Traceback" not in second.stderr and holder.holder in second.stderr, second.stderr
    wrote = [r for r in proxy.mutating()[before:] if r.resource not in ("leases", "events")]
    assert not wrote, [(r.method, r.path) for r in wrote]
    first.send_signal(signal.SIGKILL)
    first.wait(timeout=10)
    early = h.finish(h.start(kubeconfig, "resume", "dc/dc2", "-n", namespace), timeout=60)
    assert early.code == 2 and holder.holder in early.stderr, early.stdout[-1000:] + early.stderr[-1000:]
    assert h.expire_lease(client, namespace, holder.group_lease), holder
    after = h.finish(h.start(kubeconfig, "resume", "dc/dc2", "-n", namespace), timeout=120)
    assert after.code == 0, after.stdout[-1500:] + after.stderr[-1500:]
    dc2 = view(client, namespace, DC, "dc2")
    assert dc2.images == {"app": SLOW} and dc2.complete and not dc2.paused, dc2
    for kind, name in ((DC, "dc1"), (DEPLOYMENT, "web")):  # outside the repair: untouched
        other = view(client, namespace, kind, name)
        assert other.images == {"app": h.OLD} and other.complete and not other.paused, other
    left = [n for n in (o["metadata"]["name"] for o in client.list(LEASES, namespace=namespace)["items"])
            if n.startswith(("rollguard-claim", "rollguard-repair-"))]  # fmt: skip
    assert not left, left
    ledger_entry.case(
        "two repairs of one workload, one killed",
        faults={"concurrent repair": 2, "SIGKILL": 1},
        states=5,
        detail=f"refused naming {holder.holder} (Lease {holder.group_lease}) while it lived; "
        f"after expiry exit 0, dc2 complete on the slow image, no Lease left",
    )
