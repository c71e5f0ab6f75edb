"""Pure data: what rollguard knows about workloads, targets and rollout progress. No I/O here."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any

Obj = dict[str, Any]

DC = "DeploymentConfig"
DEPLOYMENT = "Deployment"

SHORT_KIND = {DC: "dc", DEPLOYMENT: "deployment"}


@dataclass(frozen=True, order=True)
class WorkloadRef:
    """A workload by kind and name, e.g. ``dc/api``."""

    kind: str
    name: str

    @property
    def key(self) -> str:
        return f"{SHORT_KIND[self.kind]}/{self.name}"

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


class Phase(enum.StrEnum):
    """Where one workload's rollout stands, as judged from the API objects."""

    PENDING = "pending"  # the controller has not yet picked the change up
    PROGRESSING = "progressing"
    COMPLETE = "complete"
    FAILED = "failed"
    PAUSED = "paused"


@dataclass(frozen=True)
class Progress:
    """A readiness verdict with a one-line human reason."""

    phase: Phase
    message: str
    revision: int = 0

    @property
    def done(self) -> bool:
        return self.phase in (Phase.COMPLETE, Phase.FAILED)


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
