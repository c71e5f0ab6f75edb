"""The image trigger: write the image an ImageStreamTag points at into a DC's containers.

Re-written from OpenShift's image trigger controller for DeploymentConfigs: for every automatic
ImageChange trigger whose tag resolves, set `lastTriggeredImage` and the image of each named container.
If any automatic trigger cannot be resolved yet (and never was), the DC is left alone entirely.
"""

from __future__ import annotations

import copy
from collections.abc import Callable

from sandbox.openshift.kube import JSON

TagLookup = Callable[[str, str, str], str | None]  # (namespace, stream, tag) -> dockerImageReference


def trigger_sources(dc: JSON) -> set[tuple[str, str]]:
    """(namespace, stream) of every ImageStreamTag the DC's image triggers watch."""
    ns = dc.get("metadata", {}).get("namespace", "")
    out = set()
    for t in dc.get("spec", {}).get("triggers") or []:
        p = t.get("imageChangeParams") if isinstance(t, dict) else None
        src = (p or {}).get("from") or {}
        if src.get("kind", "ImageStreamTag") == "ImageStreamTag" and ":" in (src.get("name") or ""):
            out.add((src.get("namespace") or ns, src["name"].rsplit(":", 1)[0]))
    return out


def update_images(dc: JSON, lookup: TagLookup, include_manual: bool = False) -> JSON | None:
    """A copy of `dc` with triggered images written in, or None when nothing changes (or unresolvable)."""
    ns = dc.get("metadata", {}).get("namespace", "")
    updated = copy.deepcopy(dc)
    changed = False
    template_spec = (updated.get("spec", {}).get("template") or {}).get("spec") or {}
    for t in updated.get("spec", {}).get("triggers") or []:
        p = t.get("imageChangeParams") if isinstance(t, dict) else None
        if not isinstance(p, dict):
            continue
        src = p.get("from") or {}
        if src.get("kind", "ImageStreamTag") != "ImageStreamTag" or not (
            p.get("automatic") or include_manual
        ):
            continue
        stream, _, tag = (src.get("name") or "").rpartition(":")
        ref = lookup(src.get("namespace") or ns, stream, tag) if stream else None
        last = p.get("lastTriggeredImage") or ""
        if not ref and not last:
            return None  # not resolvable yet: OpenShift leaves the whole DC untouched
        ref = ref or last
        if last != ref:
            p["lastTriggeredImage"] = ref
            changed = True
        names = p.get("containerNames") or []
        for key in ("initContainers", "containers"):
            for c in template_spec.get(key) or []:
                if c.get("name") in names and c.get("image") != ref:
                    c["image"] = ref
                    changed = True
    return updated if changed else None
