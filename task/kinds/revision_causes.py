"""The cause of each revision of a workload, decided from its revision objects (pure; issue 30 point 6).

In order, the first that tells wins:

1. rollguard's mark (`rollguard.kinds.causes`): the change-cause the revision carries names a run and this
   very revision's number: that run made it. A mark naming another number was carried over from an earlier
   write and says nothing of this revision.
2. A new stamp in the pod template's annotations, compared with the revision before: rollguard's
   ``rollguard.io/redeployed-at`` (a redeploy, run unknown) or ``kubectl.kubernetes.io/restartedAt``
   (`kubectl rollout restart`, `oc rollout restart`): a new rollout of the same configuration.
3. The template against the revision before it (``N - 1``): the same template is a new rollout asked for
   (`oc rollout latest`); changed images are an image change (naming the images, and the trigger that set
   them where the kind records one); any other change is a config change (naming the fields).
4. Without the revision before it (the first one, or one the history limit pruned): what the platform
   recorded (a DC's RC keeps the cause OpenShift gave its rollout, `Kind.recorded_cause`), else `created`
   for revision 1 and `unknown` for any other.

A change-cause someone else wrote (``kubectl annotate ... kubernetes.io/change-cause=...``) is added as a
note when the revision before did not carry the same one already (otherwise it is a stale one).
Everything that depends on the kind (where the change-cause is kept, what the platform records, which
trigger set an image) is a `Kind` method; this module never asks which kind it holds.
"""

from __future__ import annotations

from collections.abc import Iterable

from rollguard.core.images import short_image
from rollguard.core.structs import Obj
from rollguard.kinds.base import Kind, images_of
from rollguard.kinds.causes import REDEPLOYED_AT, RESTARTED_AT, Cause, Recorded, RevisionCause, parse_mark
from rollguard.kinds.templates import canonical, same_template

FIELDS_SHOWN = 2  # changed fields named in a config change's words; the rest counted


def revision_causes(kind: Kind, revisions: Iterable[Obj]) -> dict[int, RevisionCause]:
    """Revision number -> its cause, for one workload's revision objects (in any order)."""
    by_number = {kind.revision_number(r): r for r in revisions}
    return {n: revision_cause(kind, rev, by_number.get(n - 1)) for n, rev in by_number.items()}


def revision_cause(kind: Kind, rev: Obj, previous: Obj | None) -> RevisionCause:
    """The cause of revision ``rev``; ``previous``: the revision numbered one less, if it is still there."""
    number = kind.revision_number(rev)
    said = kind.change_cause(rev)
    mark = parse_mark(said)
    if mark is not None and mark.revision == number:
        return RevisionCause(
            Cause.ROLLGUARD, run_id=mark.run_id, command=mark.command, reverting=mark.reverting
        )
    note = ""
    if said and mark is None and (previous is None or kind.change_cause(previous) != said):
        note = f"change-cause: {said}"
    after = kind.revision_template(rev) or {}
    before = kind.revision_template(previous) if previous is not None else None
    recorded = kind.recorded_cause(rev)
    if before is None:
        return _without_before(kind, rev, number, recorded, after).noted(note)
    stamped = _restamped(before, after)
    if stamped is not None:
        return stamped.noted(note)
    if same_template(before, after):
        how = "oc rollout latest" if recorded is not None and recorded.cause is Cause.MANUAL else ""
        return RevisionCause(Cause.MANUAL, how or "a new rollout of the same template").noted(note)
    return _changed(kind, rev, before, after).noted(note)


def _annotation(template: Obj | None, key: str) -> str:
    return str((((template or {}).get("metadata") or {}).get("annotations") or {}).get(key) or "")


def _restamped(before: Obj, after: Obj) -> RevisionCause | None:
    """A redeploy's or a restart's new stamp (and nothing else changed besides it)."""
    for key, cause in (
        (REDEPLOYED_AT, RevisionCause(Cause.ROLLGUARD, command="redeploy")),
        (RESTARTED_AT, RevisionCause(Cause.MANUAL, "kubectl rollout restart")),
    ):
        stamp = _annotation(after, key)
        if (
            stamp
            and stamp != _annotation(before, key)
            and same_template(_unstamped(before), _unstamped(after))
        ):
            return cause
    return None


