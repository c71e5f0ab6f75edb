"""The state model's data: findings, revisions, pods, rollout groups and workload states (no logic).

`rollguard.state.assessment` computes them. Import each name from here, where it is defined (assessment
still lists them in its `__all__` for older callers).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from rollguard.core.structs import KIND_NAMES, Obj, RolloutPhase, RunState, WorkloadRef

if (
    TYPE_CHECKING
):  # an annotation only: `rollguard --help` (drift-check's finding names) imports no journal code
    from rollguard.cluster.journal import Journal

PAUSED = "paused"
PROGRESSING = "progressing"
FAILED = "failed"
STUCK = "stuck"
HALF_ROLLED = "half-rolled"
DRIFTED = "drifted"
MUTABLE_IMAGE = "mutable-image"
OVERLAPPING = "overlapping"  # matched by the selectors of two (or more) rollout groups
UNAVAILABLE = "unavailable"
HEALTHY = "healthy"
# Most serious first: the order findings are listed and sorted in.
FINDINGS = (FAILED, HALF_ROLLED, STUCK, PAUSED, DRIFTED, UNAVAILABLE, OVERLAPPING, PROGRESSING, MUTABLE_IMAGE)
DEFAULT_FAIL_ON = frozenset({PAUSED, FAILED, STUCK, HALF_ROLLED, DRIFTED})


@dataclass(frozen=True, slots=True)
class Finding:
    """One thing wrong (or noteworthy) with a workload, and why, in one line."""

    name: str
    reason: str

    def __str__(self) -> str:
        return f"{self.name}: {self.reason}"


@dataclass(frozen=True, slots=True)
class RevisionInfo:
    """One revision object (RC ``dc-N`` or ReplicaSet) of a workload, newest first in a state."""

    number: int
    name: str
    status: str  # DC: the RC phase (New|Pending|Running|Complete|Failed|Cancelled); Deployment: active|old
    images: dict[str, str]
    replicas: int
    ready: int
    created: str


@dataclass(frozen=True, slots=True)
class PodInfo:
    """One pod of a workload, reduced to what a status view shows."""

    name: str
    revision: str
    phase: str
    ready: bool
    restarts: int
    node: str
    reason: str  # e.g. CrashLoopBackOff, or ""
    created: str = ""  # its creationTimestamp (RFC 3339)


@dataclass(frozen=True)
class Group:
    """A rollout group, as its journal ConfigMap and Lease describe it."""

    name: str  # the journal ConfigMap's (and Lease's) name
    namespace: str
    selector: str
    state: RunState  # the journal's run state
    run_id: str
    command: str
    actor: str
    updated: str
    error: str
    lock_holder: str  # "" when no lease
    lock_live: bool
    journal: Journal = field(repr=False, compare=False)

    @property
    def final(self) -> bool:
        return self.journal.final

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True, slots=True)
class WorkloadState:
    """Everything known about one DC or Deployment, with its findings."""

    ref: WorkloadRef
    namespace: str
    group: str | None  # journal name of its rollout group
    selector: str | None  # that group's selector
    findings: tuple[Finding, ...]
    revision: int
    ready: int
    available: int
    desired: int
    images: dict[str, str]
    created: str
    paused: bool
    phase: RolloutPhase  # of its current rollout
    message: str  # the readiness verdict's message
    labels: dict[str, str]
    triggers: tuple[str, ...]  # DC triggers, human-readable
    revisions: tuple[RevisionInfo, ...]
    pods: tuple[PodInfo, ...]
    resource_version: str
    uid: str = ""

    @property
    def key(self) -> str:
        """``dc/NAME`` or ``deployment/NAME``."""
        return self.ref.key

    @property
    def kind(self) -> str:
        return KIND_NAMES[self.ref.kind].key

    @property
    def names(self) -> tuple[str, ...]:
        """Finding names, or ``("healthy",)``."""
        return tuple(f.name for f in self.findings) or (HEALTHY,)

    @property
    def healthy(self) -> bool:
        return not self.findings

    def has(self, *names: str) -> bool:
        return any(f.name in names for f in self.findings)

    def to_json(self) -> Obj:
        return {
            "kind": self.ref.kind,
            "name": self.ref.name,
            "namespace": self.namespace,
            "group": self.group,
            "selector": self.selector,
            "findings": [{"name": f.name, "reason": f.reason} for f in self.findings],
            "state": list(self.names),
            "revision": self.revision,
            "ready": self.ready,
            "available": self.available,
            "desired": self.desired,
            "images": self.images,
            "created": self.created,
            "paused": self.paused,
            "phase": self.phase,
            "message": self.message,
            "triggers": list(self.triggers),
        }


@dataclass(frozen=True)
class NamespaceState:
    """The states of one namespace's workloads and its rollout groups."""

    namespace: str
    workloads: tuple[WorkloadState, ...]
    groups: tuple[Group, ...]

    def by_group(self) -> list[tuple[Group | None, list[WorkloadState]]]:
        """Workloads grouped by rollout group (groups by name, then the ungrouped ones)."""
        out: list[tuple[Group | None, list[WorkloadState]]] = []
        for group in self.groups:
            members = [w for w in self.workloads if w.group == group.name]
            if members:
                out.append((group, members))
        loose = [w for w in self.workloads if w.group is None]
        if loose:
            out.append((None, loose))
        return out
