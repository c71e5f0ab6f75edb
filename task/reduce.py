"""Objects cut down to what the read-only views use: the state model, the TUI's rows and detail.

`reducer_for(resource)` gives a pure function from an API object to a smaller dict with the same
shape, holding only the fields that `rollguard.state` (with `kinds`, `readiness`, `templates`,
`journal`, `lock`) and `rollguard.tui.data` read. `rollguard.inventory` applies it to each LIST page
before the next is fetched and the TUI's watch caches to every event, so reading a big cluster keeps
a fraction of what the API sends (no managedFields, no last-applied annotations, no pod specs).
Assessing reduced objects gives the same states as assessing full ones (tests/unit/test_reduce.py).

Never used for what is written back: the rollout and the repairs read whole objects (a PUT of a
reduced object would delete the fields left out).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any

from rollguard.kinds import KINDS
from rollguard.kinds.deploymentconfig import ENCODED_DC_ANNOTATION
from rollguard.resources import (
    CONFIG_MAPS,
    DEPLOYMENT_CONFIGS,
    DEPLOYMENTS,
    LEASES,
    PODS,
    REPLICA_SETS,
    REPLICATION_CONTROLLERS,
    Resource,
)
from rollguard.structs import Obj

Reducer = Callable[[Obj], Obj]

# metadata every reduced object keeps (names, identity, ownership, age, version for watch ordering)
_META = ("name", "namespace", "uid", "resourceVersion", "generation", "creationTimestamp", "labels")
# annotations the state model reads on workloads and revision objects
# (each kind names the annotations its rules read)
_WORKLOAD_NOTES = tuple(dict.fromkeys(a for kind in KINDS.values() for a in kind.annotations))
_REVISION_NOTES = tuple(dict.fromkeys(a for kind in KINDS.values() for a in kind.revision_annotations))
# what a pod contributes: owner, node, phase and per container readiness, restarts, waiting reasons
_POD_STATUS = ("phase", "containerStatuses", "initContainerStatuses")
_CONTAINER_STATUS = ("name", "ready", "restartCount", "state", "lastState")


def _pick(obj: Any, keys: Iterable[str]) -> Obj:
    if not isinstance(obj, dict):
        return {}
    return {k: obj[k] for k in keys if k in obj}


def _metadata(obj: Obj, notes: Iterable[str] = (), *, owners: bool = False) -> Obj:
    meta = obj.get("metadata") or {}
    out = _pick(meta, _META)
    kept = _pick(meta.get("annotations"), notes)
    if kept:
        out["annotations"] = kept
    if owners and meta.get("ownerReferences"):
        out["ownerReferences"] = [_pick(r, ("uid", "kind", "name")) for r in meta["ownerReferences"]]
    return out


def workload(obj: Obj) -> Obj:
    """A DC or Deployment: whole spec (template, triggers, strategy) and status, slim metadata."""
    return {
        "metadata": _metadata(obj, _WORKLOAD_NOTES),
        "spec": obj.get("spec") or {},
        "status": obj.get("status") or {},
    }


def _encoded_config(text: str) -> str:
    """A DC as its RC encodes it, cut to the spec's template and triggers (all anything reads)."""
    try:
        config = json.loads(text)
    except ValueError:
        return (
            text  # kept as it is: `kinds.deploymentconfig.rc_template` judges garbage the same way either way
        )
    if not isinstance(config, dict) or not isinstance(config.get("spec"), dict):
        return text
    spec = _pick(config["spec"], ("template", "triggers"))
    return json.dumps({"spec": spec}, separators=(",", ":"))


def replication_controller(obj: Obj) -> Obj:
    """An RC: its phase annotations and the DC template it was made from (as a compact string)."""
    meta = _metadata(obj, _REVISION_NOTES, owners=True)
    encoded = ((obj.get("metadata") or {}).get("annotations") or {}).get(ENCODED_DC_ANNOTATION)
    spec = _pick(obj.get("spec"), ("replicas",))
    if encoded:
        meta.setdefault("annotations", {})[ENCODED_DC_ANNOTATION] = _encoded_config(encoded)
    elif "template" in (obj.get("spec") or {}):
        spec["template"] = obj["spec"]["template"]  # no encoded config: the RC's own template is shown
    return {"metadata": meta, "spec": spec, "status": _pick(obj.get("status"), ("replicas", "readyReplicas"))}


def replica_set(obj: Obj) -> Obj:
    """A ReplicaSet: revision, owner, replicas and its pod template."""
    return {
        "metadata": _metadata(obj, _REVISION_NOTES, owners=True),
        "spec": _pick(obj.get("spec"), ("replicas", "template")),
        "status": _pick(obj.get("status"), ("replicas", "readyReplicas", "availableReplicas")),
    }


def pod(obj: Obj) -> Obj:
    """A pod: owner, node, phase and its containers' states (no spec beyond the node)."""
    status = _pick(obj.get("status"), _POD_STATUS)
    for key in ("containerStatuses", "initContainerStatuses"):
        if key in status:
            status[key] = [_pick(c, _CONTAINER_STATUS) for c in status[key] or []]
    return {
        "metadata": _metadata(obj, owners=True),
        "spec": _pick(obj.get("spec"), ("nodeName",)),
        "status": status,
    }


def whole(obj: Obj) -> Obj:
    """Journals and Leases: everything but the managedFields (the journal is their data)."""
    meta = {k: v for k, v in (obj.get("metadata") or {}).items() if k != "managedFields"}
    return {**obj, "metadata": meta}


REDUCERS: dict[Resource, Reducer] = {
    DEPLOYMENT_CONFIGS: workload,
    DEPLOYMENTS: workload,
    REPLICATION_CONTROLLERS: replication_controller,
    REPLICA_SETS: replica_set,
    PODS: pod,
    CONFIG_MAPS: whole,
    LEASES: whole,
}


def reducer_for(res: Resource) -> Reducer | None:
    """The reducer of a resource the state model reads, else None (keep the object whole)."""
    return REDUCERS.get(res)
