"""Mapping: the task package's types and objects -> the TUI's views (`rollguard.tui.views`). Pure.

The only module of the TUI that knows how `task` models workloads, findings and repairs, so that a
change there is absorbed here. No I/O: `rollguard.tui.backend` reads, watches and acts, and hands
what it got (API objects, a repair's plan, its outcome) to these functions.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping
from typing import Any

import yaml

from rollguard.cluster.journal import JOURNAL_LABEL, Journal
from rollguard.core.report import Report
from rollguard.core.resources import (
    CONFIG_MAPS,
    DEPLOYMENT_CONFIGS,
    DEPLOYMENTS,
    LEASES,
    PODS,
    REPLICA_SETS,
    REPLICATION_CONTROLLERS,
    Resource,
)
from rollguard.core.selectors import matches
from rollguard.core.structs import Obj, RunState
from rollguard.kinds import kind_of
from rollguard.kinds.causes import RevisionCause
from rollguard.plan.repair_read import Change as RepairChange
from rollguard.plan.repair_read import RepairPlan, permissions
from rollguard.state import assessment
from rollguard.tui.revisions import revision_marks
from rollguard.tui.views import (
    UNGROUPED,
    Change,
    ConditionView,
    DetailView,
    EventView,
    Finding,
    GroupView,
    Inventory,
    PlanView,
    PodRow,
    PodView,
    ResultView,
    RevisionView,
    RunView,
    Target,
    WorkloadRow,
    parse_time,
)

Objects = Mapping[Resource, list[Obj]]

# What the workloads screen reads and watches, per namespace.
WATCHED: tuple[Resource, ...] = (
    DEPLOYMENT_CONFIGS,
    REPLICATION_CONTROLLERS,
    DEPLOYMENTS,
    REPLICA_SETS,
    PODS,
    CONFIG_MAPS,
    LEASES,
)


def namespace_of(obj: Obj) -> str:
    return str(obj.get("metadata", {}).get("namespace", ""))


def _finding(f: assessment.Finding) -> Finding:
    return Finding(f.name, f.reason)


def run_view(entry: Mapping[str, Any]) -> RunView:
    return RunView(
        run_id=str(entry.get("run_id", "")),
        command=str(entry.get("command", "")),
        actor=str(entry.get("actor", "")),
        state=RunState.read(entry.get("state", RunState.NEW)),
        started=str(entry.get("started", "")),
        finished=str(entry.get("finished", "")),
        error=str(entry.get("error", "")),
        targets=dict(entry.get("targets", {})),
    )


def group_view(group: assessment.Group) -> GroupView:
    journal = group.journal
    history = tuple(run_view(h) for h in journal.history)
    if journal.final and history:
        last: RunView | None = history[-1]
    else:  # a run going on now, or left half-done: the journal's current run is the story
        last = RunView(
            run_id=journal.run_id,
            command=journal.command,
            actor=journal.actor,
            state=journal.state,
            started=journal.started,
            finished=journal.updated if journal.final else "",
            error=journal.error,
            targets={k: w.target_images for k, w in journal.workloads.items() if w.target_images},
        )
    return GroupView(
        namespace=group.namespace,
        selector=group.selector,
        journal=group.name,
        last_run=last if last and last.run_id else None,
        history=history,
        lock_holder=group.lock_holder if group.lock_live else "",
        kept_dcs=tuple(journal.kept_dcs),
    )


def _loose_group(labels: Mapping[str, str]) -> str:
    # No journal yet (e.g. damage left by an older tool): ODS components share `app=<project>-<component>`,
    # the selector a rollout or a group repair of them would use.
    return f"app={labels['app']}" if labels.get("app") else UNGROUPED


def row_of(ws: assessment.WorkloadState) -> WorkloadRow:
    return WorkloadRow(
        namespace=ws.namespace,
        kind=ws.ref.kind,
        name=ws.ref.name,
        group=ws.selector or _loose_group(ws.labels),
        findings=tuple(_finding(f) for f in ws.findings) or (Finding(assessment.HEALTHY, ws.message),),
        revision=ws.revision,
        ready=ws.ready,
        desired=ws.desired,
        images=ws.images,  # shared, not copied: neither is ever changed (10,000 rows: two dicts each)
        created=parse_time(ws.created),
        paused=ws.paused,
        labels=ws.labels,
    )


def assess(namespace: str, objects: Objects, *, selector: str, now: dt.datetime) -> assessment.NamespaceState:
    return assessment.assess_namespace(
        namespace,
        dcs=objects.get(DEPLOYMENT_CONFIGS, []),
        deployments=objects.get(DEPLOYMENTS, []),
        rcs=objects.get(REPLICATION_CONTROLLERS, []),
        rss=objects.get(REPLICA_SETS, []),
        pods=objects.get(PODS, []),
        configmaps=[c for c in objects.get(CONFIG_MAPS, []) if _is_journal(c)],
        leases=objects.get(LEASES, []),
        selector=selector or None,
        now=now,
    )


def _is_journal(cm: Obj) -> bool:
    return (cm.get("metadata", {}).get("labels") or {}).get(JOURNAL_LABEL) == "true"


# What one namespace's state made: its rows and its groups' views (`inventory_of`'s ``reuse``).
Part = tuple[assessment.NamespaceState, tuple[WorkloadRow, ...], dict[str, GroupView]]


def build_inventory(
    objects: Objects,
    *,
    selector: str = "",
    now: dt.datetime,
    namespaces: Iterable[str] = (),
    reuse: dict[str, Part] | None = None,
) -> tuple[Inventory, dict[str, assessment.NamespaceState]]:
    """Rows for every DC and Deployment in ``objects`` (any namespaces), grouped by rollout group."""
    split: dict[str, dict[Resource, list[Obj]]] = {}
    for res, items in objects.items():
        for obj in items:
            split.setdefault(namespace_of(obj), {}).setdefault(res, []).append(obj)
    states = {ns: assess(ns, objs, selector=selector, now=now) for ns, objs in sorted(split.items())}
    return inventory_of(states, namespaces=namespaces, reuse=reuse), states


def namespace_part(ns_state: assessment.NamespaceState, previous: Part | None = None) -> Part:
    """The rows of one namespace's workloads and the views of the groups they are in; those equal to
    ``previous``'s are its very objects (a re-judgement changes a few rows: the rest stay shared)."""
    rows = tuple(row_of(ws) for ws in ns_state.workloads)
    if previous is not None:
        before = {r.key: r for r in previous[1]}
        rows = tuple(r if (old := before.get(r.key)) is None or old != r else old for r in rows)
    groups: dict[str, GroupView] = {}
    for group in ns_state.groups:
        view = group_view(group)
        groups[view.key] = view
    for row in rows:
        groups.setdefault(row.group_key, GroupView(namespace=row.namespace, selector=row.group))
    used = {r.group_key for r in rows}
    views = previous[2] if previous is not None else {}
    kept = {
        k: g if (was := views.get(k)) is None or was != g else was for k, g in groups.items() if k in used
    }
    return ns_state, rows, kept


