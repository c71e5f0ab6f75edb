"""Readiness as small pure predicates over resource dicts, one per kind (cf. ansible's waiter.py).

Each takes the workload and its revision objects as the API returned them and says whether the
workload runs its *current* template completely, is still on its way, or has failed.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from rollguard.structs import Doom, Obj, Phase, Progress

PHASE_ANNOTATION = "openshift.io/deployment.phase"
CANCELLED_ANNOTATION = "openshift.io/deployment.cancelled"
STATUS_REASON_ANNOTATION = "openshift.io/deployment.status-reason"
ENCODED_DC_ANNOTATION = "openshift.io/encoded-deployment-config"
DC_VERSION_ANNOTATION = "openshift.io/deployment-config.latest-version"
RS_REVISION_ANNOTATION = "deployment.kubernetes.io/revision"

DOOMED_REASONS = frozenset(
    {"CrashLoopBackOff", "ImagePullBackOff", "ErrImagePull", "InvalidImageName", "CreateContainerConfigError"}
)


def _get(obj: Obj | None, *path: str, default: Any = None) -> Any:
    cur: Any = obj
    for key in path:
        if not isinstance(cur, dict):
            return default
        cur = cur.get(key)
    return default if cur is None else cur


def condition(obj: Obj, kind: str) -> Obj | None:
    """The status condition of the given type, or None."""
    for cond in _get(obj, "status", "conditions", default=[]):
        if cond.get("type") == kind:
            return dict(cond)
    return None


def _observed(obj: Obj) -> bool:
    return int(_get(obj, "status", "observedGeneration", default=0)) >= int(
        _get(obj, "metadata", "generation", default=0)
    )


def rc_template(rc: Obj) -> Obj | None:
    """The DC pod template an RC was made from (from its encoded-deployment-config annotation)."""
    import json

    encoded = _get(rc, "metadata", "annotations", ENCODED_DC_ANNOTATION)
    if not encoded:
        return None
    try:
        template = json.loads(encoded).get("spec", {}).get("template")
    except ValueError:
        return None
    return template if isinstance(template, dict) else None


def dc_progress(dc: Obj, latest_rc: Obj | None) -> Progress:
    """DeploymentConfig: is its current template rolled out by its latest RC? (reference section 2)"""
    name = _get(dc, "metadata", "name", default="?")
    version = int(_get(dc, "status", "latestVersion", default=0))
    if not _observed(dc):
        return Progress(Phase.PENDING, "waiting for the controller to observe the change", version)
    if _get(dc, "spec", "paused", default=False):
        return Progress(Phase.PAUSED, f'deployment config "{name}" is paused', version)
    if latest_rc is None or _get(latest_rc, "metadata", "name") != f"{name}-{version}":
        return Progress(Phase.PENDING, "waiting for a new replication controller", version)
    if rc_template(latest_rc) != _get(dc, "spec", "template"):
        return Progress(Phase.PENDING, "waiting for a rollout of the new template", version)
    rc_name = f"{name}-{version}"
    annotations = _get(latest_rc, "metadata", "annotations", default={})
    phase = annotations.get(PHASE_ANNOTATION, "New")
    if annotations.get(CANCELLED_ANNOTATION) == "true" and phase != "Complete":
        return Progress(Phase.FAILED, f'rollout of replication controller "{rc_name}" was cancelled', version)
    if phase == "Complete":
        return Progress(
            Phase.COMPLETE, f'replication controller "{rc_name}" successfully rolled out', version
        )
    if phase == "Failed":
        reason = (
            annotations.get(STATUS_REASON_ANNOTATION)
            or f'replication controller "{rc_name}" has failed progressing'
        )
        return Progress(Phase.FAILED, reason, version)
    want = int(_get(dc, "spec", "replicas", default=1))
    have = int(_get(latest_rc, "status", "readyReplicas", default=0))
    return Progress(
        Phase.PROGRESSING, f"{rc_name} {phase.lower()}: {have} of {want} new replicas ready", version
    )


def deployment_progress(deploy: Obj, *, since: str = "") -> Progress:
    """Deployment: the `kubectl rollout status` algorithm (reference section 3).

    ``since`` (RFC 3339, when our change was written): a ProgressDeadlineExceeded condition not updated
    after it is the previous rollout's, which the controller keeps for a sync or two after a new one.
    """
    name = _get(deploy, "metadata", "name", default="?")
    revision = int(_get(deploy, "metadata", "annotations", RS_REVISION_ANNOTATION, default=0) or 0)
    if not _observed(deploy):
        return Progress(Phase.PENDING, "waiting for the controller to observe the change", revision)
    if _get(deploy, "spec", "paused", default=False):
        return Progress(Phase.PAUSED, f'deployment "{name}" is paused', revision)
    progressing = condition(deploy, "Progressing")
    stale = bool(since) and str((progressing or {}).get("lastUpdateTime") or "") <= since
    if progressing and progressing.get("reason") == "ProgressDeadlineExceeded" and not stale:
        return Progress(Phase.FAILED, f'deployment "{name}" exceeded its progress deadline', revision)
    want = int(_get(deploy, "spec", "replicas", default=1))
    updated = int(_get(deploy, "status", "updatedReplicas", default=0))
    total = int(_get(deploy, "status", "replicas", default=0))
    available = int(_get(deploy, "status", "availableReplicas", default=0))
    if updated < want:
        return Progress(Phase.PROGRESSING, f"{updated} of {want} new replicas updated", revision)
    if total > updated:
        return Progress(Phase.PROGRESSING, f"{total - updated} old replicas pending termination", revision)
    if available < updated:
        return Progress(Phase.PROGRESSING, f"{available} of {updated} updated replicas available", revision)
    return Progress(Phase.COMPLETE, f'deployment "{name}" successfully rolled out', revision)


def pod_doom(pod: Obj, *, crash_restarts: int) -> Doom | None:
    """Unambiguous evidence in one pod that its rollout cannot succeed, or None.

    A pod that is merely slow (Pending, or running but not ready, without restarts) is never doomed.
    """
    name = _get(pod, "metadata", "name", default="?")
    statuses: Iterable[Obj] = [
        *_get(pod, "status", "initContainerStatuses", default=[]),
        *_get(pod, "status", "containerStatuses", default=[]),
    ]
    for status in statuses:
        waiting = _get(status, "state", "waiting", default={})
        reason = waiting.get("reason", "")
        if reason in DOOMED_REASONS:
            return Doom(name, status.get("name", "?"), reason, waiting.get("message", ""))
        restarts = int(status.get("restartCount", 0))
        if crash_restarts > 0 and restarts >= crash_restarts:
            last = _get(status, "lastState", "terminated", default={})
            detail = f"restarted {restarts} times"
            if last:
                detail += f", last exit {last.get('exitCode', '?')} ({last.get('reason', '')})"
            return Doom(name, status.get("name", "?"), "RestartedTooOften", detail)
    return None
