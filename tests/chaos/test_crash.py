"""Crash at every step: SIGKILL rollguard right after its k-th mutating API call, for every k.

A first, undisturbed run through the proxy counts the mutating calls of a 3-workload rollout (two
DCs, one Deployment). Then, for each k, a fresh group is rolled out and the run is killed once the
server has answered its k-th mutating call (before the answer reaches it: the server did the work,
the client never learned). The dead run's lease is expired as the harness (the clock would do the
same in LEASE_SECONDS; one case waits for that for real) and rollguard runs again:

- ``rollout``: a new rollout to good images must exit 0 with the whole group on them;
- ``rollout-crash``: a new rollout whose second workload crashes must exit 1 with the whole group
  back on the *last verified* state (the killed run's targets only if its journal recorded success);
- ``revert``: ``rollguard revert --selector`` must exit 0 with the group on the last verified state.

After each: none paused, all complete, one side, journal final, no live lock, drift-check clean.

Further matrices: the killed run followed by a run of another target (good or crashing), by a run of
another target while the killed release's dc2 crash-loops (it fails the next run before that run's own
writes: everything the killed run changed back on the last verified state), the repair itself killed,
and runs with -f manifests.
"""

from __future__ import annotations

import signal
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from rollguard.cluster.client import Client
from rollguard.cluster.lock import read_lease
from rollguard.core.errors import NotFound
from rollguard.core.resources import DEPLOYMENTS, LEASES
from tests.chaos.ledger import Entry
from tests.helpers import chaos as h
from tests.helpers.cluster import make_group
from tests.helpers.proxy import FaultProxy, Record

FOLLOW_UPS = ("rollout", "rollout-crash", "revert")


@dataclass(frozen=True)
class Step:
    k: int
    label: str  # e.g. "PUT deploymentconfigs/dc1"


def label(record: Record) -> str:
    parts = record.path.rstrip("/").split("/")
    name = parts[-1] if record.verb in ("update", "patch", "delete") else ""
    return f"{record.method} {record.resource}{'/' + name if name else ''}"


def step_class(text: str) -> str:
    """What a step is, regardless of which workload: the engine writes workloads (and their audit
    Events) concurrently, so their order differs from run to run while the sequence of classes holds."""
    method, _, target = text.partition(" ")
    if target.startswith(("deployments/", "deploymentconfigs/")):
        return f"{method} workload"
    return f"{method} {target.split('/', 1)[0]}"


def count_steps(client: Client, proxy: FaultProxy, kubeconfig: Path) -> list[Step]:
    """The first run: every mutating call an undisturbed rollout makes, in order."""
    proxy.reset()
    with h.scratch_namespace(client, "crash-count") as ns:
        make_group(client, ns)
        result = h.finish(h.start_rollout(kubeconfig, ns, h.NEW))
        assert result.code == 0, result.stdout + result.stderr
        steps = [Step(i + 1, label(r)) for i, r in enumerate(proxy.mutating())]
    proxy.reset()
    return steps


def expected_side(journal: dict | None) -> str:
    """The last verified state after the killed run: its targets only if it recorded success."""
    if (
        journal
        and journal["run"]["state"] == "succeeded"
        and journal["last_success"].get("run_id") == journal["run"]["id"]
    ):
        return h.NEW
    return h.OLD


