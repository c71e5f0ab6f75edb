"""DeploymentConfig status and conditions, computed from its RCs as OpenShift's DC controller does.

Mirrors calculateStatus and updateConditions of openshift-controller-manager
pkg/apps/deploymentconfig/deploymentconfig_controller.go.
"""

from __future__ import annotations

import copy

from sandbox.openshift import appsutil as u
from sandbox.openshift.kube import JSON


def new_condition(type_: str, status: str, reason: str, message: str) -> JSON:
    ts = u.now()
    cond = {"type": type_, "status": status, "lastUpdateTime": ts, "lastTransitionTime": ts}
    if reason:
        cond["reason"] = reason
    cond["message"] = message
    return cond


def get_condition(status: JSON, type_: str) -> JSON | None:
    return next((c for c in status.get("conditions") or [] if c.get("type") == type_), None)


def set_condition(status: JSON, cond: JSON) -> None:
    """Replace the condition of cond's type unless status and reason are unchanged (then keep it as is)."""
    current = get_condition(status, cond["type"])
    if (
        current
        and current.get("status") == cond["status"]
        and current.get("reason", "") == cond.get("reason", "")
    ):
        return
    if current and current.get("status") == cond["status"]:
        cond["lastTransitionTime"] = current.get("lastTransitionTime")
    status["conditions"] = [c for c in status.get("conditions") or [] if c.get("type") != cond["type"]] + [
        cond
    ]


def remove_condition(status: JSON, type_: str) -> None:
    status["conditions"] = [c for c in status.get("conditions") or [] if c.get("type") != type_]


def calculate(dc: JSON, rcs: list[JSON], update_observed: bool, *additional: JSON) -> JSON:
    """The status OpenShift would write for `dc` owning `rcs`."""
    old = dc.get("status") or {}
    latest_exists, latest = u.latest_deployment(dc, rcs)
    latest_rc = latest if latest_exists else None
    available = sum(u.status_int(rc, "availableReplicas") for rc in rcs)
    total = sum(u.spec_replicas(rc) for rc in rcs)
    ready = sum(u.status_int(rc, "readyReplicas") for rc in rcs)
    status: JSON = {
        "latestVersion": int(old.get("latestVersion") or 0),
        "observedGeneration": int(dc["metadata"].get("generation") or 0)
        if update_observed
        else int(old.get("observedGeneration") or 0),
        "replicas": sum(u.status_int(rc, "replicas") for rc in rcs),
        "updatedReplicas": u.status_int(latest_rc, "replicas") if latest_rc else 0,
        "availableReplicas": available,
        "unavailableReplicas": max(0, total - available),
    }
    if old.get("details"):
        status["details"] = copy.deepcopy(old["details"])
    if old.get("conditions"):
        status["conditions"] = copy.deepcopy(old["conditions"])
    if ready:
        status["readyReplicas"] = ready
    # paused or not, the conditions follow the latest RC: the controller never sets the
    # DeploymentConfigPaused reason its API declares (deploymentconfig_controller.go, updateConditions)
    _update_conditions(dc, old, status, latest_rc)
    for cond in additional:
        set_condition(status, cond)
    if not status.get("conditions"):
        status.pop("conditions", None)
    return status


def _update_conditions(dc: JSON, old: JSON, status: JSON, latest: JSON | None) -> None:
    replicas = int(dc.get("spec", {}).get("replicas") or 0)
    if status["availableReplicas"] >= replicas - u.max_unavailable(dc) and status["availableReplicas"] > 0:
        set_condition(
            status, new_condition("Available", "True", "", "Deployment config has minimum availability.")
        )
    else:
        set_condition(
            status,
            new_condition("Available", "False", "", "Deployment config does not have minimum availability."),
        )
    if latest is None:
        return
    name = latest["metadata"]["name"]
    phase = u.phase_of(latest)
    if phase == u.PENDING:
        msg = f'replication controller "{name}" is waiting for pod "{u.deployer_pod_name(name)}" to run'
        set_condition(status, new_condition("Progressing", "Unknown", "", msg))
    elif phase == u.RUNNING:
        old_old = int(old.get("replicas") or 0) - int(old.get("updatedReplicas") or 0)
        new_old = status["replicas"] - status["updatedReplicas"]
        if status["updatedReplicas"] > int(old.get("updatedReplicas") or 0) or new_old < old_old:
            remove_condition(status, "Progressing")
            msg = f'replication controller "{name}" is progressing'
            set_condition(status, new_condition("Progressing", "True", u.RC_UPDATED_REASON, msg))
    elif phase == u.FAILED:
        if u.is_cancelled(latest):
            msg = f'rollout of replication controller "{name}" was cancelled'
            set_condition(status, new_condition("Progressing", "False", u.CANCELLED_REASON, msg))
        else:
            msg = f'replication controller "{name}" has failed progressing'
            set_condition(status, new_condition("Progressing", "False", u.TIMED_OUT_REASON, msg))
    elif phase == u.COMPLETE:
        msg = f'replication controller "{name}" successfully rolled out'
        set_condition(status, new_condition("Progressing", "True", u.NEW_RC_AVAILABLE_REASON, msg))
