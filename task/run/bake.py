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
from rollguard.core.structs import Obj, Phase
from rollguard.kinds import Kind, images_of, pods_of_revision
from rollguard.plan.checks import CheckKind
from rollguard.run.checks import Context


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
    """What breaks the bake for one workload now, or None (pure)."""
    if obj is None:
        return f"{member.key} was deleted"
    running = images_of((obj.get("spec") or {}).get("template") or {})
    if running != member.images:
        return f"{member.key} now runs {running}, not the verified {member.images}"
    progress = member.kind.progress(obj, member.kind.owned(obj, revisions))
    if progress.phase is not Phase.COMPLETE:
        return f"{member.key} degraded: {progress.phase.value}: {progress.message}"
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
    looks = 0
    while True:
        looks += 1
        for m in members:
            found = finding(m, *look(m))
            if found is not None:
                ctx.say(f"verify: bake failed after {clock() - started:.0f}s: {found}")
                return _result(
                    ok=False,
                    started=started,
                    clock=clock,
                    evidence=f"after {clock() - started:.0f}s of {seconds}s: {found}",
                )
        now = clock()
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


def _result(*, ok: bool, started: float, clock: Callable[[], float], evidence: str) -> CheckResult:
    return CheckResult(
        name="bake",
        kind=CheckKind.BAKE,
        outcome=CheckOutcome.PASSED if ok else CheckOutcome.FAILED,
        duration=round(clock() - started, 3),
        evidence=evidence,
    )
