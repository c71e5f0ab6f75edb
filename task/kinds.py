"""The one place that knows how DeploymentConfigs and Deployments differ.

Everything else (preflight, engine, state model) asks a `Kind` and treats both alike.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable
from typing import Any

from rollguard import readiness
from rollguard.resources import (
    DEPLOYMENT_CONFIGS,
    DEPLOYMENTS,
    REPLICA_SETS,
    REPLICATION_CONTROLLERS,
    Resource,
)
from rollguard.structs import DC, DEPLOYMENT, Obj, Progress, Snapshot, VerifiedState, WorkloadRef

DEFAULT_DEADLINE = 600
DC_NAME_LABEL = "openshift.io/deployment-config.name"
HASH_LABEL = "pod-template-hash"


def _containers(template: Obj) -> list[Obj]:
    containers: list[Obj] = template.get("spec", {}).get("containers", [])
    return containers


def images_of(template: Obj) -> dict[str, str]:
    """Container name -> image of a pod template."""
    return {c["name"]: c.get("image", "") for c in _containers(template)}


def _owned_by(obj: Obj, owner: Obj) -> bool:
    uid = owner.get("metadata", {}).get("uid")
    return any(ref.get("uid") == uid for ref in obj.get("metadata", {}).get("ownerReferences", []) or [])


class Owners:
    """Objects grouped by owner, built once over a namespace's objects (pure).

    Without it every workload scans all revisions and pods of its namespace at every look: watching a
    group of N costs N x objects per event instead of objects + N.
    """

    def __init__(self, objs: Iterable[Obj]) -> None:
        self._by_key: dict[str, list[Obj]] = {}
        for obj in objs:
            meta = obj.get("metadata", {})
            keys = {ref.get("uid", "") for ref in meta.get("ownerReferences") or []}
            dc_name = (meta.get("labels") or {}).get(DC_NAME_LABEL)
            if dc_name:
                keys.add(f"dc:{dc_name}")
            for key in keys:
                self._by_key.setdefault(key, []).append(obj)

    def children(self, owner: Obj) -> list[Obj]:
        """The objects naming ``owner`` in their ownerReferences."""
        return self._by_key.get(owner.get("metadata", {}).get("uid") or "-", [])

    def candidates(self, owner: Obj) -> list[Obj]:
        """A superset of what `Kind.owned` keeps: owned by UID, or (RCs) labelled with the owner's name."""
        found = {id(o): o for o in self.children(owner)}
        found.update((id(o), o) for o in self._by_key.get(f"dc:{owner['metadata']['name']}", []))
        return list(found.values())


def _without_hash(template: Obj) -> Obj:
    clean = copy.deepcopy(template)
    clean.get("metadata", {}).get("labels", {}).pop(HASH_LABEL, None)
    return clean


