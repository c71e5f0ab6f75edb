"""Readiness pieces every kind shares, and fail-fast: small pure predicates over resource dicts.

The per-kind completion rules (is a DC or Deployment running its current template completely, still on
its way, or failed?) live with their kinds in `rollguard.kinds` and are built from the helpers here;
`pod_doom` judges one pod, whichever kind's revision owns it (cf. ansible's waiter.py).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from rollguard.core.structs import Doom, Obj

# How long pods may be refused creation (or a DC's deployer pod fail to pull), with no progress meanwhile,
# before the rollout is hopeless: longer than a pod's default 30 s termination grace, during which a
# terminating old pod still holds its quota and a surge pod is refused in a healthy rollout. The run fails
# such a workload after it (`rollguard.run.wait`); the state model calls it `stuck` after it.
REFUSAL_GRACE = 45.0

DOOMED_REASONS = frozenset(
    {"CrashLoopBackOff", "ImagePullBackOff", "ErrImagePull", "InvalidImageName", "CreateContainerConfigError"}
)


def get(obj: Obj | None, *path: str, default: Any = None) -> Any:
    """``obj[path[0]][path[1]]...``, or ``default`` where a step is missing, not a dict, or None."""
    cur: Any = obj
    for key in path:
        if not isinstance(cur, dict):
            return default
        cur = cur.get(key)
    return default if cur is None else cur


def condition(obj: Obj, kind: str) -> Obj | None:
    """The status condition of the given type, or None."""
    for cond in get(obj, "status", "conditions", default=[]):
        if cond.get("type") == kind:
            return dict(cond)
    return None


def observed(obj: Obj) -> bool:
    """Whether its controller has seen its latest spec (status.observedGeneration >= generation)."""
    return int(get(obj, "status", "observedGeneration", default=0)) >= int(
        get(obj, "metadata", "generation", default=0)
    )


def pod_doom(pod: Obj, *, crash_restarts: int) -> Doom | None:
    """Unambiguous evidence in one pod that its rollout cannot succeed, or None.

    A pod that is merely slow (Pending, or running but not ready, without restarts) is never doomed.
    """
    name = get(pod, "metadata", "name", default="?")
    statuses: Iterable[Obj] = [
        *get(pod, "status", "initContainerStatuses", default=[]),
        *get(pod, "status", "containerStatuses", default=[]),
    ]
    for status in statuses:
        waiting = get(status, "state", "waiting", default={})
        reason = waiting.get("reason", "")
        if reason in DOOMED_REASONS:
            return Doom(name, status.get("name", "?"), reason, waiting.get("message", ""))
        restarts = int(status.get("restartCount", 0))
        if crash_restarts > 0 and restarts >= crash_restarts:
            last = get(status, "lastState", "terminated", default={})
            detail = f"restarted {restarts} times"
            if last:
                detail += f", last exit {last.get('exitCode', '?')} ({last.get('reason', '')})"
            return Doom(name, status.get("name", "?"), "RestartedTooOften", detail)
    return None


def replica_failure_since(obj: Obj) -> str:
    """When the ``ReplicaFailure`` condition of ``obj`` became true (its lastTransitionTime; "" if none):
    the replica managers add it on the first refused create and keep it while creates are refused."""
    cond = condition(obj, "ReplicaFailure") or {}
    return str(cond.get("lastTransitionTime") or "") if cond.get("status") == "True" else ""


def replica_failure(obj: Obj) -> str:
    """The message of an RC's, ReplicaSet's or Deployment's ``ReplicaFailure`` condition ("" if none):
    the API refused to create its pods (``pods "x" is forbidden: exceeded quota: ...``)."""
    cond = condition(obj, "ReplicaFailure") or {}
    if cond.get("status") != "True":
        return ""
    return str(cond.get("message") or cond.get("reason") or "pod creation refused")
