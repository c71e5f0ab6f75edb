"""How a manifest is merged onto the live workload: the body of the run's one write (pure, no I/O).

The rules (README "Manifests", docs/migrating.md), chosen so that what a user wrote is what runs and
what the server or other tools set stays:

- ``metadata``: the manifest's labels and annotations are set over the live ones (a key it does not
  name stays, e.g. the revision annotations the controllers keep); everything else stays live
  (resourceVersion, uid, ownerReferences, managedFields ...). ``status`` stays live.
- ``spec``: each field the manifest gives replaces the live one whole (``strategy``, ``triggers``,
  ``selector`` ...); a field it leaves out stays. ``paused`` is the run's (it resumes). ``replicas`` is
  the manifest's, except when a HorizontalPodAutoscaler targets the workload: then live.
- ``spec.template``: its labels and annotations merge as the object's do; in its pod spec each field
  the manifest gives replaces the live one, except ``containers`` and ``initContainers``: those are
  the manifest's (its order; a live container it does not list is gone), each merged with the live
  container of the same name field by field (``env``, ``resources``, a probe given replace the live
  ones whole; fields left out, such as the server's ``terminationMessagePath``, stay).
- images: a container's image is the manifest's, unless it is empty or blank (the OpenShift template
  convention ``image: ' '``) and an image trigger feeds the container: then the live image stays (the
  trigger resolved it). ``--image`` and ``--promote-from`` are applied after this merge, so they win.

- removals, as ``kubectl apply`` applies them: a field or map key that the manifest the group's last
  verified run applied (``last``, kept in the journal per workload) set and this manifest omits is
  removed (an ``env`` or ``resources`` dropped from a container, a label dropped from the metadata);
  what others set, which no manifest of rollguard's gave, stays.

`changed_fields` says what a merge changes (for the plan, ``--dry-run`` and the revert record);
`restore_record` is what a revert must put back besides the template.
"""

from __future__ import annotations

import copy
from typing import Any

from rollguard.core.structs import Obj
from rollguard.kinds import Kind

MERGED_LISTS = ("initContainers", "containers")  # merged entry by entry, by name
RUN_OWNED_SPEC = ("paused",)  # the run decides these, never a manifest
ABSENT = None  # in a restore record: the key was not there before


def _merge_map(live: Any, given: Any) -> dict[str, Any]:
    """``live`` with every key of ``given`` set over it (one level)."""
    out = dict(live) if isinstance(live, dict) else {}
    if isinstance(given, dict):
        out.update(copy.deepcopy(given))
    return out


def _dropped(last: Any, given: Any) -> list[str]:
    """The keys mapping ``last`` (what the previous manifest set) has and ``given`` does not."""
    if not isinstance(last, dict):
        return []
    now = given if isinstance(given, dict) else {}
    return [k for k in last if k not in now]


def _meta_merged(live: Obj, given: Obj, last: Obj | None = None) -> Obj:
    """Object or template metadata: labels and annotations merged, the rest live; a key the previous
    manifest set and this one omits removed."""
    out = copy.deepcopy(live) if isinstance(live, dict) else {}
    for key in ("labels", "annotations"):
        if isinstance(given.get(key), dict):
            out[key] = _merge_map(out.get(key), given[key])
        for gone in _dropped((last or {}).get(key), given.get(key)):
            if isinstance(out.get(key), dict):
                out[key].pop(gone, None)
    return out


def blank(image: Any) -> bool:
    return not isinstance(image, str) or not image.strip()


def _containers(live: list[Obj], given: list[Obj], *, fed: set[str], last: Any = None) -> list[Obj]:
    by_name = {c.get("name"): c for c in live or []}
    last_by_name = (
        {c.get("name"): c for c in last or [] if isinstance(c, dict)} if isinstance(last, list) else {}
    )
    out = []
    for entry in given:
        before = by_name.get(entry.get("name"), {})
        merged = _merge_map(before, entry)
        for gone in _dropped(last_by_name.get(entry.get("name")), entry):
            if gone not in ("name", "image"):
                merged.pop(gone, None)
        if blank(entry.get("image")) and entry.get("name") in fed and not blank(before.get("image")):
            merged["image"] = before["image"]  # the trigger resolved it; the manifest holds a placeholder
        out.append(merged)
    return out


def _template(live: Obj, given: Obj, *, fed: set[str], last: Obj | None = None) -> Obj:
    last = last or {}
    out: Obj = {}
    if "metadata" in live or "metadata" in given:
        out["metadata"] = _meta_merged(
            live.get("metadata") or {}, given.get("metadata") or {}, last.get("metadata") or {}
        )
    pod = copy.deepcopy(live.get("spec") or {})
    last_pod = last.get("spec") or {}
    for key, value in (given.get("spec") or {}).items():
        if key in MERGED_LISTS and isinstance(value, list):
            pod[key] = _containers(pod.get(key) or [], value, fed=fed, last=last_pod.get(key))
        else:
            pod[key] = copy.deepcopy(value)
    for gone in _dropped(last_pod, given.get("spec")):
        if gone not in MERGED_LISTS:
            pod.pop(gone, None)
    for key in MERGED_LISTS:  # a list the manifest leaves out stays; containers are always given
        if key in pod and not pod[key]:
            pod.pop(key)
    out["spec"] = pod
    return out