def crash_case(
    client: Client,
    sandbox,
    proxy: FaultProxy,
    kubeconfig: Path,
    step: Step,
    follow_up: str,
    tmp: Path,
    *,
    real_expiry: bool = False,
) -> tuple[str, int]:
    """One cell of the matrix; returns a one-line account and the number of states verified."""
    proxy.reset()
    with h.scratch_namespace(client, f"crash-{step.k}-{follow_up}") as ns:
        make_group(client, ns)
        killed = h.start_rollout(kubeconfig, ns, h.NEW)
        proxy.after_mutation(step.k, h.killer(killed))
        result = h.finish(killed)
        proxy.wait_writes_landed()  # its writes already on their way when it died land before we look
        assert result.code == -signal.SIGKILL, (
            f"run was not killed at k={step.k} (exit {result.code}): {result.stdout[-800:]}{result.stderr[-800:]}"
        )
        seen = label(proxy.mutating()[step.k - 1])
        assert step_class(seen) == step_class(step.label), (
            f"k={step.k}: call {seen!r}, the count run had {step.label!r}"
        )
        after_kill = h.journal(client, ns)
        side = expected_side(after_kill)
        live = h.lease_live(client, ns)
        if real_expiry:
            assert live, "the killed run left no live lease"
            early = h.finish(h.start_rollout(kubeconfig, ns, h.NEWER))
            assert early.code == 2 and "locked by" in early.stderr and " run " in early.stderr, early.stderr
            # A lease expires by the clock alone: no event to wait on, so sleep until then.
            time.sleep(read_lease(client.get(LEASES, h.JOURNAL, namespace=ns)).expires_in + 0.5)
        else:
            h.expire_lease(client, ns)
        report = tmp / f"{step.k}-{follow_up}.json"
        if follow_up == "rollout":
            args, want_code, side = ["rollout", *h.image_args(h.NEWER)], 0, h.NEWER
        elif follow_up == "rollout-crash":
            args, want_code = ["rollout", *h.image_args(h.NEWER, crash_second=h.NEWER_CRASH)], 1
        elif after_kill is None:
            # Killed before its journal existed: nothing was changed, so there is nothing to revert
            # to; the repair refuses (exit 2) and must change nothing.
            args, want_code = ["revert"], 2
        else:
            args, want_code = ["revert"], 0
        again = h.finish(h.start(kubeconfig, *args, "-n", ns, "-l", h.SELECTOR, report=report), report)
        assert again.code == want_code, (
            f"k={step.k} {follow_up}: exit {again.code}, wanted {want_code}\n{again.stdout[-1500:]}{again.stderr[-800:]}"
        )
        if follow_up == "rollout-crash":
            assert "dc/dc2" in again.report.get("error", ""), again.report.get("error")
        if want_code == 2:
            assert "no earlier complete revision" in again.stderr, again.stderr
        verdict = h.assert_consistent(client, sandbox.kubeconfig, ns, (side,))
        state = after_kill["run"]["state"] if after_kill else "no journal"
        account = (
            f"k={step.k} after {seen}: journal {state!r}, lease {'live' if live else 'gone'}; "
            f"{follow_up} exit {again.code}; group on {verdict.side.rsplit(':', 1)[-1]}, journal {verdict.journal_state}"
        )
        return account, verdict.checks + 1


@pytest.fixture(scope="module")
def steps_cache() -> dict[str, list[Step]]:
    return {}


@pytest.fixture
def steps(client, proxy, sandbox, tmp_path, steps_cache) -> list[Step]:
    if "steps" not in steps_cache:
        kubeconfig = proxy.kubeconfig(sandbox.kubeconfig, tmp_path / "count-kubeconfig")
        steps_cache["steps"] = count_steps(client, proxy, kubeconfig)
    return steps_cache["steps"]


def run_matrix(client, sandbox, proxy, tmp_path, entry: Entry, steps: list[Step], follow_up: str) -> None:
    kubeconfig = proxy.kubeconfig(sandbox.kubeconfig, tmp_path / "kubeconfig")
    run_cases(
        entry,
        steps,
        follow_up,
        lambda step: crash_case(client, sandbox, proxy, kubeconfig, step, follow_up, tmp_path),
    )


