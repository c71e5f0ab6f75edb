"""The repair planner's data (pure, no I/O): a repair's checked arguments, what its preflight read, and
the plan it made.

`RepairRequest` is what `rollguard.plan.repair_decide.repair_request` returns; `RepairRead` is what
`rollguard.plan.repair_read.read_repair` gathers; `RepairPlan` (a `Change` per workload) is what
`rollguard.plan.repair_decide.decide_repair` decides and `rollguard.run.repair.Repair` carries out. They live apart
from the decisions so the engine, the CLI and the TUI share one definition of a repair: the diff
`--dry-run` prints, the report's planned results and the body each write sends all come from here.
"""

from __future__ import annotations

import copy
import datetime as dt
from dataclasses import dataclass, field

from rollguard.cluster.access import Answer
from rollguard.cluster.lock import LeaseView
from rollguard.core.errors import Forbidden
from rollguard.core.report import WorkloadResult
from rollguard.core.structs import Obj, VerifiedState, WorkloadOutcome, WorkloadRef
from rollguard.kinds.causes import REDEPLOYED_AT
from rollguard.kinds.triggers import Streams
from rollguard.plan import merge
from rollguard.plan.rollout_decide import Found, GroupListing, Plan
from rollguard.state.model import Group

ACTIONS = ("resume", "revert", "redeploy")


@dataclass(frozen=True)
class RepairRequest:
    """A repair's arguments, checked: what to do, where, and to which workloads (or which group)."""

    action: str
    namespace: str
    refs: tuple[WorkloadRef, ...] = ()
    selector: str | None = None  # -l SELECTOR: the whole group
    to_revision: int | None = None
    allow_failed: bool = False  # --allow-failed: a --to-revision that failed or was cancelled is accepted


@dataclass(frozen=True)
class Change:
    """What one repair does to one workload: images and paused before and after (and DC triggers)."""

    ref: WorkloadRef
    namespace: str
    action: str
    images_before: dict[str, str]  # the template's images now
    images_running: dict[str, str]  # what its last complete revision runs (differs while un-rolled)
    images_after: dict[str, str]
    paused_before: bool
    paused_after: bool
    revision_before: int
    target_revision: int | None  # revert: the revision whose template comes back
    triggers_before: tuple[str, ...]
    triggers_after: tuple[str, ...]
    changed: bool  # False: already as wanted, nothing is written
    notes: tuple[str, ...] = ()
    delete: bool = False  # revert of a workload an unfinished `rollout -f` created: it is deleted

    @property
    def key(self) -> str:
        return self.ref.key

    def diff(self) -> list[str]:
        """The change as diff lines: ``-`` before, ``+`` after, two spaces unchanged."""
        head = f"{self.namespace}/{self.key}: {self.action}"
        if self.target_revision is not None:
            head += f" to revision {self.target_revision}"
        lines = [head + ("" if self.changed else " (no change)")]
        if self.delete:
            return [f"{self.namespace}/{self.key}: {self.action}: delete it", *(f"# {n}" for n in self.notes)]
        for container in sorted(set(self.images_before) | set(self.images_after)):
            before, after = (
                self.images_before.get(container, "(none)"),
                self.images_after.get(container, "(none)"),
            )
            running = self.images_running.get(container)
            note = f"   (running: {running})" if running and running != before else ""
            lines += _pair(f"image {container}: ", before + note, after)
        lines += _pair("paused: ", str(self.paused_before).lower(), str(self.paused_after).lower())
        if self.triggers_before or self.triggers_after:
            for before_t, after_t in zip(self.triggers_before, self.triggers_after, strict=False):
                lines += _pair("trigger: ", before_t, after_t)
        if self.action == "redeploy":
            lines.append(f"+ template annotation {REDEPLOYED_AT}: a new rollout of the current template")
        lines += [f"# {note}" for note in self.notes]
        return lines


def _pair(label: str, before: str, after: str) -> list[str]:
    return [f"  {label}{before}"] if before == after else [f"- {label}{before}", f"+ {label}{after}"]


@dataclass
class RepairPlan:
    """Everything a repair will do, as data (nothing is changed by making it)."""

    action: str
    namespace: str
    selector: str  # the rollout group's selector ("" when the workloads are in no group)
    whole_group: bool
    group: Group | None
    changes: list[Change]
    run_plan: Plan  # the engine's view: snapshots, baselines (a failed repair returns there), revisions
    targets: dict[str, VerifiedState] = field(default_factory=dict)  # revert: key -> state to restore
    manual_triggers: dict[str, set[str]] = field(default_factory=dict)  # key -> containers to set manual
    stamp: str = ""  # redeploy: the annotation value (the same on every retry)
    restores: dict[str, Obj] = field(default_factory=dict)  # revert: key -> the journal's restore record

    @property
    def grouped(self) -> bool:
        return bool(self.selector)

    def diff(self) -> list[str]:
        lines: list[str] = []
        for change in self.changes:
            lines += change.diff()
        return lines

    def planned_results(self) -> list[WorkloadResult]:
        """``--dry-run``'s report: per workload what it runs now and what the repair would set."""
        return [
            WorkloadResult(
                kind=c.ref.kind,
                name=c.ref.name,
                revision_before=c.revision_before,
                revision_after=c.revision_before,  # nothing was rolled out
                images_before=dict(c.images_before),
                images_after={} if c.delete else dict(c.images_after),
                outcome=WorkloadOutcome.PLANNED if c.changed else WorkloadOutcome.UNCHANGED,
                paused=c.paused_after,
                paused_before=c.paused_before,
                notes=[
                    *(["would be deleted"] if c.delete else []),
                    *([f"to revision {c.target_revision}"] if c.target_revision is not None else []),
                    *c.notes,
                ],
            )
            for c in self.changes
        ]

    def body(self, key: str, obj: Obj) -> Obj:
        """The repaired version of the workload ``obj`` (the current one, so retries after a conflict work)."""
        wp = next(w for w in self.run_plan.workloads if w.key == key)
        if self.action == "revert":
            # what an unfinished rollout -f changed besides the template (labels, annotations, spec fields)
            body = wp.kind.with_state(merge.restored(obj, self.restores.get(key) or {}), self.targets[key])
        else:
            body = copy.deepcopy(obj)
            body["spec"]["paused"] = False
            if self.action == "redeploy":
                meta = body["spec"]["template"].setdefault("metadata", {})
                meta["annotations"] = {**(meta.get("annotations") or {}), REDEPLOYED_AT: self.stamp}
        body = wp.kind.with_manual_triggers(body, self.manual_triggers.get(key, set()))
        if "paused" not in obj.get("spec", {}) and body["spec"].get("paused") is False:
            body["spec"].pop("paused")  # absent means not paused: leave the object as it was
        return body


@dataclass(frozen=True)
class RepairRead:
    """Everything a repair's preflight decides on, as read (pure data; None: not read yet)."""

    request: RepairRequest
    now: dt.datetime
    namespace_found: bool = True
    listing: GroupListing | None = None  # -l SELECTOR: the group's workloads
    access: list[Answer] | None = None
    groups: list[Group] | None = None  # the namespace's rollout groups
    groups_forbidden: Forbidden | None = None
    missing: WorkloadRef | None = None  # a named target that does not exist
    found: list[Found] | None = None  # the workloads to repair, with their revisions
    members: GroupListing | None = None  # named targets: every workload of their group
    leases: dict[str, LeaseView | None] = field(default_factory=dict)  # the locks that matter, by name
    lease_objects: tuple[Obj, ...] = ()  # the namespace's Leases as listed: the workloads' claims
    streams: Streams = field(default_factory=lambda: Streams(found={}))
