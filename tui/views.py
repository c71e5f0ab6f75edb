"""What the TUI shows, as plain frozen dataclasses, and pure formatting helpers.

Screens and widgets only see these types; `rollguard.tui.data` builds them from the task package's types.
Names that `task` defines (the findings and their order, how a workload and an image are named) are
imported from it, never spelled again here.
"""

from __future__ import annotations

import datetime as dt
import shlex
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

from rollguard.core.images import short_image
from rollguard.core.structs import ExitStatus, RunState, WorkloadRef
from rollguard.state.model import FINDINGS, HEALTHY, MUTABLE_IMAGE, OVERLAPPING

if TYPE_CHECKING:
    from rollguard.plan.repair_read import RepairPlan

# Worst first: the order badges are shown in and the "findings" sort key.
SEVERITY = (*FINDINGS, HEALTHY)
UNGROUPED = ""


# The types a table line is made of have slots: the workloads screen holds one row, one group view and
# their findings per workload (10,000s with -A), and an instance dict costs more than its fields.


@dataclass(frozen=True, slots=True)
class Finding:
    """One finding of the state model, with its one-line human reason."""

    code: str
    reason: str = ""

    @property
    def rank(self) -> int:
        return SEVERITY.index(self.code) if self.code in SEVERITY else len(SEVERITY)


@dataclass(frozen=True, slots=True)
class WorkloadRow:
    """One line of the workloads table."""

    namespace: str
    kind: str  # DeploymentConfig | Deployment
    name: str
    group: str  # the rollout group's selector, UNGROUPED when none
    findings: tuple[Finding, ...]
    revision: int
    ready: int
    desired: int
    images: Mapping[str, str]
    created: dt.datetime | None = None
    paused: bool = False
    labels: Mapping[str, str] = field(default_factory=dict)
    # made once (the table's group lines are keyed by it), not compared: it follows namespace and group
    group_key: str = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "group_key", group_key(self.namespace, self.group))

    @property
    def ref(self) -> str:
        """How the CLI names it: ``dc/NAME`` or ``deployment/NAME``."""
        return WorkloadRef(self.kind, self.name).key

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.ref}"

    @property
    def healthy(self) -> bool:
        return all(f.code in (HEALTHY, MUTABLE_IMAGE, OVERLAPPING) for f in self.findings)

    @property
    def worst(self) -> int:
        return min((f.rank for f in self.findings), default=len(SEVERITY))


def group_key(namespace: str, selector: str) -> str:
    return f"group:{namespace}/{selector}"


@dataclass(frozen=True, slots=True)
class RunView:
    """One run of a group, as its journal records it."""

    run_id: str
    command: str
    actor: str
    state: RunState
    started: str
    finished: str
    error: str = ""
    targets: Mapping[str, Mapping[str, str]] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class GroupView:
    """A rollout group and what its journal says."""

    namespace: str
    selector: str
    journal: str = ""  # ConfigMap name, "" when the group has none
    last_run: RunView | None = None
    history: tuple[RunView, ...] = ()
    lock_holder: str = ""
    kept_dcs: tuple[str, ...] = ()  # `rollguard migrate` replaced these DCs and keeps them at 0

    @property
    def key(self) -> str:
        return group_key(self.namespace, self.selector)


@dataclass(frozen=True)
class Inventory:
    """Everything the workloads screen shows, read at one moment."""

    rows: tuple[WorkloadRow, ...]
    groups: Mapping[str, GroupView]  # by group key
    namespaces: tuple[str, ...] = ()
    errors: tuple[str, ...] = ()

    @cached_property
    def _by_group(self) -> dict[str, list[WorkloadRow]]:
        out: dict[str, list[WorkloadRow]] = {}
        for row in self.rows:
            out.setdefault(row.group_key, []).append(row)
        return out

    def group_rows(self, key: str) -> list[WorkloadRow]:
        return list(self._by_group.get(key, ()))


@dataclass(frozen=True)
class RevisionView:
    name: str
    number: int
    phase: str
    images: Mapping[str, str]
    created: dt.datetime | None
    replicas: str  # ready/desired
    active: bool = False
    mark: str = ""  # what the journal says: verified by run X, failed in run X, made by hand (revisions.py)
    cause: str = (
        ""  # what made it: rollguard run X, config change, image change, manual (kinds.revision_causes)
    )


@dataclass(frozen=True)
class PodView:
    name: str
    status: str
    ready: str
    restarts: int
    revision: str
    node: str


@dataclass(frozen=True)
class EventView:
    type: str
    reason: str
    object: str
    message: str
    count: int
    last_seen: dt.datetime | None
    kind: str = ""  # the involved object's kind
    namespace: str = ""

    @property
    def involved(self) -> str:
        """``ReplicationController/dc2-2``: the involved object as the events page names it."""
        return f"{self.kind}/{self.object}" if self.kind else self.object


@dataclass(frozen=True)
class PodRow:
    """One pod of the pods page (`:pods`): whose it is and how it runs."""

    namespace: str
    name: str
    workload: str  # dc/NAME or deployment/NAME
    kind: str  # the workload's kind (KIND_NAMES key)
    workload_name: str
    revision: str  # the RC or ReplicaSet that runs it
    status: str
    ready: str  # yes | no
    restarts: int
    node: str
    created: dt.datetime | None


@dataclass(frozen=True)
class ConditionView:
    type: str
    status: str
    reason: str
    message: str