def run_cases(
    entry: Entry,
    steps: list[Step],
    follow_up: str,
    case: Callable[[Step], tuple[str, int]],
    *,
    prefix: str = "",
) -> None:
    """One SIGKILL case per step, each recorded in the ledger; the test fails after all ran, naming each
    failed case (so one failure does not hide the rest of the matrix)."""
    failures = []
    for step in steps:
        name = f"{prefix}k={step.k} {follow_up}"
        try:
            account, states = case(step)
            entry.case(name, faults={"SIGKILL": 1}, states=states, detail=account)
        except AssertionError as exc:
            detail = (
                f"{prefix}k={step.k} after {step.label}: {str(exc).splitlines()[0] if str(exc) else exc!r}"
            )
            entry.case(name, passed=False, faults={"SIGKILL": 1}, detail=detail)
            failures.append(f"{detail}\n{exc}")
    print(f"crash matrix {prefix}({follow_up}): {len(steps)} cases, {len(steps) - len(failures)} passed")
    assert not failures, f"{len(failures)} of {len(steps)} cases failed:\n" + "\n\n".join(failures)


@pytest.mark.chaos
@pytest.mark.parametrize("follow_up", FOLLOW_UPS)
def test_sigkill_after_every_mutating_call(client, sandbox, proxy, tmp_path, ledger_entry, steps, follow_up):
    assert len(steps) >= 8, [s.label for s in steps]  # lease, claims, journal, 3 writes, journal, events, end
    run_matrix(client, sandbox, proxy, tmp_path, ledger_entry, steps, follow_up)


def test_sigkill_after_first_workload_write(client, sandbox, proxy, tmp_path, ledger_entry):
    """The slice of `make test`: killed right after its first workload write (reference section 1's
    half-done group), then a new rollout whose second workload crashes: back to the last verified state.

    No count run here: the mutating call after the lease, the claim register (one write for the whole
    group) and the journal must be that write, as `crash_case` checks against the label.
    """
    first = Step(1 + 1 + 1 + 1, "PUT deployments/web")
    run_matrix(client, sandbox, proxy, tmp_path, ledger_entry, [first], "rollout-crash")


@pytest.mark.chaos
def test_sigkill_then_real_lease_expiry(client, sandbox, proxy, tmp_path, ledger_entry, steps):
    """One case without the harness's lease edit: refused while the dead run's lease lives, then it expires."""
    kubeconfig = proxy.kubeconfig(sandbox.kubeconfig, tmp_path / "kubeconfig")
    middle = next(s for s in steps if "deploymentconfigs/" in s.label)
    account, states = crash_case(
        client, sandbox, proxy, kubeconfig, middle, "rollout", tmp_path, real_expiry=True
    )
    ledger_entry.case(
        f"k={middle.k} real lease expiry", faults={"SIGKILL": 1}, states=states + 1, detail=account
    )


def half_rolled(client: Client, proxy: FaultProxy, kubeconfig: Path, namespace: str, k: int) -> None:
    """Reference section 1's damage: a rollout killed after its k-th mutating call, its lease expired."""
    make_group(client, namespace)
    proxy.reset()
    killed = h.start_rollout(kubeconfig, namespace, h.NEW)
    proxy.after_mutation(k, h.killer(killed))
    assert h.finish(killed).code == -signal.SIGKILL
    proxy.wait_writes_landed()
    h.expire_lease(client, namespace)
    proxy.reset()


