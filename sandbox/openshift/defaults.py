"""API-server defaulting of DeploymentConfigs and ImageStreams, as OpenShift's API server applies it.

Pure functions on plain dicts: the admission webhook applies them on every create and update (so a
client reads the defaults in the very answer to its write, as on OpenShift), and the DC controller
applies them as a fallback when the webhook was not reachable.
"""

from __future__ import annotations

import copy
import json
import re
from typing import Any

from sandbox.openshift.kube import JSON

ROLLING_DEFAULTS = {"updatePeriodSeconds": 1, "intervalSeconds": 1, "timeoutSeconds": 600}
DEFAULT_HISTORY_LIMIT = 10
DEFAULT_ACTIVE_DEADLINE = 21600
_PROBE_DEFAULTS = {"timeoutSeconds": 1, "periodSeconds": 10, "successThreshold": 1, "failureThreshold": 3}


def default_dc(dc: JSON) -> JSON:
    """A defaulted copy of a DeploymentConfig."""
    dc = copy.deepcopy(dc)
    spec = dc.setdefault("spec", {})
    namespace = dc.get("metadata", {}).get("namespace", "")
    if spec.get("triggers") is None:  # absent or null; an explicit [] means "no triggers"
        spec["triggers"] = [{"type": "ConfigChange"}]
    template = spec.get("template")
    if not spec.get("selector") and isinstance(template, dict):
        labels = (template.get("metadata") or {}).get("labels")
        if labels:
            spec["selector"] = dict(labels)
    spec.setdefault("replicas", 0)
    spec.setdefault("test", False)
    if spec.get("revisionHistoryLimit") is None:
        spec["revisionHistoryLimit"] = DEFAULT_HISTORY_LIMIT
    _default_strategy(spec.setdefault("strategy", {}))
    for t in spec["triggers"]:
        params = t.get("imageChangeParams") if isinstance(t, dict) else None
        if isinstance(params, dict):
            src = params.setdefault("from", {})
            if not src.get("kind"):
                src["kind"] = "ImageStreamTag"
            if not src.get("namespace"):
                src["namespace"] = namespace
    if isinstance(template, dict):
        default_pod_template(template)
    return dc


def _default_strategy(strategy: JSON) -> None:
    if not strategy.get("type"):
        strategy["type"] = "Rolling"
    if strategy["type"] == "Rolling" and strategy.get("rollingParams") is None:
        strategy["rollingParams"] = {}
    if strategy["type"] == "Recreate" and strategy.get("recreateParams") is None:
        strategy["recreateParams"] = {}
    rolling = strategy.get("rollingParams")
    if isinstance(rolling, dict):
        for k, v in ROLLING_DEFAULTS.items():
            if rolling.get(k) is None:
                rolling[k] = v
        surge, unavailable = rolling.get("maxSurge"), rolling.get("maxUnavailable")
        if surge is None and unavailable is None:
            rolling["maxUnavailable"] = rolling["maxSurge"] = "25%"
        elif unavailable is None and surge in (0, "0%"):
            rolling["maxUnavailable"] = "25%"
        elif surge is None and unavailable in (0, "0%"):
            rolling["maxSurge"] = "25%"
    recreate = strategy.get("recreateParams")
    if isinstance(recreate, dict) and recreate.get("timeoutSeconds") is None:
        recreate["timeoutSeconds"] = 600
    strategy.setdefault("resources", {})
    if strategy.get("activeDeadlineSeconds") is None:
        strategy["activeDeadlineSeconds"] = DEFAULT_ACTIVE_DEADLINE


def default_pod_template(template: JSON) -> None:
    """Kubernetes' own defaults for a pod template (what the API server adds to a DC's template)."""
    spec = template.get("spec")
    if not isinstance(spec, dict):
        return
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("securityContext", {})
    spec.setdefault("schedulerName", "default-scheduler")
    for key in ("initContainers", "containers"):
        for c in spec.get(key) or []:
            if isinstance(c, dict):
                _default_container(c)


