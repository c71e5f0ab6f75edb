"""`rollguard migrate`'s preflight decisions (rollguard.plan.migrate_decide), from the YAML cases of
tests/cases/migrate/decide.yaml over the planner fixtures of tests/cases/planning/group.yaml: what is
refused and with what to run first, and the plan (replicas, Deployments created or taken over, HPAs)."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from rollguard.cluster.access import Answer
from rollguard.cluster.journal import Journal, group_name
from rollguard.core.errors import RefusedError
from rollguard.core.resources import HORIZONTAL_POD_AUTOSCALERS
from rollguard.kinds.conversion import scale_ref_text
from rollguard.plan.migrate_decide import (
    MigrateAction,
    MigrateRead,
    MigrateRequest,
    decide_migrate,
    migrate_permissions,
)
from rollguard.plan.rollout_read import GroupListing
from tests.helpers import CASES
from tests.helpers.planning import HOLDER, NAMESPACE, RESOURCES, SELECTOR, found, journal, lease_view

CASES_ = yaml.safe_load((CASES / "migrate" / "decide.yaml").read_text())
Obj = dict[str, Any]


def _answers(specs: list[Obj]) -> list[Answer]:
    resources = {**RESOURCES, HORIZONTAL_POD_AUTOSCALERS.plural: HORIZONTAL_POD_AUTOSCALERS}
    return [
        Answer((a["verb"], resources[a["resource"]], NAMESPACE), allowed=bool(a.get("allowed", True)))
        for a in specs
    ]


def _journal(spec: Obj | None) -> Journal | None:
    if spec is None:
        return None
    built = journal(spec)
    assert built is not None
    built.command = spec.get("command", "")
    built.migration = dict(spec.get("migration") or {})
    return built


def _read(case: Obj) -> MigrateRead:
    read = case.get("read") or {}
    deployments = {
        name: {"metadata": {"name": name, "annotations": notes or {}}}
        for name, notes in (read.get("deployments") or {}).items()
    }
    for f in (found(k) for k in case.get("group", [])):
        if f.kind.kind == "Deployment":  # a Deployment of the group is a Deployment of the namespace too
            deployments.setdefault(f.obj["metadata"]["name"], f.obj)
    hpas = [
        {"metadata": {"name": h["name"]}, "spec": {"scaleTargetRef": h["target"]}}
        for h in read.get("hpas") or []
    ]
    return MigrateRead(
        namespace=NAMESPACE,
        selector=SELECTOR,
        group=GroupListing(workloads=[found(k) for k in case.get("group", [])]),
        deployments=deployments,
        hpas=hpas,
        access=_answers(read.get("access") or []),
        lease_name=group_name(SELECTOR),
        holder=HOLDER,
        lease=lease_view(read.get("lease")),
        journal=_journal(read.get("journal")),
    )


@pytest.mark.parametrize("case", CASES_, ids=[c["name"] for c in CASES_])
def test_decide_migrate(case: Obj) -> None:
    action = MigrateAction((case.get("args") or {}).get("action", "migrate"))
    request = MigrateRequest(namespace=NAMESPACE, selector=SELECTOR, action=action)
    if "refused" in case:
        with pytest.raises(RefusedError) as refused:
            decide_migrate(_read(case), request)
        for words in case["refused"]:
            assert words in str(refused.value), str(refused.value)
        return
    plan = decide_migrate(_read(case), request)
    expect = case["plan"]
    assert plan.replicas == expect["replicas"]
    deployments = plan.deployments
    assert sorted(w.snapshot.ref.name for w in deployments if w.create) == sorted(expect.get("create", []))
    assert sorted(w.snapshot.ref.name for w in deployments if not w.create and action is MigrateAction.MIGRATE) == (
        sorted(expect.get("take_over", [])))  # fmt: skip
    assert sorted(w.snapshot.ref.name for w in deployments if w.remove_on_revert and action is MigrateAction.REVERT) == (
        sorted(expect.get("remove", [])))  # fmt: skip
    assert {r.name: scale_ref_text(r.after if action is MigrateAction.MIGRATE else r.before) for r in plan.retargets} == (
        expect.get("retargets", {}))  # fmt: skip
    assert plan.resumed is expect.get("resumed", False)
    assert plan.left_alone == expect.get("left_alone", [])
    for wp in plan.dcs:  # a revert puts each DC back at its replicas from before
        assert wp.restore == {"spec": {"replicas": plan.replicas[wp.snapshot.ref.name]}}
    for wp in deployments if action is MigrateAction.MIGRATE else []:
        assert (
            wp.manifest is not None and wp.manifest["spec"]["replicas"] == plan.replicas[wp.snapshot.ref.name]
        )


def test_permissions_name_what_each_action_writes() -> None:
    plain = {(v, r.plural) for v, r, _ in migrate_permissions(NAMESPACE, MigrateAction.MIGRATE, hpas=False)}
    assert {("create", "deployments"), ("delete", "deployments"), ("update", "deploymentconfigs")} <= plain
    assert ("patch", "horizontalpodautoscalers") not in plain
    hpa = {(v, r) for v, r, _ in migrate_permissions(NAMESPACE, MigrateAction.MIGRATE, hpas=True)}
    assert ("patch", HORIZONTAL_POD_AUTOSCALERS) in hpa
    finish = {(v, r.plural) for v, r, _ in migrate_permissions(NAMESPACE, MigrateAction.FINISH, hpas=False)}
    assert {("delete", "deploymentconfigs"), ("delete", "replicationcontrollers")} <= finish
