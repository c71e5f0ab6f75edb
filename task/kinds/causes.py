"""Why a revision of a workload exists, as data, and the mark rollguard leaves on its own writes (pure).

Issue 30 (points 5 and 6): the revision history says of each revision what made it: a config change, an
image change (which image or trigger), a manual rollout (`oc rollout latest`, `kubectl rollout restart`)
or a rollguard run (which run, which command). `rollguard.kinds.revision_causes` decides it from the
revision objects; this module holds the words and the mark.

The mark. Every write of a run that starts a new revision carries, in the same request (no extra one),
the annotation ``kubernetes.io/change-cause`` on the workload itself (never in its pod template: that would
be a change of its own and start a rollout)::

    kubernetes.io/change-cause: rollguard revert run 20261203-081500-1a2b3c (revision 7)

The platform copies it into the revision it makes: the Deployment controller copies a Deployment's
annotations onto its new ReplicaSet (kubernetes pkg/controller/deployment/util/deployment_util.go,
SetNewReplicaSetAnnotations / copyDeploymentAnnotationsToReplicaSet), which is what `kubectl rollout
history` prints as CHANGE-CAUSE; a DC's controller encodes the whole DC, its annotations included, into
the RC's ``openshift.io/encoded-deployment-config`` (library-go pkg/apps/appsutil/util.go MakeDeployment).
The annotation stays on the workload after the run, so the next revision someone else makes carries it
too: the mark names the revision number the write starts (`Kind.next_revision`), and a mark on any other
revision is a stale one, not the run's. A write that starts no revision (a resume with nothing to roll
out, a scale) leaves no mark.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass, replace

from rollguard.core.structs import Obj

CHANGE_CAUSE = "kubernetes.io/change-cause"
# pod-template annotations whose new value is a new rollout of the same template
REDEPLOYED_AT = "rollguard.io/redeployed-at"  # rollguard redeploy
RESTARTED_AT = "kubectl.kubernetes.io/restartedAt"  # kubectl / oc rollout restart

_MARK = re.compile(
    r"^rollguard (?P<command>[a-z-]+) run (?P<run>\S+?)(?P<reverting> reverting)? \(revision (?P<revision>\d+)\)$"
)


@dataclass(frozen=True)
class RunMark:
    """rollguard's change-cause: which run wrote the workload, and the revision that write starts."""

    command: str  # rollout, revert, resume, redeploy, migrate
    run_id: str
    revision: int
    reverting: bool = False  # the run's own revert after its failure

    def text(self) -> str:
        how = " reverting" if self.reverting else ""
        return f"rollguard {self.command} run {self.run_id}{how} (revision {self.revision})"


def parse_mark(text: str | None) -> RunMark | None:
    """The `RunMark` a change-cause holds, or None when it is not rollguard's."""
    m = _MARK.match((text or "").strip())
    if m is None:
        return None
    return RunMark(
        command=m["command"], run_id=m["run"], revision=int(m["revision"]), reverting=bool(m["reverting"])
    )


def with_mark(body: Obj, mark: RunMark) -> Obj:
    """``body`` (a workload about to be written) with the mark in its own annotations (a shallow copy:
    the metadata and its annotations are new, the rest is shared)."""
    meta = dict(body.get("metadata") or {})
    meta["annotations"] = {**(meta.get("annotations") or {}), CHANGE_CAUSE: mark.text()}
    return {**body, "metadata": meta}


class Cause(enum.Enum):
    """What made a revision."""

    ROLLGUARD = "rollguard"  # a rollguard run (its mark, or a redeploy's stamp)
    CONFIG = "config change"  # the pod template changed (an edit, `oc set env`, a manifest)
    IMAGE = "image change"  # a container image changed (a trigger, `oc set image`)
    MANUAL = "manual"  # a new rollout of the same template (`oc rollout latest`, `kubectl rollout restart`)
    CREATED = "created"  # the first revision
    UNKNOWN = "unknown"  # nothing tells (the revision before it is gone, no record of the platform's)


@dataclass(frozen=True)
class RevisionCause:
    """A revision's cause, and what the words name."""

    cause: Cause
    detail: str = ""  # which images, fields, trigger or command
    run_id: str = ""  # ROLLGUARD: the run ("" when only a redeploy's stamp tells)
    command: str = ""  # ROLLGUARD: the command
    reverting: bool = False  # ROLLGUARD: the run's revert after its failure
    note: str = ""  # a change-cause someone else wrote for this revision

    def text(self) -> str:
        """One line for the history: ``rollguard revert run X``, ``image change: app api:v2`` ..."""
        if self.cause is Cause.ROLLGUARD:
            words = f"rollguard {self.command}" + (f" run {self.run_id}" if self.run_id else "")
            words += " (its revert)" if self.reverting else ""
        else:
            words = self.cause.value + (f": {self.detail}" if self.detail else "")
        return words + (f" ({self.note})" if self.note else "")

    def noted(self, note: str) -> RevisionCause:
        return replace(self, note=note) if note else self


@dataclass(frozen=True)
class Recorded:
    """The cause a kind's platform recorded in the revision itself (a DC's RC: its encoded DC's
    ``status.details``), before rollguard compares templates."""

    cause: Cause  # CONFIG, IMAGE or MANUAL
    sources: tuple[str, ...] = ()  # IMAGE: the images or ImageStreamTags the trigger named
