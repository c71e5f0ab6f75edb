"""Preflight of the repair commands: what `resume`, `revert` or `redeploy` would change (read-only).

`plan_repair` validates the input and the cluster like the rollout's preflight (exit 2 on any problem,
nothing changed) and returns a `RepairPlan`: per workload a `Change` with images and paused before and
after, the diff `--dry-run` prints and the TUI's confirmation dialog shows.
"""

from __future__ import annotations

import copy
import dataclasses
import datetime as dt
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from rollguard.client import Client
from rollguard.errors import ApiError, Forbidden, NotFound, RefusedError
from rollguard.inputs import parse_namespace, parse_selector, parse_workload
from rollguard.journal import JOURNAL_LABEL, Journal, group_name
from rollguard.kinds import Kind, Owners, images_of, kind_of, triggers
from rollguard.kinds.triggers import StreamKey, Streams
from rollguard.lock import GroupLock
from rollguard.preflight import (
    Plan,
    WorkloadPlan,
    check_access,
    check_namespace,
    list_group,
    rollout_permissions,
)
from rollguard.resources import CONFIG_MAPS, IMAGE_STREAMS, LEASES, Resource
from rollguard.state import Group, group_for, read_groups
from rollguard.structs import Obj, VerifiedState, WorkloadRef

ACTIONS = ("resume", "revert", "redeploy")
REDEPLOYED_AT = "rollguard.io/redeployed-at"


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

    @property
    def key(self) -> str:
        return self.ref.key

    def diff(self) -> list[str]:
        """The change as diff lines: ``-`` before, ``+`` after, two spaces unchanged."""
        head = f"{self.namespace}/{self.key}: {self.action}"
        if self.target_revision is not None:
            head += f" to revision {self.target_revision}"
        lines = [head + ("" if self.changed else " (no change)")]
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
    workloads: Plan  # the engine's view: snapshots, baselines (a failed repair returns there), revisions
    targets: dict[str, VerifiedState] = field(default_factory=dict)  # revert: key -> state to restore
    manual_triggers: dict[str, set[str]] = field(default_factory=dict)  # key -> containers to set manual
    stamp: str = ""  # redeploy: the annotation value (the same on every retry)

    @property
    def grouped(self) -> bool:
        return bool(self.selector)

    def diff(self) -> list[str]:
        lines: list[str] = []
        for change in self.changes:
            lines += change.diff()
        return lines

    def body(self, key: str, obj: Obj) -> Obj:
        """The repaired version of the workload ``obj`` (the current one, so retries after a conflict work)."""
        wp = next(w for w in self.workloads.workloads if w.key == key)
        if self.action == "revert":
            body = wp.kind.with_state(obj, self.targets[key])
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


# -- preflight --------------------------------------------------------------------------------------------


def parse_targets(targets: Iterable[str | WorkloadRef]) -> list[WorkloadRef]:
    refs: list[WorkloadRef] = []
    for target in targets:
        if isinstance(target, WorkloadRef):
            ref = target
        else:
            ref, container = parse_workload(target)
            if container is not None:
                raise RefusedError(
                    f"target {target!r} names a container",
                    fix="repairs act on workloads: dc/NAME or deployment/NAME",
                )
        if ref not in refs:
            refs.append(ref)
    return refs


