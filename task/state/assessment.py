"""The state model: what is wrong with each workload, judged from the API objects alone (pure, no I/O).

Per workload every finding that applies (`paused`, `progressing`, `failed`, `stuck`, `half-rolled`,
`drifted`, `mutable-image`, `unavailable`, `overlapping`), each with a one-line reason, else `healthy`. A
workload belongs to the rollout group of a journal ConfigMap whose selector matches its labels (when
several match, it is `overlapping`: each run claims it, so only one acts on it at a time); the journal
and the group's Lease tell whether a run died mid-way and what the last successful run verified.
`rollguard.state.inventory` reads the objects; `rollguard status`, `drift-check` and the TUI show the result.
Whatever depends on a workload's kind (its readiness, deadline, triggers, revisions) it asks the
workload's `Kind` (`rollguard.kinds`).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping

from rollguard.cluster.journal import (
    SELECTOR_ANNOTATION,
    Journal,
    WorkloadEntry,
    is_part,
    parse_configmap,
    stamp_order,
)
from rollguard.cluster.lock import read_lease
from rollguard.core.errors import RefusedError
from rollguard.core.readiness import REFUSAL_GRACE, pod_doom
from rollguard.core.selectors import matches, requirements
from rollguard.core.structs import (
    DC,
    DEPLOYMENT,
    EntryPhase,
    Obj,
    Progress,
    RolloutPhase,
    RunState,
    WorkloadRef,
)
from rollguard.kinds import KINDS, Kind, Owners, images_of, kind_of, pods_of_revision
from rollguard.kinds.base import as_int, parse_time
from rollguard.kinds.templates import MOVING_TAGS, canonical, moving_tag, same_template, template_changes
from rollguard.kinds.triggers import moving
from rollguard.state.model import (
    DEFAULT_FAIL_ON,
    DRIFTED,
    FAILED,
    FINDINGS,
    HALF_ROLLED,
    HEALTHY,
    MUTABLE_IMAGE,
    OVERLAPPING,
    PAUSED,
    PROGRESSING,
    STUCK,
    UNAVAILABLE,
    Finding,
    Group,
    NamespaceState,
    PodInfo,
    RevisionInfo,
    WorkloadState,
)

__all__ = [
    "DEFAULT_FAIL_ON",
    "DRIFTED",
    "FAILED",
    "FINDINGS",
    "HALF_ROLLED",
    "HEALTHY",
    "MOVING_TAGS",
    "MUTABLE_IMAGE",
    "OVERLAPPING",
    "PAUSED",
    "PROGRESSING",
    "STUCK",
    "UNAVAILABLE",
    "Finding",
    "Group",
    "NamespaceState",
    "PodInfo",
    "RevisionInfo",
    "WorkloadState",
    "assess",
    "assess_namespace",
    "canonical",
    "drift_reference",
    "group_for",
    "matches",
    "moving_tag",
    "parse_findings",
    "read_groups",
    "selected",
    "template_changes",
]


def parse_findings(text: str) -> frozenset[str]:
    """A comma-separated list of finding names (``--fail-on``); ``all`` means every finding."""
    names = {n.strip() for n in text.split(",") if n.strip()}
    if names == {"all"}:
        return frozenset(FINDINGS)
    unknown = sorted(names - set(FINDINGS))
    if unknown or not names:
        raise RefusedError(
            f"unknown finding {', '.join(unknown) or repr(text)}",
            fix=f"use a comma-separated list of: {', '.join(FINDINGS)} (or all)",
        )
    return frozenset(names)


# -- groups --------------------------------------------------------------------------------------------


def read_groups(
    namespace: str, configmaps: Iterable[Obj], leases: Iterable[Obj], *, now: dt.datetime
) -> list[Group]:
    """The rollout groups of a namespace from its journal ConfigMaps and their Leases."""
    by_name = {lease["metadata"]["name"]: lease for lease in leases}
    cms = list(configmaps)
    parts = {cm["metadata"]["name"]: cm for cm in cms if is_part(cm)}
    groups = []
    for cm in cms:
        if is_part(cm):
            continue
        journal = parse_configmap(cm, part=parts.get)
        meta = cm.get("metadata", {})
        selector = (meta.get("annotations") or {}).get(SELECTOR_ANNOTATION) or (
            journal.selector if journal else ""
        )
        if journal is None or not selector:
            continue
        lease = by_name.get(meta["name"])
        view = read_lease(lease, at=now) if lease is not None else None
        groups.append(
            Group(
                name=meta["name"],
                namespace=namespace,
                selector=selector,
                state=journal.state,
                run_id=journal.run_id,
                command=journal.command,
                actor=journal.actor,
                updated=journal.updated,
                error=journal.error,
                lock_holder=view.holder if view else "",
                lock_live=bool(view and view.live),
                journal=journal,
            )
        )
    return sorted(groups, key=lambda g: g.name)


def group_for(ref: WorkloadRef, labels: Mapping[str, str], groups: Iterable[Group]) -> Group | None:
    """The group a workload belongs to: of those matching its labels, the one whose journal names it and
    was written last (the last run that acted on it, whatever its selector), else the most specific.

    A one-off run on a narrower selector thus owns a workload only until a later run acts on it.
    """
    candidates = [g for g in groups if matches(g.selector, labels)]
    candidates.sort(key=lambda g: (-len(requirements(g.selector)), g.name))
    candidates.sort(key=lambda g: _last_acted(g, ref.key), reverse=True)
    return candidates[0] if candidates else None


def _last_acted(group: Group, key: str) -> tuple[dt.datetime, dt.datetime]:
    """When ``group``'s journal last acted on workload ``key`` (the earliest time when it never did).

    The journal's write time is to the second; two runs ending within one second are told apart by the
    time each verified the workload, which is to the microsecond.
    """
    if key not in group.journal.workloads:
        return (stamp_order(""), stamp_order(""))
    return (stamp_order(group.journal.updated), stamp_order(verified_at(group.journal, key)))


def verified_at(journal: Journal, key: str) -> str:
    """When ``journal``'s last success verified workload ``key`` ("" when it never did)."""
    success = journal.last_success
    if key not in (success.get("templates") or {}):
        return ""
    return str((success.get("at") or {}).get(key) or success.get("finished") or "")