@pytest.mark.chaos
def test_sigkill_during_the_repair_after_every_mutating_call(
    client, sandbox, proxy, tmp_path, ledger_entry, steps
):
    """The repair itself killed at every step: `revert -l` of a half-rolled group (all three templates
    new, journal 'applying'), SIGKILLed after its j-th mutating call, then run again: back on the
    last verified state, exit 0."""
    kubeconfig = proxy.kubeconfig(sandbox.kubeconfig, tmp_path / "kubeconfig")
    k = next(s.k for s in steps if s.label == "PUT deploymentconfigs/dc2")
    with h.scratch_namespace(client, "repair-count") as ns:
        half_rolled(client, proxy, kubeconfig, ns, k)
        first = h.finish(h.start(kubeconfig, "revert", "-n", ns, "-l", h.SELECTOR))
        assert first.code == 0, first.stdout + first.stderr
        repair_steps = [Step(i + 1, label(r)) for i, r in enumerate(proxy.mutating())]
    once = Counter(step.label for step in repair_steps)
    failures = []
    for step in repair_steps:
        name = f"revert killed at j={step.k}"
        try:
            with h.scratch_namespace(client, f"repair-{step.k}") as ns:
                half_rolled(client, proxy, kubeconfig, ns, k)
                repair = h.start(kubeconfig, "revert", "-n", ns, "-l", h.SELECTOR)
                if once[step.label] == 1:  # a call made once (a claim's or the lock's release): by name,
                    # since concurrent writes and coalesced journal saves shift the positions of the rest
                    proxy.after_mutation_matching(
                        lambda r, want=step.label: label(r) == want, h.killer(repair)
                    )
                else:
                    proxy.after_mutation(step.k, h.killer(repair))
                assert h.finish(repair).code == -signal.SIGKILL, f"not killed at j={step.k}"
                proxy.wait_writes_landed()
                state = (h.journal(client, ns) or {}).get("run", {}).get("state", "no journal")
                h.expire_lease(client, ns)
                again = h.finish(h.start(kubeconfig, "revert", "-n", ns, "-l", h.SELECTOR), timeout=150)
                assert again.code == 0, (
                    f"j={step.k}: exit {again.code}\n{again.stdout[-1500:]}{again.stderr[-800:]}"
                )
                verdict = h.assert_consistent(client, sandbox.kubeconfig, ns, (h.OLD,))
            ledger_entry.case(
                name,
                faults={"SIGKILL": 2},
                states=verdict.checks + 1,
                detail=f"j={step.k} after {step.label}: journal {state!r}; revert again exit 0, group on v1",
            )
        except AssertionError as exc:
            detail = f"j={step.k} after {step.label}: {str(exc).splitlines()[0] if str(exc) else exc!r}"
            ledger_entry.case(name, passed=False, faults={"SIGKILL": 2}, detail=detail)
            failures.append(f"{detail}\n{exc}")
    print(f"repair crash matrix: {len(repair_steps)} cases, {len(repair_steps) - len(failures)} passed")
    assert not failures, "\n\n".join(failures)


# -- killed, then a run of another target (issue 31) --------------------------------------------------

OTHER_FOLLOW_UPS = ("rollout-other", "rollout-other-crash")


def other_target_case(
    client, sandbox, proxy, kubeconfig: Path, step: Step, follow_up: str, tmp: Path
) -> tuple[str, int]:
    """Killed after its k-th mutating call, then a run that targets another workload only:

    - ``rollout-other`` (``deploy/web`` to v3): exit 0, web on v3, and each DC on what it ran right after
      the kill: the killed run's change where it landed (finished: watched to completion by this run),
      else its old image; never a success beside a member left unverified;
    - ``rollout-other-crash`` (``dc/dc2`` to a crashing v3): exit 1 naming dc/dc2, the whole group back on
      the last verified state, the killed run's unverified changes included (finished, then reverted).
    """
    from tests.helpers.cluster import view

    proxy.reset()
    with h.scratch_namespace(client, f"crash-o-{step.k}-{follow_up}") as ns:
        make_group(client, ns)
        killed = h.start_rollout(kubeconfig, ns, h.NEW)
        proxy.after_mutation(step.k, h.killer(killed))
        result = h.finish(killed)
        proxy.wait_writes_landed()  # its writes already on their way when it died land before we look
        assert result.code == -signal.SIGKILL, (
            f"not killed at k={step.k} (exit {result.code}): {result.stdout[-800:]}"
        )
        seen = label(proxy.mutating()[step.k - 1])
        after_kill = h.journal(client, ns)
        left = {name: view(client, ns, kind, name).images["app"] for kind, name in h.GROUP}
        h.expire_lease(client, ns)
        report = tmp / f"o-{step.k}-{follow_up}.json"
        if follow_up == "rollout-other":
            args, want_code = ["--image", f"deploy/web={h.NEWER}"], 0
        else:
            args, want_code = ["--image", f"dc/dc2={h.NEWER_CRASH}"], 1
        again = h.finish(
            h.start(kubeconfig, "rollout", "-n", ns, "-l", h.SELECTOR, *args, report=report), report
        )
        assert again.code == want_code, (
            f"k={step.k} {follow_up}: exit {again.code}, wanted {want_code}\n{again.stdout[-1500:]}{again.stderr[-800:]}"
        )
        state = after_kill["run"]["state"] if after_kill else "no journal"
        if follow_up == "rollout-other-crash":
            assert "dc/dc2" in again.report.get("error", ""), again.report.get("error")
            verdict = h.assert_consistent(client, sandbox.kubeconfig, ns, (expected_side(after_kill),))
            on = verdict.side.rsplit(":", 1)[-1]
            checks = verdict.checks
        else:
            checks = 0
            for kind, name in h.GROUP:
                live = view(client, ns, kind, name)
                want = h.NEWER if name == "web" else left[name]
                assert live.images["app"] == want, f"k={step.k}: {name} runs {live.images}, wanted {want}"
                assert live.complete and not live.paused, f"k={step.k}: {name} {live}"
                checks += 1
            record = h.journal(client, ns)
            assert record is not None and record["run"]["state"] == "succeeded", record and record["run"]
            assert not h.lease_live(client, ns), "a lock is still held"
            drift = h.rollguard(sandbox.kubeconfig, "drift-check", "-n", ns, "-l", h.SELECTOR, timeout=60)
            assert drift.code == 0, f"drift-check: {drift.code}\n{drift.stdout}\n{drift.stderr}"
            checks += 3
            on = ", ".join(f"{n} {left[n].rsplit(':', 1)[-1]}" for n in ("dc1", "dc2")) + ", web v3"
        account = f"k={step.k} after {seen}: journal {state!r}; {follow_up} exit {again.code}; group on {on}"
        return account, checks + 1


