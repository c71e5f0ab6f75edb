"""Builds the planners' read snapshots (`RolloutRead`, `RepairRead`) from the YAML cases in
tests/cases/planning/: the group's workloads (group.yaml, whose revisions are built here as the
controllers make them: RCs with their encoded DC, ReplicaSets with the pod-template-hash label) and one
case per refusal or rule (rollout.yaml, repair.yaml).
"""

from __future__ import annotations

import copy
import datetime as dt
import json
from functools import cache
from typing import Any

import yaml

from rollguard.cluster.access import Answer
from rollguard.cluster.journal import DATA_KEY, JOURNAL_LABEL, SELECTOR_ANNOTATION, Journal, group_name
from rollguard.cluster.lock import LeaseView
from rollguard.core.errors import ApiError, Forbidden
from rollguard.core.resources import (
    CONFIG_MAPS,
    DEPLOYMENT_CONFIGS,
    DEPLOYMENTS,
    EVENTS,
    IMAGE_STREAMS,
    LEASES,
    PODS,
    REPLICA_SETS,
    REPLICATION_CONTROLLERS,
)
from rollguard.kinds import kind_of
from rollguard.kinds.triggers import Streams
from rollguard.plan.repair_read import RepairRead, repair_request
from rollguard.plan.rollout_read import Found, GroupListing, RolloutRead
from rollguard.state.assessment import read_groups
from tests.helpers import CASES

FIXTURES = CASES / "planning"
NAMESPACE, SELECTOR = "shop", "app=shop"
NOW = dt.datetime(2024, 5, 2, 9, 0, tzinfo=dt.UTC)
HOLDER = "run-me"  # this run's lease identity in the rollout cases
RESOURCES = {
    r.plural: r
    for r in (
        DEPLOYMENT_CONFIGS,
        DEPLOYMENTS,
        REPLICATION_CONTROLLERS,
        REPLICA_SETS,
        PODS,
        CONFIG_MAPS,
        LEASES,
        EVENTS,
        IMAGE_STREAMS,
    )
}
Obj = dict[str, Any]


def cases(name: str) -> list[Obj]:
    loaded: list[Obj] = yaml.safe_load((FIXTURES / name).read_text())
    return loaded


def _template(obj: Obj, images: dict[str, str]) -> Obj:
    template = copy.deepcopy(obj["spec"]["template"])
    for container in template["spec"]["containers"]:
        container["image"] = images.get(container["name"], container["image"])
    return template


def _revision(obj: Obj, spec: Obj) -> Obj:
    """The RC or ReplicaSet a controller would have made for revision ``spec['number']``."""
    name, number = obj["metadata"]["name"], spec["number"]
    meta: Obj = {
        "name": f"{name}-{number}",
        "namespace": NAMESPACE,
        "uid": f"u-{name}-{number}",
        "ownerReferences": [{"uid": obj["metadata"]["uid"], "kind": obj["kind"], "name": name}],
    }
    template = _template(obj, spec["images"])
    if obj["kind"] == "DeploymentConfig":
        config = {
            "spec": {"template": template, "triggers": spec.get("triggers", obj["spec"].get("triggers"))}
        }
        meta["labels"] = {"openshift.io/deployment-config.name": name}
        meta["annotations"] = {
            "openshift.io/deployment-config.latest-version": str(number),
            "openshift.io/deployment.phase": spec.get("phase", "Complete"),
            "openshift.io/encoded-deployment-config": json.dumps(config),
        }
        if spec.get("cancelled"):
            meta["annotations"]["openshift.io/deployment.cancelled"] = "true"
        return {"kind": "ReplicationController", "metadata": meta, "spec": {"replicas": 1}, "status": {}}
    template["metadata"]["labels"]["pod-template-hash"] = f"h{number}"
    meta["annotations"] = {"deployment.kubernetes.io/revision": str(number)}
    return {
        "kind": "ReplicaSet",
        "metadata": meta,
        "spec": {"replicas": 1, "template": template},
        "status": {"availableReplicas": 1 if spec.get("available", True) else 0},
    }


@cache
def _group() -> dict[str, Obj]:
    return {
        kind_of(w["kind"]).ref(w).key: w
        for w in yaml.safe_load((FIXTURES / "group.yaml").read_text())["workloads"]
    }


def found(key: str, *, labels: dict[str, str] | None = None) -> Found:
    """Workload ``key`` of group.yaml as read, with its revisions (``labels`` replace its labels)."""
    obj = copy.deepcopy(_group()[key])
    revisions = [_revision(obj, spec) for spec in obj.pop("revisions")]
    if labels is not None:
        obj["metadata"]["labels"] = labels
    kind = kind_of(obj["kind"])
    return Found(kind, obj, kind.owned(obj, revisions))


def _answers(specs: list[Obj]) -> list[Answer]:
    return [
        Answer(
            (a["verb"], RESOURCES[a["resource"]], a.get("namespace", NAMESPACE)),
            allowed=bool(a.get("allowed", True)),
            error=ApiError(a["error"], status=500) if "error" in a else None,
        )
        for a in specs
    ]


def _journal_json(spec: Obj, *, selector: str) -> Obj:
    """A journal: ``state``, ``run_id`` and per workload the revision whose state it verified."""
    workloads = {}
    for key, entry in (spec.get("workloads") or {}).items():
        f = found(key)
        rev = next(r for r in f.revisions if f.kind.revision_number(r) == entry["revision"])
        state = f.kind.revision_state(rev)
        assert state is not None
        workloads[key] = {
            "kind": f.kind.kind,
            "name": f.obj["metadata"]["name"],
            "verified": state.to_json(),
            "target_images": entry.get("targets", {}),
            "phase": entry.get("phase", "pending"),
        }
    return {
        "namespace": NAMESPACE,
        "selector": selector,
        "run": {"id": spec.get("run_id", "run-1"), "state": spec.get("state", "succeeded")},
        "workloads": workloads,
    }


