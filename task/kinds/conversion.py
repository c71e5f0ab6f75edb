"""A DeploymentConfig as the Deployment that replaces it (`rollguard migrate`), field by field (pure).

What converts, after openshift/api `apps/v1/types.go` (DeploymentConfigSpec, DeploymentStrategy,
RollingDeploymentStrategyParams, RecreateDeploymentStrategyParams, LifecycleHook) and Kubernetes'
`apps/v1` DeploymentSpec:

- ``replicas``, ``minReadySeconds``, ``revisionHistoryLimit``, ``paused`` as they are;
- the map ``selector`` becomes ``matchLabels``; the pod ``template`` is the DC's, plus the
  ``deploymentconfig=<name>`` label every DC pod carries (the DC controller adds it to each RC's
  template, and `oc new-app` Services select it), so a Service keeps finding the new pods. The label is
  not in the Deployment's selector: its ReplicaSets select ``pod-template-hash`` too, which no DC pod
  has, and no RC of the DC selects ``deployment=<rc>``, which no new pod has, so neither side adopts the
  other's pods;
- Rolling becomes ``RollingUpdate`` (``maxSurge`` and ``maxUnavailable``, 25% each when unset as on both
  kinds) and its ``timeoutSeconds`` the ``progressDeadlineSeconds`` (both a no-progress deadline, 600 s by
  default); Recreate becomes ``Recreate``;
- each ImageChange trigger becomes an entry of the ``image.openshift.io/triggers`` annotation per
  container it names (``paused`` when it was not automatic); the container keeps the image the trigger
  resolved. ConfigChange is what a Deployment does anyway.

What has no Deployment equivalent is refused with what to do, never dropped: the Custom strategy;
lifecycle hooks (an ``execNewPod`` pre hook becomes an init container only when asked, since it then runs
in every pod, not once per rollout); ``spec.test``; a template image no trigger has resolved yet. The
deployer pod's own settings (``strategy.resources``, ``labels``, ``annotations``,
``activeDeadlineSeconds``) and the rolling ``updatePeriodSeconds``/``intervalSeconds`` pacing have no
meaning for a Deployment and are named in the notes.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field

from rollguard.core.structs import DC, DEPLOYMENT, Obj
from rollguard.kinds.triggers import TRIGGERS_ANNOTATION

DC_LABEL = "deploymentconfig"  # on every DC pod (LG appsutil DeploymentConfigLabel)
MIGRATED_FROM = "rollguard.io/migrated-from"  # on the Deployment: the DC it replaces
DEFAULT_SURGE = "25%"
DEFAULT_TIMEOUT = 600
_DEPLOYER_ONLY = ("resources", "labels", "annotations", "activeDeadlineSeconds")
_PACING = ("updatePeriodSeconds", "intervalSeconds")


@dataclass(frozen=True)
class Conversion:
    """The Deployment for one DC, or why there is none: ``refusals`` (each says what to do) and
    ``notes`` (what the Deployment does differently, said in the output and the report)."""

    name: str
    deployment: Obj | None
    refusals: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def convert(dc: Obj, *, pre_hook_as_init_container: bool = False) -> Conversion:
    """The Deployment that replaces ``dc``, as stored by the API server modulo its defaults."""
    meta, spec = dc.get("metadata") or {}, dc.get("spec") or {}
    name = str(meta.get("name", ""))
    refusals: list[str] = []
    notes: list[str] = []
    template = copy.deepcopy(spec.get("template") or {})
    pod_spec = template.setdefault("spec", {})
    strategy = _strategy(
        name, spec.get("strategy") or {}, pod_spec, refusals, notes, pre_hook_as_init_container
    )
    if spec.get("test"):
        refusals.append(
            f"dc/{name} is a test DeploymentConfig (spec.test: true: it scales to 0 after each rollout); a "
            "Deployment cannot do that: convert it by hand (a Job or a Deployment scaled by the pipeline)"
        )
    entries = _trigger_entries(name, spec.get("triggers") or [], pod_spec, refusals)
    if not any(t.get("type") == "ConfigChange" for t in spec.get("triggers") or []):
        notes.append(
            f"dc/{name} has no ConfigChange trigger: the Deployment rolls out every change of its template "
            "(a Deployment always does)"
        )
    for key in ("containers", "initContainers"):
        for c in pod_spec.get(key) or []:
            if not str(c.get("image") or "").strip():
                refusals.append(
                    f"dc/{name}: container {c.get('name')} has no image yet (its image trigger never fired): "
                    "roll the DC out once (rollguard rollout) before migrating it"
                )
    labels = dict((template.get("metadata") or {}).get("labels") or {})
    labels.setdefault(DC_LABEL, name)
    template.setdefault("metadata", {})["labels"] = labels
    selector = dict(spec.get("selector") or {})
    if refusals:
        return Conversion(name=name, deployment=None, refusals=refusals, notes=notes)
    annotations = {MIGRATED_FROM: f"dc/{name}"}
    if entries:
        annotations[TRIGGERS_ANNOTATION] = json.dumps(entries, separators=(",", ":"))
    body: Obj = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": name,
            "namespace": meta.get("namespace", ""),
            "labels": dict(meta.get("labels") or {}),
            "annotations": annotations,
        },
        "spec": {
            "replicas": int(spec.get("replicas", 1) or 0),
            "selector": {"matchLabels": selector},
            "template": template,
            "strategy": strategy,
            "progressDeadlineSeconds": _timeout(spec.get("strategy") or {}),
            "paused": bool(spec.get("paused", False)),
        },
    }
    for key in ("minReadySeconds", "revisionHistoryLimit"):
        if spec.get(key) is not None:
            body["spec"][key] = spec[key]
    if not body["metadata"]["namespace"]:
        del body["metadata"]["namespace"]
    return Conversion(name=name, deployment=body, refusals=[], notes=notes)


def _timeout(strategy: Obj) -> int:
    params = strategy.get("rollingParams") or strategy.get("recreateParams") or {}
    return int(params.get("timeoutSeconds") or DEFAULT_TIMEOUT)


def _strategy(
    name: str, strategy: Obj, pod_spec: Obj, refusals: list[str], notes: list[str], pre_hook_as_init: bool
) -> Obj:
    kind = strategy.get("type") or "Rolling"
    if kind == "Custom":
        refusals.append(
            f"dc/{name} uses the Custom strategy (its own deployer image), which a Deployment has no "
            "equivalent for: move what the deployer does into the pipeline, switch the DC to Rolling or "
            "Recreate, then migrate"
        )
        return {}
    params = strategy.get("rollingParams" if kind == "Rolling" else "recreateParams") or {}
    _hooks(name, params, pod_spec, refusals, notes, pre_hook_as_init)
    # activeDeadlineSeconds is always there: the API defaults it to 21600 (openshift-apiserver
    # pkg/apps/apis/apps/v1/defaults.go, MaxDeploymentDurationSeconds); only another value was chosen
    dropped = [
        k
        for k in _DEPLOYER_ONLY
        if strategy.get(k) and not (k == "activeDeadlineSeconds" and strategy[k] == 21600)
    ]
    dropped += [k for k in _PACING if kind == "Rolling" and params.get(k) not in (None, 1)]
    if dropped:
        notes.append(
            f"dc/{name}: {', '.join(dropped)} of the strategy apply to the deployer pod: a Deployment has none"
        )
    if kind == "Recreate":
        return {"type": "Recreate"}
    return {
        "type": "RollingUpdate",
        "rollingUpdate": {
            "maxSurge": params.get("maxSurge", DEFAULT_SURGE),
            "maxUnavailable": params.get("maxUnavailable", DEFAULT_SURGE),
        },
    }


def _hooks(
    name: str, params: Obj, pod_spec: Obj, refusals: list[str], notes: list[str], pre_as_init: bool
) -> None:
    for when in ("pre", "mid", "post"):
        hook = params.get(when)
        if not hook:
            continue
        exec_pod = hook.get("execNewPod")
        if when == "pre" and exec_pod and not hook.get("tagImages") and pre_as_init:
            if hook.get("failurePolicy") == "Ignore":
                refusals.append(
                    f"dc/{name}: its pre hook's failurePolicy is Ignore, which an init container cannot do "
                    "(a failing init container stops the pod): make the hook's command succeed or set Abort"
                )
                continue
            pod_spec.setdefault("initContainers", []).insert(0, _init_container(name, exec_pod, pod_spec))
            notes.append(
                f"dc/{name}: its pre hook runs as the init container {name}-pre-hook in every pod, not once "
                "per rollout: it must be safe to run concurrently and repeatedly"
            )
            continue
        fix = (
            "run it with --pre-hook-as-init-container (it then runs in every pod), or move it into the "
            "pipeline before the rollout, then remove it from the DC"
            if when == "pre" and exec_pod and not hook.get("tagImages")
            else "move it into the pipeline (a step or a Job before or after the rollout), then remove it "
            "from the DC"
        )
        refusals.append(
            f"dc/{name} has a {when} lifecycle hook, which a Deployment has no equivalent for: {fix}"
        )


def _init_container(name: str, exec_pod: Obj, pod_spec: Obj) -> Obj:
    wanted = exec_pod.get("containerName")
    base: Obj = next((c for c in pod_spec.get("containers") or [] if c.get("name") == wanted), {})
    env = [*copy.deepcopy(base.get("env") or []), *copy.deepcopy(exec_pod.get("env") or [])]
    mounts = [
        m for m in base.get("volumeMounts") or [] if m.get("name") in set(exec_pod.get("volumes") or [])
    ]
    container: Obj = {
        "name": f"{name}-pre-hook",
        "image": base.get("image", ""),
        "command": list(exec_pod.get("command") or []),
    }
    if env:
        container["env"] = env
    if mounts:
        container["volumeMounts"] = copy.deepcopy(mounts)
    return container


def _trigger_entries(name: str, triggers: list[Obj], pod_spec: Obj, refusals: list[str]) -> list[Obj]:
    init_names = {c.get("name") for c in pod_spec.get("initContainers") or []}
    entries: list[Obj] = []
    for trigger in triggers:
        if trigger.get("type") != "ImageChange":
            continue
        params = trigger.get("imageChangeParams") or {}
        source = params.get("from") or {}
        ref: Obj = {"kind": source.get("kind") or "ImageStreamTag", "name": source.get("name", "")}
        if source.get("namespace"):
            ref["namespace"] = source["namespace"]
        for container in params.get("containerNames") or []:
            where = "initContainers" if container in init_names else "containers"
            entry: Obj = {
                "from": dict(ref),
                "fieldPath": f'spec.template.spec.{where}[?(@.name=="{container}")].image',
            }
            if not params.get("automatic"):
                entry["paused"] = True
            entries.append(entry)
    return entries


# -- which kind converts into which (the callers outside rollguard.kinds ask these) ---------------------

SOURCE_KIND = DC  # what `rollguard migrate` converts ...
TARGET_KIND = DEPLOYMENT  # ... into
_DC_API_VERSIONS = ("apps.openshift.io/v1", "v1")  # what an HPA's scaleTargetRef names a DC with


def is_source(kind: str) -> bool:
    """Whether a workload of ``kind`` is what a migration converts (a DC)."""
    return kind == SOURCE_KIND


def is_target(kind: str) -> bool:
    """Whether a workload of ``kind`` is what a migration creates (a Deployment)."""
    return kind == TARGET_KIND


def made_from(deployment: Obj, name: str) -> bool:
    """Whether ``deployment`` is rollguard's conversion of the DC ``name`` (its migrated-from annotation)."""
    notes = (deployment.get("metadata") or {}).get("annotations") or {}
    return notes.get(MIGRATED_FROM) == f"dc/{name}"


def scaled_source(hpa: Obj, names: set[str]) -> str | None:
    """The DC of ``names`` an HPA scales (autoscaling/v1 and v2 share ``scaleTargetRef``), if any."""
    ref = (hpa.get("spec") or {}).get("scaleTargetRef") or {}
    if ref.get("kind") == SOURCE_KIND and ref.get("apiVersion", "") in _DC_API_VERSIONS:
        name = str(ref.get("name", ""))
        return name if name in names else None
    return None


def target_scale_ref(name: str) -> Obj:
    """The ``scaleTargetRef`` of an HPA that scales the Deployment made from DC ``name``."""
    return {"apiVersion": "apps/v1", "kind": TARGET_KIND, "name": name}


def scale_ref_text(ref: Obj) -> str:
    """A ``scaleTargetRef`` in a few words (``DeploymentConfig/api``)."""
    return f"{ref.get('kind')}/{ref.get('name')}"
