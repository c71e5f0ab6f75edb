"""Label selectors in the normalized syntax of `rollguard.plan.inputs.parse_selector`, matched locally (pure).

Used to tell which rollout group (journal selector) a workload belongs to without asking the API.
"""

from __future__ import annotations

from collections.abc import Mapping


def split_requirements(selector: str) -> list[str]:
    """A selector cut at its top-level commas (commas inside ``in (...)`` kept), empty parts too."""
    parts, depth, cur = [], 0, ""
    for ch in selector:
        depth += (ch == "(") - (ch == ")")
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    return parts


def requirements(selector: str) -> list[str]:
    """The non-empty requirements of a selector, stripped."""
    return [p.strip() for p in split_requirements(selector) if p.strip()]


def matches(selector: str, labels: Mapping[str, str]) -> bool:
    """Whether ``labels`` satisfy a selector in `rollguard.plan.inputs.parse_selector`'s normalized syntax."""
    for req in requirements(selector):
        if " in (" in req or " notin (" in req:
            key, op, rest = req.split(" ", 2)
            values = {v.strip() for v in rest.strip()[1:-1].split(",")}
            if (op == "in") != (labels.get(key) in values):
                return False
        elif "!=" in req:
            key, value = req.split("!=", 1)
            if labels.get(key) == value:
                return False
        elif "=" in req:
            key, value = req.split("=", 1)
            if labels.get(key.rstrip("=")) != value.lstrip("="):
                return False
        elif req.startswith("!"):
            if req[1:] in labels:
                return False
        elif req not in labels:
            return False
    return True