@pytest.mark.chaos
@pytest.mark.parametrize("follow_up", OTHER_FOLLOW_UPS)
def test_sigkill_then_a_run_of_another_target(
    client, sandbox, proxy, tmp_path, ledger_entry, steps, follow_up
):
    kubeconfig = proxy.kubeconfig(sandbox.kubeconfig, tmp_path / "kubeconfig")
    run_cases(
        ledger_entry,
        steps,
        follow_up,
        lambda step: other_target_case(client, sandbox, proxy, kubeconfig, step, follow_up, tmp_path),
        prefix="other ",
    )


def crashing_killed_case(
    client, sandbox, proxy, kubeconfig: Path, step: Step, follow_up: str, tmp: Path
) -> tuple[str, int]:
    """Killed after its k-th mutating call while rolling out a release whose dc/dc2 crash-loops, then a run
    of ``deploy/web`` only (which the killed run changed too):

    - where the killed run's crashing dc/dc2 landed, the next run finishes it and finds it failing (before
      its own first write once the crash loop shows: nothing of its own written; else while watching):
      exit 1 naming dc/dc2, the whole group back on the last verified state, the killed run's other
      unverified changes (dc/dc1, and deploy/web although the run targets it) included;
    - where it did not land, the next run succeeds: web on v3, each DC on what it ran after the kill.
    """
    from tests.helpers.cluster import CRASH, crash_looping, view, wait_for_pod

    proxy.reset()
    with h.scratch_namespace(client, f"crash-c-{step.k}") as ns:
        make_group(client, ns)
        killed = h.start_rollout(kubeconfig, ns, h.NEW, crash_second=CRASH)
        proxy.after_mutation(step.k, h.killer(killed))
        result = h.finish(killed)
        assert result.code == -signal.SIGKILL, f"not killed at k={step.k} (exit {result.code})"
        seen = label(proxy.mutating()[step.k - 1])
        after_kill = h.journal(client, ns)
        left = {name: view(client, ns, kind, name).images["app"] for kind, name in h.GROUP}
        if left["dc2"] == CRASH:  # the next run starts once the crash loop shows: known before its writes
            wait_for_pod(client, ns, crash_looping("dc2-2-"))
        h.expire_lease(client, ns)
        report = tmp / f"c-{step.k}.json"
        again = h.finish(
            h.start(kubeconfig, "rollout", "-n", ns, "-l", h.SELECTOR, "--image", f"deploy/web={h.NEWER}",
                    report=report),
            report,
        )  # fmt: skip
        crashed = left["dc2"] == CRASH
        want_code = 1 if crashed else 0
        assert again.code == want_code, (
            f"k={step.k}: dc2 left on {left['dc2']}; exit {again.code}, wanted {want_code}\n"
            f"{again.stdout[-1500:]}{again.stderr[-800:]}"
        )
        if crashed:
            assert again.report.get("error", "").startswith("dc/dc2: "), again.report.get("error")
            verdict = h.assert_consistent(client, sandbox.kubeconfig, ns, (h.OLD,))
            checks, on = verdict.checks, "old"
        else:
            checks = 0
            for kind, name in h.GROUP:
                live = view(client, ns, kind, name)
                want = h.NEWER if name == "web" else left[name]
                assert live.images["app"] == want, f"k={step.k}: {name} runs {live.images}, wanted {want}"
                assert live.complete and not live.paused, f"k={step.k}: {name} {live}"
                checks += 1
            on = "web v3"
        state = after_kill["run"]["state"] if after_kill else "no journal"
        account = f"k={step.k} after {seen}: journal {state!r}, dc2 left on {left['dc2'].rsplit(':', 1)[-1]}; {follow_up} exit {again.code}; group on {on}"
        return account, checks + 1


