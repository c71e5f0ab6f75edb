"""Kubernetes Deployments: their revisions (ReplicaSets), readiness and deadline.

A Deployment's revisions are the ReplicaSets it owns, numbered by ``deployment.kubernetes.io/revision``;
a ReplicaSet's template carries the extra ``pod-template-hash`` label and keeps no record of having
completed. Readiness is `kubectl rollout status`'s algorithm (reference section 3). Its image triggers
are the ``image.openshift.io/triggers`` annotation (what `oc new-app` and `oc set triggers deploy/x
--from-image` write; OpenShift's trigger controller rewrites a container whose entry is not paused to
its tag's image, openshift-controller-manager pkg/image/trigger/annotations/): an image set directly
pauses the entry, a promotion points it at the promoted tag, a revert restores the annotation.
"""

from __future__ import annotations

import copy
import datetime as dt
from dataclasses import replace

from rollguard.core.readiness import condition, get, observed, replica_failure, replica_failure_since
from rollguard.core.resources import DEPLOYMENTS, REPLICA_SETS
from rollguard.core.structs import DEPLOYMENT, KIND_NAMES, Obj, Progress, RolloutPhase, VerifiedState
from rollguard.kinds import triggers as trig
from rollguard.kinds.base import DEFAULT_DEADLINE, HASH_LABEL, Kind, as_int, parse_time, pick
from rollguard.kinds.causes import CHANGE_CAUSE
from rollguard.kinds.templates import same_template
from rollguard.kinds.triggers import ImageTrigger

RS_REVISION_ANNOTATION = "deployment.kubernetes.io/revision"


def _without_hash(template: Obj) -> Obj:
    clean = copy.deepcopy(template)
    clean.get("metadata", {}).get("labels", {}).pop(HASH_LABEL, None)
    return clean


def _compared(rev: Obj) -> Obj | None:
    """A ReplicaSet's template for a read-only comparison: `Deployment.revision_template`'s, copied only
    where it still carries the hash label. The live cache's ReplicaSets are slimmed without it
    (`slim_revision`), and a run judges every Deployment against them on each watch event: a deep copy
    of every template per judgement made it take twice as long (60 against 34 us with three ReplicaSets)."""
    template = rev.get("spec", {}).get("template")
    if not isinstance(template, dict):
        return None
    if HASH_LABEL in ((template.get("metadata") or {}).get("labels") or {}):
        return _without_hash(template)
    return template


def deployment_progress(deploy: Obj, *, since: str = "") -> Progress:
    """The `kubectl rollout status` algorithm (reference section 3).

    ``since`` (RFC 3339, when our change was written): a ProgressDeadlineExceeded condition not updated
    after it is the previous rollout's, which the controller keeps for a sync or two after a new one.
    """
    name = get(deploy, "metadata", "name", default="?")
    revision = int(get(deploy, "metadata", "annotations", RS_REVISION_ANNOTATION, default=0) or 0)
    if not observed(deploy):
        return Progress(RolloutPhase.PENDING, "waiting for the controller to observe the change", revision)
    if get(deploy, "spec", "paused", default=False):
        return Progress(RolloutPhase.PAUSED, f'deployment "{name}" is paused', revision)
    progressing = condition(deploy, "Progressing")
    stale = bool(since) and str((progressing or {}).get("lastUpdateTime") or "") <= since
    if progressing and progressing.get("reason") == "ProgressDeadlineExceeded" and not stale:
        return Progress(RolloutPhase.FAILED, f'deployment "{name}" exceeded its progress deadline', revision)
    want = int(get(deploy, "spec", "replicas", default=1))
    updated = int(get(deploy, "status", "updatedReplicas", default=0))
    total = int(get(deploy, "status", "replicas", default=0))
    available = int(get(deploy, "status", "availableReplicas", default=0))
    if updated < want:
        return Progress(RolloutPhase.PROGRESSING, f"{updated} of {want} new replicas updated", revision)
    if total > updated:
        return Progress(
            RolloutPhase.PROGRESSING, f"{total - updated} old replicas pending termination", revision
        )
    if available < updated:
        return Progress(
            RolloutPhase.PROGRESSING, f"{available} of {updated} updated replicas available", revision
        )
    return Progress(RolloutPhase.COMPLETE, f'deployment "{name}" successfully rolled out', revision)


