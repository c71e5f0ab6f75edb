"""Chaos test equipment (tests/chaos; `expire_lease` for tests/rollout too): the 3-workload group,
namespaces per case, lease expiry, and the invariants.

The invariant every chaos case ends with (`assert_consistent`): no workload paused, every workload
complete, the whole group on one side (all on the old targets or all on the new ones), the journal in
a final state with no live lock, and `rollguard drift-check` clean.
"""

from __future__ import annotations

import datetime as dt
import json
import secrets
import signal
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

from rollguard.cluster.client import Client
from rollguard.cluster.lock import read_lease
from rollguard.core.errors import ApiError, NotFound
from rollguard.core.resources import LEASES, NAMESPACES, Resource
from rollguard.core.structs import RunState
from tests.helpers.cluster import (
    DC,
    DEPLOYMENT,
    GROUP,
    JOURNAL,
    NEW,
    NEWER,
    NEWER_CRASH,
    OLD,
    SELECTOR,
    Result,
    image_args,
    journal,
    rollguard,
    view,
    wait_until,
)
from tests.helpers.cluster import start_rollguard as start

SERVICE_ACCOUNTS = Resource("", "v1", "serviceaccounts", "ServiceAccount")

ENDED_WELL = {RunState.SUCCEEDED, RunState.REVERTED, RunState.REPAIRED}  # a journal a run left behind well


def start_rollout(
    kubeconfig: str | Path,
    namespace: str,
    image: str,
    *args: str,
    crash_second: str | None = None,
    report: Path | None = None,
    env: dict[str, str] | None = None,
) -> subprocess.Popen[str]:
    """`rollguard rollout` of the chaos group to ``image`` (``args`` after the images), started in the
    background: kill it, race it, or end it with `finish`."""
    return start(
        kubeconfig,
        "rollout",
        "-n",
        namespace,
        "-l",
        SELECTOR,
        *image_args(image, crash_second=crash_second),
        *args,
        report=report,
        env=env,
    )


@contextmanager
def scratch_namespace(client: Client, prefix: str) -> Iterator[str]:
    """A namespace of its own for one case of a matrix (the `namespace` fixture is one per test)."""
    name = f"{prefix[:50]}-{secrets.token_hex(3)}"
    client.create(NAMESPACES, {"metadata": {"name": name}})
    # Pods are refused until the token controller has given the default service account its token.
    wait_until(
        client,
        SERVICE_ACCOUNTS,
        name,
        "default",
        lambda o: bool(o.get("secrets")),
        timeout=30,
        what="to get its token",
    )
    try:
        yield name
    finally:
        with suppress(ApiError):
            client.delete(NAMESPACES, name)


def lease_live(client: Client, namespace: str) -> bool:
    try:
        return read_lease(client.get(LEASES, JOURNAL, namespace=namespace)).live
    except NotFound:
        return False


def expire_lease(client: Client, namespace: str, name: str = JOURNAL) -> bool:
    """Move a dead run's lease renewTime into the past: what waiting LEASE_SECONDS would do.

    ``name``: the group's Lease, or another (a repair's own). True when there was a live lease to expire.
    """
    try:
        lease = client.get(LEASES, name, namespace=namespace)
    except NotFound:
        return False
    if not read_lease(lease).live:
        return False
    past = (dt.datetime.now(dt.UTC) - dt.timedelta(minutes=5)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    lease["spec"]["renewTime"] = past
    lease["spec"]["acquireTime"] = past
    client.replace(LEASES, lease, namespace=namespace)
    return True


@dataclass
class Verdict:
    side: str  # the image the whole group runs
    journal_state: str
    checks: int  # states verified


def assert_consistent(
    client: Client, kubeconfig: str | Path, namespace: str, allowed: tuple[str, ...]
) -> Verdict:
    """The chaos invariant; returns which image the group is on and how many states were checked."""
    checks = 0
    sides = set()
    for kind, name in GROUP:
        state = view(client, namespace, kind, name)
        assert not state.paused, f"{kind}/{name} is paused"
        assert state.complete, f"{kind}/{name} is not complete: {state}"
        sides.add(state.images["app"])
        checks += 1
    assert len(sides) == 1, f"mixed group: {sides}"
    side = sides.pop()
    assert side in allowed, f"group on {side}, expected one of {allowed}"
    record = journal(client, namespace)
    state = record["run"]["state"] if record else "new"
    # No journal at all (a group rollguard never changed) is final too.
    assert record is None or state in ENDED_WELL, f"journal not final: {state} ({record['run']})"
    assert not lease_live(client, namespace), "a lock is still held"
    checks += 2
    drift = rollguard(kubeconfig, "drift-check", "-n", namespace, "-l", SELECTOR, timeout=60)
    assert drift.code == 0, f"drift-check: {drift.code}\n{drift.stdout}\n{drift.stderr}"
    checks += 1
    return Verdict(side=side, journal_state=state, checks=checks)


def finish(proc: subprocess.Popen[str], report: Path | None = None, timeout: float = 180) -> Result:
    out, err = proc.communicate(timeout=timeout)
    data = json.loads(report.read_text()) if report is not None and report.exists() else {}
    return Result(proc.returncode, out, err, data)


def killer(proc: subprocess.Popen[str], sig: int = signal.SIGKILL) -> callable:
    """A proxy hook that signals ``proc`` (and, for SIGKILL, waits until it is gone)."""

    def hook(_record: object) -> None:
        proc.send_signal(sig)
        if sig == signal.SIGKILL:
            proc.wait(timeout=10)

    return hook


__all__ = [
    "DC",
    "DEPLOYMENT",
    "JOURNAL",
    "NEW",
    "NEWER",
    "NEWER_CRASH",
    "OLD",
    "SELECTOR",
    "journal",
    "start",
]