def _resolve(
    client: Client,
    namespace: str,
    refs: list[WorkloadRef],
    selector: str | None,
    listed: list[tuple[Kind, Obj]],
) -> tuple[list[tuple[Kind, Obj]], list[Group], Group | None, str, bool]:
    """(workloads, groups of the namespace, their group, its selector, whole group?) or RefusedError."""
    try:
        groups = read_groups(
            namespace,
            client.list(CONFIG_MAPS, namespace=namespace, selector=f"{JOURNAL_LABEL}=true").get("items", []),
            client.list(LEASES, namespace=namespace).get("items", []),
            now=dt.datetime.now(dt.UTC),
        )
    except Forbidden as exc:
        raise RefusedError(
            f"not allowed to list the rollout journals and leases in namespace {namespace!r}",
            fix="grant 'list' on configmaps and leases.coordination.k8s.io (see tekton/rbac.yaml)",
        ) from exc
    if selector is not None:
        return (
            listed,
            groups,
            next((g for g in groups if g.name == group_name(selector)), None),
            selector,
            True,
        )
    found = []
    for ref in refs:
        kind = kind_of(ref)
        try:
            found.append((kind, client.get(kind.resource, ref.name, namespace=namespace)))
        except NotFound:
            raise RefusedError(
                f"{ref.key} does not exist in namespace {namespace!r}",
                fix="check the name and the namespace (kubectl get dc,deploy -n NS)",
            ) from None
    owners: dict[str, Group | None] = {}
    for kind, obj in found:
        group = group_for(_ref(kind, obj), _labels(obj), groups)
        owners[group.name if group else ""] = group
    if len(owners) > 1:
        names = ", ".join(sorted(g.selector if g else "(none)" for g in owners.values()))
        raise RefusedError(
            f"the targets belong to different rollout groups ({names})",
            fix="repair one group at a time (or pass -l SELECTOR for a whole group)",
        )
    group = next(iter(owners.values()))
    if group is None:
        return found, groups, None, "", False
    members = {_ref(k, o) for k, o in list_group(client, namespace, group.selector)}
    return found, groups, group, group.selector, members <= set(refs)


def _ref(kind: Kind, obj: Obj) -> WorkloadRef:
    return WorkloadRef(kind.kind, obj["metadata"]["name"])


def _labels(obj: Obj) -> dict[str, str]:
    return dict(obj.get("metadata", {}).get("labels") or {})


def revision_failure(kind: Kind, rev: Obj) -> str | None:
    """'failed' or 'cancelled' for a revision that never ran complete, as its kind records it; else None.

    (A ReplicaSet keeps no such record: a Deployment's old revisions are all eligible, as for kubectl.)
    """
    status = kind.revision_status(rev, newest=False)
    return status.lower() if status in ("Failed", "Cancelled") else None


def revert_target(
    kind: Kind,
    obj: Obj,
    revisions: list[Obj],
    *,
    verified: VerifiedState | None,
    to_revision: int | None,
    allow_failed: bool = False,
) -> tuple[VerifiedState, str]:
    """The state a revert restores and where it comes from: ``--to-revision``, else the journal's last
    verified state, else (paused) the revision it runs, else the previous complete revision."""
    key = _ref(kind, obj).key
    numbers = ", ".join(str(kind.revision_number(r)) for r in revisions) or "none"
    if to_revision is not None:
        rev = next((r for r in revisions if kind.revision_number(r) == to_revision), None)
        state = kind.revision_state(rev) if rev is not None else None
        if state is None:
            raise RefusedError(
                f"{key} has no revision {to_revision} to revert to", fix=f"its revisions are: {numbers}"
            )
        failure = revision_failure(kind, rev) if rev is not None else None
        if failure and not allow_failed:
            good = [str(kind.revision_number(r)) for r in revisions if kind.is_complete_revision(r)]
            raise RefusedError(
                f"{key} revision {to_revision} {failure} (it never ran complete): reverting to it would "
                "restore a state that did not work",
                fix=f"pick a complete revision ({', '.join(good) or 'none'}) or pass --allow-failed",
            )
        if failure:
            return state, f"revision {to_revision} ({failure}; accepted with --allow-failed)"
        return state, f"revision {to_revision}"
    if verified is not None:
        return verified, f"the journal's last verified state (revision {verified.revision})"
    if obj.get("spec", {}).get("paused"):
        return kind.running_state(obj, revisions), "the revision it runs (its un-rolled changes are dropped)"
    current = kind.revision(obj)
    for rev in revisions:
        state = kind.revision_state(rev)
        if kind.revision_number(rev) < current and kind.was_complete(rev) and state is not None:
            return state, f"the previous complete revision {state.revision}"
    raise RefusedError(
        f"{key} has no earlier complete revision to revert to (revisions: {numbers})",
        fix="pass --to-revision N, or redeploy it instead",
    )