@pytest.mark.chaos
def test_sigkill_of_a_crashing_release_then_a_run_of_another_target(
    client, sandbox, proxy, tmp_path, ledger_entry, steps
):
    """Up to the journal write after the workload writes: where the killed run's crash landed or not."""
    kubeconfig = proxy.kubeconfig(sandbox.kubeconfig, tmp_path / "kubeconfig")
    last_write = max(s.k for s in steps if s.label.startswith("PUT deploy"))
    early = [s for s in steps if s.k <= last_write + 1]
    run_cases(
        ledger_entry,
        early,
        "rollout-other-after-crash",
        lambda step: crashing_killed_case(
            client, sandbox, proxy, kubeconfig, step, "rollout-other", tmp_path
        ),
        prefix="crashing ",
    )


# -- runs with -f: whole manifests, one of them bringing a new workload -----------------------------

MANIFEST_ENV = [{"name": "RELEASE", "value": "r2"}]
MANIFEST_FOLLOW_UPS = ("rollout-f", "rollout-f-crash", "rollout-other", "rollout-other-crash")


def release_manifests(path: Path, image: str, *, crash_second: str | None = None) -> Path:
    """The group's three workloads with ``image`` and a new env var, plus a Deployment ``extra`` the
    group does not have yet (the run creates it), as one multi-document file."""
    from tests.helpers.cluster import dc_body, deployment_body

    docs = [dc_body("dc1", image), dc_body("dc2", crash_second or image), deployment_body("web", image),
            deployment_body("extra", image)]  # fmt: skip
    for doc in docs:
        doc["spec"]["template"]["spec"]["containers"][0]["env"] = MANIFEST_ENV
    path.write_text(yaml.safe_dump_all(docs))
    return path


def extra_state(client: Client, ns: str) -> str:
    """``absent``, or the image the created Deployment ``extra`` runs (complete and with the env)."""
    from tests.helpers.cluster import view

    try:
        obj = client.get(DEPLOYMENTS, "extra", namespace=ns)
    except NotFound:
        return "absent"
    state = view(client, ns, h.DEPLOYMENT, "extra")
    assert state.complete and not state.paused, f"extra: {state}"
    assert obj["spec"]["template"]["spec"]["containers"][0].get("env") == MANIFEST_ENV
    return state.images["app"]


