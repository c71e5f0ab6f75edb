"""API-server defaulting of DeploymentConfigs and ImageStreams, as OpenShift's API server applies it.

Defaults mirror openshift-apiserver pkg/apps/apis/apps/v1/defaults.go (and conversion.go: a trigger
`from.kind` ImageStream becomes ImageStreamTag `<name>:latest`); `omit_empty` mirrors the typed round
trip of openshift/api apps/v1/types.go and image/v1/types.go: a field tagged `omitempty` that holds its
zero value (`automatic: false`, `paused: false`, `containerNames: []`, `lastTriggeredImage: ""`,
`reference: false`, ...) is not stored, so a client never reads it back.

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


def default_dc(dc: JSON, *, create: bool = False) -> JSON:
    """A defaulted copy of a DeploymentConfig; ``create``: for a create (PrepareForCreate's defaults too).

    ``revisionHistoryLimit`` is defaulted on create only (openshift-apiserver
    pkg/apps/apiserver/registry/deployconfig/strategy.go groupStrategy.PrepareForCreate,
    appsV1DeploymentConfigLayeredDefaults): an update that leaves it out keeps no history limit."""
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
    if create and spec.get("revisionHistoryLimit") is None:
        spec["revisionHistoryLimit"] = DEFAULT_HISTORY_LIMIT
    _default_strategy(spec.setdefault("strategy", {}))
    for t in spec["triggers"]:
        params = t.get("imageChangeParams") if isinstance(t, dict) else None
        if isinstance(params, dict):
            src = params.setdefault("from", {})
            if not src.get("kind"):
                src["kind"] = "ImageStreamTag"
            if src.get("kind") in ("ImageStream", "ImageRepository"):  # conversion.go
                src["kind"] = "ImageStreamTag"
                if ":" not in (src.get("name") or ""):
                    src["name"] = f"{src.get('name') or ''}:latest"
            if not src.get("namespace"):
                src["namespace"] = namespace
    if isinstance(template, dict):
        default_pod_template(template)
    omit_empty_dc(spec)
    return dc


_OBJECT_REFERENCE = ("kind", "namespace", "name", "uid", "apiVersion", "resourceVersion", "fieldPath")


def _drop_zero(obj: JSON, *fields: str) -> None:
    """Remove `omitempty` fields holding their zero value (false, 0, "", empty list or map, null)."""
    for f in fields:
        if f in obj and obj[f] in (None, False, 0, "", [], {}):
            del obj[f]


def omit_empty_dc(spec: JSON) -> None:
    """What a DC spec's typed round trip drops (openshift/api apps/v1/types.go `omitempty` tags)."""
    _drop_zero(spec, "paused", "minReadySeconds", "selector")
    for t in spec.get("triggers") or []:
        params = t.get("imageChangeParams") if isinstance(t, dict) else None
        if isinstance(params, dict):
            _drop_zero(params, "automatic", "containerNames", "lastTriggeredImage")
            if isinstance(params.get("from"), dict):
                _drop_zero(params["from"], *_OBJECT_REFERENCE)


def omit_empty_is(spec: JSON) -> None:
    """What an ImageStream spec's typed round trip drops (openshift/api image/v1/types.go)."""
    _drop_zero(spec, "dockerImageRepository", "tags")
    for tag in spec.get("tags") or []:
        if not isinstance(tag, dict):
            continue
        _drop_zero(tag, "annotations", "reference", "from")
        if isinstance(tag.get("from"), dict):
            _drop_zero(tag["from"], *_OBJECT_REFERENCE)
        if isinstance(tag.get("importPolicy"), dict):
            _drop_zero(tag["importPolicy"], "insecure", "scheduled", "importMode")


def without_last_triggered(dc: JSON) -> JSON:
    """A copy of `dc` whose image triggers have no lastTriggeredImage (what a create keeps of them)."""
    dc = copy.deepcopy(dc)
    for t in (dc.get("spec") or {}).get("triggers") or []:
        params = t.get("imageChangeParams") if isinstance(t, dict) else None
        if isinstance(params, dict):
            params.pop("lastTriggeredImage", None)
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


def validate_dc(dc: JSON, template_errors: list[str] | None = None) -> list[str]:
    """The validation errors OpenShift would report (openshift-apiserver
    pkg/apps/apis/apps/validation/validation.go ValidateDeploymentConfigSpec), for the rules the
    emulation knows, in its order: triggers, strategy, then the template.

    `template_errors`: what Kubernetes' own ValidatePodTemplateSpecForRC says of `spec.template`
    (sandbox/openshift/podtemplate.py asks the real API server). None when it could not be asked: then
    the emulation's own few template rules stand in (selector and labels, a required image)."""
    spec = dc.get("spec") or {}
    template = spec.get("template")
    errors: list[str] = []
    for i, t in enumerate(spec.get("triggers") or []):
        errors += _validate_trigger(t, f"spec.triggers[{i}]")
    if isinstance(template, dict):  # validateDeploymentStrategy only runs with a pod spec to check
        errors += _validate_strategy(
            spec.get("strategy") or {}, (spec.get("template") or {}).get("spec") or {}
        )
    errors += _validate_counts(spec)
    if not isinstance(template, dict):
        errors.append("spec.template: Required value")
    elif template_errors is not None:
        errors += template_errors
    else:
        errors += _template_errors(spec, template)
    if _number(spec.get("replicas")) < 0:
        errors.append(f"spec.replicas: Invalid value: {spec['replicas']}: replicas cannot be negative")
    if not spec.get("selector"):  # defaulted from the template's labels: neither has any
        errors.append("spec.selector: Invalid value: map[string]string(nil): selector cannot be empty")
    return _unique(errors)


_NONNEGATIVE = "must be greater than or equal to 0"  # core validation ValidateNonnegativeField
DEFAULT_TIMEOUT_SECONDS = 600  # appsapi.DefaultRollingTimeoutSeconds


def _number(value: Any) -> int:
    try:
        return int(value or 0)
    except (TypeError, ValueError):
        return 0


def _validate_counts(spec: JSON) -> list[str]:
    """validation.go ValidateDeploymentConfigSpec between the strategy and the template: the history limit
    and minReadySeconds not negative, minReadySeconds below the rollout's timeout and the deployer pod's
    activeDeadlineSeconds."""
    errors = []
    limit = spec.get("revisionHistoryLimit")
    if limit is not None and _number(limit) < 0:
        errors.append(f"spec.revisionHistoryLimit: Invalid value: {limit}: {_NONNEGATIVE}")
    ready = _number(spec.get("minReadySeconds"))
    if ready < 0:
        errors.append(f"spec.minReadySeconds: Invalid value: {ready}: {_NONNEGATIVE}")
    strategy = spec.get("strategy") or {}
    rolling, recreate = strategy.get("rollingParams"), strategy.get("recreateParams")
    timeout = DEFAULT_TIMEOUT_SECONDS
    if isinstance(rolling, dict) and rolling.get("timeoutSeconds") is not None:
        timeout = _number(rolling["timeoutSeconds"])
    elif isinstance(recreate, dict) and recreate.get("timeoutSeconds") is not None:
        timeout = _number(recreate["timeoutSeconds"])
    if timeout > 0 and ready >= timeout:
        errors.append(
            f"spec.minReadySeconds: Invalid value: {ready}: must be less than the deployment timeout ({timeout}s)"
        )
    deadline = strategy.get("activeDeadlineSeconds")
    if deadline is not None and ready >= _number(deadline):
        errors.append(
            f"spec.minReadySeconds: Invalid value: {ready}: must be less than activeDeadlineSeconds "
            f"({_number(deadline)}s - used by the deployer pod)"
        )
    return errors


def _unique(errors: list[str]) -> list[str]:
    """field.ErrorList.ToAggregate drops an error that prints as one before it."""
    return list(dict.fromkeys(errors))


_CAUSE_REASONS = {
    "Invalid value": "FieldValueInvalid",
    "Required value": "FieldValueRequired",
    "Duplicate value": "FieldValueDuplicate",
    "Unsupported value": "FieldValueNotSupported",
    "Forbidden": "FieldValueForbidden",
    "Too long": "FieldValueTooLong",
    "Too many": "FieldValueTooMany",
    "Not found": "FieldValueNotFound",
    "Internal error": "InternalError",
}


def invalid_causes(errors: list[str]) -> list[JSON]:
    """The `details.causes` of errors.NewInvalid for errors printed as "field: detail"."""
    causes = []
    for e in errors:
        path, _, body = e.partition(": ")
        reason = next(
            (r for prefix, r in _CAUSE_REASONS.items() if body.startswith(prefix)), "FieldValueInvalid"
        )
        causes.append({"reason": reason, "message": body, "field": path})
    return causes


def _template_errors(spec: JSON, template: JSON) -> list[str]:
    """The emulation's own stand-in for ValidatePodTemplateSpecForRC: selector and labels, then a
    required image (handleEmptyImageReferences: only an image trigger naming the container may leave it
    empty; a blank " " passes Kubernetes' own check, which tests len(image) == 0 only)."""
    errors = []
    labels = (template.get("metadata") or {}).get("labels") or {}
    selector = spec.get("selector") or {}
    if selector and any(labels.get(k) != v for k, v in selector.items()):
        errors.append(
            f"spec.template.metadata.labels: Invalid value: {json.dumps(labels)}: "
            "`selector` does not match template `labels`"
        )
    triggered: set[Any] = set()
    for t in spec.get("triggers") or []:
        params = t.get("imageChangeParams") if isinstance(t, dict) else None
        if isinstance(params, dict) and t.get("type") == "ImageChange":
            triggered.update(params.get("containerNames") or [])
    for i, c in enumerate(_containers(template)):
        if c.get("image", "") == "" and c.get("name") not in triggered:
            errors.append(f"spec.template.spec.containers[{i}].image: Required value")
    return errors


def _containers(template: JSON) -> list[JSON]:
    return [c for c in (template.get("spec") or {}).get("containers") or [] if isinstance(c, dict)]


def _validate_trigger(t: Any, path: str) -> list[str]:
    """validation.go validateTrigger and validateImageChangeParams."""
    if not isinstance(t, dict) or not t.get("type"):
        return [f"{path}.type: Required value"]
    if t["type"] != "ImageChange":
        return []
    params = t.get("imageChangeParams")
    if not isinstance(params, dict):
        return [f"{path}.imageChangeParams: Required value"]
    errors = []
    src = params.get("from") or {}
    if not src.get("name"):
        errors.append(f"{path}.imageChangeParams.from: Required value")
    else:
        if src.get("kind") != "ImageStreamTag":
            errors.append(
                f"{path}.imageChangeParams.from.kind: Invalid value: {json.dumps(src.get('kind', ''))}: "
                "kind must be an ImageStreamTag"
            )
        reason = _stream_tag_name_error(str(src["name"]))
        if reason:
            errors.append(
                f"{path}.imageChangeParams.from.name: Invalid value: {json.dumps(src['name'])}: {reason}"
            )
        namespace = src.get("namespace")
        if namespace and (len(str(namespace)) > 253 or not _DNS_SUBDOMAIN.fullmatch(str(namespace))):
            errors.append(
                f"{path}.imageChangeParams.from.namespace: Invalid value: {json.dumps(namespace)}: "
                "namespace must be a valid subdomain"
            )
    if not params.get("containerNames"):
        errors.append(f"{path}.imageChangeParams.containerNames: Required value")
    return errors


_STREAM_NAME = "[a-z0-9]+(?:[._-][a-z0-9]+)*"  # RepositoryNameComponentRegexp
_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")


def _stream_tag_name_error(istag: str) -> str:
    """validation.go validateImageStreamTagName: a colon (imageutil.SplitImageStreamTag splits at the
    first; an empty tag means "latest"), and a stream name that ValidateImageStreamName accepts (openshift-
    apiserver pkg/image/apis/image/validation/validation.go: apimachinery's ValidatePathSegmentName, then
    the repository name component pattern). "" when the name is valid."""
    name, colon, _tag = istag.partition(":")
    if not colon:
        return "must be in the form of <name>:<tag>"
    if name in (".", ".."):
        return f"may not be '{name}'"
    reasons = [f"may not contain '{ch}'" for ch in "/%" if ch in name]
    if reasons:
        return ", ".join(reasons)
    if not re.fullmatch(_STREAM_NAME, name):
        return f'must match "{_STREAM_NAME}"'
    return ""


def _int_or_percent_error(value: Any) -> str:
    """validation.go ValidatePositiveIntOrPercent: a string must be a percentage, a number not negative."""
    if isinstance(value, str) and not re.fullmatch(r"[0-9]+%", value):
        return "value should be int(5) or percentage(5%)"
    if isinstance(value, int) and value < 0:
        return "must be non-negative"
    return ""


def _int_or_percent_is_zero(value: Any) -> bool:
    return value is None or str(value).strip() in ("0", "0%")


def _validate_strategy(strategy: JSON, pod: JSON) -> list[str]:
    """validation.go validateDeploymentStrategy: the rolling or recreate params (their lifecycle hooks
    last), then the deadline."""
    rolling, recreate = strategy.get("rollingParams"), strategy.get("recreateParams")
    params = rolling if isinstance(rolling, dict) else recreate if isinstance(recreate, dict) else {}
    kind = "rollingParams" if isinstance(rolling, dict) else "recreateParams"
    errors = []
    if strategy.get("type") == "Custom" and not isinstance(strategy.get("customParams"), dict):
        errors.append("spec.strategy.customParams: Required value")
    if isinstance(rolling, dict):  # validateRollingParams: the periods first, then the timeout
        for field in ("intervalSeconds", "updatePeriodSeconds"):
            value = rolling.get(field)
            if value is not None and _number(value) < 1:
                errors.append(f"spec.strategy.rollingParams.{field}: Invalid value: {value}: must be >0")
    timeout = params.get("timeoutSeconds")
    if timeout is not None and int(timeout) < 1:
        errors.append(f"spec.strategy.{kind}.timeoutSeconds: Invalid value: {timeout}: must be >0")
    if isinstance(rolling, dict):
        for field in ("maxUnavailable", "maxSurge"):  # ValidatePositiveIntOrPercent
            reason = _int_or_percent_error(rolling.get(field))
            if reason:
                errors.append(
                    f"spec.strategy.rollingParams.{field}: Invalid value: {json.dumps(rolling[field])}: {reason}"
                )
    if (
        isinstance(rolling, dict)
        and _int_or_percent_is_zero(rolling.get("maxUnavailable"))
        and _int_or_percent_is_zero(rolling.get("maxSurge"))
    ):
        value = json.dumps(rolling.get("maxUnavailable", 0))
        errors.append(
            f"spec.strategy.rollingParams.maxUnavailable: Invalid value: {value}: "
            "cannot be 0 when maxSurge is 0 as well"
        )
    if isinstance(rolling, dict):  # IsNotMoreThan100Percent
        unavailable = rolling.get("maxUnavailable")
        if (
            isinstance(unavailable, str)
            and re.fullmatch(r"[0-9]+%", unavailable)
            and int(unavailable[:-1]) > 100
        ):
            errors.append(
                f"spec.strategy.rollingParams.maxUnavailable: Invalid value: {json.dumps(unavailable)}: "
                "should not be more than 100%"
            )
    kinds = ("pre", "post") if isinstance(rolling, dict) else ("pre", "mid", "post")
    for name in kinds:  # validateRollingParams / validateRecreateParams: Pre, (Mid,) Post
        hook = params.get(name)
        if isinstance(hook, dict):
            errors += _validate_hook(hook, pod, f"spec.strategy.{kind}.{name}")
    deadline = strategy.get("activeDeadlineSeconds")
    if deadline is not None and timeout is not None and int(deadline) <= int(timeout):
        errors.append(
            f"spec.strategy.activeDeadlineSeconds: Invalid value: {deadline}: "
            "activeDeadlineSeconds must be greater than timeoutSeconds"
        )
    return errors


_C_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_C_IDENTIFIER_MSG = (
    "a valid C identifier must start with alphabetic character or '_', followed by a string of alphanumeric "
    "characters or '_' (e.g. 'my_name',  or 'MY_NAME',  or 'MyName', regex used for validation is "
    "'[A-Za-z_][A-Za-z0-9_]*')"
)


def _validate_hook(hook: JSON, pod: JSON, path: str) -> list[str]:
    """validation.go validateLifecycleHook (and validateExecNewPod, validateEnv, validateHookVolumes)."""
    errors = []
    if not hook.get("failurePolicy"):
        errors.append(f"{path}.failurePolicy: Required value")
    exec_, tags = hook.get("execNewPod"), hook.get("tagImages") or []
    if isinstance(exec_, dict) and tags:
        errors.append(
            f"{path}: Invalid value: \"<hook>\": only one of 'execNewPod' or 'tagImages' may be specified"
        )
    elif isinstance(exec_, dict):
        if not exec_.get("command"):
            errors.append(f"{path}.execNewPod.command: Required value")
        if not exec_.get("containerName"):
            errors.append(f"{path}.execNewPod.containerName: Required value")
        for i, env in enumerate(exec_.get("env") or []):
            name = str((env or {}).get("name") or "")
            if not name:
                errors.append(f"{path}.execNewPod.env[{i}].name: Required value")
            if not _C_IDENTIFIER.fullmatch(name):
                errors.append(
                    f'{path}.execNewPod.env[{i}].name: Invalid value: "{name}": {_C_IDENTIFIER_MSG}'
                )
        for i, volume in enumerate(exec_.get("volumes") or []):
            if not volume:
                errors.append(f'{path}.execNewPod.volumes[{i}]: Invalid value: "": must not be empty')
    elif tags:
        names = {c.get("name") for c in pod.get("containers") or []}
        for i, tag in enumerate(tags):
            where = f"{path}.tagImages[{i}]"
            container = (tag or {}).get("containerName")
            if not container:
                errors.append(f"{where}.containerName: Required value: a containerName is required")
            elif container not in names:
                errors.append(
                    f'{where}.containerName: Invalid value: "{container}": no container "{container}" found'
                )
            to = (tag or {}).get("to") or {}
            if to.get("kind") != "ImageStreamTag":
                errors.append(
                    f"{where}.to.kind: Invalid value: \"{to.get('kind', '')}\": Must be 'ImageStreamTag'"
                )
            if not to.get("name"):
                errors.append(f"{where}.to.name: Required value: a destination tag name is required")
    else:
        errors.append(f'{path}: Invalid value: "<empty>": One of execNewPod or tagImages must be specified')
    return errors


def default_is(stream: JSON, old: JSON | None) -> JSON:
    """A defaulted copy of an ImageStream; spec tags that changed get the stream's next generation."""
    stream = copy.deepcopy(stream)
    spec = stream.setdefault("spec", {})
    spec.setdefault("lookupPolicy", {"local": False})
    tags = [t for t in spec.get("tags") or [] if isinstance(t, dict)]
    for tag in tags:
        tag.setdefault("importPolicy", {})
        tag.setdefault("referencePolicy", {"type": "Source"})
    omit_empty_is(spec)
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


def validate_tag_sources(stream: JSON, old: JSON | None, namespace: str, lookup: Any) -> str | None:
    """The first error OpenShift's tagsChanged (openshift-apiserver pkg/image/apiserver/registry/
    imagestream/strategy.go) reports for a changed spec tag copying from another stream: that stream
    does not exist, or (ImageStreamImage) holds no such image. `lookup(namespace, name)` reads a stream."""
    if lookup is None:
        return None
    ns = stream.get("metadata", {}).get("namespace") or namespace
    name = stream.get("metadata", {}).get("name", "")
    old_tags = {
        t.get("name"): t for t in ((old or {}).get("spec") or {}).get("tags") or [] if isinstance(t, dict)
    }
    for tag in (stream.get("spec") or {}).get("tags") or []:
        if not isinstance(tag, dict) or not isinstance(tag.get("from"), dict):
            continue
        before = old_tags.get(tag.get("name"))
        if before is not None and _tag_content(before) == _tag_content(tag):
            continue
        src = tag["from"]
        kind, ref = src.get("kind"), str(src.get("name") or "")
        if kind not in ("ImageStreamImage", "ImageStreamTag"):
            continue
        sep = "@" if kind == "ImageStreamImage" else ":"
        src_stream, _, tag_or_id = ref.partition(sep)
        src_ns = src.get("namespace") or ns
        if (src_ns, src_stream) == (ns, name) or not src_stream or not tag_or_id:
            continue
        path = f"spec.tags[{tag.get('name')}].from.name"
        source = lookup(src_ns, src_stream)
        if source is None:
            return f"{path}: Not found: {json.dumps(ref)}"
        if kind == "ImageStreamImage" and not any(
            item.get("image") == tag_or_id
            for t in (source.get("status") or {}).get("tags") or []
            for item in t.get("items") or []
        ):
            return (
                f"{path}: Invalid value: {json.dumps(ref)}: error generating tag event: "
                f'imagestreamimage.image.openshift.io "{tag_or_id}" not found'
            )
    return None