def _read_streams(
    client: Client,
    keys: Iterable[StreamKey],
    streams: dict[StreamKey, Obj | None],
    unreadable: set[StreamKey],
) -> Streams:
    for key in keys:
        if key in streams or key in unreadable:
            continue
        try:
            streams[key] = client.get(IMAGE_STREAMS, key[1], namespace=key[0])
        except NotFound:
            streams[key] = None
        except ApiError:  # e.g. forbidden: the trigger cannot be judged, so treat it as firing
            unreadable.add(key)
    return Streams(found=streams, unreadable=frozenset(unreadable))


def firing_triggers(
    client: Client,
    kind: Kind,
    namespace: str,
    body: Obj,
    streams: dict[StreamKey, Obj | None],
    unreadable: set[StreamKey],
) -> dict[str, str]:
    """Containers whose automatic image trigger would at once overwrite ``body``'s image -> that image."""
    found = kind.image_triggers(body)
    known = _read_streams(client, triggers.watched_streams(found, namespace=namespace), streams, unreadable)
    images = images_of(body.get("spec", {}).get("template", {}))
    return triggers.firing(found, images=images, streams=known, namespace=namespace)


def _same(a: Obj, b: Obj) -> bool:
    def spec(obj: Obj) -> Obj:
        s = dict(obj.get("spec", {}))
        if not s.get("paused"):
            s.pop("paused", None)
        return s

    return spec(a) == spec(b)


def permissions(action: str, namespace: str, kinds: set[str]) -> list[tuple[str, Resource, str]]:
    """What a repair of workloads of these kinds needs, as (verb, resource, namespace) (the rollout's)."""
    return rollout_permissions(namespace, kinds, promote_from=None)