def manifest_case(
    client, sandbox, proxy, kubeconfig: Path, step: Step, follow_up: str, tmp: Path
) -> tuple[str, int]:
    proxy.reset()
    with h.scratch_namespace(client, f"crash-f-{step.k}-{follow_up}") as ns:
        make_group(client, ns)
        first = release_manifests(tmp / f"{step.k}-{follow_up}-first.yaml", h.NEW)
        killed = h.start(kubeconfig, "rollout", "-n", ns, "-l", h.SELECTOR, "-f", str(first))
        proxy.after_mutation(step.k, h.killer(killed))
        result = h.finish(killed)
        proxy.wait_writes_landed()  # its writes already on their way when it died land before we look
        assert result.code == -signal.SIGKILL, (
            f"not killed at k={step.k} (exit {result.code}): {result.stdout[-800:]}"
        )
        seen = label(proxy.mutating()[step.k - 1])
        after_kill = h.journal(client, ns)
        side = expected_side(after_kill)
        created_before = any(
            d["metadata"]["name"] == "extra" for d in client.list(DEPLOYMENTS, namespace=ns)["items"]
        )
        h.expire_lease(client, ns)
        report = tmp / f"f-{step.k}-{follow_up}.json"
        if follow_up == "rollout-f":
            second, want_code, side = release_manifests(tmp / f"{step.k}-second.yaml", h.NEWER), 0, h.NEWER
        else:
            second = release_manifests(tmp / f"{step.k}-second.yaml", h.NEWER, crash_second=h.NEWER_CRASH)
            want_code = 1
        again = h.finish(h.start(kubeconfig, "rollout", "-n", ns, "-l", h.SELECTOR, "-f", str(second), report=report),
                         report)  # fmt: skip
        assert again.code == want_code, (
            f"k={step.k} {follow_up}: exit {again.code}, wanted {want_code}\n{again.stdout[-1500:]}{again.stderr[-800:]}"
        )
        verdict = h.assert_consistent(client, sandbox.kubeconfig, ns, (side,))
        extra = extra_state(client, ns)
        # The new workload follows the group: on the new side when it rolled out, gone when the group went
        # back to a state it was not part of (old), on the killed run's side when that run had succeeded.
        assert extra == ("absent" if side == h.OLD else side), (
            f"k={step.k} {follow_up}: extra is {extra}, the group on {side}"
        )
        state = after_kill["run"]["state"] if after_kill else "no journal"
        account = (
            f"k={step.k} after {seen}: journal {state!r}, extra {'created' if created_before else 'not created'}; "
            f"{follow_up} exit {again.code}; group on {verdict.side.rsplit(':', 1)[-1]}, extra {extra.rsplit(':', 1)[-1]}"
        )
        return account, verdict.checks + 2


