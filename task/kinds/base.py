"""What every kind of workload shares, and the `Kind` interface that holds how they differ (pure, no I/O).

A `Kind` answers every question whose answer depends on the workload's kind: where its revisions and
triggers live, how its revisions are numbered, when its rollout is complete (its readiness predicate,
returning a reason), its deadline, when a rollout is hopeless (pods that cannot be created), and how
rollguard's changes are written into it. Callers ask a `Kind` and never test which one they hold; each
kind's module (`deploymentconfig`, `deployment`) holds its own quirks, `triggers` the image-trigger
rules; its names are its row of `rollguard.core.structs.KIND_NAMES`.
"""

from __future__ import annotations

import copy
import datetime as dt
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from rollguard.core.resources import Resource
from rollguard.core.structs import Obj, Progress, RolloutPhase, Snapshot, VerifiedState, WorkloadRef
from rollguard.kinds import triggers
from rollguard.kinds.causes import CHANGE_CAUSE, Recorded
from rollguard.kinds.triggers import ImageTrigger

DEFAULT_DEADLINE = 600
DC_NAME_LABEL = "openshift.io/deployment-config.name"
HASH_LABEL = "pod-template-hash"


def containers_of(template: Obj) -> list[Obj]:
    """Every container of a pod template that has an image rollguard may set: init containers first.

    Names are unique across both lists (the API server validates it), so one name finds one container.
    """
    spec = template.get("spec", {})
    containers: list[Obj] = [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]
    return containers


def images_of(template: Obj) -> dict[str, str]:
    """Container name -> image of a pod template (init containers included)."""
    return {c["name"]: c.get("image", "") for c in containers_of(template)}


@dataclass(frozen=True)
class ContainerNames:
    """A pod template's containers by name, as a ``TARGET[/CONTAINER]`` finds them."""

    regular: tuple[str, ...]
    init: tuple[str, ...] = ()

    @classmethod
    def of(cls, template: Obj) -> ContainerNames:
        spec = template.get("spec", {})
        return cls(
            regular=tuple(c["name"] for c in spec.get("containers") or []),
            init=tuple(c["name"] for c in spec.get("initContainers") or []),
        )

    def find(self, wanted: str | None) -> str | None:
        """The container ``wanted`` names (init or regular), or without a name the only regular one."""
        if wanted is None:
            return self.regular[0] if len(self.regular) == 1 else None
        return wanted if wanted in self.regular or wanted in self.init else None

    def listing(self) -> str:
        """``app, sidecar; init containers: migrate`` for a message."""
        text = ", ".join(self.regular) or "none"
        return text + (f"; init containers: {', '.join(self.init)}" if self.init else "")


def pick(obj: Any, keys: Iterable[str]) -> Obj:
    """The entries of ``obj`` (a dict, else nothing) whose keys are among ``keys``."""
    if not isinstance(obj, dict):
        return {}
    return {k: obj[k] for k in keys if k in obj}


def owned_by(obj: Obj, owner: Obj) -> bool:
    uid = owner.get("metadata", {}).get("uid")
    return any(ref.get("uid") == uid for ref in obj.get("metadata", {}).get("ownerReferences", []) or [])


def controlled_by(obj: Obj, owner: Obj) -> bool:
    """Whether ``owner`` is ``obj``'s controller (not merely one of its owners)."""
    uid = owner.get("metadata", {}).get("uid")
    return any(
        ref.get("uid") == uid and ref.get("controller")
        for ref in obj.get("metadata", {}).get("ownerReferences", []) or []
    )


def pods_of_revision(rev: Obj, pods: Iterable[Obj]) -> list[Obj]:
    """The pods a revision object (RC or ReplicaSet) runs: those it controls.

    A DC's deployer and hook pods are owned by its RC too, but not controlled by it (openshift-controller-
    manager pkg/apps/deployer/deployer_controller.go sets a plain ownerReference): they are never counted
    among a revision's pods, its readiness or its crashes.
    """
    return [p for p in pods if controlled_by(p, rev)]


# RFC 3339 (the API's timestamps) or Go's time.String() ("2006-01-02 15:04:05.999 -0700 MST"), which
# OpenShift writes into the deployer-pod annotations of RCs
_TIME = re.compile(r"(\d{4}-\d\d-\d\d)[T ](\d\d:\d\d:\d\d)(?:\.\d+)?\s*(Z|[+-]\d\d:?\d\d)?")