def plan_repair(
    client: Client,
    *,
    action: str,
    namespace: str,
    targets: Sequence[str | WorkloadRef] = (),
    selector: str | None = None,
    to_revision: int | None = None,
    allow_failed: bool = False,
) -> RepairPlan:
    """All read-only checks of a repair; the plan of what it changes, or RefusedError (exit 2)."""
    if action not in ACTIONS:
        raise RefusedError(f"unknown repair {action!r}", fix=f"use one of {', '.join(ACTIONS)}")
    namespace = parse_namespace(namespace)
    refs = parse_targets(targets)
    if bool(refs) == (selector is not None):
        raise RefusedError(
            "name the workloads (TARGET...) or a rollout group (-l SELECTOR)"
            + (", not both" if refs else ""),
            fix=f"e.g. rollguard {action} dc/NAME -n NS, or rollguard {action} -l app=NAME -n NS",
        )
    wanted = parse_selector(selector) if selector is not None else None
    if to_revision is not None and (action != "revert" or to_revision < 1):
        raise RefusedError(
            f"--to-revision {to_revision} is not valid here", fix="revert one workload to N >= 1"
        )
    if to_revision is not None and len(refs) != 1:
        raise RefusedError("--to-revision needs exactly one workload", fix="revert one TARGET at a time")
    check_namespace(client, namespace)
    listed = list_group(client, namespace, wanted) if wanted is not None else []
    if wanted is not None and not listed:
        raise RefusedError(
            f"selector {wanted!r} matches no DeploymentConfig or Deployment in namespace {namespace!r}",
            fix="check the labels (kubectl get dc,deploy -n NS --show-labels) or the namespace",
        )
    kinds = {r.kind for r in refs} | {k.kind for k, _ in listed}
    check_access(client, permissions(action, namespace, kinds))  # before reading journals and leases
    found, groups, group, group_selector, whole = _resolve(client, namespace, refs, wanted, listed)
    if group_selector:
        GroupLock(client, namespace=namespace, name=group_name(group_selector), holder="").check()
    for kind, obj in found:  # a run on an overlapping group holds these workloads too
        other = group_for(_ref(kind, obj), _labels(obj), groups)
        if other is not None and other.lock_live:
            GroupLock(client, namespace=namespace, name=other.name, holder="").check()
    journal: Journal | None = group.journal if group else None
    carried = journal is not None and not journal.final
    all_revisions = {
        k.kind: Owners(client.list(k.revisions, namespace=namespace).get("items", []))
        for k in {k for k, _ in found}
    }
    plan = RepairPlan(
        action=action,
        namespace=namespace,
        selector=group_selector,
        whole_group=whole,
        group=group,
        changes=[],
        workloads=Plan(
            namespace=namespace,
            selector=group_selector,
            workloads=[],
            journal=journal,
            carried_forward=carried,
        ),
        stamp=dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
    )
    streams: dict[StreamKey, Obj | None] = {}
    unreadable: set[StreamKey] = set()
    for kind, obj in found:
        revisions = kind.owned(obj, all_revisions[kind.kind].candidates(obj))
        snapshot = kind.snapshot(obj)
        entry = journal.workloads.get(snapshot.ref.key) if journal else None
        baseline = entry.verified if carried and entry else kind.verified_state(obj, revisions)
        notes: list[str] = []
        target_revision = None
        if action == "revert":
            state, source = revert_target(
                kind,
                obj,
                revisions,
                verified=entry.verified if entry else None,
                to_revision=to_revision,
                allow_failed=allow_failed,
            )
            plan.targets[snapshot.ref.key] = state
            target_revision = state.revision
            notes.append(f"target: {source}")
        wp = WorkloadPlan(snapshot=snapshot, baseline=baseline, revisions=revisions)
        plan.workloads.workloads.append(wp)
        # a restored automatic trigger whose tag moved on would undo the revert at once: make it manual
        fire = (
            firing_triggers(client, kind, namespace, plan.body(wp.key, obj), streams, unreadable)
            if action == "revert"
            else {}
        )
        if fire:
            plan.manual_triggers[wp.key] = set(fire)
            notes += [
                f"trigger of {c} set to manual: its tag now points at {ref}, which would undo the revert "
                f"(re-enable: oc set triggers {wp.key} --auto)"
                for c, ref in sorted(fire.items())
            ]
        restored = kind.with_state(obj, baseline)
        back = firing_triggers(client, kind, namespace, restored, streams, unreadable)
        if back and baseline.triggers is not None:
            manual = kind.with_manual_triggers(restored, set(back))
            wp.baseline = dataclasses.replace(baseline, triggers=kind.triggers(manual))
        body = plan.body(wp.key, obj)
        changed = not _same(body, obj) or action == "redeploy"
        rolls = body["spec"]["template"] != obj["spec"]["template"] or (
            snapshot.paused and kind.new_revision(obj, revisions) is None
        )
        blocker = kind.rollout_blocker(body) if rolls else None
        if blocker:
            raise RefusedError(
                f"{wp.key} {blocker}", fix=f"add it (oc set triggers {wp.key} --from-config) first"
            )
        plan.changes.append(
            Change(
                ref=snapshot.ref,
                namespace=namespace,
                action=action,
                images_before=dict(snapshot.images),
                images_running=kind.running_state(obj, revisions).images,
                images_after=images_of(body["spec"]["template"]),
                paused_before=snapshot.paused,
                paused_after=bool(body["spec"].get("paused")),
                revision_before=snapshot.revision,
                target_revision=target_revision,
                triggers_before=kind.trigger_texts(obj),
                triggers_after=kind.trigger_texts(body),
                changed=changed,
                notes=tuple(notes),
            )
        )
    return plan