def drift_reference(key: str, labels: Mapping[str, str], groups: Iterable[Group]) -> tuple[Obj, str] | None:
    """The template the last run that verified workload ``key`` saw, and that run's id.

    Whatever selector that run used: a narrower run's reference holds for the workloads it verified
    until a later run (of any group the workload is in) verifies them again.
    """
    best: tuple[dt.datetime, Obj, str] | None = None
    for group in groups:
        stamp = verified_at(group.journal, key)
        at = stamp_order(stamp)
        template = (group.journal.last_success.get("templates") or {}).get(key)
        if (
            stamp
            and isinstance(template, dict)
            and matches(group.selector, labels)
            and (best is None or at > best[0])
        ):
            best = (at, template, str(group.journal.last_success.get("run_id", "?")))
    return (best[1], best[2]) if best else None


# -- findings ------------------------------------------------------------------------------------------


def _overlap_findings(
    labels: Mapping[str, str], groups: Iterable[Group], home: Group | None
) -> list[Finding]:
    """A workload matched by more than one group's selector: two runs could each mean to act on it."""
    matching = sorted({g.selector for g in groups if matches(g.selector, labels)})
    if len(matching) < 2:
        return []
    named = ", ".join(repr(s) for s in matching)
    shown = f"; shown in group {home.selector!r}" if home is not None else ""
    return [
        Finding(
            OVERLAPPING,
            f"in {len(matching)} rollout groups ({named}): a run of each claims it, the second is refused "
            f"while the first acts on it{shown}; make the selectors exclusive",
        )
    ]


def _since(start: dt.datetime | None, now: dt.datetime) -> float:
    return (now - start).total_seconds() if start else 0.0


def _explained(kind: Kind, obj: Obj, revisions: list[Obj], pods: list[Obj], progress: Progress) -> Progress:
    """``progress`` with what the rollout's own pods say (a hook running, pods refused), when it is still
    progressing; a verdict only the run gives (a deployer pod that cannot start) is left to the run."""
    explained = kind.explain(obj, revisions, pods, progress)
    return explained if explained.phase is RolloutPhase.PROGRESSING else progress