class Kind:
    """Behaviour shared by both kinds; subclasses hold the quirks."""

    kind: str
    resource: Resource
    revisions: Resource
    aliases: tuple[str, ...]

    def snapshot(self, obj: Obj) -> Snapshot:
        meta, spec = obj["metadata"], obj.get("spec", {})
        template = spec.get("template", {})
        return Snapshot(
            ref=WorkloadRef(self.kind, meta["name"]),
            namespace=meta.get("namespace", ""),
            resource_version=meta.get("resourceVersion", ""),
            generation=int(meta.get("generation", 0)),
            paused=bool(spec.get("paused", False)),
            revision=self.revision(obj),
            replicas=int(spec.get("replicas", 1) if spec.get("replicas") is not None else 1),
            images=images_of(template),
            template=template,
            triggers=self.triggers(obj),
            labels=dict(meta.get("labels") or {}),
            raw=obj,
        )

    def revision(self, obj: Obj) -> int:
        raise NotImplementedError

    def triggers(self, obj: Obj) -> list[Obj] | None:
        return None

    def owned(self, obj: Obj, revisions: Iterable[Obj]) -> list[Obj]:
        """The workload's revision objects (RCs or ReplicaSets), newest first."""
        mine = [r for r in revisions if _owned_by(r, obj)]
        return sorted(mine, key=self.revision_number, reverse=True)

    def revision_number(self, rev: Obj) -> int:
        raise NotImplementedError

    def revision_template(self, rev: Obj) -> Obj | None:
        raise NotImplementedError

    def progress(self, obj: Obj, revisions: list[Obj], *, since: str = "") -> Progress:
        """Where its current template's rollout stands; ``since``: when we wrote it (if we did)."""
        raise NotImplementedError

    def new_revision(self, obj: Obj, revisions: list[Obj]) -> Obj | None:
        """The revision object that runs the workload's current template, if any yet."""
        raise NotImplementedError

    def deadline(self, obj: Obj) -> int:
        raise NotImplementedError

    def verified_state(self, obj: Obj, revisions: list[Obj]) -> VerifiedState:
        """What runs now and was seen complete: the state a revert returns to."""
        progress = self.progress(obj, revisions)
        template = obj.get("spec", {}).get("template", {})
        revision = self.revision(obj)
        if progress.phase.value != "complete":
            for rev in revisions:
                if self.is_complete_revision(rev):
                    template = self.revision_template(rev) or template
                    revision = self.revision_number(rev)
                    break
        return VerifiedState(
            template=copy.deepcopy(template),
            triggers=copy.deepcopy(self.triggers(obj)),
            revision=revision,
            images=images_of(template),
            paused=False,
        )

    def is_complete_revision(self, rev: Obj) -> bool:
        raise NotImplementedError

    def was_complete(self, rev: Obj) -> bool:
        """Whether a revision once ran complete, so a revert may return to it."""
        return self.is_complete_revision(rev)

    def revision_state(self, rev: Obj) -> VerifiedState | None:
        """The state a revert to this revision restores (template, and a DC's triggers of then)."""
        template = self.revision_template(rev)
        if template is None:
            return None
        return VerifiedState(
            template=copy.deepcopy(template),
            triggers=None,
            revision=self.revision_number(rev),
            images=images_of(template),
            paused=False,
        )

    def rollout_blocker(self, obj: Obj) -> str | None:
        """Why a template change would not start a rollout by itself, or None."""
        return None

    def with_images(self, obj: Obj, images: dict[str, str], *, trigger_tags: dict[str, str]) -> Obj:
        """A copy of ``obj`` with new container images, resumed: the one change of a rollout.

        ``trigger_tags`` maps container -> ImageStreamTag ``is:tag`` to pin its image trigger to.
        """
        body = copy.deepcopy(obj)
        for container in _containers(body["spec"]["template"]):
            if container["name"] in images:
                container["image"] = images[container["name"]]
        body["spec"]["paused"] = False
        return body

    def with_state(self, obj: Obj, state: VerifiedState) -> Obj:
        """A copy of ``obj`` returned to ``state``: template (and triggers), resumed."""
        body = copy.deepcopy(obj)
        body["spec"]["template"] = copy.deepcopy(state.template)
        body["spec"]["paused"] = False
        return body


class DeploymentConfigKind(Kind):
    kind = DC
    resource = DEPLOYMENT_CONFIGS
    revisions = REPLICATION_CONTROLLERS
    aliases = ("dc", "dcs", "deploymentconfig", "deploymentconfigs")

    def revision(self, obj: Obj) -> int:
        return int(obj.get("status", {}).get("latestVersion", 0) or 0)

    def triggers(self, obj: Obj) -> list[Obj] | None:
        triggers = obj.get("spec", {}).get("triggers")
        return copy.deepcopy(triggers) if triggers is not None else None

    def owned(self, obj: Obj, revisions: Iterable[Obj]) -> list[Obj]:
        name = obj["metadata"]["name"]
        mine = [
            r
            for r in revisions
            if _owned_by(r, obj) or r.get("metadata", {}).get("labels", {}).get(DC_NAME_LABEL) == name
        ]
        return sorted(mine, key=self.revision_number, reverse=True)

    def revision_number(self, rev: Obj) -> int:
        value = rev.get("metadata", {}).get("annotations", {}).get(readiness.DC_VERSION_ANNOTATION, "0")
        return int(value) if str(value).isdigit() else 0

    def revision_template(self, rev: Obj) -> Obj | None:
        return readiness.rc_template(rev)

    def is_complete_revision(self, rev: Obj) -> bool:
        return bool(
            rev.get("metadata", {}).get("annotations", {}).get(readiness.PHASE_ANNOTATION) == "Complete"
        )

    def revision_state(self, rev: Obj) -> VerifiedState | None:
        state = super().revision_state(rev)
        config = encoded_config(rev)
        triggers = config.get("spec", {}).get("triggers") if isinstance(config, dict) else None
        if state is None or triggers is None:
            return state
        return VerifiedState(
            template=state.template,
            triggers=copy.deepcopy(triggers),
            revision=state.revision,
            images=state.images,
            paused=False,
        )

    def _latest(self, obj: Obj, revisions: list[Obj]) -> Obj | None:
        wanted = f"{obj['metadata']['name']}-{self.revision(obj)}"
        return next((r for r in revisions if r["metadata"]["name"] == wanted), None)

    def progress(self, obj: Obj, revisions: list[Obj], *, since: str = "") -> Progress:
        return readiness.dc_progress(obj, self._latest(obj, revisions))

    def new_revision(self, obj: Obj, revisions: list[Obj]) -> Obj | None:
        latest = self._latest(obj, revisions)
        if latest is not None and readiness.rc_template(latest) == obj.get("spec", {}).get("template"):
            return latest
        return None

    def deadline(self, obj: Obj) -> int:
        strategy = obj.get("spec", {}).get("strategy", {}) or {}
        params = (
            strategy.get("recreateParams" if strategy.get("type") == "Recreate" else "rollingParams") or {}
        )
        return int(params.get("timeoutSeconds") or DEFAULT_DEADLINE)

    def rollout_blocker(self, obj: Obj) -> str | None:
        triggers = obj.get("spec", {}).get("triggers")
        if triggers is not None and not any(t.get("type") == "ConfigChange" for t in triggers):
            return "has no ConfigChange trigger, so a changed template would not roll out by itself"
        return None

    def with_images(self, obj: Obj, images: dict[str, str], *, trigger_tags: dict[str, str]) -> Obj:
        body = super().with_images(obj, images, trigger_tags=trigger_tags)
        for trigger in body["spec"].get("triggers") or []:
            params = trigger.get("imageChangeParams")
            if trigger.get("type") != "ImageChange" or not params:
                continue
            covered = [c for c in params.get("containerNames", []) if c in images]
            if not covered:
                continue
            tag = next((trigger_tags[c] for c in covered if c in trigger_tags), None)
            if tag is not None:
                # Pin the trigger to the promoted tag; lastTriggeredImage = the digest we set, so
                # the trigger controller sees nothing new to do.
                params["from"] = {**params.get("from", {}), "name": tag}
                params["from"].pop("namespace", None)
                params["lastTriggeredImage"] = images[covered[0]]
            else:
                # An automatic trigger would overwrite the pinned image with its tag's: make it manual.
                params["automatic"] = False
        return body

    def with_state(self, obj: Obj, state: VerifiedState) -> Obj:
        body = super().with_state(obj, state)
        if state.triggers is not None:
            body["spec"]["triggers"] = copy.deepcopy(state.triggers)
        return body


