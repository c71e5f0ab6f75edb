"""The repair operations: `resume`, `revert`, `redeploy` of workloads or a whole rollout group.

`rollguard.plan.repair_read.plan_repair` makes the plan (read-only; exit 2 and no change on any problem),
which the CLI prints for ``--dry-run`` and the TUI shows for confirmation; both then carry out that very
plan with `Repair(...).execute()` (the TUI in a worker thread, with ``out`` as its progress callback).
`Repair` fills in the `rollguard.run.group.GroupRun` skeleton: the group's lock and journal when the
workloads are in a group (else a Lease of its own and no journal), claims on every workload it
touches (so a rollout or repair overlapping it is refused, naming it), one write per workload in order, each journaled and recorded as an Event,
the same parallel watch as the rollout. A repair that fails returns what it touched to the last
verified state (exit 1), like a failed rollout; exit 3 when even that cannot be verified. A repair of
part of a half-rolled group is recorded in the history but leaves the group's earlier run open.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Collection

from rollguard.cluster.api import Api
from rollguard.cluster.cache import NamespaceCache
from rollguard.cluster.journal import Journal, WorkloadEntry, group_name
from rollguard.cluster.lock import LEASE_SECONDS
from rollguard.core.errors import ApiError, RolloutFailed
from rollguard.core.structs import EntryPhase, Obj, RolloutPhase, RunState
from rollguard.plan.repair_read import Change, RepairPlan
from rollguard.plan.rollout_read import Plan, WorkloadPlan
from rollguard.plan.tags import without_promotion_effects
from rollguard.run.events import emit
from rollguard.run.group import GroupRun, actor
from rollguard.run.group_write import watched_after
from rollguard.run.promote import RESTORE_WAIT, restore_tags, wait_restored
from rollguard.run.wait import Watched

EVENT_REASONS = {"resume": "RollguardResume", "revert": "RollguardRevert", "redeploy": "RollguardRedeploy"}
DONE = {
    "resume": EntryPhase.RESUMED,
    "revert": EntryPhase.REVERTED,
    "redeploy": EntryPhase.REDEPLOYED,
}
_RUN_FIELDS = ("run_id", "command", "actor", "state", "started", "error", "errors")


def repair_lease_name(plan: RepairPlan) -> str:
    """The Lease a repair of workloads in no group holds while it runs (its claims live while it does):
    one per set of workloads, so two repairs of the same ones meet on it (the second refused, naming
    the first), and claims decide between overlapping sets."""
    return group_name("repair " + ",".join(sorted(c.key for c in plan.changes)))  # rollguard-repair-...


class Repair(GroupRun):
    """Carries out a `RepairPlan` in the `GroupRun` skeleton (lock and journal only when ``plan.grouped``)."""

    def __init__(
        self,
        client: Api,
        plan: RepairPlan,
        *,
        timeout: int,
        out: Callable[[str], None],
        cancel: threading.Event | None = None,
        lease_seconds: int = LEASE_SECONDS,
    ) -> None:
        super().__init__(
            client,
            namespace=plan.namespace,
            selector=plan.selector,
            timeout=timeout,
            out=out,
            cancel=cancel,
            lease_seconds=lease_seconds,
            lock_name="" if plan.grouped else repair_lease_name(plan),
        )
        self.command = plan.action
        self.grouped = plan.grouped
        self.done_phase = DONE[plan.action]
        self.success_state = RunState.REPAIRED
        self.plan = plan
        self.prior: dict[str, object] = {}
        self.tags_restored = False

    def prepare(self) -> Plan:
        return self.plan.run_plan  # planned already: the CLI and the TUI show the plan first

    def begin(self, plan: Plan) -> None:
        what = ", ".join(c.key for c in self.plan.changes)
        self.say(f"run {self.run_id}: {self.command} {what} in {self.namespace}")
        if self.grouped:
            self.journal = self.store.load() or Journal(namespace=self.namespace, selector=self.selector)
        self.prior = {name: getattr(self.journal, name) for name in _RUN_FIELDS}
        self.journal.open_run(
            run_id=self.run_id, command=self.command, actor=actor(), state=RunState.REPAIRING
        )
        for change, wp in zip(self.plan.changes, plan.workloads, strict=True):
            entry = self.journal.workloads.get(wp.key) or WorkloadEntry(
                kind=wp.snapshot.ref.kind, name=wp.snapshot.ref.name, verified=wp.baseline
            )
            entry.target_images, entry.phase, entry.note = (
                dict(change.images_after),
                EntryPhase.PENDING,
                "",
            )
            self.journal.workloads[wp.key] = entry

    def change(self, plan: Plan, cache: NamespaceCache) -> list[Watched]:
        """One write per workload, in order, each journaled and recorded as an Event.

        A revert of a group whose unfinished rollout promoted tags puts those tags back first (they are
        journaled before the copy): otherwise the workloads' automatic triggers would follow them again.
        """
        if self.command == "revert" and self.grouped and self.journal.tags:
            errors = restore_tags(self.client, namespace=self.namespace, tags=self.journal.tags)
            for line in errors:
                self.fail(line)
            if errors:
                raise RolloutFailed(errors[0], workload="imagestreams")
            self.say(f"imagestreams: tags {', '.join(sorted(self.journal.tags))} restored")
            # the plan judged the triggers against the tags as restored: write once the streams say so
            left = wait_restored(
                self.client, namespace=self.namespace, tags=self.journal.tags, seconds=RESTORE_WAIT,
                stopped=self.abort.is_set,
            )  # fmt: skip
            if left:
                self.say(f"imagestreams: {', '.join(left)} not back on their earlier images within "
                         f"{RESTORE_WAIT:.0f}s; the workloads are written and verified all the same")  # fmt: skip
            self.journal.tags = {}
            self.try_save()
            self.tags_restored = True
        watched: list[Watched] = []
        for change, wp in zip(self.plan.changes, plan.workloads, strict=True):
            self.check_cancel()
            entry = self.journal.workloads[wp.key]
            if not change.changed:
                entry.phase = EntryPhase.UNCHANGED
                self.say(f"{wp.key}: nothing to {self.command}")
                obj = self.live(wp)
                if wp.kind.progress(obj, self.revisions(wp, obj)).phase in (
                    RolloutPhase.PROGRESSING,
                    RolloutPhase.PENDING,
                ):
                    # Already as wanted but still rolling out (e.g. a revert an earlier run
                    # wrote and never saw finish): verify it too, or success would be claimed unseen.
                    # An old failure it did not touch (dc2 of the reference case on resume) is not
                    # this repair's result: it stays a finding for revert or redeploy.
                    watched.append(watched_after(wp, obj, timeout=self.timeout))
                continue
            if change.delete:  # created by an unfinished rollout -f: its verified state is absence
                self.remove([wp])
                self.wait_removed([wp])
                self.try_save()
                if entry.phase is EntryPhase.ERROR:
                    raise RolloutFailed(f"{wp.key}: {entry.note or 'could not delete it'}", workload=wp.key)
                continue
            written = self.write(wp, functools.partial(self.plan.body, wp.key), guard_spec=True)
            entry.phase = EntryPhase.APPLIED
            self.try_save()
            self._audit(change, written)
            watched.append(watched_after(wp, written, timeout=self.timeout))
            self.say(f"{wp.key}: {'; '.join(change.diff()[1:]) or self.command}")
        return watched

    def as_if_untriggered(self, plan: WorkloadPlan, live: Obj) -> Obj:
        """After the tags went back, the triggers following them may rewrite a workload to the very
        images this revert restores: that is the revert's own doing, not someone else's edit."""
        if not self.tags_restored:
            return live
        change = next((c for c in self.plan.changes if c.key == plan.key), None)
        return (
            without_promotion_effects(live, plan.snapshot.raw, dict(change.images_after)) if change else live
        )

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

    def record_success(self, templates: dict[str, Obj], *, verified: Collection[str] | None = None) -> None:
        """A repair of the whole group, or of a group that had a success, becomes its last success."""
        gone = {c.key for c in self.plan.changes if c.delete}  # deleted: nothing to measure drift against
        templates = {k: t for k, t in templates.items() if k not in gone}
        if self.plan.whole_group or self.journal.last_success:
            merged = {
                k: t for k, t in (self.journal.last_success.get("templates") or {}).items() if k not in gone
            }
            merged.update(templates)
            super().record_success(merged, verified=templates if verified is None else verified)

    def end_run(self, state: RunState) -> None:
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
        self.try_save()