class DeploymentKind(Kind):
    kind = DEPLOYMENT
    noun = "Deployment"
    resource = DEPLOYMENTS
    revisions = REPLICA_SETS
    aliases = KIND_NAMES[DEPLOYMENT].aliases
    template_noise_labels = (HASH_LABEL,)
    annotations = (RS_REVISION_ANNOTATION, trig.TRIGGERS_ANNOTATION)
    revision_annotations = (RS_REVISION_ANNOTATION, CHANGE_CAUSE)

    def triggers(self, obj: Obj) -> list[Obj] | None:
        return trig.annotation_entries(obj)

    def image_triggers(self, obj: Obj) -> list[ImageTrigger]:
        return trig.parse_annotation_triggers(obj)

    def trigger_texts(self, obj: Obj) -> tuple[str, ...]:
        return tuple(t.text() for t in self.image_triggers(obj))

    def with_images(self, obj: Obj, images: dict[str, str], *, trigger_tags: dict[str, str]) -> Obj:
        body = super().with_images(obj, images, trigger_tags=trigger_tags)
        pinned = {c: t for c, t in trigger_tags.items() if c in images}
        trig.annotation_edit(body, pause=set(images) - set(pinned), pin=pinned)
        return body

    def with_state(self, obj: Obj, state: VerifiedState) -> Obj:
        body = super().with_state(obj, state)
        if state.triggers is not None:
            trig.set_annotation_entries(body, copy.deepcopy(state.triggers))
        return body

    def with_manual_triggers(self, obj: Obj, containers: set[str]) -> Obj:
        body = super().with_manual_triggers(obj, containers)
        trig.annotation_edit(body, pause=containers)
        return body

    def revision(self, obj: Obj) -> int:
        value = obj.get("metadata", {}).get("annotations", {}).get(RS_REVISION_ANNOTATION, "0")
        return int(value) if str(value).isdigit() else 0

    def revision_number(self, rev: Obj) -> int:
        return self.revision(rev)

    def revision_template(self, rev: Obj) -> Obj | None:
        template = rev.get("spec", {}).get("template")
        return _without_hash(template) if isinstance(template, dict) else None

    def revision_status(self, rev: Obj, *, newest: bool) -> str:
        """``active`` (the newest, or still scaled up) or ``old``."""
        return "active" if newest or as_int(rev.get("spec", {}).get("replicas")) else "old"

    def next_revision(self, obj: Obj, body: Obj, revisions: list[Obj]) -> int | None:
        """A template its newest ReplicaSet does not run starts one: a new ReplicaSet, or an older one
        taken up again, numbered past every other (kubernetes pkg/controller/deployment/sync.go
        getNewReplicaSet: ``MaxRevision(oldRSs) + 1``); a paused Deployment starts none."""
        if (body.get("spec") or {}).get("paused"):
            return None
        template = (body.get("spec") or {}).get("template") or {}
        running = self.revision_template(revisions[0]) if revisions else None
        if running is None and self.revision(obj):
            running = (obj.get("spec") or {}).get("template")  # its ReplicaSets unknown: its own template
        if running is not None and same_template(running, template):
            return None
        return max([self.revision(obj), *(self.revision_number(r) for r in revisions)]) + 1

    def slim_revision(self, rev: Obj, *, metadata: Obj) -> Obj:
        """A ReplicaSet: its replicas and pod template, as `revision_template` reads it (without the
        ``pod-template-hash`` label: the newest one's then equals its Deployment's, and an interner holds
        the two once)."""
        spec = pick(rev.get("spec"), ("replicas", "template"))
        template = self.revision_template(rev)
        if template is not None:
            spec["template"] = template
        return {
            "metadata": metadata,
            "spec": spec,
            "status": pick(rev.get("status"), ("replicas", "readyReplicas", "availableReplicas")),
        }

    def is_complete_revision(self, rev: Obj) -> bool:
        return int(rev.get("status", {}).get("availableReplicas", 0) or 0) > 0

    def was_complete(self, rev: Obj) -> bool:
        # A ReplicaSet keeps no record of having completed; `kubectl rollout undo` returns to any.
        return True

    def progress(self, obj: Obj, revisions: list[Obj], *, since: str = "") -> Progress:
        return deployment_progress(obj, since=since)

    def explain(self, obj: Obj, revisions: list[Obj], pods: list[Obj], progress: Progress) -> Progress:
        """A Deployment whose new pods the API refuses (quota, LimitRange, admission): its
        ``ReplicaFailure`` condition, copied from its ReplicaSet's by the deployment controller."""
        if progress.phase is not RolloutPhase.PROGRESSING:
            return progress
        source: Obj | None = obj
        refused = replica_failure(obj)
        if not refused:
            source = self.new_revision(obj, revisions)
            refused = replica_failure(source) if source is not None else ""
        if not refused or source is None:
            return progress
        return replace(
            progress,
            blocked=f"its pods cannot be created: {refused}",
            blocked_at=replica_failure_since(source),
        )

    def new_revision(self, obj: Obj, revisions: list[Obj]) -> Obj | None:
        template = obj.get("spec", {}).get("template")
        return next((r for r in revisions if same_template(_compared(r), template)), None)

    def deadline(self, obj: Obj) -> int:
        return int(obj.get("spec", {}).get("progressDeadlineSeconds") or DEFAULT_DEADLINE)

    def rollout_start(self, obj: Obj, revisions: list[Obj]) -> dt.datetime | None:
        """When its Progressing condition last changed."""
        return parse_time((condition(obj, "Progressing") or {}).get("lastUpdateTime"))

    def settled(self, obj: Obj) -> bool:
        status = obj.get("status", {})
        cond = condition(obj, "Progressing") or {}
        updated = as_int(status.get("updatedReplicas"))
        return (
            cond.get("reason") == "NewReplicaSetAvailable"
            and updated == as_int(obj.get("spec", {}).get("replicas", 1))
            and as_int(status.get("replicas")) == updated
        )