def inventory_of(
    states: Mapping[str, assessment.NamespaceState],
    *,
    namespaces: Iterable[str] = (),
    reuse: dict[str, Part] | None = None,
) -> Inventory:
    """The rows and groups of namespaces already assessed (the backend streams them in).

    ``reuse``: the parts made last time, by namespace; a namespace whose state is the very one it was
    made from keeps its rows and views (a live change re-assesses one namespace of a hundred), and the
    mapping is left holding this inventory's parts.
    """
    rows: list[WorkloadRow] = []
    groups: dict[str, GroupView] = {}
    parts: dict[str, Part] = {}
    for ns_name, ns_state in sorted(states.items()):
        part = reuse.get(ns_name) if reuse is not None else None
        if part is None or part[0] is not ns_state:
            part = namespace_part(ns_state, part)
        parts[ns_name] = part
        rows.extend(part[1])
        groups.update(part[2])
    if reuse is not None:
        reuse.clear()
        reuse.update(parts)
    all_ns = sorted(set(namespaces) | {r.namespace for r in rows})
    return Inventory(rows=tuple(rows), groups=groups, namespaces=tuple(all_ns))


def find_state(
    states: Mapping[str, assessment.NamespaceState], row: WorkloadRow
) -> assessment.WorkloadState | None:
    ns_state = states.get(row.namespace)
    if ns_state is None:
        return None
    return next((w for w in ns_state.workloads if w.key == row.ref), None)


