"""Pod status as the stand-in kubelet reports it: a pure function of what each container's image does
(see `sandbox.registry`) and of the time since the pod started.

  ready       Running and ready at once
  slow N      Running, not ready until N s after start (ContainersNotReady), then ready
  crash       runs 1 s, exits 1, then CrashLoopBackOff for ever, restarts after 1, 2, 4, then every 8 s
              (the real kubelet's 10 s, 20 s, 40 s ... back-off, ten times faster); restartPolicy Never: Failed
  pull-error  Pending, ErrImagePull then (after 1 s) ImagePullBackOff; or InvalidImageName
  exit N      a batch process (a Job's test image): runs 1 s, then exits with code N; as the kubelet's
              restart policy has it (pkg/kubelet/kuberuntime computePodActions, kubelet_pods.go
              getPhase): restartPolicy Never, or OnFailure with code 0, leaves it terminated (pod phase
              Succeeded when every container exited 0, Failed when one did not and the policy is Never);
              otherwise it is restarted with the crash back-off above (Always restarts even a 0)
  flaky-pull  Pending: ErrImagePull (a failed first pull), ImagePullBackOff from 1 s, then from 3 s as
              `ready` (the kubelet's retry pulled it)
  dies N      Running and ready, then after N s it exits 1 and is restarted as a crash (each restart
              exits after 1 s, CrashLoopBackOff between): a release that breaks after its rollout
Init containers complete at once. `exit N S` runs S s (1 s when not given) before it exits. In a pod
that runs to completion (restartPolicy Never or OnFailure, no process emulated in it: hook pods, a Custom
strategy's own deployer image) `ready` and `slow N` complete: exit 0 after 1 s, or N s.

Two ends a pod can meet whatever its images do, as on a real node:
  exit        the process in a `restartPolicy: Never` pod exits with a code and a termination message
              (`exit=`, set by whoever "runs" in the pod: the emulated deployer for its deployer pods):
              every container terminated, phase Succeeded (code 0) or Failed
  deadline    `spec.activeDeadlineSeconds` after start the kubelet kills the pod: phase Failed, reason
              DeadlineExceeded (k8s.io/kubernetes pkg/kubelet/active_deadline.go)
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sandbox import registry

NODE_IP = "127.0.0.1"  # the node's InternalIP: where the API server reaches its kubelet
CRASH_AFTER = 1.0  # seconds a crashing container runs before its first exit
BACKOFFS = (1.0, 2.0, 4.0, 8.0)  # the kubelet's 10s, 20s, 40s, 80s... back-off, ten times faster
PULL_BACKOFF_AFTER = 1.0
FLAKY_PULL_FOR = 3.0  # a flaky pull: ErrImagePull, ImagePullBackOff from 1 s, pulled by the retry at 3 s


def ts(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class Container:
    name: str
    image: str
    behaviour: registry.Behaviour
    image_id: str


@dataclass
class PodRun:
    """A pod this kubelet runs: what its containers do, and when it started."""

    uid: str
    namespace: str
    name: str
    containers: list[Container]
    init_containers: list[Container]
    restart_policy: str
    started: float  # wall clock epoch
    ip: str
    sent: dict[str, Any] | None = None  # the status last patched
    next_at: float | None = None  # wall clock of the next transition, for the timer
    active_deadline: float | None = None  # spec.activeDeadlineSeconds
    exit: tuple[int, str, float] | None = None  # (exit code, termination message, wall clock) once exited
    output: tuple[tuple[float, str], ...] | None = None  # what an emulated process printed (time, line)

    def status(self, now: float) -> tuple[dict[str, Any], float | None]:
        """The pod status at wall clock time `now`, and when it changes next."""
        if self.exit is not None and self.restart_policy == "Never":
            return self._exited(*self.exit), None
        if self.active_deadline is not None:
            killed_at = self.started + self.active_deadline
            if now >= killed_at:
                return self._killed(), None
            status, nxt = self._running(now)
            return status, killed_at if nxt is None else min(nxt, killed_at)
        return self._running(now)

    def _exited(self, code: int, message: str, at: float) -> dict[str, Any]:
        start, end = ts(self.started), ts(at)
        statuses = []
        for c in self.containers:
            done = {"exitCode": code, "reason": "Completed" if code == 0 else "Error",
                    "containerID": self._cid(c, 0), "startedAt": start, "finishedAt": end}  # fmt: skip
            if message:
                done["message"] = message
            statuses.append({"name": c.name, "image": c.image, "imageID": c.image_id,
                             "containerID": self._cid(c, 0), "ready": False, "started": False,
                             "restartCount": 0, "state": {"terminated": done}, "lastState": {}})  # fmt: skip
        not_ready = {"status": "False", "reason": "PodCompleted", "message": None, "lastProbeTime": None,
                     "lastTransitionTime": end}  # fmt: skip
        return {
            "phase": "Succeeded" if code == 0 else "Failed",
            "conditions": [
                {"type": "Initialized", "status": "True", "lastProbeTime": None, "lastTransitionTime": start},
                {"type": "Ready", **not_ready},
                {"type": "ContainersReady", **not_ready},
                {"type": "PodScheduled", "status": "True", "lastProbeTime": None, "lastTransitionTime": start},
            ],
            "hostIP": NODE_IP, "podIP": self.ip, "podIPs": [{"ip": self.ip}], "startTime": start,
            "containerStatuses": statuses,
        }  # fmt: skip

    def _killed(self) -> dict[str, Any]:
        """What the kubelet reports for a pod past its activeDeadlineSeconds."""
        return {
            "phase": "Failed",
            "reason": "DeadlineExceeded",
            "message": "Pod was active on the node longer than the specified deadline",
            "hostIP": NODE_IP, "podIP": self.ip, "podIPs": [{"ip": self.ip}], "startTime": ts(self.started),
        }  # fmt: skip

    def _running(self, now: float) -> tuple[dict[str, Any], float | None]:
        elapsed = now - self.started + 1e-6  # float noise must not put us just before a transition
        statuses, nexts = [], []
        ready_since = self.started
        pending = failed = False
        for c in self.containers:
            st, nxt, ready_at = self._container(c, elapsed)
            statuses.append(st)
            if nxt is not None:
                nexts.append(self.started + nxt)
            if ready_at is not None:
                ready_since = max(ready_since, self.started + ready_at)
            pending |= (
                "running" not in st["state"] and "terminated" not in st["state"] and not st["restartCount"]
            )
            failed |= st["state"].get("terminated", {}).get("exitCode", 0) != 0
        unready = [s["name"] for s in statuses if not s["ready"]]
        # reason and message are null when ready, which removes them in a strategic merge patch
        ready: dict[str, Any] = {"status": "True", "lastProbeTime": None, "reason": None, "message": None}
        ready["lastTransitionTime"] = ts(ready_since)
        if unready:
            msg = f"containers with unready status: [{' '.join(unready)}]"
            ready |= {"status": "False", "reason": "ContainersNotReady", "message": msg}
            ready["lastTransitionTime"] = ts(self.started)
        start = ts(self.started)
        conditions = [
            {"type": "Initialized", "status": "True", "lastProbeTime": None, "lastTransitionTime": start},
            {"type": "Ready", **ready},
            {"type": "ContainersReady", **ready},
            {"type": "PodScheduled", "status": "True", "lastProbeTime": None, "lastTransitionTime": start},
        ]
        # getPhase: every container stopped, none failed, and a policy that does not restart them: done
        ended = all("terminated" in s["state"] for s in statuses)
        succeeded = ended and not failed and self.restart_policy != "Always"
        if ended:
            for cond in conditions[1:3]:
                cond |= {"reason": "PodCompleted", "message": None}
        status: dict[str, Any] = {
            "phase": "Failed"
            if failed
            else "Succeeded"
            if succeeded
            else "Pending"
            if pending
            else "Running",
            "conditions": conditions,
            "hostIP": NODE_IP,
            "podIP": self.ip,
            "podIPs": [{"ip": self.ip}],
            "startTime": start,
            "containerStatuses": statuses,
        }
        if self.init_containers:
            status["initContainerStatuses"] = [self._completed(c) for c in self.init_containers]
        return status, min(nexts, default=None)

    def _container(self, c: Container, e: float) -> tuple[dict[str, Any], float | None, float | None]:
        """(containerStatus, offset of its next change, offset it became ready at) at `e` s after start."""
        st: dict[str, Any] = {"name": c.name, "image": c.image, "imageID": c.image_id, "restartCount": 0}
        kind, *arg = c.behaviour
        if kind == "pull-error":
            reason, nxt = str(arg[0]), None
            if reason == "InvalidImageName":
                msg = (f'Failed to apply default image tag "{c.image}": couldn\'t parse image reference '
                       f'"{c.image}": invalid reference format')  # fmt: skip
            elif e < PULL_BACKOFF_AFTER:
                _repo, _tag, digest = registry.split_ref(c.image)
                msg = (
                    f"rpc error: code = Unknown desc = reading manifest {digest} in {_repo}: manifest unknown"
                )
                nxt = PULL_BACKOFF_AFTER
            else:
                reason, msg = "ImagePullBackOff", f'Back-off pulling image "{c.image}"'
            st |= {
                "imageID": "",
                "ready": False,
                "started": False,
                "state": {"waiting": {"reason": reason, "message": msg}},
            }
            return st, nxt, None
        if kind == "flaky-pull":
            if e < FLAKY_PULL_FOR:
                _repo, _tag, _digest = registry.split_ref(c.image)
                host = _repo.split("/")[0]
                reason, msg, nxt = (
                    "ErrImagePull",
                    (f"rpc error: code = Unknown desc = pinging container registry {host}: i/o timeout"),
                    PULL_BACKOFF_AFTER,
                )
                if e >= PULL_BACKOFF_AFTER:
                    reason, msg, nxt = (
                        "ImagePullBackOff",
                        f'Back-off pulling image "{c.image}"',
                        FLAKY_PULL_FOR,
                    )
                waiting = {"waiting": {"reason": reason, "message": msg}}
                return st | {"imageID": "", "ready": False, "started": False, "state": waiting}, nxt, None
            kind, arg = "slow", [FLAKY_PULL_FOR]
        if self.completes() and kind in ("ready", "slow"):
            kind, arg = "exit", [0, float(arg[0]) if kind == "slow" else CRASH_AFTER]
        running = {"running": {"startedAt": ts(self.started)}}
        st |= {"containerID": self._cid(c, 0), "started": True, "lastState": {}}
        slow = float(arg[0]) if kind == "slow" else 0.0
        if kind == "ready" or (kind == "slow" and e >= slow):
            return st | {"ready": True, "state": running}, None, slow
        if kind == "slow":
            return st | {"ready": False, "state": running}, slow, None
        # crash, or a batch process's exit, or a process that dies after N s (a crash N - 1 s late)
        code = int(arg[0]) if kind == "exit" else 1
        late = float(arg[0]) - CRASH_AFTER if kind == "dies" else 0.0
        if kind == "exit" and len(arg) > 1:  # a batch process that runs S s before it exits
            late = max(float(arg[1]) - CRASH_AFTER, 0.0)
        if late:
            if e < late + CRASH_AFTER:
                return st | {"ready": True, "state": running}, late + CRASH_AFTER, 0.0
            e -= late
        if e < CRASH_AFTER:
            return (
                st | {"ready": kind == "exit", "state": running},
                CRASH_AFTER,
                (0.0 if kind == "exit" else None),
            )
        if self.restart_policy == "Never" or (self.restart_policy == "OnFailure" and code == 0):
            end = ts(self.started + late + CRASH_AFTER)
            done = {"exitCode": code, "reason": "Completed" if code == 0 else "Error",
                    "containerID": st["containerID"], "startedAt": ts(self.started), "finishedAt": end}  # fmt: skip
            return st | {"ready": False, "started": False, "state": {"terminated": done}}, None, None
        restarts, last = crashes(e)
        last += late
        backoff = BACKOFFS[min(restarts, len(BACKOFFS)) - 1]
        pod = f"{self.name}_{self.namespace}({self.uid})"
        cid = self._cid(c, restarts)
        exited = {"exitCode": code, "reason": "Completed" if code == 0 else "Error", "containerID": cid,
                  "startedAt": ts(self.started + (0 if restarts == 1 else last)),
                  "finishedAt": ts(self.started + last)}  # fmt: skip
        msg = f"back-off {backoff * 10:.0f}s restarting failed container={c.name} pod={pod}"
        waiting = {"reason": "CrashLoopBackOff", "message": msg}
        st |= {"ready": False, "started": False, "restartCount": restarts, "containerID": cid}
        return st | {"state": {"waiting": waiting}, "lastState": {"terminated": exited}}, last + backoff, None

    def completes(self) -> bool:
        """Whether the pod runs to completion by its images' rules (no process emulated in it)."""
        return self.restart_policy != "Always" and self.output is None and self.exit is None

    def _cid(self, c: Container, restarts: int) -> str:
        return "cri-o://" + hashlib.sha256(f"{self.uid}/{c.name}/{restarts}".encode()).hexdigest()

    def _completed(self, c: Container) -> dict[str, Any]:
        cid = self._cid(c, 0)
        done = {"exitCode": 0, "reason": "Completed", "containerID": cid,
                "startedAt": ts(self.started), "finishedAt": ts(self.started)}  # fmt: skip
        return {"name": c.name, "image": c.image, "imageID": c.image_id, "containerID": cid, "ready": True,
                "restartCount": 0, "state": {"terminated": done}, "lastState": {}}  # fmt: skip


def crashes(e: float) -> tuple[int, float]:
    """How many times a crashing container has exited `e` s after start, and the offset of the last exit."""
    t, n = CRASH_AFTER, 1
    for b in BACKOFFS[:-1]:
        if e < t + b:
            return n, t
        t, n = t + b, n + 1
    k = int((e - t) // BACKOFFS[-1])
    return n + k, t + k * BACKOFFS[-1]