def _refusal_finding(progress: Progress, now: dt.datetime) -> Finding | None:
    """``stuck`` for a rollout whose pods (or deployer pod) the API has refused for REFUSAL_GRACE or more:
    hopeless until someone acts (raises the quota, fixes the LimitRange or the pod), as a rollout run
    judges it; None while the refusal is younger, or when the objects do not say since when."""
    lasted = _since(parse_time(progress.blocked_at), now)
    if not progress.blocked_at or lasted < REFUSAL_GRACE:
        return None
    where = ""
    if progress.blocked_evidence is not None:
        kind, name = progress.blocked_evidence
        where = f" (its Events say why: oc describe {kind.lower()}/{name})"
    holding = f"; {progress.holding}" if progress.holding else ""
    return Finding(
        STUCK,
        f"{progress.blocked}{where}, for {lasted:.0f}s: it rolls out only once that is cleared (a rollout "
        f"run fails it after {REFUSAL_GRACE:.0f}s){holding}",
    )


def _progress_findings(
    kind: Kind, obj: Obj, revisions: list[Obj], pods: list[Obj], now: dt.datetime
) -> list[Finding]:
    progress = kind.progress(obj, revisions)
    spec = obj.get("spec", {})
    found: list[Finding] = []
    rolled = kind.new_revision(obj, revisions)
    if spec.get("paused"):
        found.append(
            Finding(PAUSED, f"{kind.resource.kind} is paused: no rollout happens until it is resumed")
        )
        if revisions and rolled is None:
            running = kind.revision_template(revisions[0]) or {}
            changes = template_changes(running, spec.get("template", {}))
            found.append(
                Finding(STUCK, "paused with un-rolled changes: " + "; ".join(changes or ["template changed"]))
            )
        # a paused rollout is never checked against its deadline: report it as paused, not progressing
        return found
    if progress.phase is RolloutPhase.FAILED:
        found.append(Finding(FAILED, progress.message))
        return found
    if progress.phase is RolloutPhase.COMPLETE or kind.settled(obj):
        return found
    if revisions and rolled is None and kind.revision(obj) > 0 and kind.start_request(obj, obj, revisions):
        found.append(
            Finding(
                STUCK,
                f"template changed but no trigger of the {kind.noun} rolls it out "
                "(rollguard redeploy, or oc rollout latest, starts the rollout)",
            )
        )
        return found
    if progress.phase is RolloutPhase.PENDING and rolled is None:
        # the controller has yet to start this rollout: its deadline has not begun
        found.append(Finding(PROGRESSING, progress.message))
        return found
    deadline = kind.deadline(obj)
    elapsed = _since(kind.rollout_start(obj, revisions), now)
    explained = _explained(kind, obj, revisions, pods, progress)
    message = explained.message
    if explained.hook:  # a lifecycle hook has no timeout but its pod's activeDeadlineSeconds
        found.append(Finding(PROGRESSING, f"{message} (a hook has no deadline but its pod's)"))
        return found
    if explained.blocked:
        refused = _refusal_finding(explained, now)
        if refused is not None:
            found.append(refused)
            return found
        message += f"; {explained.blocked}"
    if rolled is not None:
        for pod in sorted(pods_of_revision(rolled, pods), key=lambda p: p["metadata"]["name"]):
            doom = pod_doom(pod, crash_restarts=3)
            if doom is not None:
                message += f"; {doom.describe()}"
                break
    if elapsed > deadline:
        found.append(
            Finding(STUCK, f"progressing for {elapsed:.0f}s, past its {deadline}s deadline: {message}")
        )
    else:
        found.append(Finding(PROGRESSING, f"{message} ({elapsed:.0f}s of its {deadline}s deadline)"))
    return found


def _mutable_findings(kind: Kind, obj: Obj) -> list[Finding]:
    triggered, reasons = moving(kind.image_triggers(obj), moving_tags=MOVING_TAGS)
    for container, image in images_of(obj.get("spec", {}).get("template", {})).items():
        tag = moving_tag(image)
        if tag and container not in triggered:
            reasons.append(f"container {container} runs {image} (tag {tag!r} moves)")
    return [Finding(MUTABLE_IMAGE, "; ".join(reasons))] if reasons else []


