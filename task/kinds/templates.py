"""Pod templates compared the way a human reads them: normalized, diffed in one line, tags judged (pure)."""

from __future__ import annotations

from typing import Any

from rollguard.core.structs import Obj
from rollguard.kinds import images_of

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