@dataclass(frozen=True)
class DetailView:
    """The detail screen of one workload."""

    row: WorkloadRow
    conditions: tuple[ConditionView, ...]
    revisions: tuple[RevisionView, ...]
    pods: tuple[PodView, ...]
    events: tuple[EventView, ...]
    group: GroupView | None
    triggers: tuple[str, ...] = ()
    message: str = ""


@dataclass(frozen=True)
class Target:
    """What an action acts on: some workloads of one namespace, or a whole group by its selector."""

    namespace: str
    refs: tuple[str, ...] = ()  # dc/NAME, deployment/NAME
    selector: str = ""  # set: the whole rollout group
    to_revision: int | None = None  # revert only

    @property
    def label(self) -> str:
        if self.selector:
            return f"group {self.selector}"
        return ", ".join(self.refs)


@dataclass(frozen=True)
class Change:
    """One workload's before and after, as the confirmation dialog shows it."""

    ref: str
    images_before: Mapping[str, str]
    images_after: Mapping[str, str]
    paused_before: bool
    paused_after: bool
    revision_before: int = 0
    revision_after: int | None = None  # the revision reverted to, when known
    note: str = ""
    changed: bool = True  # False: already as wanted, nothing is written
    running: Mapping[str, str] = field(default_factory=dict)  # what runs now, when not the template


@dataclass(frozen=True)
class PlanView:
    """What an action will do, from the repair module's dry run."""

    action: str
    target: Target
    changes: tuple[Change, ...]
    command: str
    refusal: str = ""  # non-empty: the action would be refused (exit 2), nothing to confirm
    unplanned: str = ""  # non-empty: the dry run got no answer or failed (not a refusal), nothing to confirm
    notes: tuple[str, ...] = ()
    handle: RepairPlan | None = field(
        default=None, compare=False, repr=False
    )  # the repair's own, to carry out


@dataclass(frozen=True)
class ResultView:
    """How an action ended."""

    status: ExitStatus
    exit_code: int
    summary: str
    errors: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return self.exit_code == 0


# -- formatting helpers, pure ---------------------------------------------------------------------


def parse_time(text: str | None) -> dt.datetime | None:
    if not text:
        return None
    for fmt in ("%Y-%m-%dT%H:%M:%SZ", "%Y-%m-%dT%H:%M:%S.%fZ"):
        try:
            return dt.datetime.strptime(text, fmt).replace(tzinfo=dt.UTC)
        except ValueError:
            continue
    return None


def age(then: dt.datetime | None, now: dt.datetime) -> str:
    """kubectl-style age: 45s, 12m, 3h, 5d."""
    if then is None:
        return "-"
    seconds = max(int((now - then).total_seconds()), 0)
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size * (2 if unit != "m" else 1):
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def images_text(images: Mapping[str, str]) -> str:
    if len(images) == 1:
        return short_image(next(iter(images.values())))
    return " ".join(f"{c}={short_image(i)}" for c, i in images.items())


def command_line(
    action: str,
    target: Target,
    *,
    context: str | None = None,
    kubeconfig: str | None = None,
    dry_run: bool = False,
) -> str:
    """The equivalent `rollguard` command, shell-quoted."""
    args = ["rollguard", action]
    args += ["-l", target.selector] if target.selector else list(target.refs)
    args += ["-n", target.namespace]
    if action == "revert" and target.to_revision is not None:
        args += ["--to-revision", str(target.to_revision)]
    if context:
        args += ["--context", context]
    if kubeconfig:
        args += ["--kubeconfig", kubeconfig]
    if dry_run:
        args.append("--dry-run")
    return shlex.join(args)


def matches(row: WorkloadRow, text: str) -> bool:
    """The `/` filter: every word must appear in the name, kind, group, findings or images."""
    hay = " ".join(
        [
            row.name,
            row.kind,
            row.ref,
            row.namespace,
            row.group,
            *(f.code for f in row.findings),
            *row.images.values(),
        ]
    ).lower()
    return all(word in hay for word in text.lower().split())


SORT_KEYS = ("name", "findings", "kind", "revision", "age")


def sort_rows(rows: Iterable[WorkloadRow], key: str, *, reverse: bool = False) -> list[WorkloadRow]:
    """Rows in display order for a sort key; ties broken by name so the order is stable."""
    far_past = dt.datetime.min.replace(tzinfo=dt.UTC)
    keys: dict[str, Any] = {
        "name": lambda r: (r.name,),
        "findings": lambda r: (r.worst, r.name),
        "kind": lambda r: (r.kind, r.name),
        "revision": lambda r: (r.revision, r.name),
        # oldest first reads like the other columns (ascending age)
        "age": lambda r: (-(r.created or far_past).timestamp(), r.name),
    }
    return sorted(rows, key=keys[key], reverse=reverse)


def group_order(inventory: Inventory, rows: Sequence[WorkloadRow], sort: str) -> list[str]:
    """Group keys in display order: worst group first when sorting by findings, else by name."""
    keys = {r.group_key for r in rows}
    if sort == "findings":
        worst: dict[str, int] = {}
        for r in rows:
            worst[r.group_key] = min(worst.get(r.group_key, r.worst), r.worst)
        return sorted(keys, key=lambda k: (worst[k], group_key_of_ungrouped(k), k))
    return sorted(keys, key=lambda k: (group_key_of_ungrouped(k), k))


def group_key_of_ungrouped(key: str) -> bool:
    return key.endswith("/")
