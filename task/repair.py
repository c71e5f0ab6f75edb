"""The repair operations: `resume`, `revert`, `redeploy` of workloads or a whole rollout group.

The CLI and the TUI (in a worker thread, with ``out`` as its progress callback) call the same
functions. Each one: preflight (`rollguard.repair_plan`, exit 2 and no change on any problem), the group's
lock when the workloads are in a group, one write per workload, an Event on each, the same parallel
watch as the rollout, and the journal updated. A repair that fails returns what it changed to the
last verified state (exit 1), like a failed rollout; exit 3 when even that cannot be verified.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable

from rollguard.audit import emit
from rollguard.client import Api
from rollguard.errors import ApiError, RefusedError, RollguardError, RolloutFailed
from rollguard.group import GroupRun, actor
from rollguard.journal import Journal, WorkloadEntry, now
from rollguard.repair_plan import ACTIONS, Change, RepairPlan, permissions, plan_repair
from rollguard.report import Outcome
from rollguard.structs import Phase, RunState, Status, WorkloadPhase
from rollguard.watch import Watched, wait_for

__all__ = ["ACTIONS", "Change", "Repair", "RepairPlan", "permissions", "plan_repair"]

EVENT_REASONS = {"resume": "RollguardResume", "revert": "RollguardRevert", "redeploy": "RollguardRedeploy"}
DONE = {
    "resume": WorkloadPhase.RESUMED,
    "revert": WorkloadPhase.REVERTED,
    "redeploy": WorkloadPhase.REDEPLOYED,
}
_RUN_FIELDS = ("run_id", "command", "actor", "state", "started", "error", "errors")


class Repair(GroupRun):
    """Carries out a `RepairPlan` (the journal and lock only when the workloads are in a group)."""

    def __init__(
        self,
        client: Api,
        plan: RepairPlan,
        *,
        timeout: int,
        out: Callable[[str], None],
        cancel: threading.Event | None = None,
    ) -> None:
        super().__init__(client, namespace=plan.namespace, selector=plan.selector, out=out, cancel=cancel)
        self.command = plan.action
        self.plan = plan
        self.timeout = timeout
        self.prior: dict[str, object] = {}

    def save(self) -> None:
        if self.plan.grouped:
            super().save()

    def execute(self) -> Outcome:
        plan = self.plan
        outcome = Outcome(
            status=Status.REFUSED,
            command=plan.action,
            namespace=plan.namespace,
            selector=plan.selector,
            run_id=self.run_id,
            journal=self.store.name if plan.grouped else "",
        )
        try:
            if plan.grouped:
                self.lock.acquire()
        except RefusedError as exc:
            outcome.error = str(exc)
            return outcome
        try:
            outcome.status = self._run()
        finally:
            if self.cache is not None:
                self.cache.stop()
            if plan.grouped:
                try:
                    self.lock.release()
                except ApiError as exc:
                    self.errors.append(f"could not release the lock: {exc}")
        outcome.error, outcome.errors = self.first_error, list(self.errors)
        outcome.workloads = [self.result(plan.workloads, wp) for wp in plan.workloads.workloads]
        return outcome

    def _begin(self) -> bool:
        plan = self.plan
        if plan.grouped:
            try:
                self.journal = self.store.load() or Journal(namespace=plan.namespace, selector=plan.selector)
            except ApiError as exc:
                self.fail(f"could not read the journal {self.store.name}: {exc}")
                return False
        self.prior = {name: getattr(self.journal, name) for name in _RUN_FIELDS}
        j = self.journal
        j.run_id, j.command, j.actor, j.state, j.started, j.error, j.errors = (
            self.run_id, plan.action, actor(), RunState.REPAIRING, now(), "", [],
        )  # fmt: skip
        for change, wp in zip(plan.changes, plan.workloads.workloads, strict=True):
            entry = j.workloads.get(wp.key) or WorkloadEntry(
                kind=wp.snapshot.ref.kind, name=wp.snapshot.ref.name, verified=wp.baseline
            )
            entry.target_images, entry.phase, entry.note = (
                dict(change.images_after),
                WorkloadPhase.PENDING,
                "",
            )
            j.workloads[wp.key] = entry
        try:
            self.save()  # before the first change: a repair killed mid-way shows as half-rolled
        except ApiError as exc:
            self.fail(f"could not write the journal {self.store.name}: {exc}")
            return False
        return True

    def _run(self) -> Status:
        plan = self.plan
        what = ", ".join(c.key for c in plan.changes)
        self.say(f"run {self.run_id}: {plan.action} {what} in {plan.namespace}")
        if not self._begin():
            return Status.REFUSED
        cache = self.start_cache(plan.workloads)
        watched: list[Watched] = []
        try:
            for change, wp in zip(plan.changes, plan.workloads.workloads, strict=True):
                self.check_cancel()
                entry = self.journal.workloads[wp.key]
                if not change.changed:
                    entry.phase = WorkloadPhase.UNCHANGED
                    self.say(f"{wp.key}: nothing to {plan.action}")
                    obj = self.live(wp)
                    revisions = self.revisions(wp, obj)
                    if wp.kind.progress(obj, revisions).phase in (Phase.PROGRESSING, Phase.PENDING):
                        # Already as wanted but still rolling out (e.g. a revert an earlier run
                        # wrote and never saw finish): verify it too, or success would be claimed unseen.
                        # An old failure it did not touch (dc2 of the reference case on resume) is not
                        # this repair's result: it stays a finding for revert or redeploy.
                        watched.append(self.watched(wp, obj, self.timeout))
                    continue
                written = self.write(wp, functools.partial(plan.body, wp.key), guard_spec=True)
                entry.phase = WorkloadPhase.APPLIED
                self._try_save()
                self._audit(change, written)
                watched.append(self.watched(wp, written, self.timeout))
                self.say(f"{wp.key}: {'; '.join(change.diff()[1:]) or plan.action}")
            wait_for(
                cache,
                watched,
                fail_fast=True,
                crash_restarts=2,
                stop_on_failure=True,
                cancel=self.cancel,
                out=self.say,
            )
            self.check_cancel()
            for item in watched:
                verdict = item.verdict
                if verdict is None or verdict.phase is not Phase.COMPLETE:
                    message = verdict.message if verdict else f"{item.ref.key}: no verdict"
                    self.journal.workloads[item.ref.key].phase = WorkloadPhase.FAILED
                    self.journal.workloads[item.ref.key].note = message
                    raise RolloutFailed(message, workload=item.ref.key)
                entry = self.journal.workloads[item.ref.key]
                entry.phase, entry.revision_after = DONE[plan.action], verdict.revision
        except (RollguardError, TimeoutError) as exc:
            self.fail(str(exc))
            return self._fail_and_revert()
        return self._succeed()

    def _audit(self, change: Change, written: dict[str, object]) -> None:
        target = f" to revision {change.target_revision}" if change.target_revision is not None else ""
        images = "; ".join(
            f"{c}: {change.images_before.get(c)} -> {i}"
            for c, i in sorted(change.images_after.items())
            if change.images_before.get(c) != i
        )
        message = (
            f"rollguard {change.action} by {actor()} (run {self.run_id}): {change.key}{target}"
            + (f"; {images}" if images else "")
            + ("; resumed" if change.paused_before and not change.paused_after else "")
            + "".join(f"; {note}" for note in change.notes)
        )
        try:
            emit(self.client, change.ref, written, reason=EVENT_REASONS[change.action], message=message)
        except ApiError as exc:  # the repair stands; the missing record is reported
            self.errors.append(f"could not record an Event on {change.key}: {exc}")

    def _finish(self, state: RunState) -> None:
        """End the journal's run: a repair of part of a half-rolled group leaves its earlier run open."""
        prior_final = RunState.read(self.prior.get("state", RunState.NEW)).final
        if state is RunState.INCONSISTENT:
            self.journal.state = state
        elif self.plan.whole_group or prior_final:
            self.journal.close_run(state)
        else:
            self.journal.close_run(state)  # recorded in the history ...
            for name, value in self.prior.items():  # ... but the group stays as half-rolled as it was
                setattr(self.journal, name, value)
        self._try_save()

    def _succeed(self) -> Status:
        assert self.cache is not None
        templates = dict(self.journal.last_success.get("templates") or {})
        for wp in self.plan.workloads.workloads:
            obj = self.live(wp)
            entry = self.journal.workloads[wp.key]
            entry.verified = wp.kind.verified_state(obj, self.revisions(wp, obj))
            templates[wp.key] = entry.verified.template
        if self.plan.whole_group or self.journal.last_success:
            self.journal.last_success = {"run_id": self.run_id, "finished": now(), "templates": templates}
        self._finish(RunState.REPAIRED)
        self.say(f"{self.plan.action} succeeded: {len(self.plan.changes)} workloads verified")
        return Status.SUCCEEDED

    def _fail_and_revert(self) -> Status:
        self.say("repair failed: returning what it changed to the last verified state")
        try:
            ok = self.revert(self.plan.workloads, timeout=self.timeout)
        except (RollguardError, TimeoutError) as exc:
            self.fail(f"revert failed: {exc}")
            ok = False
        self._finish(RunState.REVERTED if ok else RunState.INCONSISTENT)
        if ok:
            self.say(f"reverted: back on the last verified state; cause: {self.first_error}")
            return Status.REVERTED
        self.say(
            "INCONSISTENT: the revert could not be verified"
            + (f"; see journal {self.store.name}" if self.plan.grouped else "")
        )
        return Status.INCONSISTENT