def _group_findings(
    key: str,
    obj: Obj,
    revisions: list[Obj],
    group: Group,
    members: Mapping[str, dict[str, str]],
    kind: Kind,
    *,
    labels: Mapping[str, str],
    groups: Iterable[Group],
) -> list[Finding]:
    journal = group.journal
    found: list[Finding] = []
    entry = journal.workloads.get(key)
    if not journal.final and not group.lock_live and entry is not None and entry.phase is EntryPhase.EDITED:
        found.append(  # the user's edit won: say so, not that a run died
            Finding(
                HALF_ROLLED,
                f"edited by someone else during run {journal.run_id or '?'} and left as they set it: runs "
                f"{images_of(obj.get('spec', {}).get('template', {}))}, not its verified {entry.verified.images}",
            )
        )
    elif not journal.final and not group.lock_live:
        found.append(
            Finding(
                HALF_ROLLED,
                f"run {journal.run_id or '?'} ({journal.command or 'rollout'} by {journal.actor or '?'}) stopped "
                f"in state '{journal.state}' and no live run holds the lock",
            )
        )
    elif journal.final and key in journal.workloads:
        reason = _mixed(key, obj, revisions, journal, members, kind)
        if reason:
            found.append(Finding(HALF_ROLLED, reason))
    if not journal.final and group.lock_live:
        return found  # a run is rolling the group out right now: its templates are meant to differ
    reference = drift_reference(key, labels, groups)
    live = obj.get("spec", {}).get("template", {})
    if reference is not None and not same_template(reference[0], live):
        changes = "; ".join(template_changes(reference[0], live))
        found.append(
            Finding(DRIFTED, f"pod template differs from what run {reference[1]} verified: {changes}")
        )
    return found


def _on_targets(entry: WorkloadEntry, images: Mapping[str, str]) -> bool:
    return all(images.get(c) == i for c, i in entry.target_images.items())


def _mixed(
    key: str,
    obj: Obj,
    revisions: list[Obj],
    journal: Journal,
    members: Mapping[str, dict[str, str]],
    kind: Kind,
) -> str:
    """Why this workload is not on the same run's result as the rest of its group, or ""."""
    entry = journal.workloads[key]
    if not entry.target_images:
        return ""
    images = images_of(obj.get("spec", {}).get("template", {}))
    on_targets = _on_targets(entry, images)
    if journal.state is RunState.REVERTED:
        moved = any(entry.verified.images.get(c) != i for c, i in entry.target_images.items())
        return (
            f"runs the new images of run {journal.run_id}, which the group reverted"
            if on_targets and moved
            else ""
        )
    if on_targets:
        return ""
    others_on = [
        k
        for k, e in journal.workloads.items()
        if k != key and k in members and e.target_images and _on_targets(e, members[k])
    ]
    older = [r for r in revisions[1:] if images_of(kind.revision_template(r) or {}) == images]
    if others_on and older:
        return (
            f"runs revision {kind.revision_number(older[0])}'s images, not run {journal.run_id}'s targets, "
            f"while {', '.join(sorted(others_on))} run them"
        )
    return ""


# -- assembling states ---------------------------------------------------------------------------------


def _revision_info(kind: Kind, rev: Obj, newest: bool) -> RevisionInfo:
    meta = rev.get("metadata", {})
    return RevisionInfo(
        number=kind.revision_number(rev),
        name=meta.get("name", ""),
        status=kind.revision_status(rev, newest=newest),
        images=images_of(kind.revision_template(rev) or rev.get("spec", {}).get("template", {})),
        replicas=as_int(rev.get("spec", {}).get("replicas")),
        ready=as_int(rev.get("status", {}).get("readyReplicas")),
        created=meta.get("creationTimestamp", ""),
    )


def _pod_info(pod: Obj, revision: str) -> PodInfo:
    status = pod.get("status", {})
    containers = status.get("containerStatuses") or []
    waiting = [(c.get("state") or {}).get("waiting", {}).get("reason", "") for c in containers]
    return PodInfo(
        name=pod["metadata"]["name"],
        revision=revision,
        phase=status.get("phase", ""),
        ready=bool(containers) and all(c.get("ready") for c in containers),
        restarts=sum(as_int(c.get("restartCount")) for c in containers),
        node=pod.get("spec", {}).get("nodeName", "") or "",
        reason=next((w for w in waiting if w), ""),
        created=str(pod["metadata"].get("creationTimestamp") or ""),
    )