def workload_object(objects: Objects, row: WorkloadRow) -> Obj | None:
    for obj in objects.get(kind_of(row.kind).resource, []):
        if obj["metadata"]["name"] == row.name and namespace_of(obj) == row.namespace:
            return obj
    return None


def build_detail(
    row: WorkloadRow,
    ws: assessment.WorkloadState | None,
    obj: Obj | None,
    events: Iterable[Obj],
    group: GroupView | None,
    journal: Journal | None = None,
    *,
    causes: Mapping[int, RevisionCause] | None = None,
) -> DetailView:
    """The detail screen's content for one workload; ``causes``: each revision's (`rollguard.kinds.revision_causes`)."""
    causes = causes or {}
    numbers = ((r.number, r.status) for r in (ws.revisions if ws else ()))
    marks = revision_marks(numbers, journal, row.ref, causes=causes)
    revisions = tuple(
        RevisionView(
            name=r.name,
            number=r.number,
            phase=r.status,
            images=dict(r.images),
            created=parse_time(r.created),
            replicas=f"{r.ready}/{r.replicas}",
            active=r.replicas > 0,
            mark=marks.get(r.number, ""),
            cause=causes[r.number].text() if r.number in causes else "",
        )
        for r in (ws.revisions if ws else ())
    )
    pods = tuple(
        PodView(
            name=p.name,
            status=p.reason or p.phase or "Unknown",
            ready="yes" if p.ready else "no",
            restarts=p.restarts,
            revision=p.revision,
            node=p.node,
        )
        for p in (ws.pods if ws else ())
    )
    conditions = tuple(
        ConditionView(
            type=str(c.get("type", "")),
            status=str(c.get("status", "")),
            reason=str(c.get("reason", "")),
            message=str(c.get("message", "")),
        )
        for c in ((obj or {}).get("status", {}) or {}).get("conditions", []) or []
    )
    return DetailView(
        row=row,
        conditions=conditions,
        revisions=revisions,
        pods=pods,
        events=tuple(event_views(events)),
        group=group,
        triggers=tuple(ws.triggers) if ws else (),
        message=ws.message if ws else "",
    )


def involved_names(ws: assessment.WorkloadState | None, row: WorkloadRow) -> set[str]:
    """Objects whose events belong on a workload's detail screen: itself, its revisions and pods."""
    if ws is None:
        return {row.name}
    return {row.name, *(r.name for r in ws.revisions), *(p.name for p in ws.pods)}


def event_views(events: Iterable[Obj], limit: int = 15) -> list[EventView]:
    """Newest first, at most ``limit``."""
    views = []
    for ev in events:
        meta = ev.get("metadata", {})
        last = parse_time(
            ev.get("lastTimestamp")
            or (ev.get("series") or {}).get("lastObservedTime")
            or ev.get("eventTime")
            or meta.get("creationTimestamp")
        )
        involved = ev.get("involvedObject") or {}
        views.append(
            EventView(
                type=str(ev.get("type", "")),
                reason=str(ev.get("reason", "")),
                object=str(involved.get("name", "")),
                message=str(ev.get("message", "")).strip(),
                count=int(ev.get("count", 1) or 1),
                last_seen=last,
                kind=str(involved.get("kind", "")),
                namespace=str(meta.get("namespace") or involved.get("namespace") or ""),
            )
        )
    far_past = dt.datetime.min.replace(tzinfo=dt.UTC)
    return sorted(views, key=lambda v: (v.last_seen or far_past, v.message), reverse=True)[:limit]


