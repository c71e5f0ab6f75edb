"""Waiting for a set of workloads to finish rolling out, all at once, on watch events.

Pure judgement (`judged`) is separate from the loop (`wait_for`), which only wakes on cache events,
the next deadline or a cancel request.

Two deadlines per workload: `deadline`, fixed (rollguard's `--timeout`), and `stall_seconds`, the
workload's own deadline judged as the platform judges it: a *no-progress* deadline that restarts
whenever the rollout moves (a DC's `timeoutSeconds` restarts with every scale step, a Deployment's
`progressDeadlineSeconds` with every new or ready pod). A slow rollout that keeps moving is never failed
on it; one that stands still that long is. A lifecycle hook running (a DC's pre/mid/post hook pod) is
not standing still: hooks have no timeout but their pod's activeDeadlineSeconds, so the clock waits.

Hopeless is known early: pods the API refuses to create (quota, LimitRange, admission), or a DC's deployer
pod whose image pull keeps failing (`Progress.blocked`), fail the workload once that has lasted
REFUSAL_GRACE seconds without progress, long enough for what clears by itself (a surge pod over quota
until a terminating old pod is gone, a pull the kubelet retries), instead of the platform's deadline (a
stuck deployer pod: 6 h).
This holds for the revert too, which then ends unverified instead of waiting.

A run's own workloads (`Watched.rejudge`) are judged on after they complete, until the last one does: a
pod of the completed revision that then crash-loops fails it (`late_failure`), so no success is said
beside a member that was ready for a moment only.

Deadlines are honoured to the time: ``--timeout`` ends the wait at its deadline whatever the workload
is doing, and the only grace (`EVIDENCE_GRACE`) is for the platform's own failure verdict on a DC,
whose deployer pod's watch event may lag the RC's: never for rollguard's deadlines or fail-fast. The
loop sleeps on the cache until the next deadline still ahead; it never asks for a wait that has
already expired (which would spin).
"""

from __future__ import annotations

import enum
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from rollguard.cluster.cache import NamespaceCache
from rollguard.core.readiness import REFUSAL_GRACE, pod_doom
from rollguard.core.resources import PODS
from rollguard.core.structs import Obj, Progress, RolloutPhase, WorkloadRef
from rollguard.kinds import images_of, kind_of, pods_of_revision

# How long a platform-declared failure waits for the pod that says how it failed (see
# Kind.evidence_pending); past it the failure is reported with what is known.
EVIDENCE_GRACE = 5.0


@dataclass
class Watched:
    """One workload being waited for: what it must end up running, and by when."""

    ref: WorkloadRef
    expected_images: dict[str, str]
    deadline: float  # time.monotonic()
    deadline_reason: str  # "{waited}" in it is replaced by the seconds really waited since `started`
    verdict: Progress | None = None
    last_message: str = ""
    since: str = ""  # RFC 3339 second of our write: older failure conditions are not this rollout's
    stall_seconds: float | None = None  # its own no-progress deadline (None: only `deadline`)
    stall_reason: str = ""
    moved_at: float = 0.0  # time.monotonic() of the last progress seen (0: of the write)
    last_progress: str = ""  # the progress message last seen: a new one is progress
    evidence_until: float = 0.0  # time.monotonic() until which a failure waits for its evidence
    started: float = field(default_factory=time.monotonic)  # when the wait began (the write)
    blocked_since: float = 0.0  # time.monotonic() since when its pods are refused (0: they are not)
    # Judged on after it completed, until every item is done (`late_failure`), so that no success is
    # said beside a member that is no longer what it was judged: someone else's edit fails it, and (for
    # what the run wrote, not for members it only watches: ``watched_only``) a pod of the revision it
    # completed that then crash-loops (ready first, dying seconds later).
    rejudge: bool = False
    watched_only: bool = False

    def next_deadline(self) -> float:
        """When this item must be judged again at the latest. While a platform failure waits for its
        evidence only that grace and the fixed deadline count (the run fails either way)."""
        if self.evidence_until:
            return min(self.deadline, self.evidence_until)
        own = (
            self.deadline
            if self.stall_seconds is None
            else min(self.deadline, self.moved_at + self.stall_seconds)
        )
        return min(own, self.blocked_since + REFUSAL_GRACE) if self.blocked_since else own

    def waited(self, now: float) -> str:
        """The seconds really waited, as said in messages."""
        return f"{max(now - self.started, 0.0):.0f}s"