def selector_text(selector: Any) -> str:
    """A LabelSelector (matchLabels, matchExpressions) as a label selector string ("" when empty)."""
    if not isinstance(selector, dict):
        return ""
    parts = [f"{k}={v}" for k, v in sorted((selector.get("matchLabels") or {}).items())]
    for expr in selector.get("matchExpressions") or []:
        key, op, values = expr.get("key", ""), expr.get("operator", ""), expr.get("values") or []
        if op == "In":
            parts.append(f"{key} in ({','.join(values)})")
        elif op == "NotIn":
            parts.append(f"{key} notin ({','.join(values)})")
        elif op == "Exists":
            parts.append(key)
        elif op == "DoesNotExist":
            parts.append(f"!{key}")
    return ",".join(parts)


def parse_time(text: str | None) -> dt.datetime | None:
    """An RFC 3339 or Go ``time.String()`` timestamp (to the second), or None."""
    m = _TIME.match(text or "")
    if not m:
        return None
    try:
        at = dt.datetime.strptime(f"{m[1]} {m[2]}", "%Y-%m-%d %H:%M:%S").replace(tzinfo=dt.UTC)
    except ValueError:
        return None
    zone = m[3] or "Z"
    if zone != "Z":
        sign = 1 if zone[0] == "+" else -1
        digits = zone[1:].replace(":", "")
        at -= sign * dt.timedelta(hours=int(digits[:2]), minutes=int(digits[2:]))
    return at


def as_int(value: Any) -> int:
    try:
        return int(value or 0)
    except (TypeError, ValueError):
        return 0


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