def assess(
    kind: str,
    obj: Obj,
    revisions: Iterable[Obj],
    *,
    pods: Iterable[Obj] = (),
    groups: Iterable[Group] = (),
    members: Mapping[str, dict[str, str]] | None = None,
    now: dt.datetime,
) -> WorkloadState:
    """The state of one workload (``kind`` a kind name or alias) from its objects.

    ``revisions`` and ``pods`` may hold other workloads' objects too (only its own are used); ``members``
    maps the keys of the namespace's workloads to their images (to tell a mixed group).
    """
    k = kind_of(kind)
    mine = k.owned(obj, revisions)
    pod_list = list(pods)
    snap = k.snapshot(obj)
    groups = list(groups)
    group = group_for(snap.ref, snap.labels, groups)
    findings = _progress_findings(k, obj, mine, pod_list, now)
    if group is not None:
        findings += _group_findings(
            snap.ref.key,
            obj,
            mine,
            group,
            members or {snap.ref.key: snap.images},
            k,
            labels=snap.labels,
            groups=groups,
        )
    findings += _overlap_findings(snap.labels, groups, group)
    findings += _mutable_findings(k, obj)
    status = obj.get("status", {})
    available, desired = as_int(status.get("availableReplicas")), snap.replicas
    if k.desired_running(obj) > 0 and available < desired:
        findings.append(Finding(UNAVAILABLE, f"{available} of {desired} replicas available"))
    order = {name: i for i, name in enumerate(FINDINGS)}
    progress = k.progress(obj, mine)
    if progress.phase is RolloutPhase.PROGRESSING:
        progress = _explained(k, obj, mine, pod_list, progress)
    return WorkloadState(
        ref=snap.ref,
        namespace=snap.namespace,
        group=group.name if group else None,
        selector=group.selector if group else None,
        findings=tuple(sorted(findings, key=lambda f: order[f.name])),
        revision=snap.revision,
        ready=as_int(status.get("readyReplicas")),
        available=available,
        desired=desired,
        images=snap.images,
        created=obj.get("metadata", {}).get("creationTimestamp", ""),
        paused=snap.paused,
        phase=progress.phase,
        message=progress.message,
        labels=snap.labels,
        triggers=k.trigger_texts(obj),
        revisions=tuple(_revision_info(k, r, i == 0) for i, r in enumerate(mine)),
        pods=tuple(
            _pod_info(p, r["metadata"]["name"])
            for r in mine
            for p in sorted(pods_of_revision(r, pod_list), key=lambda p: p["metadata"]["name"])
        ),
        resource_version=snap.resource_version,
        uid=obj.get("metadata", {}).get("uid", ""),
    )


def assess_namespace(
    namespace: str,
    *,
    dcs: Iterable[Obj] = (),
    deployments: Iterable[Obj] = (),
    rcs: Iterable[Obj] = (),
    rss: Iterable[Obj] = (),
    pods: Iterable[Obj] = (),
    configmaps: Iterable[Obj] = (),
    leases: Iterable[Obj] = (),
    selector: str | None = None,
    now: dt.datetime | None = None,
) -> NamespaceState:
    """The states of every DC and Deployment of one namespace (those matching ``selector``, if given)."""
    at = now or dt.datetime.now(dt.UTC)
    groups = read_groups(namespace, configmaps, leases, now=at)
    workloads = [(KINDS[DC], o) for o in dcs] + [(KINDS[DEPLOYMENT], o) for o in deployments]
    if selector:
        workloads = [
            (k, o) for k, o in workloads if matches(selector, o.get("metadata", {}).get("labels") or {})
        ]
    members = {k.ref(o).key: images_of(o.get("spec", {}).get("template", {})) for k, o in workloads}
    revisions, pod_owners = Owners([*rcs, *rss]), Owners(pods)
    states = []
    for kind, obj in workloads:
        candidates = revisions.candidates(obj)
        own_pods = [p for r in candidates for p in pod_owners.children(r)]
        states.append(
            assess(kind.kind, obj, candidates, pods=own_pods, groups=groups, members=members, now=at)
        )
    states.sort(key=lambda s: (s.group or "~", s.kind, s.ref.name))  # dc before deployment
    return NamespaceState(namespace=namespace, workloads=tuple(states), groups=tuple(groups))


def selected(states: Iterable[WorkloadState], names: Iterable[str]) -> list[WorkloadState]:
    """The workloads with at least one finding among ``names`` (e.g. drift-check's ``--fail-on``)."""
    wanted = frozenset(names)
    return [s for s in states if any(f.name in wanted for f in s.findings)]