class Source(enum.Enum):
    """Who decided a verdict: the platform (its own failure condition), or rollguard (its deadlines,
    fail-fast on a pod, someone else's edit)."""

    PLATFORM = "platform"
    RUN = "run"


def held(item: Watched, progress: Progress, *, now: float) -> Progress:
    """``progress`` with what lasting conditions make of it (pure but for the item's clocks): a hook
    running holds the no-progress clock; pods refused for REFUSAL_GRACE without progress fail the workload."""
    if progress.done:
        item.blocked_since = 0.0
        return progress
    if progress.hook:
        item.moved_at = now
    if not progress.blocked:
        item.blocked_since = 0.0
        return progress
    if not item.blocked_since or progress.message != item.last_progress:
        item.blocked_since = now  # refused since now, or the rollout moved meanwhile: the clock restarts
    if now < item.blocked_since + REFUSAL_GRACE:
        return progress
    message = f"{item.ref.key}: {progress.blocked} (for {REFUSAL_GRACE:.0f}s)"
    if progress.holding and progress.blocked_evidence is None:  # else after the evidence (`refusals`)
        message += f"; {progress.holding}"
    return replace(progress, phase=RolloutPhase.FAILED, message=message)


def deleted_message(key: str) -> str:
    return f"{key} was deleted by someone else during the run"


def edited_message(key: str, images: dict[str, str]) -> str:
    return f"{key} was changed by someone else during the run (now runs {images})"


def judged(
    item: Watched,
    obj: Obj | None,
    revisions: list[Obj],
    pods: list[Obj],
    *,
    now: float,
    fail_fast: bool,
    crash_restarts: int,
) -> tuple[Progress, Source]:
    """Where one workload stands, from the objects alone, and who decided it: only the platform's own failure may wait for its evidence (pure)."""
    if obj is None:
        return Progress(RolloutPhase.FAILED, deleted_message(item.ref.key)), Source.RUN
    kind = kind_of(item.ref)
    mine = kind.owned(obj, revisions)
    progress = kind.progress(obj, mine, since=item.since)
    if progress.phase is RolloutPhase.COMPLETE:
        running = images_of(obj.get("spec", {}).get("template", {}))
        if running != item.expected_images:
            return Progress(RolloutPhase.FAILED, edited_message(item.ref.key, running)), Source.RUN
        return progress, Source.PLATFORM
    if progress.phase is RolloutPhase.PAUSED:
        return Progress(
            RolloutPhase.FAILED, f"{item.ref.key} was paused by someone else during the rollout"
        ), Source.RUN
    source = Source.PLATFORM if progress.phase is RolloutPhase.FAILED else Source.RUN
    progress = kind.explain(obj, mine, pods, progress)
    if progress.phase is RolloutPhase.FAILED:  # the platform's verdict, or its deployer pod's doom: say whose
        return Progress(RolloutPhase.FAILED, f"{item.ref.key}: {progress.message}", progress.revision), source
    if fail_fast:
        revision = kind.new_revision(obj, mine)
        if revision is not None:
            for pod in sorted(pods_of_revision(revision, pods), key=lambda p: p["metadata"]["name"]):
                doom = pod_doom(pod, crash_restarts=crash_restarts)
                if doom is not None:
                    return Progress(
                        RolloutPhase.FAILED, f"{item.ref.key}: {doom.describe()}", progress.revision
                    ), Source.RUN
    if now >= item.deadline:
        reason = item.deadline_reason.replace("{waited}", item.waited(now))
        return Progress(
            RolloutPhase.FAILED, f"{item.ref.key}: {reason} ({progress.message})", progress.revision
        ), Source.RUN
    # a running hook is not standing still (`held` restarts the clock while it runs)
    stalled = (
        item.stall_seconds is not None and now >= item.moved_at + item.stall_seconds and not progress.hook
    )
    if stalled and progress.message == item.last_progress:
        return Progress(
            RolloutPhase.FAILED,
            f"{item.ref.key}: {item.stall_reason} ({progress.message})",
            progress.revision,
        ), Source.RUN
    return progress, Source.RUN


