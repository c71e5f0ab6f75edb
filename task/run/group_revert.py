"""The revert of a failed run: every workload it touched back on the journal's last verified state.

`GroupRun` (`rollguard.run.group`) decides *when* a run reverts (its first failure, or SIGTERM); a
`GroupRevert` it owns carries the revert out, and `Repair` uses its deletions for a workload whose
verified state is absence. The contract:

- Only what the run changed is reverted: a workload this run wrote (or a killed run of its group left
  unverified, which this run finished) is written back to its verified state (template, triggers, and
  what a manifest changed); workloads the run (or a dead run it carries forward) created are deleted
  instead. Every write is started at once, then every one is watched until the platform says it
  completed: True only when all of them are verified. Every field a revert changes is said
  (``revert_changes``: env, resources, labels ..., not only images).
- A member the run never wrote is left as it is, even when it is not on its verified state (someone's
  hotfix before the run, one an earlier run recorded ``edited``): named (``left_as_set``, the report's
  ``members``) and watched until it is complete; one that is not healthy at the end leaves the revert
  unverified (``unhealthy_left``), since the group is then not known to be back on its previous state.
- The user's edit wins: a workload deleted, or changed by someone other than this run since preflight
  (or since this run's own write), is left as it is, its journal entry saying why (`left_alone`). An
  edit that is not the verified state itself leaves the group off its journal: its key goes to
  `edited_away` and the revert is not verified.
- An automatic trigger whose tag moved on since the verified state would undo the revert at once, so it
  is restored manual, with a note saying how to re-enable it (`keep_triggers_from_undoing`).
- The revert waits on the run's ``abort`` (SIGTERM grace over), not on ``cancel``: a cancel is what
  starts a revert, so only running out of grace may stop one.

It sees its run only through `RevertingRun`, a `WritingRun` with what a revert uses besides (the fenced
client, the journal, the live cache, the run's write and its error record), so this module imports
nothing of `rollguard.run.group` and the skeleton and its revert can be read apart; its writes start at once
through `rollguard.run.group_write.each_at_once`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import threading
import time
from collections.abc import Callable
from typing import Protocol

from rollguard.cluster.journal import now
from rollguard.cluster.streams import firing_now
from rollguard.core.errors import ApiError, NotFound, RollguardError, WorkloadDeleted
from rollguard.core.structs import EntryPhase, Obj, RolloutPhase, RunState
from rollguard.kinds import images_of
from rollguard.kinds.templates import canonical, field_changes, same_template
from rollguard.plan import merge
from rollguard.plan.rollout_read import Plan, WorkloadPlan
from rollguard.run.group_write import SETTLE_SECONDS, WritingRun, each_at_once
from rollguard.run.refusals import add_evidence
from rollguard.run.wait import Watched, edited_message, wait_for


class RevertingRun(WritingRun, Protocol):
    """What a revert uses of its run besides what its writes use (`rollguard.run.group.GroupRun` is one)."""

    run_id: str
    timeout: int
    crash_restarts: int
    members: list[str]
    abort: threading.Event
    stop_signal: str

    def write(
        self,
        plan: WorkloadPlan,
        make_body: Callable[[Obj], Obj],
        *,
        guard_spec: bool,
        reverting: bool = False,
    ) -> Obj: ...

    def deleted(self, plan: WorkloadPlan) -> WorkloadDeleted: ...

    def fail(self, message: str) -> None: ...

    def say(self, line: str) -> None: ...

    def try_save(self) -> None: ...


class GroupRevert:
    """The revert of one run, and the workloads it had to leave on someone else's edit."""

    def __init__(self, run: RevertingRun) -> None:
        self.run = run
        self.edited_away: list[str] = []  # left on someone else's edit that is not the verified state
        self.left_as_set: list[str] = []  # never written by this run, not on its verified state: left
        self.unhealthy_left: list[str] = []  # never written by this run, not healthy after the revert

    def ours(self, plan: WorkloadPlan) -> bool:
        """Whether this run wrote the workload (or finishes a killed run's change to it): only those are
        reverted. A member it merely watched, or left on someone else's edit, is not."""
        entry = self.run.journal.workloads.get(plan.key)
        return (
            entry is not None
            and entry.phase.touched
            and entry.phase not in (EntryPhase.EDITED, EntryPhase.DELETED)
        )

    def needs_revert(self, plan: WorkloadPlan) -> bool:
        run = self.run
        if plan.remove_on_revert:  # brought by this run (or a dead one): there until deleted
            return (
                run.cache is not None
                and run.cache.get(plan.kind.resource, plan.snapshot.ref.name) is not None
            )
        return self.ours(plan)

    def left_alone(self, plan: WorkloadPlan) -> bool:
        """True for a workload the revert must not write to, its journal entry saying why: deleted by
        someone else, or changed by someone else since this run's write (or, unwritten, since preflight).

        The user's edit wins: it is left as they set it. It leaves the group consistent with its journal
        only when it is the verified state itself; otherwise the key goes to `edited_away`.
        """
        run = self.run
        assert run.cache is not None
        entry = run.journal.workloads.get(plan.key)
        if entry is None:
            return False
        obj = run.cache.get(plan.kind.resource, plan.snapshot.ref.name)
        if obj is None:  # gone from the cache: ask the API, the cache may be behind
            try:
                obj = run.client.get(plan.kind.resource, plan.snapshot.ref.name, namespace=run.namespace)
            except NotFound:
                run.fail(str(run.deleted(plan)))
                return True
        live = obj.get("spec", {}).get("template", {})
        if canonical(live) in (canonical(plan.snapshot.template), *run.ours.get(plan.key, [])):
            return False
        entry.phase = EntryPhase.EDITED
        entry.note = f"{edited_message(plan.key, images_of(live))}; left as they set it (run {run.run_id})"
        run.fail(edited_message(plan.key, images_of(live)))
        if canonical(live) != canonical(plan.baseline.template):
            self.edited_away.append(plan.key)
        return True

    def revert(self, plan: Plan, timeout: int) -> bool:
        """Return every touched or drifted workload to its journal state; True when verified.

        Workloads someone else deleted or changed are left alone (`left_alone`); a change of theirs that
        is not the verified state leaves the group inconsistent with its journal: False. In order: the
        created workloads deleted (`remove`), every other revert started at once (`start_all`, `start`),
        all of them watched and judged (`judge_reverted`, `wait_removed`), then the members left as they
        are (`_judge_left`).
        """
        run = self.run
        assert run.cache is not None
        run.journal.state = RunState.REVERTING
        run.try_save()
        targets = [
            wp
            for wp in plan.workloads
            if not wp.remove_on_revert and not self.left_alone(wp) and self.needs_revert(wp)
        ]
        removed = [wp for wp in plan.workloads if wp.remove_on_revert and self.needs_revert(wp)]
        reverting = {wp.key for wp in targets}
        # the members a rollout watched but never wrote (`WorkloadPlan.observe`): left, named, judged
        others = [wp for wp in plan.workloads if wp.observe and wp.key not in reverting and self._left(wp)]
        self.remove(removed)
        watched = self.start_all(targets, timeout=timeout)
        run.try_save()
        wait_for(
            run.cache,
            watched,
            fail_fast=False,
            crash_restarts=0,
            stop_on_failure=False,
            cancel=run.abort,
            out=run.say,
        )
        add_evidence(run.client, run.namespace, watched)
        self.judge_reverted(watched)
        self.wait_removed(removed)
        self._judge_left(others)
        for key in self.edited_away:
            run.fail(f"{key} is left on someone else's edit, not on its last verified state")
        # An unverified revert or a failed write marks its entry ERROR; an edit not on the verified state
        # is not what the journal says either.
        return (
            not self.edited_away
            and not self.unhealthy_left
            and not any(e.phase is EntryPhase.ERROR for e in run.journal.workloads.values())
        )

    def start(self, wp: WorkloadPlan, *, timeout: int) -> Watched:
        """One workload's revert: its triggers kept from undoing it, the write back to its journal state
        (every field it changes said), and what to watch until the platform says it completed."""
        run = self.run
        run.journal.workloads[wp.key].phase = EntryPhase.REVERTING
        self.keep_triggers_from_undoing(wp)
        revert = _reverter(wp, run.journal.workloads[wp.key].restore)
        live = run.live(wp)
        start_note = wp.kind.start_request(live, revert(live), run.revisions(wp, live))
        wp.notes += [f"revert: {start_note}"] if start_note else []
        written = run.write(wp, revert, guard_spec=False, reverting=True)
        wp.revert_changes = field_changes(live, written)
        changes = "; ".join(wp.revert_changes) or "nothing (already there)"
        run.say(f"{wp.key}: reverting to revision {wp.baseline.revision}: {changes}")
        return Watched(
            ref=wp.snapshot.ref,
            expected_images=wp.baseline.images,
            deadline=time.monotonic() + timeout + SETTLE_SECONDS,
            deadline_reason="revert not complete after {waited}",
            since=now(),
        )

    def start_all(self, targets: list[WorkloadPlan], *, timeout: int) -> list[Watched]:
        """Every revert started at once (`start`); what to watch. A workload whose write failed is named
        and its entry marked ERROR; an unexpected error is raised once every write has ended."""
        run = self.run
        watched = []
        unexpected: list[RollguardError] = []
        starts = each_at_once(targets, lambda wp: self.start(wp, timeout=timeout))
        for wp, result in zip(targets, starts, strict=True):
            if isinstance(result, Watched):
                watched.append(result)
            elif isinstance(result, WorkloadDeleted):  # deleted as the revert went: nothing to restore
                run.fail(str(result))
            elif isinstance(result, ApiError):
                run.fail(f"revert of {wp.key} failed: {result}")
                run.journal.workloads[wp.key].phase = EntryPhase.ERROR
            else:
                run.journal.workloads[wp.key].phase = EntryPhase.ERROR
                unexpected.append(result)
        if unexpected:
            raise unexpected[0]
        return watched

    def judge_reverted(self, watched: list[Watched]) -> None:
        """Each watched revert's entry: REVERTED at the revision the platform completed, else ERROR with
        why (its verdict, or the signal that stopped the wait and what was last seen)."""
        run = self.run
        for item in watched:
            entry = run.journal.workloads[item.ref.key]
            if item.verdict is not None and item.verdict.phase is RolloutPhase.COMPLETE:
                entry.phase = EntryPhase.REVERTED
                entry.revision_after = item.verdict.revision
                continue
            entry.phase = EntryPhase.ERROR
            why = (
                item.verdict.message
                if item.verdict
                else f"stopped waiting after {run.stop_signal.split()[0]} ({item.waited(time.monotonic())} into "
                f"the revert); last seen: {item.last_message or 'nothing'}"
            )
            entry.note = why
            run.fail(f"revert of {item.ref.key} not verified: {why}")

    def _left(self, plan: WorkloadPlan) -> bool:
        """A member this run watched and never wrote, to be judged after the revert: named when it is
        not on its verified state (someone's edit before the run, or an earlier run's ``edited``), left
        as they set it. False for one deleted or edited during the run (already named as such)."""
        run = self.run
        entry = run.journal.workloads.get(plan.key)
        if entry is None or entry.phase in (EntryPhase.DELETED, EntryPhase.EDITED):
            return False
        template = run.live(plan).get("spec", {}).get("template", {})
        if not same_template(template, plan.baseline.template):
            images = images_of(template)
            entry.phase = EntryPhase.EDITED
            entry.note = f"changed by someone else, not by this run (runs {images}); left as they set it"
            self.left_as_set.append(plan.key)
            run.members.append(f"{plan.key} left as someone else set it (not changed by this run)")
            run.say(f"{plan.key}: left as someone else set it ({images}): this run did not change it")
        return True

    def _judge_left(self, plans: list[WorkloadPlan]) -> None:
        """Wait until the members left as they are complete (a hotfix still rolling out), fast on a crash
        loop; one that does not leaves the group not known to be back on its previous state."""
        run = self.run
        assert run.cache is not None
        watched = [
            Watched(
                ref=wp.snapshot.ref,
                expected_images=images_of(run.live(wp).get("spec", {}).get("template", {})),
                deadline=time.monotonic() + run.timeout + SETTLE_SECONDS,
                deadline_reason=f"not complete within {run.timeout}s",
            )
            for wp in plans
        ]
        wait_for(
            run.cache,
            watched,
            fail_fast=True,
            crash_restarts=run.crash_restarts,
            stop_on_failure=False,
            cancel=run.abort,
            out=run.say,
        )
        for item in watched:
            if item.verdict is not None and item.verdict.phase is RolloutPhase.COMPLETE:
                continue
            why = item.verdict.message if item.verdict else (item.last_message or "not judged")
            self.unhealthy_left.append(item.ref.key)
            run.fail(f"{item.ref.key}, not changed by this run and left as it is, is not healthy: {why}")

    def keep_triggers_from_undoing(self, wp: WorkloadPlan) -> None:
        """A restored automatic trigger whose tag moved on would undo the revert at once (the trigger
        controller rewrites the template, paused or not): restore it manual instead, and say so."""
        run = self.run
        restored = wp.kind.with_state(run.live(wp), wp.baseline)
        fire = firing_now(run.client, wp.kind, run.namespace, restored)
        if not fire or wp.baseline.triggers is None:
            return
        manual = wp.kind.with_manual_triggers(restored, set(fire))
        wp.baseline = dataclasses.replace(wp.baseline, triggers=wp.kind.triggers(manual))
        wp.notes += [
            f"revert: trigger of {c} set to manual: its tag now points at {ref}, which would undo the "
            f"revert (re-enable: oc set triggers {wp.key} --auto)"
            for c, ref in sorted(fire.items())
        ]

    def remove(self, plans: list[WorkloadPlan]) -> None:
        """Delete the workloads the run created (its revert); a 404 means gone already."""
        run = self.run

        def delete(wp: WorkloadPlan) -> None:
            run.journal.workloads[wp.key].phase = EntryPhase.REVERTING
            with contextlib.suppress(NotFound):
                run.client.delete(wp.kind.resource, wp.snapshot.ref.name, namespace=run.namespace)
            run.say(f"{wp.key}: deleting it (this run created it)")

        for wp, result in zip(plans, each_at_once(plans, delete), strict=True):
            if isinstance(result, RollguardError):
                run.fail(f"revert of {wp.key} failed: could not delete it: {result}")
                run.journal.workloads[wp.key].phase = EntryPhase.ERROR

    def wait_removed(self, plans: list[WorkloadPlan]) -> None:
        """Wait until every deleted workload is gone from the live view (its pods follow by garbage
        collection); one still there at the deadline or after SIGTERM is an unverified revert."""
        run = self.run
        assert run.cache is not None
        started = time.monotonic()
        deadline = started + run.timeout + SETTLE_SECONDS
        waiting = [wp for wp in plans if run.journal.workloads[wp.key].phase is not EntryPhase.ERROR]
        while waiting and not run.abort.is_set():
            waiting = [
                wp for wp in waiting if run.cache.get(wp.kind.resource, wp.snapshot.ref.name) is not None
            ]
            if not waiting or time.monotonic() >= deadline:
                break
            run.cache.wait(min(1.0, deadline - time.monotonic()))
        for wp in plans:
            entry = run.journal.workloads[wp.key]
            if entry.phase is EntryPhase.ERROR:
                continue
            if wp in waiting:
                still = f"still there {time.monotonic() - started:.0f}s after its deletion"
                entry.phase, entry.note = EntryPhase.ERROR, still
                run.fail(f"revert of {wp.key} not verified: it is {still}")
            else:
                entry.phase = EntryPhase.REVERTED


def _reverter(wp: WorkloadPlan, restore: Obj) -> Callable[[Obj], Obj]:
    """Back to the journal's state: the verified template (and triggers), and the labels, annotations and
    spec fields a manifest changed (``restore``)."""

    def revert(obj: Obj) -> Obj:
        return wp.kind.with_state(merge.restored(obj, restore), wp.baseline)

    return revert