class Kind:
    """Behaviour shared by every kind; each subclass holds one kind's quirks."""

    kind: str  # the API kind, e.g. DeploymentConfig
    noun: str  # how messages name it, e.g. DC
    resource: Resource
    revisions: Resource
    aliases: tuple[str, ...]  # the kind's row of `rollguard.core.structs.KIND_NAMES`
    # Keys the kind's controllers write into a revision's pod template (a diff of templates drops them)
    template_noise_labels: tuple[str, ...] = ()
    template_noise_annotations: tuple[str, ...] = ()
    # Its API may be missing from a cluster (DCs without OpenShift): a 404 on listing means "none here".
    optional_api: bool = False
    revision_label: str | None = None  # a label its revision objects carry its name in, if any
    annotations: tuple[str, ...] = ()  # the workload's annotations its rules read
    revision_annotations: tuple[str, ...] = ()  # its revision objects' annotations its rules read
    # The API type of each part of the object that a published schema may leave open (path -> OpenAPI
    # definition): a manifest's fields are checked against it (rollguard.plan.schema).
    schema_parts: dict[str, str] = {"metadata": "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}

    # -- reading -------------------------------------------------------------------------------------

    def ref(self, obj: Obj) -> WorkloadRef:
        return WorkloadRef(self.kind, obj["metadata"]["name"])

    def snapshot(self, obj: Obj) -> Snapshot:
        meta, spec = obj["metadata"], obj.get("spec", {})
        template = spec.get("template", {})
        return Snapshot(
            ref=self.ref(obj),
            namespace=meta.get("namespace", ""),
            resource_version=meta.get("resourceVersion", ""),
            generation=int(meta.get("generation", 0)),
            paused=bool(spec.get("paused", False)),
            revision=self.revision(obj),
            replicas=int(spec.get("replicas", 1) if spec.get("replicas") is not None else 1),
            images=images_of(template),
            template=template,
            triggers=self.triggers(obj),
            # the object's own (nothing changes a snapshot's labels): a copy per workload was ~2 MiB of
            # what the TUI holds at 10,000 workloads, where the object's are shared (`rollguard.cluster.reduce`)
            labels=meta.get("labels") or {},
            raw=obj,
        )

    def pod_selector(self, obj: Obj) -> str:
        """Its pod selector as a label selector string ("" when it selects by no label)."""
        return selector_text(obj.get("spec", {}).get("selector"))

    def revision(self, obj: Obj) -> int:
        """The workload's current revision number."""
        raise NotImplementedError

    def triggers(self, obj: Obj) -> list[Obj] | None:
        """Its triggers as stored (what a revert restores), or None when the kind keeps none."""
        return None

    def image_triggers(self, obj: Obj) -> list[ImageTrigger]:
        """Its image triggers, parsed."""
        return []

    def trigger_texts(self, obj: Obj) -> tuple[str, ...]:
        """Every trigger in a few words (status, diffs, the TUI)."""
        return tuple(t.text() for t in self.image_triggers(obj))

    def trigger_changes(self, before: Obj, after: Obj, *, reasons: dict[str, str] | None = None) -> list[str]:
        """What writing ``after`` over ``before`` does to its image triggers, one line per side effect."""
        return triggers.changes(
            self.image_triggers(before),
            self.image_triggers(after),
            key=self.ref(before).key,
            reasons=reasons,
            namespace=str(before.get("metadata", {}).get("namespace", "")),
        )

    def owned(self, obj: Obj, revisions: Iterable[Obj]) -> list[Obj]:
        """The workload's revision objects (RCs or ReplicaSets), newest first."""
        mine = [r for r in revisions if owned_by(r, obj)]
        return sorted(mine, key=self.revision_number, reverse=True)

    def revision_number(self, rev: Obj) -> int:
        raise NotImplementedError

    def revision_template(self, rev: Obj) -> Obj | None:
        """The workload's pod template a revision object runs."""
        raise NotImplementedError

    def revision_status(self, rev: Obj, *, newest: bool) -> str:
        """One word for a revision's state (the history shown by status and the TUI)."""
        raise NotImplementedError

    def change_cause(self, rev: Obj) -> str:
        """The ``kubernetes.io/change-cause`` its workload carried when revision ``rev`` was made ("" when
        none): a ReplicaSet carries it itself (the Deployment controller copies its Deployment's
        annotations onto it); a kind that keeps its workload elsewhere in the revision says so."""
        return str(((rev.get("metadata") or {}).get("annotations") or {}).get(CHANGE_CAUSE) or "")

    def recorded_cause(self, rev: Obj) -> Recorded | None:
        """The cause the platform recorded in revision ``rev`` itself, if it records one (a ReplicaSet
        keeps none: `rollguard.kinds.revision_causes` compares templates)."""
        return None

    def trigger_source(self, rev: Obj, container: str, image: str) -> str:
        """The image trigger that set ``container`` to ``image`` in revision ``rev`` ("" when none tells:
        the image was set some other way, or the kind records no trigger's last image)."""
        return ""

    def next_revision(self, obj: Obj, body: Obj, revisions: list[Obj]) -> int | None:
        """The number of the revision that writing ``body`` over ``obj`` starts, None when the write starts
        no rollout (a resume with nothing to roll out, a scale, a paused body). ``revisions``: its revision
        objects, newest first. rollguard's change-cause names it (`rollguard.kinds.causes`)."""
        raise NotImplementedError

    def slim_revision(self, rev: Obj, *, metadata: Obj) -> Obj:
        """A revision object cut to what the kind's rules read, with the slim ``metadata`` given
        (`rollguard.cluster.reduce`: read-only views keep a fraction of what the API sends)."""
        raise NotImplementedError

    # -- completion --------------------------------------------------------------------------------

    def progress(self, obj: Obj, revisions: list[Obj], *, since: str = "") -> Progress:
        """Where its current template's rollout stands; ``since``: when we wrote it (if we did)."""
        raise NotImplementedError

    def new_revision(self, obj: Obj, revisions: list[Obj]) -> Obj | None:
        """The revision object that runs the workload's current template, if any yet."""
        raise NotImplementedError

    def deadline(self, obj: Obj) -> int:
        """Seconds the platform gives a rollout before calling it failed."""
        raise NotImplementedError

    def rollout_start(self, obj: Obj, revisions: list[Obj]) -> dt.datetime | None:
        """When its current rollout started (its deadline counts from there), if known."""
        raise NotImplementedError

    def evidence_pending(self, obj: Obj, revisions: list[Obj], pods: list[Obj]) -> bool:
        """Whether a failure the platform declared still waits for the pod that says how (e.g. a DC's
        deployer pod whose exit has not reached our watch yet: its own stream may lag the RC's)."""
        return False

    def explain(self, obj: Obj, revisions: list[Obj], pods: list[Obj], progress: Progress) -> Progress:
        """``progress`` with what the revisions' other pods tell (all pods the revisions own).

        A kind whose rollouts run in pods of their own (a DC's deployer pod) says here how such a pod
        failed, or that it cannot start; other kinds have nothing to add.
        """
        return progress

    def comparable_spec(self, obj: Obj) -> Obj:
        """Its spec as the API would store it: what a write must match to count as landed.

        The API server drops fields holding their zero value (``paused: false``) and fills some in;
        comparing raw bodies would take a retried write that did land for someone else's edit.
        """
        spec = copy.deepcopy(obj.get("spec") or {})
        if not spec.get("paused"):
            spec.pop("paused", None)
        return spec

    def edit_spec(self, obj: Obj) -> Obj:
        """Its spec as someone else's edit is judged: `comparable_spec` without ``replicas``.

        An HPA, `oc scale` or `kubectl scale` writes only the replica count (the scale subresource): that
        is the workload being scaled, not edited. A run writes its change over the new count and keeps it
        (`scale_note` says so in the report); only an edit of anything else is "changed by someone else".
        """
        spec = self.comparable_spec(obj)
        spec.pop("replicas", None)
        return spec

    def replicas(self, obj: Obj) -> int:
        """Its desired replica count (``spec.replicas``; 1 when unset, the API's default)."""
        value = (obj.get("spec") or {}).get("replicas")
        return 1 if value is None else as_int(value)

    def desired_running(self, obj: Obj) -> int:
        """How many pods it should run once no rollout runs (what `unavailable` is judged against)."""
        return self.replicas(obj)

    def scale_note(self, *, meant: int | None, live: Obj) -> str | None:
        """The report's note when someone else scaled the workload during the run (an HPA, `oc scale`):
        ``meant`` is the count the run's own write left (its preflight's, or its manifest's)."""
        have = self.replicas(live)
        if meant is None or have == meant:
            return None
        return f"replicas changed by someone else during the run ({meant} -> {have}): kept"

    def serving(self, obj: Obj, revisions: list[Obj]) -> Progress:
        """Whether it runs as many ready pods as it should (`desired_running`), counted on its revision
        objects (RCs or ReplicaSets, both keep ``status.readyReplicas``): COMPLETE, else PROGRESSING with
        how many are ready. `progress` says a rollout ended; a DC scaled up with no rollout is complete at
        once by it, while its pods are still starting: this is what serving traffic means."""
        want = self.desired_running(obj)
        ready = sum(as_int((r.get("status") or {}).get("readyReplicas") or 0) for r in revisions)
        name = self.ref(obj).key
        if ready >= want:
            return Progress(
                RolloutPhase.COMPLETE, f"{name}: {ready} of {want} pods ready", self.revision(obj)
            )
        return Progress(RolloutPhase.PROGRESSING, f"{name}: {ready} of {want} pods ready", self.revision(obj))

    def settled(self, obj: Obj) -> bool:
        """Its rollout ended and it is now merely short of available pods (unavailable, not progressing)."""
        return False

    def is_complete_revision(self, rev: Obj) -> bool:
        raise NotImplementedError

    def revision_failure(self, rev: Obj) -> str | None:
        """How a revision that never ran complete ended (``failed``, ``cancelled``), as the kind records it."""
        return None  # e.g. a ReplicaSet keeps no such record: every old revision is eligible, as for kubectl

    def deployer_pod(self, rev: Obj) -> str | None:
        """The pod whose log says how revision ``rev``'s rollout goes or went, when the revision has no pods
        of its own to show; None when the kind runs no such pod (a ReplicaSet's rollout is the controller's)."""
        return None

    def was_complete(self, rev: Obj) -> bool:
        """Whether a revision once ran complete, so a revert may return to it."""
        return self.is_complete_revision(rev)

    def start_request(self, obj: Obj, body: Obj, revisions: list[Obj]) -> str | None:
        """When writing ``body`` over ``obj`` would start no rollout by itself, what the write also asks
        for to start one (a note for the report and the diff), else None."""
        return None

    def with_start_request(self, obj: Obj, body: Obj, revisions: list[Obj]) -> Obj:
        """``body`` (a write over ``obj`` meant to roll out) with the `start_request`, if any, in it."""
        return body

    # -- states a revert returns to ----------------------------------------------------------------

    def verified_state(self, obj: Obj, revisions: list[Obj]) -> VerifiedState:
        """What runs now and was seen complete: the state a revert returns to."""
        progress = self.progress(obj, revisions)
        template = obj.get("spec", {}).get("template", {})
        revision = self.revision(obj)
        if progress.phase is not RolloutPhase.COMPLETE:
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

    def revision_state(self, rev: Obj) -> VerifiedState | None:
        """The state a revert to this revision restores (template, and the triggers of then if kept)."""
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

    def running_state(self, obj: Obj, revisions: list[Obj]) -> VerifiedState:
        """What the workload runs: its newest complete revision, with that revision's triggers."""
        rev = next((r for r in revisions if self.is_complete_revision(r)), None)
        state = self.revision_state(rev) if rev is not None else None
        return state or self.verified_state(obj, revisions)

    # -- writing -----------------------------------------------------------------------------------

    def with_images(self, obj: Obj, images: dict[str, str], *, trigger_tags: dict[str, str]) -> Obj:
        """A copy of ``obj`` with new container images, resumed: the one change of a rollout.

        ``trigger_tags`` maps container -> ImageStreamTag ``is:tag`` to pin its image trigger to.
        """
        body = copy.deepcopy(obj)
        for container in containers_of(body["spec"]["template"]):
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

    def with_manual_triggers(self, obj: Obj, containers: set[str]) -> Obj:
        """A copy of ``obj`` whose image triggers feeding ``containers`` no longer fire by themselves."""
        return copy.deepcopy(obj)
