"""Pure data: what rollguard knows about workloads, targets and rollout progress. No I/O here.

The states a run goes through are enums here, shared by the engine, the journal, the report, the state
model and the TUI. They are `enum.StrEnum`s because their values are a wire format: journals written by
earlier versions, report JSON, Tekton results and pipelines that test ``status`` all spell them exactly
so, and a StrEnum member *is* that string (in JSON, in f-strings, and compared with ``==``).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any

Obj = dict[str, Any]

DC = "DeploymentConfig"
DEPLOYMENT = "Deployment"


@dataclass(frozen=True)
class KindNames:
    """How rollguard, the API and a user name one kind of workload.

    ``key``: in a `WorkloadRef` (``dc/api``, ``deployment/api``) and so in journal keys, the report and
    every message: a wire format that journals written by earlier versions hold, never changed.
    ``short``: the API's short name (``oc get dc``, ``kubectl get deploy``), where a column is narrow
    (the TUI's workloads table). ``aliases``: every spelling a user may type for the kind in a TARGET
    (``rollguard.kinds.kind_of``: the short name and the resource's singular and plural, each with an
    ``s``), ``key`` and ``short`` among them.
    """

    key: str
    short: str
    aliases: tuple[str, ...]


# The one table of the kinds' names. It lives here, not in `rollguard.kinds` where every other kind
# difference lives, because `WorkloadRef` (this layer, below kinds) names itself by it; the kinds' `aliases`
# (`rollguard.kinds`) and the TUI's short names are read from it, never spelled again.
KIND_NAMES: dict[str, KindNames] = {
    DC: KindNames(key="dc", short="dc", aliases=("dc", "dcs", "deploymentconfig", "deploymentconfigs")),
    DEPLOYMENT: KindNames(
        key="deployment", short="deploy", aliases=("deploy", "deploys", "deployment", "deployments")
    ),
}


@dataclass(frozen=True, order=True)
class WorkloadRef:
    """A workload by kind and name, e.g. ``dc/api``."""

    kind: str
    name: str

    @property
    def key(self) -> str:
        return f"{KIND_NAMES[self.kind].key}/{self.name}"

    def __str__(self) -> str:
        return self.key


@dataclass(frozen=True)
class ImageTarget:
    """One ``--image TARGET=REF`` argument, parsed but not yet resolved against the cluster."""

    ref: WorkloadRef
    container: str | None
    image: str


@dataclass(frozen=True)
class Snapshot:
    """A workload as read from the API, reduced to what rollguard reasons about."""

    ref: WorkloadRef
    namespace: str
    resource_version: str
    generation: int
    paused: bool
    revision: int
    replicas: int
    images: dict[str, str]
    template: Obj
    triggers: list[Obj] | None
    labels: dict[str, str]
    raw: Obj = field(repr=False, compare=False)


@dataclass(frozen=True)
class VerifiedState:
    """The state a revert returns to: a pod template seen running complete, with its triggers."""

    template: Obj
    triggers: list[Obj] | None
    revision: int
    images: dict[str, str]
    paused: bool

    def to_json(self) -> Obj:
        return {
            "template": self.template,
            "triggers": self.triggers,
            "revision": self.revision,
            "images": self.images,
            "paused": self.paused,
        }

    @classmethod
    def from_json(cls, data: Obj) -> VerifiedState:
        return cls(
            template=data["template"],
            triggers=data.get("triggers"),
            revision=int(data.get("revision", 0)),
            images=dict(data.get("images", {})),
            paused=bool(data.get("paused", False)),
        )


class RolloutPhase(enum.StrEnum):
    """Where one workload's rollout stands, as judged from the API objects."""

    PENDING = "pending"  # the controller has not yet picked the change up
    PROGRESSING = "progressing"
    COMPLETE = "complete"
    FAILED = "failed"
    PAUSED = "paused"


class RunState(enum.StrEnum):
    """Where a group's latest run stands: the journal's ``run.state``."""

    NEW = "new"  # no run has started on this journal yet
    APPLYING = "applying"  # a rollout wrote its journal and is writing the changes
    WATCHING = "watching"  # a rollout's changes are written; waiting for them to complete
    VERIFYING = "verifying"  # rolled out; its --verify checks (and --bake) run: not yet the verified state
    REPAIRING = "repairing"  # a repair (resume, revert, redeploy) is under way
    REVERTING = "reverting"  # a failed run is returning its group to the last verified state
    SUCCEEDED = "succeeded"  # a rollout ended all-new, verified
    REPAIRED = "repaired"  # a repair ended verified
    REVERTED = "reverted"  # a failed run ended all-old, verified
    INCONSISTENT = "inconsistent"  # a revert could not be verified: the entries say what is left

    @classmethod
    def read(cls, value: object) -> RunState:
        """The state a journal holds; one this version does not know reads as `INCONSISTENT`.

        Not final, so the group shows as half-rolled and the next run carries its verified states
        forward: the reading that never claims a finished run that may not be one.
        """
        try:
            return cls(str(value))
        except ValueError:
            return cls.INCONSISTENT

    @property
    def final(self) -> bool:
        """True when no run is under way or left half done (`NEW`: none has started)."""
        return self in _FINAL_RUN_STATES


_FINAL_RUN_STATES = frozenset({RunState.NEW, RunState.SUCCEEDED, RunState.REPAIRED, RunState.REVERTED})


class WorkloadOutcome(enum.StrEnum):
    """How a run left one workload: the report's per-workload ``outcome``."""

    ROLLED_OUT = "rolled-out"
    UNCHANGED = "unchanged"
    APPLIED = "applied"  # written, never judged (the run stopped before its watch ended)
    FAILED = "failed"
    REVERTING = "reverting"  # a revert was written but the run stopped before it was judged
    REVERTED = "reverted"
    RESUMED = "resumed"
    REDEPLOYED = "redeployed"
    INCONSISTENT = "inconsistent"
    EDITED = "edited"  # changed by someone else after the run's write: left as they set it
    DELETED = "deleted"  # deleted by someone else while the run was on it
    PLANNED = "planned"  # --dry-run: the run would change it (``images_after`` and ``notes`` say how)
    NOT_VERIFIED = "not verified (0 replicas)"  # rolled out to no pod: nothing ran its new template
    KEPT = "kept at 0 replicas"  # rollguard migrate: a DC replaced by its Deployment, kept for the way back
    REMOVED = "removed"  # rollguard migrate: a kept DC deleted (--finish), or its Deployment (--revert)


class EntryPhase(enum.StrEnum):
    """Where one workload stands in its group's run: a journal entry's ``phase``.

    Not `RolloutPhase` (a readiness verdict judged from the API objects): this is what the run did to it.
    """

    PENDING = "pending"  # in the run, nothing written yet
    UNCHANGED = "unchanged"  # already as wanted: the run writes nothing
    APPLIED = "applied"  # the change is written
    COMPLETE = "complete"  # a rollout's change is verified complete
    RESUMED = "resumed"  # a repair's change is verified complete, by action
    REDEPLOYED = "redeployed"
    FAILED = "failed"  # its rollout failed: the cause of the run's failure
    REVERTING = "reverting"  # the group revert wrote its verified state back
    REVERTED = "reverted"  # back on the verified state, verified (also `revert`'s own success)
    ERROR = "error"  # its revert failed or was not verified: the group is inconsistent
    EDITED = "edited"  # someone else changed it after the run's write: theirs now, left as they set it
    DELETED = "deleted"  # someone else deleted it during the run: nothing to revert

    @classmethod
    def read(cls, value: object) -> EntryPhase:
        """The phase an entry holds; one this version does not know reads as `ERROR` (not restored)."""
        try:
            return cls(str(value))
        except ValueError:
            return cls.ERROR

    @property
    def touched(self) -> bool:
        """True once the run wrote (or may have written) to the workload."""
        return self not in (EntryPhase.PENDING, EntryPhase.UNCHANGED)

    @property
    def outcome(self) -> WorkloadOutcome:
        """The report's word for a workload left in this phase."""
        return _OUTCOMES[self]


_OUTCOMES = {
    EntryPhase.PENDING: WorkloadOutcome.UNCHANGED,
    EntryPhase.UNCHANGED: WorkloadOutcome.UNCHANGED,
    EntryPhase.APPLIED: WorkloadOutcome.APPLIED,
    EntryPhase.COMPLETE: WorkloadOutcome.ROLLED_OUT,
    EntryPhase.RESUMED: WorkloadOutcome.RESUMED,
    EntryPhase.REDEPLOYED: WorkloadOutcome.REDEPLOYED,
    EntryPhase.FAILED: WorkloadOutcome.FAILED,
    EntryPhase.REVERTING: WorkloadOutcome.REVERTING,
    EntryPhase.REVERTED: WorkloadOutcome.REVERTED,
    EntryPhase.ERROR: WorkloadOutcome.INCONSISTENT,
    EntryPhase.EDITED: WorkloadOutcome.EDITED,
    EntryPhase.DELETED: WorkloadOutcome.DELETED,
}


class ExitStatus(enum.StrEnum):
    """How a command ended: the report's ``status`` and the Tekton result ``status``.

    One word per exit code, except exit 3, which has two (the group is not where this run can vouch
    for), and exit 0, which has two: ``dry-run`` says that the preflight passed and nothing was done,
    so a dry run's report never claims a rollout. Pipelines test these words: never rename them.
    """

    SUCCEEDED = "succeeded"  # exit 0
    REVERTED = "reverted"  # exit 1
    REFUSED = "refused"  # exit 2: nothing was changed
    INCONSISTENT = "inconsistent"  # exit 3
    SUPERSEDED = "superseded"  # exit 3: the run lost its group's lock to another run and stopped writing
    DRY_RUN = "dry-run"  # exit 0: --dry-run; the preflight passed and nothing was changed


@dataclass(frozen=True)
class Progress:
    """A readiness verdict with a one-line human reason."""

    phase: RolloutPhase
    message: str
    revision: int = 0
    # Why the rollout's pods (or its deployer pod) cannot be created now, as the platform records it
    # (quota, LimitRange, admission): hopeless if it lasts (`rollguard.core.readiness.REFUSAL_GRACE`).
    blocked: str = ""
    # Since when it is `blocked`, as the API objects record it (RFC 3339; "" when they do not say): the
    # state model, which has no clock of its own, judges how long the refusal has lasted from it.
    blocked_at: str = ""
    # What else holds pods while it is `blocked`, said after the refusal (a failed RC still scaled up).
    holding: str = ""
    # The object whose FailedCreate events say why it is `blocked`, when nothing else records it
    # (a DC's deployer pod refused: only its Events name the quota), as (kind, name).
    blocked_evidence: tuple[str, str] | None = None
    # A lifecycle hook pod running now (a DC's pre/mid/post hook): hooks have no timeout but their
    # pod's activeDeadlineSeconds, so the no-progress clock does not count while one runs.
    hook: str = ""

    @property
    def done(self) -> bool:
        return self.phase in (RolloutPhase.COMPLETE, RolloutPhase.FAILED)


@dataclass(frozen=True)
class Doom:
    """Evidence from a pod that a rollout cannot succeed (fail-fast)."""

    pod: str
    container: str
    reason: str
    message: str

    def describe(self) -> str:
        text = f"pod {self.pod} container {self.container}: {self.reason}"
        return f"{text} ({self.message})" if self.message else text