def _unstamped(template: Obj) -> Obj:
    out = dict(template)
    meta = dict(out.get("metadata") or {})
    notes = {
        k: v for k, v in (meta.get("annotations") or {}).items() if k not in (REDEPLOYED_AT, RESTARTED_AT)
    }
    meta["annotations"] = notes
    out["metadata"] = meta
    return out


def _without_before(
    kind: Kind, rev: Obj, number: int, recorded: Recorded | None, after: Obj
) -> RevisionCause:
    if number <= 1:
        return RevisionCause(Cause.CREATED)
    if recorded is None:
        return RevisionCause(Cause.UNKNOWN, "the revision before it is gone")
    if recorded.cause is Cause.IMAGE:
        sources = [short_image(s) if "/" in s or "@" in s else s for s in recorded.sources]
        return RevisionCause(Cause.IMAGE, ", ".join(sources))
    if recorded.cause is Cause.MANUAL:
        return RevisionCause(Cause.MANUAL, "oc rollout latest")
    return RevisionCause(recorded.cause)


def _changed(kind: Kind, rev: Obj, before: Obj, after: Obj) -> RevisionCause:
    """An image change (which containers, to what, set by which trigger) or a config change (which fields)."""
    old, new = images_of(before), images_of(after)
    images = []
    for container in sorted(set(old) | set(new)):
        if old.get(container) == new.get(container):
            continue
        words = f"{container} {short_image(new.get(container, ''))}"
        source = kind.trigger_source(rev, container, new.get(container, ""))
        images.append(words + (f" (trigger {source})" if source else ""))
    changed = {f"container {c}" for c in set(old) ^ set(new)}  # added or removed: named with its image
    fields = [f for f in _fields(before, after) if f not in changed]
    if images:
        more = f"; and {len(fields)} other field{'s' if len(fields) > 1 else ''}" if fields else ""
        return RevisionCause(Cause.IMAGE, ", ".join(images) + more)
    shown = ", ".join(fields[:FIELDS_SHOWN])
    rest = len(fields) - FIELDS_SHOWN
    return RevisionCause(Cause.CONFIG, shown + (f" (+{rest} more)" if rest > 0 else ""))


def _fields(before: Obj, after: Obj) -> list[str]:
    """The pod template's changed fields other than images, as short paths (``env of app``)."""
    out: list[str] = []
    _paths(canonical(_unstamped(before)), canonical(_unstamped(after)), "", out)
    return [p for p in out if not p.endswith(" image")]


def _paths(a: object, b: object, path: str, out: list[str]) -> None:
    if a == b:
        return
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b)):
            _paths(a.get(key), b.get(key), f"{path}.{key}" if path else str(key), out)
        return
    if isinstance(a, list) and isinstance(b, list) and path.endswith(("containers", "initContainers")):
        old = {str(c.get("name")): c for c in a if isinstance(c, dict)}
        new = {str(c.get("name")): c for c in b if isinstance(c, dict)}
        for name in sorted(set(old) | set(new)):
            _paths(old.get(name), new.get(name), f"{path}[{name}]", out)
        return
    out.append(_short(path))


def _short(path: str) -> str:
    """``spec.containers[app].env`` -> ``app env``; ``spec.containers[sidecar]`` -> ``container sidecar``;
    ``metadata.labels.tier`` -> ``labels.tier``; ``spec.volumes`` -> ``volumes``."""
    for key in ("spec.containers[", "spec.initContainers["):
        if path.startswith(key):
            name, _, field = path[len(key) :].partition("]")
            field = field.lstrip(".")
            return f"{name} {field}" if field else f"container {name}"
    return path.removeprefix("spec.").removeprefix("metadata.")