class DeploymentKind(Kind):
    kind = DEPLOYMENT
    resource = DEPLOYMENTS
    revisions = REPLICA_SETS
    aliases = ("deploy", "deploys", "deployment", "deployments")

    def revision(self, obj: Obj) -> int:
        value = obj.get("metadata", {}).get("annotations", {}).get(readiness.RS_REVISION_ANNOTATION, "0")
        return int(value) if str(value).isdigit() else 0

    def revision_number(self, rev: Obj) -> int:
        return self.revision(rev)

    def revision_template(self, rev: Obj) -> Obj | None:
        template = rev.get("spec", {}).get("template")
        return _without_hash(template) if isinstance(template, dict) else None

    def is_complete_revision(self, rev: Obj) -> bool:
        return int(rev.get("status", {}).get("availableReplicas", 0) or 0) > 0

    def was_complete(self, rev: Obj) -> bool:
        # A ReplicaSet keeps no record of having completed; `kubectl rollout undo` returns to any.
        return True

    def progress(self, obj: Obj, revisions: list[Obj], *, since: str = "") -> Progress:
        return readiness.deployment_progress(obj, since=since)

    def new_revision(self, obj: Obj, revisions: list[Obj]) -> Obj | None:
        template = obj.get("spec", {}).get("template")
        return next((r for r in revisions if self.revision_template(r) == template), None)

    def deadline(self, obj: Obj) -> int:
        return int(obj.get("spec", {}).get("progressDeadlineSeconds") or DEFAULT_DEADLINE)


KINDS: dict[str, Kind] = {DC: DeploymentConfigKind(), DEPLOYMENT: DeploymentKind()}
_BY_ALIAS = {alias: k for k in KINDS.values() for alias in k.aliases}


def kind_of(ref: WorkloadRef | str) -> Kind:
    """The `Kind` for a WorkloadRef, a kind name or an alias (``dc``, ``deploy`` ...)."""
    name = ref.kind if isinstance(ref, WorkloadRef) else ref
    found = KINDS.get(name) or _BY_ALIAS.get(name.lower())
    if found is None:
        raise KeyError(name)
    return found


def pods_of_revision(rev: Obj, pods: Iterable[Obj]) -> list[Obj]:
    """Pods a revision object (RC or ReplicaSet) owns."""
    return [p for p in pods if _owned_by(p, rev)]


def encoded_config(rev: Obj) -> Any:
    """The DC as it was for an RC's revision (None for ReplicaSets)."""
    text = rev.get("metadata", {}).get("annotations", {}).get(readiness.ENCODED_DC_ANNOTATION)
    return json.loads(text) if text else None