def pod_rows(
    states: Iterable[assessment.NamespaceState], *, selector: str = "", refs: frozenset[str] | None = None
) -> list[PodRow]:
    """The pods page: every pod of the DCs' and Deployments' revisions in ``states`` (of the workloads
    whose labels ``selector`` matches, when given; of the workloads ``refs`` names, ``dc/NAME``, when
    given: a group's members), by namespace, workload and name."""
    rows = []
    for ns_state in states:
        for ws in ns_state.workloads:
            if (selector and not matches(selector, ws.labels)) or (refs is not None and ws.key not in refs):
                continue
            for pod in ws.pods:
                rows.append(
                    PodRow(
                        namespace=ws.namespace,
                        name=pod.name,
                        workload=ws.key,
                        kind=ws.kind,
                        workload_name=ws.ref.name,
                        revision=pod.revision,
                        status=pod.reason or pod.phase or "Unknown",
                        ready="yes" if pod.ready else "no",
                        restarts=pod.restarts,
                        node=pod.node,
                        created=parse_time(pod.created),
                    )
                )
    return sorted(rows, key=lambda r: (r.namespace, r.workload, r.name))


# -- actions ------------------------------------------------------------------------------------------


def applicable(action: str, rows: Iterable[WorkloadRow], *, to_revision: int | None = None) -> bool:
    """Whether an action makes sense for these workloads (the console's rules, reference section 4)."""
    rows = list(rows)
    if not rows:
        return False
    if action == "resume":
        return any(r.paused for r in rows)
    if action == "revert":
        if to_revision is not None:
            # another revision, or the current one when un-rolled changes sit on top of it (paused)
            row = rows[0]
            pending = any(f.code == assessment.STUCK for f in row.findings)
            return len(rows) == 1 and (to_revision != row.revision or pending)
        return any(not r.healthy or r.revision > 1 for r in rows)
    if action == "redeploy":
        # a paused workload cannot start a rollout ("cannot deploy a paused deployment config")
        return not any(r.paused for r in rows)
    return False


def needs(action: str, namespace: str, kinds: Iterable[str]) -> list[tuple[str, Resource, str]]:
    """(verb, resource, namespace) an action needs: what the repair preflight checks."""
    return permissions(action, namespace, set(kinds))


def missing_text(
    needs: Iterable[tuple[str, Resource, str]], access: Mapping[tuple[str, str, str], bool]
) -> str:
    """``update on deploymentconfigs.apps.openshift.io in NS``: the reviews answered no ("" if none)."""
    missing = [
        f"{verb} on {res.label} in {ns}"
        for verb, res, ns in needs
        if access.get((verb, res.label, ns)) is False
    ]
    return ", ".join(dict.fromkeys(missing))


def _change_view(change: RepairChange) -> Change:
    notes = list(change.notes)
    said = any("trigger" in note for note in notes)  # the repair already explains its trigger change
    if tuple(change.triggers_before) != tuple(change.triggers_after) and not said:
        notes.append(
            f"triggers: {', '.join(change.triggers_before) or 'none'} -> {', '.join(change.triggers_after) or 'none'}"
        )
    return Change(
        ref=change.key,
        images_before=dict(change.images_before),
        images_after=dict(change.images_after),
        paused_before=change.paused_before,
        paused_after=change.paused_after,
        revision_before=change.revision_before,
        revision_after=change.target_revision,
        note="; ".join(notes),
        changed=change.changed,
        running=dict(change.images_running),
    )


def plan_view(action: str, target: Target, plan: RepairPlan, command: str) -> PlanView:
    """The repair's plan as the confirmation dialog shows it; the plan itself rides along to be carried out."""
    notes = []
    if plan.selector and plan.group is None:
        notes.append(f"group {plan.selector} has no journal yet: this repair starts one")
    if plan.selector and not plan.whole_group:
        notes.append(f"part of group {plan.selector}: the other workloads of the group are left as they are")
    return PlanView(
        action, target, tuple(_change_view(c) for c in plan.changes), command, notes=tuple(notes), handle=plan
    )


def result_view(outcome: Report) -> ResultView:
    return ResultView(
        status=outcome.status,
        exit_code=outcome.exit_code,
        summary=outcome.summary(),
        errors=tuple(outcome.errors),
    )


def as_yaml(obj: Obj) -> str:
    """An object as `oc get -o yaml` shows it, less managedFields (noise for a repair decision)."""
    shown = {
        **obj,
        "metadata": {k: v for k, v in (obj.get("metadata") or {}).items() if k != "managedFields"},
    }
    return yaml.safe_dump(shown, sort_keys=False, default_flow_style=False, width=1000)
