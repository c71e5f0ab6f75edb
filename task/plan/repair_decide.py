"""The decisions of the repair commands' preflight (pure, no I/O): what was read in, a plan or a refusal out.

`repair_request` checks a repair's arguments; `rollguard.plan.repair_read.read_repair` gathers what the
cluster holds into a `RepairRead` (the workloads and their revisions, the namespace's rollout groups, the
access answers, the locks that matter, the ImageStreams their automatic triggers follow); `read_refusal`
names the first of those facts that refuses the repair, and `decide_repair` returns the `RepairPlan`: per
workload a `Change` with images, paused and triggers before and after (the diff `--dry-run` prints and
the TUI's confirmation dialog shows), the revert targets, and the triggers made manual so that a moved
tag cannot undo a revert. Every refusal and trigger rule is tested from YAML fixtures
(tests/unit/test_repair_decide.py). The request, read and plan types are `rollguard.plan.repair_types`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence

from rollguard.cluster.access import Need, first_gap, rollout_permissions
from rollguard.cluster.claims import REGISTER, ClaimHeldError, claim_live, claims_of
from rollguard.cluster.journal import WorkloadEntry, group_name
from rollguard.cluster.lock import held
from rollguard.core.errors import RefusedError
from rollguard.core.structs import EntryPhase, Obj, VerifiedState, WorkloadRef
from rollguard.kinds import Kind, images_of, triggers
from rollguard.kinds.templates import field_changes, template_changes
from rollguard.plan import merge
from rollguard.plan.inputs import parse_namespace, parse_selector, parse_workload
from rollguard.plan.repair_types import ACTIONS, Change, RepairPlan, RepairRead, RepairRequest
from rollguard.plan.rollout_decide import (
    Found,
    Plan,
    WorkloadPlan,
    listing_refusal,
    namespace_refusal,
)
from rollguard.state.assessment import group_for
from rollguard.state.model import Group


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


def repair_request(
    *,
    action: str,
    namespace: str,
    targets: Sequence[str | WorkloadRef] = (),
    selector: str | None = None,
    to_revision: int | None = None,
    allow_failed: bool = False,
) -> RepairRequest:
    """The checked arguments of a repair, or RefusedError (pure)."""
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
    return RepairRequest(
        action=action,
        namespace=namespace,
        refs=tuple(refs),
        selector=wanted,
        to_revision=to_revision,
        allow_failed=allow_failed,
    )


def permissions(action: str, namespace: str, kinds: set[str]) -> list[Need]:
    """What a repair of workloads of these kinds needs, as (verb, resource, namespace) (the rollout's)."""
    return rollout_permissions(namespace, kinds, promote_from=None)


def owning_groups(found: Iterable[Found], groups: Iterable[Group]) -> dict[str, Group | None]:
    """The rollout groups the workloads belong to, by name ("" for none)."""
    owners: dict[str, Group | None] = {}
    groups = list(groups)
    for f in found:
        group = group_for(f.ref, labels_of(f.obj), groups)
        owners[group.name if group else ""] = group
    return owners


def labels_of(obj: Obj) -> dict[str, str]:
    return dict(obj.get("metadata", {}).get("labels") or {})


def the_group(read: RepairRead) -> tuple[Group | None, str]:
    """The group the repair acts in and its selector ("" when the workloads are in none)."""
    selector = read.request.selector
    if selector is not None:
        return next((g for g in read.groups or [] if g.name == group_name(selector)), None), selector
    group = next(iter(owning_groups(read.found or [], read.groups or []).values()), None)
    return group, group.selector if group else ""


def lock_names(read: RepairRead) -> list[str]:
    """The leases to check: the group's, and those of live runs on overlapping groups."""
    _, selector = the_group(read)
    names = [group_name(selector)] if selector else []
    for f in read.found or []:  # a run on an overlapping group holds these workloads too
        other = group_for(f.ref, labels_of(f.obj), read.groups or [])
        if other is not None and other.lock_live:
            names.append(other.name)
    return names


def read_refusal(read: RepairRead) -> RefusedError | None:
    """The first fact of ``read`` that refuses the repair (in the order the facts are read), or None."""
    namespace = read.request.namespace
    if not read.namespace_found:
        return namespace_refusal(namespace)
    if read.listing is not None and read.request.selector is not None:
        refusal = listing_refusal(read.listing, namespace=namespace, selector=read.request.selector)
        if refusal is not None:
            return refusal
    if read.access is not None and (gap := first_gap(read.access)) is not None:
        return gap
    if read.groups_forbidden is not None:
        refusal = RefusedError(
            f"not allowed to list the rollout journals and leases in namespace {namespace!r}",
            fix="grant 'list' on configmaps and leases.coordination.k8s.io (see tekton/rbac.yaml)",
        )
        refusal.__cause__ = read.groups_forbidden
        return refusal
    if read.missing is not None:
        return RefusedError(
            f"{read.missing.key} does not exist in namespace {namespace!r}",
            fix="check the name and the namespace (kubectl get dc,deploy -n NS)",
        )
    if read.found is not None and read.request.selector is None:
        owners = owning_groups(read.found, read.groups or [])
        if len(owners) > 1:
            names = ", ".join(sorted(g.selector if g else "(none)" for g in owners.values()))
            return RefusedError(
                f"the targets belong to different rollout groups ({names})",
                fix="repair one group at a time (or pass -l SELECTOR for a whole group)",
            )
    if read.members is not None and read.members.forbidden is not None:
        return listing_refusal(read.members, namespace=namespace, selector="")
    for name in lock_names(read) if read.found is not None else []:
        if name in read.leases and (refusal := held(read.leases[name], lease=name, holder="")) is not None:
            return refusal
    return claim_refusal(read) if read.found is not None else None


def claim_refusal(read: RepairRead) -> RefusedError | None:
    """A workload to repair claimed by a live run the group lock does not stand for: a run of another
    group, or (no journal yet, or workloads in no group) a rollout between its lock and its first
    journal save, or a repair of named workloads. That run acts on the workload now."""
    by_name = {lease["metadata"]["name"]: lease for lease in read.lease_objects}
    claims = claims_of(by_name.get(REGISTER))
    _, selector = the_group(read)
    ours = (
        group_name(selector) if selector else ""
    )  # its live Lease refuses above; a dead one's claims are dead
    for f in read.found or []:
        claim = claims.get(f.ref.key)
        if claim is None:
            continue
        if claim.group_lease != ours and claim_live(claim, by_name.get(claim.group_lease), at=read.now):
            return ClaimHeldError(
                key=f.ref.key,
                claim=claim,
                lease=REGISTER,
                namespace=read.request.namespace,
                overlap=bool(ours and claim.selector),
            )
    return None


# -- deciding (pure) ---------------------------------------------------------------------------------------


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
    key = kind.ref(obj).key
    numbers = ", ".join(str(kind.revision_number(r)) for r in revisions) or "none"
    if to_revision is not None:
        rev = next((r for r in revisions if kind.revision_number(r) == to_revision), None)
        state = kind.revision_state(rev) if rev is not None else None
        if state is None:
            raise RefusedError(
                f"{key} has no revision {to_revision} to revert to", fix=f"its revisions are: {numbers}"
            )
        failure = kind.revision_failure(rev) if rev is not None else None
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


def _same(a: Obj, b: Obj) -> bool:
    def spec(obj: Obj) -> Obj:
        s = dict(obj.get("spec", {}))
        if not s.get("paused"):
            s.pop("paused", None)
        return s

    return spec(a) == spec(b)


def _firing(kind: Kind, body: Obj, read: RepairRead) -> dict[str, str]:
    """Containers whose automatic image trigger would at once overwrite ``body``'s image -> that image."""
    images = images_of(body.get("spec", {}).get("template", {}))
    return triggers.firing(
        kind.image_triggers(body), images=images, streams=read.streams, namespace=read.request.namespace
    )


def decide_repair(read: RepairRead) -> RepairPlan:
    """The plan of a repair from what was read (pure); raises RefusedError naming the problem and fix."""
    refusal = read_refusal(read)
    if refusal is not None:
        raise refusal
    request, namespace, action = read.request, read.request.namespace, read.request.action
    group, group_selector = the_group(read)
    if request.selector is not None:
        whole = True
    else:
        members = {f.ref for f in read.members.workloads} if read.members is not None else set()
        whole = group is not None and members <= set(request.refs)
    journal = group.journal if group else None
    carried = journal is not None and not journal.final
    plan = RepairPlan(
        action=action,
        namespace=namespace,
        selector=group_selector,
        whole_group=whole,
        group=group,
        changes=[],
        run_plan=Plan(
            namespace=namespace,
            selector=group_selector,
            workloads=[],
            journal=journal,
            carried_forward=carried,
        ),
        stamp=read.now.strftime("%Y-%m-%dT%H:%M:%SZ"),
    )
    for f in read.found or []:
        entry = journal.workloads.get(f.kind.snapshot(f.obj).ref.key) if journal else None
        created = carried and entry is not None and entry.created  # by the unfinished run (rollout -f)
        if action == "revert" and created and entry is not None and request.to_revision is None:
            _plan_deletion(plan, f, entry=entry)
        else:
            _plan_workload(plan, f, entry=entry if carried else None, journaled=entry, read=read)
    return plan


def _plan_deletion(plan: RepairPlan, f: Found, *, entry: WorkloadEntry) -> None:
    """A revert of a workload the unfinished run created (rollout -f): its last verified state is "not
    there", so the revert deletes it."""
    snapshot = f.kind.snapshot(f.obj)
    journal = plan.group.journal if plan.group else None
    wp = WorkloadPlan(
        snapshot=snapshot, baseline=entry.verified, revisions=f.revisions, remove_on_revert=True
    )
    wp.notes = [f"created by the unfinished run {journal.run_id if journal else '?'}: deleted"]
    plan.run_plan.workloads.append(wp)
    plan.changes.append(
        _change(
            f,
            namespace=plan.namespace,
            action=plan.action,
            images_after={},
            paused_after=False,
            target_revision=None,
            triggers_after=(),
            changed=True,
            notes=tuple(wp.notes),
            delete=True,
        )
    )


def _plan_workload(
    plan: RepairPlan,
    f: Found,
    *,
    entry: WorkloadEntry | None,
    journaled: WorkloadEntry | None,
    read: RepairRead,
) -> None:
    """One workload's step of the repair: its target (revert), its baseline (where a failed repair
    returns), the trigger rules, and the change as the dialog and the diff show it.

    ``entry``: its journal entry when the group's journal carries an unfinished run forward (its verified
    state is then the baseline); ``journaled``: its entry whatever the journal's state (the verified state
    a plain revert returns to)."""
    action = plan.action
    kind, obj, revisions = f.kind, f.obj, f.revisions
    snapshot = kind.snapshot(obj)
    baseline = entry.verified if entry is not None else kind.verified_state(obj, revisions)
    notes: list[str] = []
    target_revision = None
    if action == "revert":
        target_revision, said = _revert_target(
            plan, f, entry=entry, journaled=journaled, request=read.request
        )
        notes += said
    wp = WorkloadPlan(snapshot=snapshot, baseline=baseline, revisions=revisions)
    plan.run_plan.workloads.append(wp)
    reasons = _keep_triggers_from_undoing(plan, wp, obj, read=read)
    body = plan.body(wp.key, obj)
    notes += kind.trigger_changes(obj, body, reasons=reasons)  # every side effect on its triggers
    if action == "revert":  # what comes back besides images (env, resources, labels a manifest set)
        notes += _revert_notes(obj, body)
    changed = not _same(body, obj) or action == "redeploy"
    start = kind.start_request(obj, body, revisions) if changed else None
    notes += [start] if start else []  # a rollout its triggers would not start: asked for
    wp.notes = list(notes)  # the report's notes
    plan.changes.append(
        _change(
            f,
            namespace=plan.namespace,
            action=action,
            images_after=images_of(body["spec"]["template"]),
            paused_after=bool(body["spec"].get("paused")),
            target_revision=target_revision,
            triggers_after=kind.trigger_texts(body),
            changed=changed,
            notes=tuple(notes),
        )
    )


def _revert_target(
    plan: RepairPlan,
    f: Found,
    *,
    entry: WorkloadEntry | None,
    journaled: WorkloadEntry | None,
    request: RepairRequest,
) -> tuple[int, list[str]]:
    """A revert's target for one workload, recorded in ``plan`` (and what a manifest changed, to restore
    with it): its revision, and the notes that say which one and why, and whose edit it discards."""
    state, source = revert_target(
        f.kind,
        f.obj,
        f.revisions,
        verified=journaled.verified if journaled else None,
        to_revision=request.to_revision,
        allow_failed=request.allow_failed,
    )
    key = f.ref.key
    plan.targets[key] = state
    if entry is not None and entry.restore and request.to_revision is None:
        plan.restores[key] = entry.restore
    notes = [f"target: {source}"]
    journal = plan.group.journal if plan.group else None
    discards = discarded_edit(journaled, live=f.obj, target=state, run_id=journal.run_id if journal else "")
    return state.revision, notes + ([discards] if discards else [])


def _keep_triggers_from_undoing(
    plan: RepairPlan, wp: WorkloadPlan, obj: Obj, *, read: RepairRead
) -> dict[str, str]:
    """An automatic trigger whose tag moved on would undo a revert at once: made manual (in the plan's
    ``manual_triggers``), and likewise in the baseline a failed repair returns to; why, per container."""
    kind = wp.kind
    fire = _firing(kind, plan.body(wp.key, obj), read) if plan.action == "revert" else {}
    if fire:
        plan.manual_triggers[wp.key] = set(fire)
    restored = kind.with_state(obj, wp.baseline)  # where a failed repair returns: guarded the same way
    back = _firing(kind, restored, read)
    if back and wp.baseline.triggers is not None:
        manual = kind.with_manual_triggers(restored, set(back))
        wp.baseline = dataclasses.replace(wp.baseline, triggers=kind.triggers(manual))
    return {c: f"its tag now points at {ref}, which would undo the revert" for c, ref in fire.items()}


DISCARDED_SHOWN = 3  # fields of a discarded edit named; the rest counted


def discarded_edit(
    entry: WorkloadEntry | None, *, live: Obj, target: VerifiedState, run_id: str
) -> str | None:
    """The note of a revert that throws away someone else's edit the journal recorded, else None.

    A run that met a colleague's edit (a hotfix) left it as they set it and recorded it: the entry is
    ``edited`` and the group `inconsistent`. Reverting the workload to ``target`` then discards that edit;
    the confirmation (the TUI's dialog, ``--dry-run``'s diff, the run's lines, the report's notes and its
    Event: all print this note) names each field with its old value and theirs."""
    if entry is None or entry.phase is not EntryPhase.EDITED:
        return None
    ours = {"spec": {"template": target.template}}
    theirs = {"spec": {"template": (live.get("spec") or {}).get("template") or {}}}
    fields = [
        line.removeprefix("spec.template.spec.").removeprefix("spec.template.")
        for line in field_changes(ours, theirs, width=400)
    ]
    if not fields:
        return None  # it already runs the target: nothing of theirs is lost
    shown = ", ".join(fields[:DISCARDED_SHOWN])
    more = f", and {len(fields) - DISCARDED_SHOWN} more" if len(fields) > DISCARDED_SHOWN else ""
    during = f" during run {run_id}" if run_id else ""
    # one note: no "; " in it (the TUI and the Event join a workload's notes with it)
    return (
        f"discards the edit someone else made{during}, recorded and left as they set it (old -> theirs): "
        f"{shown}{more}"
    )


def _revert_notes(obj: Obj, body: Obj) -> list[str]:
    """What a revert brings back besides images: template fields, and spec fields a manifest set."""
    notes = []
    before_t, after_t = obj["spec"].get("template") or {}, body["spec"].get("template") or {}
    others = [c for c in template_changes(before_t, after_t, limit=6) if "->" not in c]
    if others:
        notes.append("template: " + "; ".join(others))
    put_back = [f for f in merge.changed_fields(obj, body) if f not in ("spec.template", "spec.triggers")]
    if put_back:
        notes.append("restores " + ", ".join(put_back))
    return notes


def _change(
    found: Found,
    *,
    namespace: str,
    action: str,
    images_after: dict[str, str],
    paused_after: bool,
    target_revision: int | None,
    triggers_after: tuple[str, ...],
    changed: bool,
    notes: tuple[str, ...],
    delete: bool = False,
) -> Change:
    """The `Change` of one workload: its "before" side as read (``found``), its "after" side as given."""
    kind, obj = found.kind, found.obj
    snapshot = kind.snapshot(obj)
    return Change(
        ref=snapshot.ref,
        namespace=namespace,
        action=action,
        images_before=dict(snapshot.images),
        images_running=kind.running_state(obj, found.revisions).images,
        images_after=images_after,
        paused_before=snapshot.paused,
        paused_after=paused_after,
        revision_before=snapshot.revision,
        target_revision=target_revision,
        triggers_before=kind.trigger_texts(obj),
        triggers_after=triggers_after,
        changed=changed,
        notes=notes,
        delete=delete,
    )
