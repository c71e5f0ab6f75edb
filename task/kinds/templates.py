"""Pod templates compared as OpenShift compares them, diffed in one line, tags judged (pure).

The one place that says whether two pod templates are the same (`same_template`, `normalized`): every
"is the latest RC / ReplicaSet this template?", "did my write land?" and drift judgement goes through it.
OpenShift decides it on typed objects: openshift-controller-manager
pkg/apps/deploymentconfig/deploymentconfig_controller.go (hasLatestPodTemplate) decodes the RC's
``openshift.io/encoded-deployment-config`` (library-go pkg/apps/appsserialization/serialize.go
DecodeDeploymentConfig) and compares ``Spec.Template`` with ``reflect.DeepEqual``. After a typed decode a
JSON ``null``, an absent field and a zero value are one and the same (``"creationTimestamp": null``, which
controllers built on Kubernetes libraries before 1.33 write into every encoded template; ``resources:
{}``; ``securityContext: {}``), and a server fills in what kubernetes pkg/apis/core/v1/defaults.go
defaults (SetDefaults_PodSpec, SetDefaults_Container, SetDefaults_Probe, ...), which an RC encoded by an
older server may lack. Compared raw, such an RC never "runs the template": every DC not rolled out since
an upgrade would read stuck, and the drift check would page on healthy workloads.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from rollguard.core.structs import Obj
from rollguard.kinds.base import images_of
from rollguard.kinds.causes import CHANGE_CAUSE

# Tags that by convention move to each new build; an untagged reference means `latest`.
MOVING_TAGS = frozenset({"latest"})
_EMPTY: tuple[Any, ...] = (None, {}, [], "")

# kubernetes pkg/apis/core/v1/defaults.go: what the API server fills in where a pod template leaves it out
_POD_SPEC_DEFAULTS: dict[str, Any] = {
    "dnsPolicy": "ClusterFirst",  # SetDefaults_PodSpec
    "restartPolicy": "Always",
    "terminationGracePeriodSeconds": 30,
    "schedulerName": "default-scheduler",
}
_CONTAINER_DEFAULTS: dict[str, Any] = {
    "terminationMessagePath": "/dev/termination-log",  # SetDefaults_Container
    "terminationMessagePolicy": "File",
}
_PROBE_DEFAULTS: dict[str, Any] = {  # SetDefaults_Probe
    "timeoutSeconds": 1,
    "periodSeconds": 10,
    "successThreshold": 1,
    "failureThreshold": 3,
}
_PROBES = ("livenessProbe", "readinessProbe", "startupProbe")
_VOLUME_MODES = ("secret", "configMap", "downwardAPI", "projected")  # SetDefaults_*VolumeSource: 0644


def normalized(value: Any) -> Any:
    """A value as a typed decode sees it: nulls, empty maps, lists and strings dropped (absent, null
    and empty decode alike), so defaulting and encoding differences do not count as a change."""
    if isinstance(value, dict):
        pairs = ((k, normalized(v)) for k, v in value.items())
        return {k: v for k, v in pairs if v not in _EMPTY}
    if isinstance(value, list):
        return [normalized(v) for v in value]
    return value


def canonical(template: Any) -> Any:
    """A pod template as the API server stores it and a typed decode reads it: Kubernetes' defaults
    filled in where absent (`_defaulted`), then `normalized`. Comparing two of these is `same_template`."""
    if not isinstance(template, dict):
        return template
    return normalized(_defaulted(template))


def same_template(a: Any, b: Any) -> bool:
    """Whether two pod templates are the same as OpenShift judges it (see the module docstring); a
    missing template (None) is the same only as another missing one."""
    if a is None or b is None:
        return a is None and b is None
    return a == b or bool(canonical(a) == canonical(b))  # equal as sent: no typed read needed


def _defaulted(template: Obj) -> Obj:
    """A copy of ``template`` with kubernetes pkg/apis/core/v1/defaults.go's defaults where unset."""
    spec = template.get("spec")
    if not isinstance(spec, dict):
        return dict(template)
    spec = {**_POD_SPEC_DEFAULTS, **{k: v for k, v in spec.items() if v is not None}}
    for key in ("containers", "initContainers"):
        if isinstance(spec.get(key), list):
            spec[key] = [_container(c) for c in spec[key]]
    if isinstance(spec.get("volumes"), list):
        spec["volumes"] = [_volume(v) for v in spec["volumes"]]
    return {**template, "spec": spec}


def _container(container: Any) -> Any:
    if not isinstance(container, dict):
        return container
    out = {**_CONTAINER_DEFAULTS, **{k: v for k, v in container.items() if v is not None}}
    if not out.get("imagePullPolicy"):  # Always for :latest (or no tag), else IfNotPresent
        out["imagePullPolicy"] = "Always" if _tag(str(out.get("image") or "")) == "latest" else "IfNotPresent"
    if isinstance(out.get("ports"), list):
        out["ports"] = [{"protocol": "TCP", **p} if isinstance(p, dict) and not p.get("protocol") else p
                        for p in out["ports"]]  # fmt: skip
    for probe in _PROBES:
        if isinstance(out.get(probe), dict):
            out[probe] = _probe(out[probe])
    if isinstance(out.get("env"), list):
        out["env"] = [_env(e) for e in out["env"]]
    return out