def _default_container(c: JSON) -> None:
    if not c.get("imagePullPolicy"):
        c["imagePullPolicy"] = "Always" if _tag_of(c.get("image") or "") == "latest" else "IfNotPresent"
    c.setdefault("terminationMessagePath", "/dev/termination-log")
    c.setdefault("terminationMessagePolicy", "File")
    c.setdefault("resources", {})
    for p in c.get("ports") or []:
        if isinstance(p, dict):
            p.setdefault("protocol", "TCP")
    for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
        pr = c.get(probe)
        if isinstance(pr, dict):
            for k, v in _PROBE_DEFAULTS.items():
                pr.setdefault(k, v)
            if isinstance(pr.get("httpGet"), dict):
                pr["httpGet"].setdefault("scheme", "HTTP")


def _tag_of(image: str) -> str:
    """The tag Kubernetes assumes for an image reference ("latest" when neither tag nor digest)."""
    image = image.strip()
    if not image or any(ch.isspace() for ch in image):
        return ""
    if "@" in image:
        return ""
    last = image.rsplit("/", 1)[-1]
    return last.split(":", 1)[1] if ":" in last else "latest"


def validate_dc(dc: JSON) -> str | None:
    """The first validation error OpenShift would report for the fields the emulation relies on."""
    spec = dc.get("spec") or {}
    template = spec.get("template")
    if not isinstance(template, dict):
        return "spec.template: Required value"
    labels = (template.get("metadata") or {}).get("labels") or {}
    selector = spec.get("selector") or {}
    if selector and any(labels.get(k) != v for k, v in selector.items()):
        return (
            f"spec.template.metadata.labels: Invalid value: {json.dumps(labels)}: "
            "`selector` does not match template `labels`"
        )
    names = {
        c.get("name") for c in (template.get("spec") or {}).get("containers") or [] if isinstance(c, dict)
    }
    for i, t in enumerate(spec.get("triggers") or []):
        params = t.get("imageChangeParams") if isinstance(t, dict) else None
        if t.get("type") == "ImageChange" and not isinstance(params, dict):
            return f"spec.triggers[{i}].imageChangeParams: Required value"
        if isinstance(params, dict):
            src = params.get("from") or {}
            if src.get("kind", "ImageStreamTag") == "ImageStreamTag" and not re.fullmatch(
                r"[^:@]+:[^:@]+", src.get("name") or ""
            ):
                return (
                    f"spec.triggers[{i}].imageChangeParams.from.name: Invalid value: "
                    f"{json.dumps(src.get('name', ''))}: must be of the form <stream_name>:<tag>"
                )
            for n in params.get("containerNames") or []:
                if n not in names:
                    return (
                        f"spec.triggers[{i}].imageChangeParams.containerNames: Invalid value: "
                        f"{json.dumps(n)}: there is no container with this name in the pod template"
                    )
    return None


def default_is(stream: JSON, old: JSON | None) -> JSON:
    """A defaulted copy of an ImageStream; spec tags that changed get the stream's next generation."""
    stream = copy.deepcopy(stream)
    spec = stream.setdefault("spec", {})
    spec.setdefault("lookupPolicy", {"local": False})
    tags = [t for t in spec.get("tags") or [] if isinstance(t, dict)]
    for tag in tags:
        tag.setdefault("importPolicy", {})
        tag.setdefault("referencePolicy", {"type": "Source"})
    old_spec = (old or {}).get("spec") or {}
    old_tags = {t.get("name"): t for t in old_spec.get("tags") or [] if isinstance(t, dict)}
    old_gen = int((old or {}).get("metadata", {}).get("generation") or 0)
    # a CRD's generation goes up by one on every spec change: that is the generation this write gets
    spec_changed = _strip_generations(spec) != _strip_generations(old_spec)
    next_gen = old_gen + 1 if old is not None and spec_changed else max(old_gen, 1)
    for tag in tags:
        before = old_tags.get(tag.get("name"))
        if before is None or _tag_content(before) != _tag_content(tag):
            tag["generation"] = next_gen
        elif tag.get("generation") is None:
            tag["generation"] = before.get("generation")
    return stream


def _tag_content(tag: JSON) -> Any:
    return {k: v for k, v in tag.items() if k not in ("generation", "annotations")}


def _strip_generations(spec: JSON) -> Any:
    return {**spec, "tags": [_tag_content(t) for t in spec.get("tags") or [] if isinstance(t, dict)]}
