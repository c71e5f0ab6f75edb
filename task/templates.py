"""Pod templates compared the way a human reads them: normalized, diffed in one line, tags judged (pure)."""

from __future__ import annotations

import json
from typing import Any

from rollguard.kinds import images_of
from rollguard.structs import Obj

# Tags that by convention move to each new build; an untagged reference means `latest`.
MOVING_TAGS = frozenset({"latest"})


def normalized(value: Any) -> Any:
    """A template without empty values, so defaulting differences do not count as drift."""
    if isinstance(value, dict):
        pairs = ((k, normalized(v)) for k, v in value.items())
        return {k: v for k, v in pairs if v not in (None, {}, [], "")}
    if isinstance(value, list):
        return [normalized(v) for v in value]
    return value


def template_changes(before: Obj, after: Obj, *, limit: int = 3) -> list[str]:
    """Short human descriptions of how pod template ``after`` differs from ``before``."""
    out = [
        f"{c}: {images_of(before).get(c, '(none)')} -> {images_of(after).get(c, '(none)')}"
        for c in sorted(set(images_of(before)) | set(images_of(after)))
        if images_of(before).get(c) != images_of(after).get(c)
    ]
    paths: list[str] = []
    _diff_paths(normalized(before), normalized(after), "", paths)
    out += [p for p in paths if not p.endswith(".image changed")]
    return out[:limit] + ([f"... {len(out) - limit} more"] if len(out) > limit else [])


def _diff_paths(a: Any, b: Any, path: str, out: list[str]) -> None:
    if a == b:
        return
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b)):
            _diff_paths(a.get(key), b.get(key), f"{path}.{key}" if path else key, out)
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            name = x.get("name") if isinstance(x, dict) else None
            _diff_paths(x, y, f"{path}[{name or i}]", out)
    else:
        out.append(f"{path} changed")


def moving_tag(image: str) -> str | None:
    """The moving tag an image reference follows (``latest`` when untagged), or None when pinned."""
    ref = image.strip()
    if not ref or "@" in ref:
        return None
    last = ref.rsplit("/", 1)[-1]
    tag = last.rsplit(":", 1)[1] if ":" in last else "latest"
    return tag if tag in MOVING_TAGS else None


def field_changes(before: Obj, after: Obj, *, width: int = 120) -> list[str]:
    """Every field a write of ``after`` over ``before`` changes, one ``path: old -> new`` each: labels,
    annotations and the whole spec (env, resources, probes ..., not only images), empty values ignored.

    Named list entries (containers, env) are matched by name, so one changed variable is one line."""
    out: list[str] = []
    _leaf_changes(normalized(_writable(before)), normalized(_writable(after)), "", out)
    return [_shorten(line, width) for line in out]


def _writable(obj: Obj) -> Obj:
    meta = obj.get("metadata") or {}
    spec = dict(obj.get("spec") or {})
    if not spec.get("paused"):
        spec.pop("paused", None)
    return {"metadata": {k: meta.get(k) for k in ("labels", "annotations")}, "spec": spec}


def _named(items: list[Any]) -> dict[str, Any] | None:
    names = [i.get("name") if isinstance(i, dict) else None for i in items]
    if all(isinstance(n, str) for n in names) and len(set(names)) == len(names):
        return dict(zip(names, items, strict=True))  # type: ignore[arg-type]
    return None


def _leaf_changes(a: Any, b: Any, path: str, out: list[str]) -> None:
    if a == b:
        return
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b)):
            _leaf_changes(a.get(key), b.get(key), f"{path}.{key}" if path else key, out)
        return
    if isinstance(a, list) and isinstance(b, list):
        named_a, named_b = _named(a), _named(b)
        if named_a is not None and named_b is not None and list(named_a) == list(named_b):
            for name in named_a:
                _leaf_changes(named_a[name], named_b[name], f"{path}[{name}]", out)
            return
    out.append(f"{path}: {_show(a)} -> {_show(b)}")


def _show(value: Any) -> str:
    if value is None:
        return "(none)"
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True, separators=(",", ":"))


def _shorten(line: str, width: int) -> str:
    return line if len(line) <= width else line[: width - 3] + "..."
