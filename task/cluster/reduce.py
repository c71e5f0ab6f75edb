"""Objects cut down to what the read-only views use: the state model, the TUI's rows and detail.

`reducer_for(resource)` gives a pure function from an API object to a smaller dict with the same
shape, holding only the fields that `rollguard.state.assessment` (with `kinds`, `readiness`, `templates`,
`journal`, `lock`) and `rollguard.tui.data` read. `rollguard.state.inventory` applies it to each LIST page
before the next is fetched and the TUI's watch caches to every event, so reading a big cluster keeps
a fraction of what the API sends (no managedFields, no last-applied annotations, no pod specs).
Assessing reduced objects gives the same states as assessing full ones (tests/unit/test_reduce.py).
What a kind's rules read of its revision objects (an RC's encoded DC, a ReplicaSet's template) and
which annotations they need, each `Kind` says (`slim_revision`, `annotations`, `revision_annotations`).

Never used for what is written back: the rollout and the repairs read whole objects (a PUT of a
reduced object would delete the fields left out).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from rollguard.core.resources import (
    CONFIG_MAPS,
    LEASES,
    PODS,
    Resource,
)
from rollguard.core.structs import Obj
from rollguard.kinds import KINDS, Kind
from rollguard.kinds.base import pick

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


def _metadata(obj: Obj, notes: Iterable[str] = (), *, owners: bool = False) -> Obj:
    meta = obj.get("metadata") or {}
    out = pick(meta, _META)
    kept = pick(meta.get("annotations"), notes)
    if kept:
        out["annotations"] = kept
    if owners and meta.get("ownerReferences"):
        out["ownerReferences"] = [
            pick(r, ("uid", "kind", "name", "controller")) for r in meta["ownerReferences"]
        ]
    return out


def workload(obj: Obj) -> Obj:
    """A DC or Deployment: whole spec (template, triggers, strategy) and status, slim metadata."""
    return {
        "metadata": _metadata(obj, _WORKLOAD_NOTES),
        "spec": obj.get("spec") or {},
        "status": obj.get("status") or {},
    }


def revision(kind: Kind) -> Reducer:
    """The reducer of ``kind``'s revision objects: slim metadata, and what the kind says it reads."""

    def reduce(obj: Obj) -> Obj:
        return kind.slim_revision(obj, metadata=_metadata(obj, _REVISION_NOTES, owners=True))

    return reduce


def pod(obj: Obj) -> Obj:
    """A pod: owner, node, phase and its containers' states (no spec beyond the node)."""
    status = pick(obj.get("status"), _POD_STATUS)
    for key in ("containerStatuses", "initContainerStatuses"):
        if key in status:
            status[key] = [pick(c, _CONTAINER_STATUS) for c in status[key] or []]
    return {
        "metadata": _metadata(obj, owners=True),
        "spec": pick(obj.get("spec"), ("nodeName",)),
        "status": status,
    }


def whole(obj: Obj) -> Obj:
    """Journals and Leases: everything but the managedFields (the journal is their data)."""
    meta = {k: v for k, v in (obj.get("metadata") or {}).items() if k != "managedFields"}
    return {**obj, "metadata": meta}


REDUCERS: dict[Resource, Reducer] = {
    **{kind.resource: workload for kind in KINDS.values()},
    **{kind.revisions: revision(kind) for kind in KINDS.values()},
    PODS: pod,
    CONFIG_MAPS: whole,
    LEASES: whole,
}


def reducer_for(res: Resource) -> Reducer | None:
    """The reducer of a resource the state model reads, else None (keep the object whole)."""
    return REDUCERS.get(res)


_SCALARS = (int, float, bool, type(None))


class Interner:
    """Equal parts of reduced objects held once (hash-consing), for views that hold a whole cluster.

    A workload's kept revisions (ReplicaSets, RCs) carry pod templates that differ in an image or a
    label at most, and the workload's own template equals its newest revision's: calling an interner on
    each reduced object replaces every dict, list and string equal to one seen before by that one, so
    a big cluster's caches hold each distinct part once. Nothing is left out or summarised: the result
    is equal (``==``) to what went in, so the state model reads exactly what it read before.

    The parts are then shared between objects: whoever holds interned objects must not modify them
    (the read-only views never do; the rollout and the repairs read objects of their own). Safe to call
    from several threads (at worst a part is kept twice). The table only grows; `clear` it when most of
    what it saw is gone (a cache does so after as many new objects as it held). `object` interns an API
    object without remembering the object and its metadata themselves: those are unique (name, uid),
    and a table entry each would cost more than what it shares.
    """

    def __init__(self) -> None:
        self._table: dict[int, Any] = {}  # by the hash of a part's children (their identities)
        self._strings: dict[str, str] = {}

    def __len__(self) -> int:
        return len(self._table) + len(self._strings)

    def clear(self) -> None:
        """Forget the parts seen so far (objects already interned keep what they share)."""
        self._table, self._strings = {}, {}

    def object(self, obj: Obj) -> Obj:
        """An API object with its parts interned (the object and its metadata are new dicts)."""
        return {
            self(k): {self(mk): self(mv) for mk, mv in v.items()}
            if k == "metadata" and isinstance(v, dict)
            else self(v)
            for k, v in obj.items()
        }

    def __call__(self, value: Any) -> Any:
        if isinstance(value, str):
            return self._strings.setdefault(value, value)
        if isinstance(value, _SCALARS):
            return value
        if isinstance(value, dict):
            part: Any = {self(k): self(v) for k, v in value.items()}
            # children are interned already: their identity (scalars: their type and value) is the key
            key = hash((dict, *((k, _ident(v)) for k, v in part.items())))
        elif isinstance(value, list):
            part = [self(v) for v in value]
            key = hash((list, *(_ident(v) for v in part)))
        else:
            return value
        seen = self._table.setdefault(key, part)
        return seen if seen is part or _same(seen, part) else part


def _ident(value: Any) -> object:
    return (type(value), value) if isinstance(value, _SCALARS) else id(value)


def _same(seen: Any, part: Any) -> bool:
    """Equal, child for child by identity (both are made of interned parts); False on a hash collision."""
    if isinstance(part, dict):
        return (
            isinstance(seen, dict)
            and len(seen) == len(part)
            and all(k in seen and _ident(seen[k]) == _ident(v) for k, v in part.items())
            and list(seen) == list(part)
        )
    return (
        isinstance(seen, list)
        and len(seen) == len(part)
        and all(_ident(a) == _ident(b) for a, b in zip(seen, part, strict=True))
    )