def fed_containers(kind: Kind, body: Obj) -> set[str]:
    """The containers an image trigger of ``body`` feeds."""
    return {c for trigger in kind.image_triggers(body) for c in trigger.containers}


def merged(live: Obj, manifest: Obj, *, kind: Kind, keep_replicas: bool, last: Obj | None = None) -> Obj:
    """The live workload with the manifest merged onto it by the module's rules (a new object);
    ``last``: the manifest the group's last verified run applied to it, whose fields this one omits
    are removed."""
    last = last or {}
    body = copy.deepcopy(live)
    body["metadata"] = _meta_merged(
        live.get("metadata") or {}, manifest.get("metadata") or {}, last.get("metadata") or {}
    )
    spec = body.setdefault("spec", {})
    given = manifest.get("spec") or {}
    for key, value in given.items():
        if key in RUN_OWNED_SPEC or (key == "replicas" and keep_replicas) or key == "template":
            continue
        spec[key] = copy.deepcopy(value)
    for gone in _dropped(last.get("spec"), given):
        if gone not in (*RUN_OWNED_SPEC, "template", "replicas"):  # replicas: the live count stays
            spec.pop(gone, None)
    if isinstance(given.get("template"), dict):
        # The triggers that feed containers are the ones the write will carry (the manifest's, if given).
        spec["template"] = _template(
            spec.get("template") or {},
            given["template"],
            fed=fed_containers(kind, body),
            last=(last.get("spec") or {}).get("template") or {},
        )
    return body


def applied_record(manifest: Obj) -> Obj:
    """What the journal keeps of a manifest a run applied, for the next run's removals: its labels,
    annotations and spec (not its status, nor the server's metadata)."""
    meta = manifest.get("metadata") or {}
    return {
        "metadata": {
            k: copy.deepcopy(meta[k]) for k in ("labels", "annotations") if isinstance(meta.get(k), dict)
        },
        "spec": copy.deepcopy(manifest.get("spec") or {}),
    }


def created(manifest: Obj) -> Obj:
    """The body that creates a workload given only as a manifest: the manifest, without status."""
    body = copy.deepcopy(manifest)
    body.pop("status", None)
    meta = body.setdefault("metadata", {})
    for key in ("resourceVersion", "uid", "creationTimestamp", "generation", "managedFields"):
        meta.pop(key, None)
    body.setdefault("spec", {}).pop("paused", None)
    return body


def changed_fields(before: Obj, after: Obj) -> list[str]:
    """Which parts a write of ``after`` over ``before`` changes: ``spec.template``, ``spec.replicas``,
    ``metadata.labels`` ... (in a stable order)."""
    out = []
    for key in ("labels", "annotations"):
        if (before.get("metadata") or {}).get(key) != (after.get("metadata") or {}).get(key):
            out.append(f"metadata.{key}")
    b_spec, a_spec = before.get("spec") or {}, after.get("spec") or {}
    for key in sorted(set(b_spec) | set(a_spec)):
        if key in RUN_OWNED_SPEC:
            continue
        if b_spec.get(key) != a_spec.get(key):
            out.append(f"spec.{key}")
    return out


def restore_record(before: Obj, after: Obj) -> Obj:
    """What a revert must put back besides the template: each label, annotation and spec field
    (other than ``template``) that ``after`` changes, with its value before (None: it was absent)."""
    record: Obj = {}
    for key in ("labels", "annotations"):
        b_map = (before.get("metadata") or {}).get(key) or {}
        a_map = (after.get("metadata") or {}).get(key) or {}
        changed = {k: b_map.get(k, ABSENT) for k in set(a_map) | set(b_map) if a_map.get(k) != b_map.get(k)}
        if changed:
            record[key] = changed
    b_spec, a_spec = before.get("spec") or {}, after.get("spec") or {}
    spec = {
        k: copy.deepcopy(b_spec.get(k, ABSENT))
        for k in set(a_spec) | set(b_spec)
        if k not in (*RUN_OWNED_SPEC, "template") and b_spec.get(k) != a_spec.get(k)
    }
    if spec:
        record["spec"] = spec
    return record


def restored(obj: Obj, record: Obj) -> Obj:
    """``obj`` with a `restore_record` put back (labels, annotations, spec fields); a new object."""
    body = copy.deepcopy(obj)
    meta = body.setdefault("metadata", {})
    for key in ("labels", "annotations"):
        for name, value in (record.get(key) or {}).items():
            target = meta.setdefault(key, {})
            if value is ABSENT:
                target.pop(name, None)
            else:
                target[name] = value
    spec = body.setdefault("spec", {})
    for name, value in (record.get("spec") or {}).items():
        if value is ABSENT:
            spec.pop(name, None)
        else:
            spec[name] = copy.deepcopy(value)
    return body


def combined_restore(earlier: Obj, later: Obj) -> Obj:
    """Two restore records of one workload as one; ``earlier`` (a dead run's, whose state came first)
    wins where both name a key."""
    out: Obj = {}
    for section in sorted(set(earlier) | set(later)):
        out[section] = {**(later.get(section) or {}), **(earlier.get(section) or {})}
    return out