def manifest_other_case(
    client, sandbox, proxy, kubeconfig: Path, step: Step, follow_up: str, tmp: Path
) -> tuple[str, int]:
    """``rollout -f`` killed after its k-th mutating call, then a run of another target (issue 31):

    - ``rollout-other``: ``--image deploy/web=v3``, exit 0; each other workload on what it ran right after
      the kill (the killed run's change finished where it landed, the created ``extra`` kept as it was);
    - ``rollout-other-crash``: ``--image dc/dc2=v3-crash``, exit 1; the group back on the last verified
      state and ``extra`` deleted unless the killed run's success was recorded.
    """
    from tests.helpers.cluster import view

    proxy.reset()
    with h.scratch_namespace(client, f"crash-fo-{step.k}-{follow_up}") as ns:
        make_group(client, ns)
        first = release_manifests(tmp / f"o-{step.k}-{follow_up}-first.yaml", h.NEW)
        killed = h.start(kubeconfig, "rollout", "-n", ns, "-l", h.SELECTOR, "-f", str(first))
        proxy.after_mutation(step.k, h.killer(killed))
        result = h.finish(killed)
        proxy.wait_writes_landed()  # its writes already on their way when it died land before we look
        assert result.code == -signal.SIGKILL, (
            f"not killed at k={step.k} (exit {result.code}): {result.stdout[-800:]}"
        )
        seen = label(proxy.mutating()[step.k - 1])
        after_kill = h.journal(client, ns)
        members = (*h.GROUP, (h.DEPLOYMENT, "extra"))
        names = {d["metadata"]["name"] for d in client.list(DEPLOYMENTS, namespace=ns)["items"]}
        left = {n: view(client, ns, k, n).images["app"] for k, n in members if k == h.DC or n in names}
        h.expire_lease(client, ns)
        report = tmp / f"fo-{step.k}-{follow_up}.json"
        if follow_up == "rollout-other":
            args, want_code = ["--image", f"deploy/web={h.NEWER}"], 0
        else:
            args, want_code = ["--image", f"dc/dc2={h.NEWER_CRASH}"], 1
        again = h.finish(
            h.start(kubeconfig, "rollout", "-n", ns, "-l", h.SELECTOR, *args, report=report), report
        )
        assert again.code == want_code, (
            f"k={step.k} {follow_up}: exit {again.code}, wanted {want_code}\n{again.stdout[-1500:]}{again.stderr[-800:]}"
        )
        state = after_kill["run"]["state"] if after_kill else "no journal"
        if follow_up == "rollout-other-crash":
            side = expected_side(after_kill)
            verdict = h.assert_consistent(client, sandbox.kubeconfig, ns, (side,))
            extra = extra_state(client, ns)
            assert extra == ("absent" if side == h.OLD else side), (
                f"k={step.k}: extra is {extra}, the group on {side}"
            )
            return (
                f"k={step.k} after {seen}: journal {state!r}; {follow_up} exit 1; group on {side}, extra {extra}",
                verdict.checks + 2,
            )
        checks = 0
        for kind, name in members:
            want = h.NEWER if name == "web" else left.get(name, "absent")
            got = extra_state(client, ns) if name == "extra" else view(client, ns, kind, name).images["app"]
            assert got == want, f"k={step.k}: {name} runs {got}, wanted {want}"
            if name != "extra":
                live = view(client, ns, kind, name)
                assert live.complete and not live.paused, f"k={step.k}: {name} {live}"
            checks += 1
        record = h.journal(client, ns)
        assert record is not None and record["run"]["state"] == "succeeded", record and record["run"]
        assert not h.lease_live(client, ns), "a lock is still held"
        drift = h.rollguard(sandbox.kubeconfig, "drift-check", "-n", ns, "-l", h.SELECTOR, timeout=60)
        assert drift.code == 0, f"drift-check: {drift.code}\n{drift.stdout}\n{drift.stderr}"
        return f"k={step.k} after {seen}: journal {state!r}; {follow_up} exit 0; left {left}", checks + 4


@pytest.mark.chaos
@pytest.mark.parametrize("follow_up", MANIFEST_FOLLOW_UPS)
def test_sigkill_during_a_manifest_run_after_every_mutating_call(
    client, sandbox, proxy, tmp_path, ledger_entry, follow_up
):
    """``rollout -f`` (env and images of three workloads, a fourth created) killed after each of its
    mutating calls, then a run with -f again: all-new with the created workload on the new side, or,
    when that run crashes, all back on the last verified state and the workload the killed run created
    deleted (its journal said it created it)."""
    kubeconfig = proxy.kubeconfig(sandbox.kubeconfig, tmp_path / "kubeconfig")
    proxy.reset()
    with h.scratch_namespace(client, "crash-f-count") as ns:
        make_group(client, ns)
        first = release_manifests(tmp_path / "count.yaml", h.NEW)
        counted = h.finish(h.start(kubeconfig, "rollout", "-n", ns, "-l", h.SELECTOR, "-f", str(first)))
        assert counted.code == 0, counted.stdout + counted.stderr
        steps = [Step(i + 1, label(r)) for i, r in enumerate(proxy.mutating())]
    assert any(s.label == "POST deployments" for s in steps), [s.label for s in steps]  # the create
    run_cases(
        ledger_entry,
        steps,
        follow_up,
        lambda step: (manifest_other_case if "other" in follow_up else manifest_case)(
            client, sandbox, proxy, kubeconfig, step, follow_up, tmp_path
        ),
        prefix="-f ",
    )