def late_failure(
    item: Watched, obj: Obj | None, revisions: list[Obj], pods: list[Obj], *, crash_restarts: int
) -> Progress | None:
    """A completed item failing after all (pure): deleted, or edited by someone else (as `judged` tells
    an edit), or, unless ``watched_only``, a pod as fail-fast judges new pods (``crash_restarts`` -1 with
    fail-fast off: no pod verdict); None while fine."""
    if obj is None:
        return Progress(RolloutPhase.FAILED, deleted_message(item.ref.key))
    running = images_of(obj.get("spec", {}).get("template", {}))
    if running != item.expected_images:
        return Progress(RolloutPhase.FAILED, edited_message(item.ref.key, running))
    if item.watched_only or crash_restarts < 0:
        return None
    kind = kind_of(item.ref)
    revision = kind.new_revision(obj, kind.owned(obj, revisions))
    if revision is None:
        return None  # written anew since (someone's edit): the next wait judges that, not this one
    for pod in sorted(pods_of_revision(revision, pods), key=lambda p: p["metadata"]["name"]):
        doom = pod_doom(pod, crash_restarts=crash_restarts)
        if doom is not None:
            message = f"{item.ref.key}: {doom.describe()} (after its rollout completed)"
            return Progress(RolloutPhase.FAILED, message, item.verdict.revision if item.verdict else 0)
    return None


def wait_for(
    cache: NamespaceCache,
    items: list[Watched],
    *,
    fail_fast: bool,
    crash_restarts: int,
    stop_on_failure: bool,
    cancel: threading.Event,
    out: Callable[[str], None],
) -> None:
    """Block until every item has a final verdict (or the first failure, or a cancel request)."""
    while True:
        now = time.monotonic()
        # One look at the cache per wake-up: every workload is judged against the same indexes.
        owners = {res: cache.owners(res) for res in {kind_of(i.ref).revisions for i in items}}
        pod_owners = cache.owners(PODS)
        pending = []
        late: Watched | None = None
        for item in items:
            kind = kind_of(item.ref)
            obj = cache.get(kind.resource, item.ref.name)
            revisions = owners[kind.revisions].candidates(obj) if obj is not None else []
            if item.verdict is not None:
                if item.rejudge and item.verdict.phase is RolloutPhase.COMPLETE:
                    pods = [p for r in revisions for p in pod_owners.children(r)]
                    failure = late_failure(
                        item, obj, revisions, pods, crash_restarts=crash_restarts if fail_fast else -1
                    )
                    if failure is not None:
                        item.verdict, late = failure, item
                        out(f"{item.ref.key}: {failure.phase.value}: {failure.message}")
                continue
            if not item.moved_at:
                item.moved_at = now
            pods = [p for r in revisions for p in pod_owners.children(r)]
            progress, source = judged(
                item, obj, revisions, pods, now=now, fail_fast=fail_fast, crash_restarts=crash_restarts
            )
            progress = held(item, progress, now=now)
            if (
                progress.phase is RolloutPhase.FAILED
                and source is Source.PLATFORM
                and obj is not None
                and kind.evidence_pending(obj, revisions, pods)
            ):
                item.evidence_until = item.evidence_until or now + EVIDENCE_GRACE
                if now < min(item.evidence_until, item.deadline):
                    pending.append(item)  # failed, by the platform's word; how, its pod says shortly
                    continue
            if not progress.done and progress.message != item.last_progress:
                item.last_progress, item.moved_at = progress.message, now  # it moved: the clock restarts
            line = f"{item.ref.key}: {progress.phase.value}: {progress.message}"
            if line != item.last_message:
                item.last_message = line
                out(line)
            if progress.done:
                item.verdict = progress
                if progress.phase is RolloutPhase.FAILED and stop_on_failure:
                    return
            else:
                pending.append(item)
        if late is not None and stop_on_failure:
            return
        if not pending or cancel.is_set():
            return
        # Every pending item's next deadline is after `now` (one past it was judged above), so this
        # sleeps until the next deadline, an event or a cancel; a little past the deadline, so that
        # it has passed when the item is judged again.
        cache.wait(max(min(i.next_deadline() for i in pending) - time.monotonic(), 0.0) + 0.05)
