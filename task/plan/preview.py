"""``rollout --dry-run``: the plan per workload as a diff of what its one write changes (pure, no I/O).

The preflight has run in full (reads, permissions, and every write sent as a server-side dry run), so
the "after" side is the object as the server would store it, its defaults applied: the diff shows only
what really changes (images, env, resources, labels, annotations, replicas, triggers ...), and a
workload to create shows whole. Nothing is locked, journalled or written. `planned_results` is the
same plan as the report's workloads (outcome ``planned`` or ``unchanged``), for a report whose status
``dry-run`` says that nothing was rolled out.
"""

from __future__ import annotations

import difflib

import yaml

from rollguard.core.report import WorkloadResult
from rollguard.core.structs import Obj, WorkloadOutcome
from rollguard.kinds import images_of
from rollguard.plan.rollout_decide import Plan, WorkloadPlan

CONTEXT = 2  # unchanged lines shown around each change


def comparable(obj: Obj) -> Obj:
    """What a write can change: labels, annotations and spec (``paused`` only when true)."""
    meta = obj.get("metadata") or {}
    spec = dict(obj.get("spec") or {})
    if not spec.get("paused"):
        spec.pop("paused", None)
    return {
        "metadata": {k: meta[k] for k in ("labels", "annotations") if meta.get(k)},
        "spec": spec,
    }


def _text(obj: Obj | None) -> list[str]:
    if obj is None:
        return []
    return yaml.safe_dump(comparable(obj), sort_keys=True, default_flow_style=False).splitlines()


def workload_diff(plan: WorkloadPlan, *, namespace: str) -> list[str]:
    """One workload's change: a head line, the diff lines (``-`` before, ``+`` after), its notes."""
    before = None if plan.create else plan.snapshot.raw
    after = plan.server_view if plan.server_view is not None else plan.write_body(plan.snapshot.raw)
    action = "create" if plan.create else "rollout"
    if not plan.needs_change:
        return [f"{namespace}/{plan.key}: {action} (no change)"]
    head = f"{namespace}/{plan.key}: {action}"
    if plan.write_fields:
        head += f" ({', '.join(plan.write_fields)})"
    body = [
        line
        for line in difflib.unified_diff(_text(before), _text(after), lineterm="", n=CONTEXT)
        if not line.startswith(("---", "+++"))
    ]
    return [head, *body, *(f"# {note}" for note in plan.notes)]


def plan_diff(plan: Plan) -> list[str]:
    lines: list[str] = []
    for wp in plan.workloads:
        lines += workload_diff(wp, namespace=plan.namespace)
    lines += [f"{name}: skipped (--skip-other-kinds)" for name in plan.skipped]
    return lines


def planned_result(plan: WorkloadPlan) -> WorkloadResult:
    """One workload of the plan as the report's entry: what it runs now and what the write would set."""
    after = plan.server_view if plan.server_view is not None else plan.write_body(plan.snapshot.raw)
    change = plan.needs_change
    notes = list(plan.notes) + (["would be created"] if plan.create else [])
    return WorkloadResult(
        kind=plan.snapshot.ref.kind,
        name=plan.snapshot.ref.name,
        revision_before=0 if plan.create else plan.snapshot.revision,
        revision_after=0 if plan.create else plan.snapshot.revision,  # nothing was rolled out
        images_before={} if plan.create else dict(plan.snapshot.images),
        images_after=images_of((after.get("spec") or {}).get("template") or {})
        if change
        else dict(plan.snapshot.images),
        outcome=WorkloadOutcome.PLANNED if change else WorkloadOutcome.UNCHANGED,
        paused=bool((after.get("spec") or {}).get("paused")) if change else plan.snapshot.paused,
        paused_before=plan.snapshot.paused,
        notes=notes,
    )


def planned_results(plan: Plan) -> list[WorkloadResult]:
    return [planned_result(wp) for wp in plan.workloads]
