"""Triggers: the image trigger writing tag images into DCs, and which change starts a rollout.

Re-written from OpenShift's image trigger controller for DeploymentConfigs: for every automatic
ImageChange trigger whose tag resolves, set `lastTriggeredImage` and the image of each named container.
If any automatic trigger cannot be resolved yet (and never was), the DC is left alone entirely.
`rollout_details` is the DC controller's triggerActivated(): whether a change calls for a new rollout,
and with which recorded cause.
"""

from __future__ import annotations

import copy
from collections.abc import Callable

from sandbox.openshift import appsutil as u
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
        # imageutil.SplitImageStreamTag: the stream before the first colon, an empty tag is "latest"
        stream, _, tag = (src.get("name") or "").partition(":")
        tag = tag or "latest"
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


def rollout_details(dc: JSON, latest_exists: bool, latest: JSON | None) -> JSON | str | None:
    """Details of a new rollout to start, "skip" while the first one waits for images, else None."""
    if dc.get("spec", {}).get("paused"):
        return None
    image_trigger, config_trigger = u.has_trigger(dc, "ImageChange"), u.has_trigger(dc, "ConfigChange")
    config_change = {"message": "config change", "causes": [{"type": "ConfigChange"}]}
    if int((dc.get("status") or {}).get("latestVersion") or 0) == 0:
        if image_trigger:
            # the first rollout waits until every image trigger has resolved once; its cause is
            # ConfigChange even so (OpenShift cannot tell which of several triggers made it possible)
            ready = all(p.get("lastTriggeredImage") for p in u.image_triggers(dc))
            return config_change if ready else "skip"
        return config_change if config_trigger else None
    if not latest_exists or latest is None:
        return None
    if image_trigger:
        rc_images = {c.get("image") for c in u.containers(latest)}
        new = [c.get("image") for c in u.containers(dc) if c.get("image") not in rc_images]
        if new:
            causes = [
                {"type": "ImageChange", "imageTrigger": {"from": {"kind": "DockerImage", "name": i}}}
                for i in new
            ]
            return {"message": "image change", "causes": causes}
    if config_trigger:
        encoded = u.decode_config(latest)
        if encoded is not None and u.normalized(encoded.get("spec", {}).get("template")) != u.normalized(
            dc.get("spec", {}).get("template")
        ):
            return config_change
    return None