def journal(spec: Obj | None) -> Journal | None:
    return Journal.from_json(_journal_json(spec, selector=SELECTOR)) if spec is not None else None


def lease_view(spec: Obj | None) -> LeaseView | None:
    return LeaseView(holder=spec["holder"], expires_in=float(spec["expires_in"])) if spec else None


def _source_stream(name: str, tags: dict[str, str]) -> Obj:
    items = [
        {"tag": tag, "items": [{"image": image, "dockerImageReference": f"registry.local/cd/{name}@{image}"}]}
        for tag, image in tags.items()
    ]
    return {"metadata": {"name": name}, "status": {"tags": items}}


def _listing(keys: list[str], forbidden: str | None, labels: Obj) -> GroupListing:
    if forbidden:
        return GroupListing(
            workloads=[], forbidden=(RESOURCES[forbidden], Forbidden("forbidden", status=403))
        )
    return GroupListing(workloads=[found(k, labels=labels.get(k)) for k in keys])


def rollout_read(case: Obj) -> RolloutRead:
    read, args = case.get("read") or {}, case.get("args") or {}
    streams = read.get("source_streams") or {}
    return RolloutRead(
        namespace=NAMESPACE,
        selector=SELECTOR,
        namespace_found=read.get("namespace_found", True),
        group=_listing(case.get("group", []), read.get("list_forbidden"), {}),
        promote_from=args.get("promote_from"),
        promote_namespace_found=read.get("promote_namespace_found", True),
        access=_answers(read.get("access") or []),
        lease_name=group_name(SELECTOR),
        holder=HOLDER,
        lease=lease_view(read.get("lease")),
        journal=journal(read.get("journal")),
        source_streams={n: _source_stream(n, t) if t is not None else None for n, t in streams.items()},
    )


def _groups(specs: list[Obj]) -> list:
    """The namespace's rollout groups: each a journal ConfigMap and (``lock``) a Lease."""
    configmaps, leases = [], []
    for spec in specs:
        name = group_name(spec["selector"])
        data = _journal_json(spec, selector=spec["selector"])
        configmaps.append(
            {
                "metadata": {
                    "name": name,
                    "labels": {JOURNAL_LABEL: "true"},
                    "annotations": {SELECTOR_ANNOTATION: spec["selector"]},
                },
                "data": {DATA_KEY: json.dumps(data)},
            }
        )
        if spec.get("lock"):
            leases.append({"metadata": {"name": name}, "spec": _lease_spec(spec["lock"])})
    return read_groups(NAMESPACE, configmaps, leases, now=NOW)


def _lease_spec(lock: Obj) -> Obj:
    renewed = NOW - dt.timedelta(seconds=30 - float(lock["expires_in"]))
    return {
        "holderIdentity": lock["holder"],
        "leaseDurationSeconds": 30,
        "renewTime": renewed.strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
    }


def repair_read(case: Obj) -> RepairRead:
    """The RepairRead of a repair case (its request checked by `repair_request`, which may refuse)."""
    read, args = case.get("read") or {}, case.get("args") or {}
    request = repair_request(
        action=args.get("action", "revert"),
        namespace=NAMESPACE,
        targets=args.get("targets", []),
        selector=args.get("selector"),
        to_revision=args.get("to_revision"),
        allow_failed=args.get("allow_failed", False),
    )
    labels = case.get("labels") or {}
    keys = case.get("group") or [r.key for r in request.refs]
    groups = _groups(case.get("groups") or [])
    missing = read.get("missing")
    members = case.get("members", [k for k in keys if k != missing])
    streams = case.get("streams") or {}
    found_keys = keys if request.selector is not None else [r.key for r in request.refs]
    return RepairRead(
        request=request,
        now=NOW,
        namespace_found=read.get("namespace_found", True),
        listing=_listing(keys, read.get("list_forbidden"), labels) if request.selector is not None else None,
        access=_answers(read.get("access") or []),
        groups=groups,
        groups_forbidden=Forbidden("forbidden", status=403) if read.get("groups_forbidden") else None,
        missing=next((r for r in request.refs if r.key == read.get("missing")), None),
        found=None if read.get("missing") else [found(k, labels=labels.get(k)) for k in found_keys],
        members=_listing(members, read.get("members_forbidden"), labels)
        if request.selector is None
        else None,
        leases={g.name: lease_view(_lock_of(case, g.selector)) for g in groups},
        streams=Streams(
            found={tuple(k.split("/")): _stream_tags(v) for k, v in streams.items() if v != "unreadable"},
            unreadable=frozenset(tuple(k.split("/")) for k, v in streams.items() if v == "unreadable"),
        ),
    )


def _lock_of(case: Obj, selector: str) -> Obj | None:
    return next((g.get("lock") for g in case.get("groups") or [] if g["selector"] == selector), None)


def _stream_tags(tags: dict[str, str] | None) -> Obj | None:
    """A stream of the group's namespace whose tags point at these references (None: absent)."""
    if tags is None:
        return None
    return {
        "status": {"tags": [{"tag": t, "items": [{"dockerImageReference": ref}]} for t, ref in tags.items()]}
    }
