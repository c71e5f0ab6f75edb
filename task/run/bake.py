"""``--bake DURATION``: after the group is ready, keep watching it for that long.

Any new pod restart, a crash loop (or any other fail-fast reason of `rollguard.core.readiness.pod_doom`), a
pod that loses readiness, or a workload that is no longer complete (degraded, its pods gone, rolled to
another template) within the window fails the run, naming the workload, the pod and what was seen.

`finding` is the judgement (pure: objects in, a finding or None out), `bake` the loop around it, on the
run's live cache (woken by its watch events, no polling of the API).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from rollguard.cluster.cache import NamespaceCache
from rollguard.core.readiness import pod_doom
from rollguard.core.report import CheckOutcome, CheckResult
from rollguard.core.resources import PODS
from rollguard.core.structs import Obj, RolloutPhase
from rollguard.kinds import Kind, images_of, pods_of_revision
from rollguard.plan.checks import CheckKind
from rollguard.run.checks import Context

EVIDENCE_WAIT = 3.0  # seconds a workload's degraded status waits for its pod's own evidence


@dataclass
class Member:
    """One workload under bake: what it must keep running, and its pods as they were when it began."""

    key: str
    kind: Kind
    name: str
    images: dict[str, str]
    restarts: dict[str, int] = field(default_factory=dict)  # pod uid -> restarts at the start
    ready: set[str] = field(default_factory=set)  # pod uids ready at the start


def _restarts(pod: Obj) -> int:
    statuses = (pod.get("status") or {}).get("containerStatuses") or []
    return sum(int(s.get("restartCount", 0)) for s in statuses)


def _ready(pod: Obj) -> bool:
    conditions = (pod.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def current_pods(member: Member, obj: Obj, revisions: list[Obj], pods: list[Obj]) -> list[Obj]:
    revision = member.kind.new_revision(obj, member.kind.owned(obj, revisions))
    return pods_of_revision(revision, pods) if revision is not None else []


def finding(member: Member, obj: Obj | None, revisions: list[Obj], pods: list[Obj]) -> str | None:
    """What breaks the bake for one workload now, or None (pure): its pods' own evidence first (a
    restart, a crash loop, readiness lost: it names the pod), then the workload's."""
    if obj is None:
        return f"{member.key} was deleted"
    running = images_of((obj.get("spec") or {}).get("template") or {})
    if running != member.images:
        return f"{member.key} now runs {running}, not the verified {member.images}"
    return pod_finding(member, obj, revisions, pods) or workload_finding(member, obj, revisions)


def pod_finding(member: Member, obj: Obj, revisions: list[Obj], pods: list[Obj]) -> str | None:
    """A pod of the verified revision that restarted, is doomed or lost readiness (pure)."""
    for pod in sorted(current_pods(member, obj, revisions, pods), key=lambda p: p["metadata"]["name"]):
        uid, name = pod["metadata"].get("uid", ""), pod["metadata"]["name"]
        doom = pod_doom(pod, crash_restarts=0)
        if doom is not None:
            return f"{member.key}: {doom.describe()}"
        before = member.restarts.get(uid)
        now = _restarts(pod)
        if before is not None and now > before:
            return f"{member.key}: pod {name} restarted ({before} -> {now} restarts)"
        if before is None and now > 0:
            return f"{member.key}: new pod {name} restarted {now} times"
        if uid in member.ready and not _ready(pod):
            return f"{member.key}: pod {name} lost readiness"
    return None


def workload_finding(member: Member, obj: Obj, revisions: list[Obj]) -> str | None:
    """The workload itself no longer complete (pure)."""
    progress = member.kind.progress(obj, member.kind.owned(obj, revisions))
    if progress.phase is not RolloutPhase.COMPLETE:
        return f"{member.key} degraded: {progress.phase.value}: {progress.message}"
    return None


def start(member: Member, obj: Obj, revisions: list[Obj], pods: list[Obj]) -> None:
    """Record the pods as the window begins (their restarts and readiness then)."""
    for pod in current_pods(member, obj, revisions, pods):
        uid = pod["metadata"].get("uid", "")
        member.restarts[uid] = _restarts(pod)
        if _ready(pod):
            member.ready.add(uid)


def bake(
    members: list[Member],
    *,
    seconds: int,
    cache: NamespaceCache,
    ctx: Context,
    clock: Callable[[], float] = time.monotonic,
) -> CheckResult:
    """Watch ``members`` for ``seconds``; the result passes when nothing broke."""
    started = clock()
    ends = started + seconds

    def look(member: Member) -> tuple[Obj | None, list[Obj], list[Obj]]:
        obj = cache.get(member.kind.resource, member.name)
        revisions = cache.owners(member.kind.revisions).candidates(obj) if obj is not None else []
        pods = [p for r in revisions for p in cache.owners(PODS).children(r)]
        return obj, revisions, pods

    for m in members:
        obj, revisions, pods = look(m)
        if obj is not None:
            start(m, obj, revisions, pods)
    ctx.say(f"verify: bake: watching {len(members)} workload(s) for {seconds}s")
    # A workload's status can arrive before the pod change behind it (another watch stream): its
    # "degraded" waits up to EVIDENCE_WAIT for the pod's own evidence, which names the pod.
    degraded_since: float | None = None
    while True:
        workload_only: str | None = None
        for m in members:
            obj, revisions, pods = look(m)
            found = finding(m, obj, revisions, pods)
            if found is None:
                continue
            if obj is None or pod_finding(m, obj, revisions, pods) is not None:
                return _failed(ctx, found, started=started, seconds=seconds, clock=clock)
            if found != workload_finding(m, obj, revisions):  # another image: no pod evidence to wait for
                return _failed(ctx, found, started=started, seconds=seconds, clock=clock)
            workload_only = workload_only or found
        now = clock()
        if workload_only is not None:
            degraded_since = now if degraded_since is None else degraded_since
            if now - degraded_since >= EVIDENCE_WAIT or now >= ends or ctx.stop.is_set():
                return _failed(ctx, workload_only, started=started, seconds=seconds, clock=clock)
            cache.wait(EVIDENCE_WAIT - (now - degraded_since))
            continue
        degraded_since = None
        if now >= ends:
            ctx.say(f"verify: bake {seconds}s ok: no restart, no readiness lost")
            evidence = (
                f"{seconds}s: {len(members)} workload(s) stayed complete, no restart, no readiness lost"
            )
            return _result(ok=True, started=started, clock=clock, evidence=evidence)
        if ctx.stop.is_set():
            return _result(
                ok=False,
                started=started,
                clock=clock,
                evidence=f"{ctx.stop_reason()} after {now - started:.0f}s",
            )
        cache.wait(min(1.0, ends - now))


def _failed(
    ctx: Context, found: str, *, started: float, seconds: int, clock: Callable[[], float]
) -> CheckResult:
    ctx.say(f"verify: bake failed after {clock() - started:.0f}s: {found}")
    return _result(
        ok=False,
        started=started,
        clock=clock,
        evidence=f"after {clock() - started:.0f}s of {seconds}s: {found}",
    )


def _result(*, ok: bool, started: float, clock: Callable[[], float], evidence: str) -> CheckResult:
    return CheckResult(
        name="bake",
        kind=CheckKind.BAKE,
        outcome=CheckOutcome.PASSED if ok else CheckOutcome.FAILED,
        duration=round(clock() - started, 3),
        evidence=evidence,
    )