def _probe(probe: Obj) -> Obj:
    out = {**probe, **{k: v for k, v in _PROBE_DEFAULTS.items() if not probe.get(k)}}
    http = out.get("httpGet")
    if isinstance(http, dict):  # SetDefaults_HTTPGetAction
        out["httpGet"] = {**http, "path": http.get("path") or "/", "scheme": http.get("scheme") or "HTTP"}
    return out


def _env(var: Any) -> Any:
    field = ((var or {}).get("valueFrom") or {}).get("fieldRef") if isinstance(var, dict) else None
    if not isinstance(field, dict) or field.get("apiVersion"):
        return var
    return {**var, "valueFrom": {**var["valueFrom"], "fieldRef": {**field, "apiVersion": "v1"}}}


def _volume(volume: Any) -> Any:
    if not isinstance(volume, dict):
        return volume
    out = dict(volume)
    sources = [k for k in out if k != "name" and out[k] is not None]
    if not sources:  # SetDefaults_Volume: no source is an emptyDir
        out["emptyDir"] = {"medium": ""}
    for mode in _VOLUME_MODES:
        if isinstance(out.get(mode), dict) and out[mode].get("defaultMode") is None:
            out[mode] = {**out[mode], "defaultMode": 420}
    return out


def _tag(image: str) -> str:
    """The tag of an image reference as kubernetes pkg/util/parsers ParseImageName reads it: ``latest``
    when it has neither tag nor digest, "" when it has only a digest."""
    name, _, digest = image.partition("@")
    last = name.rsplit("/", 1)[-1]
    if ":" in last:
        return last.rsplit(":", 1)[1]
    return "" if digest else "latest"


def local_name_rewrite(sent: str, live: str) -> bool:
    """Whether ``live`` is what OpenShift's image policy admission makes of the image ``sent``.

    openshift/kubernetes openshift-kube-apiserver/admission/imagepolicy (resolveImageReference,
    resolveImageStreamTag; default rules cover Deployments and DCs): a single-segment name (``api:v2``)
    of a stream with ``lookupPolicy.local`` is rewritten on every write to the tag's pull spec by digest
    (``image-registry.openshift-image-registry.svc:5000/ns/api@sha256:...``), or to
    ``<repository>/api:v2`` while the tag does not exist. The repository's last segment is the stream
    under the integrated registry; a stream importing another repository is recognised only when that
    repository has the stream's name.
    """
    sent = sent.strip()
    if not sent or "/" in sent or "@" in sent or not live or live == sent:
        return False
    name, _, tag = sent.partition(":")
    repository, at, digest = live.partition("@")
    if at:
        return digest.startswith("sha256:") and repository.rsplit("/", 1)[-1] == name
    return "/" in live and live.rsplit("/", 1)[-1] == f"{name}:{tag or 'latest'}"


def as_admitted(body: Obj, live: Obj) -> Obj:
    """``body`` (a write) with each pod template image that ``live`` holds as its `local_name_rewrite`
    taken as ``live`` has it: what the API stores of the write, for "did my write land?"."""
    sent = (body.get("spec") or {}).get("template")
    have = images_of((live.get("spec") or {}).get("template") or {})
    if not isinstance(sent, dict) or not have:
        return body
    sent_images = images_of(sent)
    rewritten = {
        name: have[name]
        for name, image in sent_images.items()
        if name in have and local_name_rewrite(str(image or ""), have[name])
    }
    if not rewritten:
        return body
    out = copy.deepcopy(body)
    for key in ("initContainers", "containers"):
        for c in out["spec"]["template"].get("spec", {}).get(key) or []:
            if c.get("name") in rewritten:
                c["image"] = rewritten[c["name"]]
    return out


def template_changes(before: Obj, after: Obj, *, limit: int = 3) -> list[str]:
    """Short human descriptions of how pod template ``after`` differs from ``before``."""
    out = [
        f"{c}: {images_of(before).get(c, '(none)')} -> {images_of(after).get(c, '(none)')}"
        for c in sorted(set(images_of(before)) | set(images_of(after)))
        if images_of(before).get(c) != images_of(after).get(c)
    ]
    paths: list[str] = []
    _diff_paths(canonical(before), canonical(after), "", paths)
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
    """What a write changes, but rollguard's own change-cause (a record of the write, not configuration)."""
    meta = obj.get("metadata") or {}
    spec = dict(obj.get("spec") or {})
    if not spec.get("paused"):
        spec.pop("paused", None)
    notes = {k: v for k, v in (meta.get("annotations") or {}).items() if k != CHANGE_CAUSE}
    return {"metadata": {"labels": meta.get("labels"), "annotations": notes}, "spec": spec}


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
