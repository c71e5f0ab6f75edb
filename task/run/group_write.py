"""The writes of a run: one guarded write per workload, all started at once, and what to watch after.

`GroupRun` (`rollguard.run.group`) owns a `GroupWrite`, which carries out every change a run makes to a
workload (its rollout's, a repair's, its revert's). The contract:

- `GroupWrite.write` is one PUT with a resourceVersion precondition; on a conflict it re-reads and
  retries. With ``guard_spec`` someone else's spec edit since preflight fails the write instead of being
  overwritten (the user's edit wins); changes the run itself caused through the platform (a promotion's
  triggers) do not count as theirs (the run's ``as_if_untriggered``, which `Rollout` and `Repair`
  override). A scale (an HPA, `oc scale`: only ``spec.replicas``) is not an edit: the write goes over
  the new count and keeps it, and the plan's ``replicas_meant`` lets the report note it
  (`Kind.scale_note`). A retried PUT whose first answer was lost is recognised as landed, not written
  twice.
- Every template sent, and every one written back, goes to the run's ``ours``: the revert tells the
  run's own writes from someone else's edit by it, and a write whose answer was lost may have landed.
- A workload deleted under the run is marked so in the journal (`GroupWrite.deleted`): reported, with
  nothing to revert.
- `each_at_once` starts the writes of a group concurrently, so a group of N costs about one round trip
  before the last workload starts rolling, not N; `watched_after` says what to wait for after a write.

It sees its run only through `WritingRun`, so this module imports nothing of `rollguard.run.group` (nor of
`rollguard.run.group_revert`, which writes through the run), and the skeleton and its writes can be read
apart.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Protocol, TypeVar

from rollguard.cluster.api import Api
from rollguard.cluster.cache import NamespaceCache
from rollguard.cluster.journal import Journal, now
from rollguard.core.errors import Conflict, NotFound, RollguardError, RolloutFailed, WorkloadDeleted
from rollguard.core.structs import EntryPhase, Obj
from rollguard.kinds import images_of
from rollguard.kinds.causes import RunMark, with_mark
from rollguard.kinds.templates import as_admitted, canonical
from rollguard.plan.rollout_read import WorkloadPlan
from rollguard.run.wait import Watched, deleted_message

# Slack past a deadline rollguard waits on besides the platform's own, so that the platform's verdict
# (and the pod that says why) arrives before rollguard gives up on its own clock.
SETTLE_SECONDS = 5
# Concurrent workload writes: a group of up to this many is written in one round trip. A slow write (a
# DeploymentConfig's goes through admission, webhooks included) then never waits for a slot behind others.
# The API server's own limits (--max-mutating-requests-inflight, 200 by default) sit far above this.
WRITERS = 48
T = TypeVar("T")


class WritingRun(Protocol):
    """What the writes use of their run (`rollguard.run.group.GroupRun` is one)."""

    client: Api  # fenced by the group lock: a run that lost its group writes nothing
    namespace: str
    run_id: str
    command: str
    journal: Journal
    cache: NamespaceCache | None
    ours: dict[str, list[Obj]]  # the templates this run sent to (or got back from) each workload

    def live(self, plan: WorkloadPlan) -> Obj: ...

    def revisions(self, plan: WorkloadPlan, obj: Obj) -> list[Obj]: ...

    def as_if_untriggered(self, plan: WorkloadPlan, live: Obj) -> Obj: ...


class GroupWrite:
    """The writes of one run to its workloads."""

    def __init__(self, run: WritingRun) -> None:
        self.run = run

    def write(
        self,
        plan: WorkloadPlan,
        make_body: Callable[[Obj], Obj],
        *,
        guard_spec: bool,
        reverting: bool = False,
    ) -> Obj:
        """One PUT with a resourceVersion precondition; on conflict re-read and retry.

        With ``guard_spec`` a conflict caused by someone else's spec edit fails instead of overwriting it.
        A write that starts a new revision carries the run's change-cause (`mark`); ``reverting``: the
        run's own revert after its failure (the change-cause says so).
        """
        run = self.run
        kind, name = plan.kind, plan.snapshot.ref.name
        current = run.live(plan)
        same, edit = kind.comparable_spec, kind.edit_spec  # a scale (HPA, oc scale) is not an edit
        plan.replicas_meant = kind.replicas(make_body(plan.snapshot.raw))
        if guard_spec and edit(run.as_if_untriggered(plan, current)) != edit(plan.snapshot.raw):
            # The cache already holds someone else's edit: writing on top of it would pass the
            # resourceVersion precondition and silently undo that edit.
            raise RolloutFailed(
                f"{plan.key} was changed by someone else since preflight; not overwriting it",
                workload=plan.key,
            )
        for _ in range(8):
            # a rollout its triggers would not start is asked for in the same write (Kind.start_request)
            revisions = run.revisions(plan, current)
            body = kind.with_start_request(current, make_body(current), revisions)
            body = self.mark(plan, current, body, revisions, reverting=reverting)
            try:
                run.ours.setdefault(plan.key, []).append(canonical(body.get("spec", {}).get("template", {})))
                written = run.client.replace(kind.resource, body, namespace=run.namespace)
                return self._wrote(plan, written)
            except NotFound:
                raise self.deleted(plan) from None
            except Conflict:
                try:
                    fresh = run.client.get(kind.resource, name, namespace=run.namespace)
                except NotFound:
                    raise self.deleted(plan) from None
                if same(as_admitted(make_body(fresh), fresh)) == same(fresh):
                    # Our change is in already: a retried PUT whose first answer was lost had landed
                    # (the image policy admission's rewrite of a local name is what the API stores of it).
                    return self._wrote(plan, fresh)
                if guard_spec and edit(run.as_if_untriggered(plan, fresh)) != edit(plan.snapshot.raw):
                    raise RolloutFailed(
                        f"{plan.key} was changed by someone else since preflight; not overwriting it",
                        workload=plan.key,
                    ) from None
                current = fresh
        raise RolloutFailed(f"{plan.key}: too many write conflicts", workload=plan.key)

    def create(self, plan: WorkloadPlan, body: Obj) -> Obj:
        """POST a workload the run brings (given by manifest, absent in preflight); the journal already
        says it is to be created, so a run killed after this deletes it on its revert."""
        run = self.run
        plan.replicas_meant = plan.kind.replicas(body)
        body = self.mark(plan, {}, body, [])
        try:
            written = run.client.create(plan.kind.resource, body, namespace=run.namespace)
        except Conflict as exc:  # 409 AlreadyExists: someone created it since preflight
            raise RolloutFailed(
                f"{plan.key} was created by someone else since preflight; not overwriting it",
                workload=plan.key,
            ) from exc
        return self._wrote(plan, written)

    def mark(
        self, plan: WorkloadPlan, current: Obj, body: Obj, revisions: list[Obj], *, reverting: bool = False
    ) -> Obj:
        """``body`` with the run's change-cause when writing it over ``current`` starts a new revision
        (`rollguard.kinds.causes`: the revision history then names the run even if it is killed before its
        journal says more); unchanged when it starts none, so no later revision takes the run's name."""
        number = plan.kind.next_revision(current, body, revisions)
        if number is None:
            return body
        run = self.run
        return with_mark(
            body, RunMark(command=run.command, run_id=run.run_id, revision=number, reverting=reverting)
        )

    def _wrote(self, plan: WorkloadPlan, written: Obj) -> Obj:
        run = self.run
        if run.cache is not None:
            run.cache.put(plan.kind.resource, written)
        run.ours.setdefault(plan.key, []).append(canonical(written.get("spec", {}).get("template", {})))
        return written

    def deleted(self, plan: WorkloadPlan) -> WorkloadDeleted:
        """Mark a workload someone else deleted during the run: reported as such, nothing to revert."""
        entry = self.run.journal.workloads.get(plan.key)
        message = deleted_message(plan.key)
        if entry is not None:
            entry.phase, entry.note = EntryPhase.DELETED, message
        return WorkloadDeleted(message, workload=plan.key)


def watched_after(plan: WorkloadPlan, written: Obj, *, timeout: int) -> Watched:
    """What to wait for after writing ``written``: its images, by --timeout, and never stalled for
    longer than its own (no-progress) deadline, as the platform judges it."""
    own = plan.kind.deadline(written)
    return Watched(
        ref=plan.snapshot.ref,
        expected_images=images_of(written["spec"]["template"]),
        deadline=time.monotonic() + timeout,
        deadline_reason=f"not complete within --timeout {timeout}s",
        stall_seconds=own + SETTLE_SECONDS,
        stall_reason=f"no progress within its own deadline of {own}s",
        since=now(),
    )


def each_at_once(plans: list[WorkloadPlan], work: Callable[[WorkloadPlan], T]) -> list[T | RollguardError]:
    """``work`` for every plan concurrently, results in order (errors as values).

    A group of N then costs about one round trip before the last workload starts rolling, not N.
    """
    with ThreadPoolExecutor(max_workers=max(1, min(WRITERS, len(plans)))) as pool:
        futures = [pool.submit(work, wp) for wp in plans]
    results: list[T | RollguardError] = []
    for future in futures:
        try:
            results.append(future.result())
        except RollguardError as exc:
            results.append(exc)
    return results
