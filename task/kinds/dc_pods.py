"""A DC rollout's own pods: its deployer pod and lifecycle hook pods, as evidence of how it goes (pure).

OpenShift runs a DC's rollout in a deployer pod ``<rc>-deploy`` (openshift-controller-manager
pkg/apps/deployer/deployer_controller.go, makeDeployerPod) and, from inside it, each lifecycle hook's
``execNewPod`` in a hook pod ``<rc>-hook-pre|mid|post`` (oc pkg/cli/deployer/strategy/support/lifecycle.go,
createHookPodManifest: label ``openshift.io/deployer-pod-for.name=<rc>`` plus
``openshift.io/deployer-pod.type=hook-pre|hook-mid|hook-post``, container ``lifecycle``, restartPolicy
Never, or OnFailure for the ``Retry`` policy, activeDeadlineSeconds what is left of the deployer's). The
deployer controller gives hook pods the RC as a plain (non-controller) owner (setDeployerPodsOwnerRef),
so they are never a revision's pods (`base.pods_of_revision`): not in the report's pods, the ready counts
or fail-fast. A hook has no timeout of its own: while its pod runs, the rollout waits for it, and the
strategy's ``timeoutSeconds`` does not count.

Hopeless rollouts are told here too: pods the API refuses to create (a ResourceQuota exhausted, a
LimitRange or admission webhook refusing them) leave the RC's ``ReplicaFailure`` condition (the
replication manager's, kube-controller-manager pkg/controller/replicaset), and a refused deployer pod
leaves the RC New with only a ``FailedCreate`` Event on the DC until ``timeoutSeconds`` after the RC's
creation.
"""

from __future__ import annotations

from rollguard.core.readiness import get, pod_doom
from rollguard.core.structs import Doom, Obj
from rollguard.kinds.base import controlled_by, owned_by

DEPLOYER_POD_FOR_LABEL = "openshift.io/deployer-pod-for.name"  # on deployer and hook pods
POD_TYPE_LABEL = "openshift.io/deployer-pod.type"  # hook-pre, hook-mid, hook-post on hook pods
DONE_PHASES = ("Succeeded", "Failed")


def hook_label(pod: Obj) -> str:
    """``pre``, ``mid`` or ``post`` for a hook pod, "" for any other pod."""
    kind = str(get(pod, "metadata", "labels", POD_TYPE_LABEL, default=""))
    return kind.removeprefix("hook-") if kind.startswith("hook-") else ""


def hook_pods(rc: Obj, pods: list[Obj]) -> list[Obj]:
    """The hook pods of an RC's rollout (owned, not controlled, by the RC, labelled for it), by name."""
    name = rc.get("metadata", {}).get("name")
    mine = [
        p
        for p in pods
        if hook_label(p)
        and get(p, "metadata", "labels", DEPLOYER_POD_FOR_LABEL) == name
        and owned_by(p, rc)
        and not controlled_by(p, rc)
    ]
    return sorted(mine, key=lambda p: str(p["metadata"]["name"]))


def running_hook(rc: Obj, pods: list[Obj]) -> Obj | None:
    """The hook pod of the RC's rollout that has not ended yet, if any."""
    return next(
        (p for p in hook_pods(rc, pods) if (p.get("status") or {}).get("phase") not in DONE_PHASES), None
    )


def pod_trouble(pod: Obj) -> str:
    """What went wrong with a deployer or hook pod, in a few words ("" when nothing did or it still runs)."""
    status = pod.get("status") or {}
    if status.get("reason") == "DeadlineExceeded":
        return "killed at its activeDeadlineSeconds"
    for c in status.get("containerStatuses") or []:
        done = (c.get("state") or {}).get("terminated") or {}
        if done and done.get("exitCode", 0) != 0:
            return str(done.get("message") or f"exit code {done.get('exitCode')}").strip().splitlines()[-1]
    if status.get("phase") == "Failed":
        return str(status.get("message") or status.get("reason") or "failed")
    return ""


def hook_state(pod: Obj) -> str:
    """How a running hook pod goes: ``running``, ``pending`` or ``restarting (N restarts)`` (Retry)."""
    status = pod.get("status") or {}
    restarts = sum(int(c.get("restartCount", 0) or 0) for c in status.get("containerStatuses") or [])
    if restarts:
        return f"restarting ({restarts} restarts)"
    return "running" if status.get("phase") == "Running" else "pending"


def failed_hooks(rc: Obj, pods: list[Obj]) -> list[str]:
    """``pre hook pod api-2-hook-pre: exit code 1`` for each of the RC's hook pods that failed."""
    out = []
    for pod in hook_pods(rc, pods):
        trouble = pod_trouble(pod)
        if trouble:
            out.append(f"{hook_label(pod)} hook pod {pod['metadata']['name']}: {trouble}")
    return out


PULL_TROUBLE = frozenset({"ErrImagePull", "ImagePullBackOff"})


def deployer_cannot_start(pod: Obj) -> tuple[Doom, bool] | None:
    """Evidence that a deployer pod does not start, and whether it is final at once; or None.

    A failed pull is not final: the kubelet retries it (``ErrImagePull``, then ``ImagePullBackOff``
    between retries) and OpenShift waits, so only a pull trouble that persists is a verdict (the caller
    judges how long). An invalid image name or a container the kubelet cannot configure never starts.
    """
    doom = pod_doom(pod, crash_restarts=0)
    if doom is None:
        return None
    return doom, doom.reason not in PULL_TROUBLE
