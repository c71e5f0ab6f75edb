"""The deployer: the deployer controller's RC phases and deployer pods, and the strategy run "inside" them.

Mirrors openshift-controller-manager pkg/apps/deployer/deployer_controller.go: a new RC (phase New)
gets a deployer pod `<rc>-deploy` (label `openshift.io/deployer-pod-for.name=<rc>`, annotations naming
the RC and DC, owned by the RC without being its controller, restartPolicy Never, the strategy's
activeDeadlineSeconds) and goes Pending; the RC's phase then follows the pod's: Running while it runs,
Complete when it succeeds, Failed when it fails (only the phase and completed-at are written: the
status-reason keeps the rollout's cause), and deployer pods are kept after the rollout ends. A pod that
cannot be created leaves the RC New until the strategy's timeoutSeconds since the RC's creation, then
Failed with status-reason "unable to create deployer pod"; a pod gone while Pending/Running fails the RC
("deployer pod no longer exists"); a cancelled rollout's pod is deleted, then the RC is Failed.

The process in the pod (oc's deployer, pkg/cli/deployer/strategy/) is emulated here: while the pod is
Running, each reconcile of the DC advances the Rolling or Recreate strategy one step; when it ends, it
"exits" through the pod annotation the stand-in kubelet turns into the container's termination (code 0,
or 1 with the strategy's error as termination message, as `FallbackToLogsOnError` would give). What it
prints is oc's deployer's lines (`deployerlog`), which the kubelet serves as the pod's log. The
strategy's timeoutSeconds restarts with every scale step (the rolling updater's progress deadline); the
pod's activeDeadlineSeconds is the kubelet's to enforce. Failure rollback is not done here: the DC
controller scales the last complete RC back up once the latest RC is Failed, as on OpenShift.
The deployer image is the controller's `deployer.imageTemplateFormat.format` (`${component}` =
`deployer`, pkg/cmd/controller/apps.go), read from `config.yaml` of ConfigMap
`openshift-controller-manager/config` as the operator provides it; OpenShift reads it when the controller
starts, the emulation at each deployer pod it makes (so a test can break it). Lifecycle hooks (`hooks`,
after oc's support/lifecycle.go): `pre` before the strategy, Recreate's `mid` once the old RC is at zero
and its pods are gone (recreate.go waitForTerminatedPods, which gives up after timeoutSeconds with a
warning and goes on), `post` after it; while a hook runs the strategy's timeoutSeconds does not count.
The Custom strategy (and `customParams` on the others): the deployer pod runs the given image, command
and environment, and only the stock deployer image's process is emulated, where a Custom strategy
fails as oc's deployer does (`unsupported strategy type: Custom`); another image runs by the stand-in
kubelet's rules. A cancelled rollout's hook pods are deleted with its deployer pod (cleanupDeployerPods).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

import yaml

from sandbox.openshift import appsutil as u
from sandbox.openshift import deployerlog as dlog
from sandbox.openshift.events import Recorder
from sandbox.openshift.hooks import DONE, RUNNING, Hooks
from sandbox.openshift.informer import Informer
from sandbox.openshift.kube import JSON, MERGE_PATCH, ApiError, Kube
from sandbox.openshift.workqueue import Requeue

log = logging.getLogger(__name__)
EXIT_ANNOTATION = "sandbox.rollguard.io/exit"  # how the emulated process tells the stand-in kubelet
RETRY_CREATE = 2.0  # seconds between attempts to create a deployer pod the API refused


def _fresh(rc: JSON) -> bool:
    """True when the RC's status describes its current spec (kube-controller-manager caught up)."""
    status = rc.get("status") or {}
    return int(status.get("observedGeneration") or 0) >= int(rc["metadata"].get("generation") or 0)


CONFIG_PATH = "/api/v1/namespaces/openshift-controller-manager/configmaps/config"


def deployer_image(kube: Kube) -> str:
    """The image deployer pods run: the controller configuration's, else OpenShift's default."""
    try:
        data = kube.get(CONFIG_PATH).get("data") or {}
    except ApiError as e:
        if e.status in (403, 404):
            return u.DEPLOYER_IMAGE
        raise
    try:
        config = yaml.safe_load(data.get("config.yaml") or "") or {}
        fmt = config["deployer"]["imageTemplateFormat"]["format"]
    except (yaml.YAMLError, KeyError, TypeError):
        return u.DEPLOYER_IMAGE
    return str(fmt).replace("${component}", "deployer").replace("${version}", "v4.14") or u.DEPLOYER_IMAGE


def make_deployer_pod(rc: JSON, config: JSON, image: str = u.DEPLOYER_IMAGE) -> JSON:
    """The deployer pod of an RC, as the deployer controller's makeDeployerPod builds it: the strategy's
    `customParams` (the Custom strategy's, or set on Rolling/Recreate) give its image, command and
    environment (makeDeployerContainer). Only the deployer image's process is emulated; any other image
    runs as the stand-in kubelet's rules say (to completion: `restartPolicy: Never`)."""
    m = rc["metadata"]
    strategy = config.get("spec", {}).get("strategy") or {}
    custom = strategy.get("customParams") or {}
    deployer = image
    image = str(custom.get("image") or image)
    env = [e for e in custom.get("environment") or [] if isinstance(e, dict)]
    pod_spec = ((rc.get("spec") or {}).get("template") or {}).get("spec") or {}
    labels = {u.DEPLOYER_POD_FOR: m["name"]}
    annotations = {u.DEPLOYMENT_NAME: m["name"], u.DC_NAME: u.annotations_of(rc).get(u.DC_NAME, "")}
    for k, v in (strategy.get("labels") or {}).items():
        labels.setdefault(k, v)
    for k, v in (strategy.get("annotations") or {}).items():
        annotations.setdefault(k, v)
    spec: JSON = {
        "containers": [
            {
                "name": "deployment",
                "image": image,
                "imagePullPolicy": "IfNotPresent",
                "env": [
                    *env,
                    {"name": "OPENSHIFT_DEPLOYMENT_NAME", "value": m["name"]},
                    {"name": "OPENSHIFT_DEPLOYMENT_NAMESPACE", "value": m["namespace"]},
                ],
                "resources": strategy.get("resources") or {},
                "terminationMessagePolicy": "FallbackToLogsOnError",
            }
        ],
        "activeDeadlineSeconds": int(strategy.get("activeDeadlineSeconds") or u.DEFAULT_ACTIVE_DEADLINE),
        "restartPolicy": "Never",
        "serviceAccountName": "deployer",
        "terminationGracePeriodSeconds": 10,
    }
    for key in ("dnsPolicy", "nodeSelector", "tolerations", "imagePullSecrets"):
        if pod_spec.get(key):
            spec[key] = pod_spec[key]
    if custom.get("command"):
        spec["containers"][0]["command"] = list(custom["command"])
    if image == deployer:
        annotations[dlog.OUTPUT_ANNOTATION] = "[]"  # the kubelet: an emulated process
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": u.deployer_pod_name(m["name"]),
            "namespace": m["namespace"],
            "labels": labels,
            "annotations": annotations,
            "ownerReferences": [
                {"apiVersion": "v1", "kind": "ReplicationController", "name": m["name"], "uid": m["uid"]}
            ],
        },
        "spec": spec,
    }


def _pod_time(pod: JSON, field: str) -> str:
    """A pod timestamp as Go's metav1.Time.String() prints it (what lands in the RC's annotations)."""
    raw = (
        pod.get("metadata", {}).get(field)
        if field == "creationTimestamp"
        else (pod.get("status") or {}).get(field)
    )
    t = u.parse_time(raw)
    return u.go_time(t) if t is not None else ""


def _terminated_at(pod: JSON) -> str:
    for c in (pod.get("status") or {}).get("containerStatuses") or []:
        done = (c.get("state") or {}).get("terminated")
        if done and done.get("finishedAt"):
            t = u.parse_time(done["finishedAt"])
            return u.go_time(t) if t is not None else ""
    return ""


class Deployer:
    """Advances rollouts; one call of `step` per reconcile, never blocking."""

    def __init__(self, kube: Kube, rcs: Informer, pods: Informer, recorder: Recorder) -> None:
        self.kube, self.rcs, self.pods, self.recorder = kube, rcs, pods, recorder
        self._last_progress: dict[str, float] = {}  # RC uid -> wall time of the last scale made
        self._output: dict[str, dlog.Output] = {}  # RC uid -> what its deployer pod's process printed
        self._hooks_done: dict[str, set[str]] = {}  # RC uid -> the hooks that ended
        self._terminated: set[str] = set()  # RC uids whose old pods were waited for (Recreate)
        self._terminated_wait: dict[str, float] = {}  # RC uid -> when that wait began
        self._strategy_begun: set[str] = set()  # RC uids whose strategy printed its first lines
        self.hooks = Hooks(kube, pods, recorder)
        self._lock = threading.Lock()

    def step(self, dc: JSON, rcs: list[JSON], rc: JSON) -> float | None:
        """Advance the rollout of `rc`; return seconds until it needs a look without an event, or None."""
        m = rc["metadata"]
        phase = u.phase_of(rc) or u.NEW
        pod = self._pod(rc, live=phase == u.PENDING)
        config = u.decode_config(rc) or dc
        if phase == u.NEW:
            if u.is_cancelled(rc):
                self._cleanup(rc, pod)
                self._transition(rc, u.PENDING, {})
                return None
            if pod is None:
                timeout = u.timeout_of(config)
                created = u.parse_time(m.get("creationTimestamp")) or time.time()
                if timeout > 0 and time.time() - created > timeout:
                    self.recorder.event(
                        dc, "Warning", "RolloutTimeout",
                        f'Rollout for "{m["namespace"]}/{m["name"]}" failed to create deployer pod '
                        f"(timeoutSeconds: {timeout}s)",
                    )  # fmt: skip
                    self._transition(rc, u.FAILED, {u.STATUS_REASON: u.UNABLE_TO_CREATE_DEPLOYER})
                    return None
                try:
                    pod = self.kube.request(
                        "POST",
                        f"/api/v1/namespaces/{m['namespace']}/pods",
                        make_deployer_pod(rc, config, deployer_image(self.kube)),
                    )
                except ApiError as e:
                    if e.status == 409:
                        raise Requeue(f"deployer pod of {m['name']} exists but is not cached yet") from e
                    msg = str(e.body.get("message") or e)
                    self.recorder.event(dc, "Warning", "FailedCreate", f"Error creating deployer pod: {msg}")
                    return min(RETRY_CREATE, max(0.1, created + timeout - time.time() + 0.1))
                self.pods.store(pod)
            elif u.annotations_of(pod).get(u.DEPLOYMENT_NAME) != m["name"]:
                self.recorder.event(
                    dc, "Warning", "FailedCreate",
                    f'Error creating deployer pod since another pod with the same name ("{pod["metadata"]["name"]}") exists',
                )  # fmt: skip
                self._transition(rc, u.FAILED, {u.STATUS_REASON: u.UNRELATED_POD_EXISTS})
                return None
            extra = {
                u.DEPLOYER_POD: pod["metadata"]["name"],
                u.DEPLOYER_CREATED_AT: _pod_time(pod, "creationTimestamp"),
            }
            if (pod.get("status") or {}).get("startTime"):
                extra[u.DEPLOYER_STARTED_AT] = _pod_time(pod, "startTime")
            rc = self._transition(rc, u.PENDING, extra)
            phase = u.PENDING
        if phase not in (u.PENDING, u.RUNNING):
            return None
        if pod is None:
            if u.is_cancelled(rc):
                self._transition(rc, u.FAILED, {})
                self._cancelled_event(dc, rc)
            else:
                name = u.deployer_pod_name(m["name"])
                self.recorder.event(dc, "Warning", "Failed", f'Deployer pod "{name}" has gone missing')
                self._transition(rc, u.FAILED, {u.STATUS_REASON: u.DEPLOYER_POD_GONE})
            self.forget(rc)
            return None
        pod_phase = (pod.get("status") or {}).get("phase")
        if u.is_cancelled(rc):
            # deployer_controller.go handle: nextStatus is read from the deployer pod first; a pod that
            # already succeeded makes the rollout Complete even though a cancel was recorded meanwhile
            # ("Succeeded before cancel recorded": DeleteStatusReasons clears the original, not the
            # annotations written, so the cancel annotations stay); the pods are cleaned up all the same
            self._cleanup(rc, pod)
            if pod_phase != "Succeeded":
                return None
            self.recorder.event(dc, "Warning", "FailedCancellation", "Succeeded before cancel recorded")
        if pod_phase == "Running" and EXIT_ANNOTATION not in u.annotations_of(pod):
            if phase == u.PENDING:
                extra = {}
                if (pod.get("status") or {}).get("startTime"):
                    extra[u.DEPLOYER_STARTED_AT] = _pod_time(pod, "startTime")
                rc = self._transition(rc, u.RUNNING, extra)
            if dlog.OUTPUT_ANNOTATION not in u.annotations_of(pod):
                return None  # a custom deployer image: its process is the kubelet's to run
            return self._run_strategy(dc, rcs, rc, pod)
        if pod_phase == "Succeeded":
            self._transition(
                rc,
                u.COMPLETE,
                {
                    u.DEPLOYER_COMPLETED_AT: _terminated_at(pod) or None,
                    u.DEPLOYMENT_REPLICAS: u.annotations_of(rc).get(u.DESIRED_REPLICAS),
                    u.DESIRED_REPLICAS: None,
                },
            )
            self.forget(rc)
        elif pod_phase == "Failed":
            self._transition(rc, u.FAILED, {u.DEPLOYER_COMPLETED_AT: _terminated_at(pod) or None})
            self.forget(rc)
        return None

    def forget(self, rc: JSON) -> None:
        with self._lock:
            self._last_progress.pop(rc["metadata"].get("uid", ""), None)
            self._output.pop(rc["metadata"].get("uid", ""), None)
            self._hooks_done.pop(rc["metadata"].get("uid", ""), None)
            self._terminated.discard(rc["metadata"].get("uid", ""))
            self._terminated_wait.pop(rc["metadata"].get("uid", ""), None)
            self._strategy_begun.discard(rc["metadata"].get("uid", ""))

    # -- pods -------------------------------------------------------------------------------------------

    def _pod(self, rc: JSON, *, live: bool) -> JSON | None:
        """The RC's deployer pod; `live`: confirm an absence with a read (the cache may be behind)."""
        ns, name = rc["metadata"]["namespace"], u.deployer_pod_name(rc["metadata"]["name"])
        pod = self.pods.get(ns, name)
        if pod is None and live:
            try:
                pod = self.kube.get(f"/api/v1/namespaces/{ns}/pods/{name}")
            except ApiError as e:
                if e.status != 404:
                    raise
                return None
            self.pods.store(pod)
        if pod is not None and pod["metadata"].get("deletionTimestamp"):
            return pod  # still there until the kubelet finalizes it
        return pod

    def _cleanup(self, rc: JSON, pod: JSON | None) -> None:
        """cleanupDeployerPods of a cancelled rollout: the deployer pod and its hook pods (every pod
        labelled for the RC)."""
        self._delete_pod(pod)
        m = rc["metadata"]
        for other in self.pods.objects(m["namespace"]):
            if (other["metadata"].get("labels") or {}).get(u.DEPLOYER_POD_FOR) == m[
                "name"
            ] and other is not pod:
                self._delete_pod(other)

    def _delete_pod(self, pod: JSON | None) -> None:
        if pod is None or pod["metadata"].get("deletionTimestamp"):
            return
        m = pod["metadata"]
        try:
            self.kube.request("DELETE", f"/api/v1/namespaces/{m['namespace']}/pods/{m['name']}", {})
        except ApiError as e:
            if e.status != 404:
                raise

    def _print(
        self, pod: JSON, output: dlog.Output, lines: list[str], *, exit_code: int | None = None
    ) -> None:
        """The process in the deployer pod prints `lines` (and exits with `exit_code`): the kubelet serves
        the lines as its log and reports the exit as the container's, with the last line as the
        termination message (`FallbackToLogsOnError`) when it failed."""
        now = time.time()
        output.extend((now + i / 1000, text) for i, text in enumerate(lines))
        annotations = {dlog.OUTPUT_ANNOTATION: dlog.encode(output)} if lines else {}
        if exit_code is not None:
            message = lines[-1] if exit_code and lines else ""
            annotations[EXIT_ANNOTATION] = f"{exit_code}:{message}" if message else str(exit_code)
        if not annotations:
            return
        m = pod["metadata"]
        try:
            updated = self.kube.request(
                "PATCH",
                f"/api/v1/namespaces/{m['namespace']}/pods/{m['name']}",
                {"metadata": {"annotations": annotations}},
                content_type=MERGE_PATCH,
            )
        except ApiError as e:
            if e.status != 404:
                raise
            return
        self.pods.store(updated)

    def _cancelled_event(self, dc: JSON, rc: JSON) -> None:
        name = f"{rc['metadata']['namespace']}/{rc['metadata']['name']}"
        self.recorder.event(dc, "Normal", "RolloutCancelled", f'Rollout for "{name}" cancelled')

    # -- strategies -------------------------------------------------------------------------------------

    def _run_strategy(self, dc: JSON, rcs: list[JSON], to: JSON, pod: JSON) -> float | None:
        """One step of the process in the deployer pod; it exits when the rollout is done or timed out.
        What it prints (`deployerlog`) goes to the pod at the end of the step, with its exit if it ends."""
        config = u.decode_config(to) or dc
        try:
            desired = int(u.annotations_of(to).get(u.DESIRED_REPLICAS, ""))
        except ValueError:
            desired = int(config.get("spec", {}).get("replicas") or 0)
        older = [rc for rc in rcs if u.version_of(rc) < u.version_of(to)]
        complete = [rc for rc in older if u.phase_of(rc) == u.COMPLETE]
        source = max(complete, key=u.version_of) if complete else None
        uid = to["metadata"]["uid"]
        with self._lock:
            first = uid not in self._output
            output = self._output.setdefault(uid, dlog.decode(pod))
        if first and output:  # a restarted emulation goes on where the pod's log ends
            with self._lock:
                self._strategy_begun.add(uid)
        first = first and not output
        strategy = config.get("spec", {}).get("strategy") or {}
        if strategy.get("type", "Rolling") not in ("Rolling", "Recreate"):  # oc deployer.go strategyFor
            unsupported = f"unsupported strategy type: {strategy.get('type')}"
            self._print(pod, output, [dlog.error(unsupported)], exit_code=1)
            self.forget(to)
            return None
        out: list[str] = []
        for rc in older:  # everything but the last complete RC goes to zero first
            if rc is not source and u.spec_replicas(rc) > 0:
                self._scale(rc, 0)
                if first:
                    out.append(dlog.scaled_older_down(rc["metadata"]["name"]))
        hook = self._hook(dc, to, config, "pre", pod, output, out)
        if hook is not None:
            return hook
        with self._lock:
            first = uid not in self._strategy_begun  # its first lines come after the pre hook
            self._strategy_begun.add(uid)
        strategy = config.get("spec", {}).get("strategy") or {}
        held: list[float] = []  # the mid hook holding the rollout: when to look again

        def mid() -> bool:
            if strategy.get("type") != "Recreate":
                return True
            wait = self._hook(dc, to, config, "mid", pod, output, out)
            if wait is not None:
                held.append(wait)
            return wait is None

        if strategy.get("type", "Rolling") == "Rolling" and source is not None:
            params = strategy.get("rollingParams") or {}
            done, progressed = self._rolling(params, source, to, desired, out=out, first=first)
            stall = dlog.ROLLING_TIMEOUT  # the rolling updater's progress deadline (rolling_updater.go)
        else:
            done, progressed, stall = self._recreate(
                source, to, desired, out=out, first=first, timeout=u.timeout_of(config), gate=mid
            )
        if held:
            return held[0]
        now = time.time()
        with self._lock:
            if progressed or uid not in self._last_progress:
                started = u.parse_time((pod.get("status") or {}).get("startTime"))
                self._last_progress[uid] = now if progressed or started is None else started
            last = self._last_progress[uid]
        if done:
            hook = self._hook(dc, to, config, "post", pod, output, out)
            if hook is not None:
                return hook
            out += self._config_warnings(dc, [to, source], pod)
            self._print(pod, output, [*out, dlog.success()], exit_code=0)
            self.forget(to)
            return None
        timeout = u.timeout_of(config)
        left = last + timeout - now
        if left > 0:
            self._print(pod, output, out)
            return left + 0.05
        ns, name = to["metadata"]["namespace"], to["metadata"]["name"]
        log.info("rollout of %s/%s failed: %s", ns, name, stall)
        out += self._config_warnings(dc, [to, source], pod)
        self._print(pod, output, [*out, dlog.error(stall)], exit_code=1)  # kcmdutil.CheckErr's last line
        self.forget(to)
        return None

    def _hook(
        self, dc: JSON, rc: JSON, config: JSON, kind: str, pod: JSON, output: dlog.Output, out: list[str]
    ) -> float | None:
        """Run the `kind` hook if it has not ended: None once it has (go on), else seconds until the next
        look (it runs: the strategy's no-progress clock waits) or None after the process failed on it."""
        uid = rc["metadata"]["uid"]
        with self._lock:
            if kind in self._hooks_done.setdefault(uid, set()):
                return None
        outcome = self.hooks.run(dc, rc, config, kind, pod)
        out += outcome.lines
        if outcome.state == DONE:
            with self._lock:
                self._hooks_done.setdefault(uid, set()).add(kind)
            return None
        if outcome.state == RUNNING:
            with self._lock:
                self._last_progress[uid] = time.time()  # a hook has no timeout: the clock restarts after it
            self._print(pod, output, out)
            return 1.0
        self._print(pod, output, [*out, dlog.error(outcome.state)], exit_code=1)
        self.forget(rc)
        return 0.5  # the process exited: the next look sees the pod end

    def _config_warnings(self, dc: JSON, rcs: list[JSON | None], pod: JSON) -> list[str]:
        """What the strategy prints as it returns (strategy/util/events.go RecordConfigWarnings, deferred
        for `from` then `to`, so `to`'s first): each Warning event about the RC, also recorded on the DC
        with the deployer pod as its source."""
        out: list[str] = []
        for rc in rcs:
            if rc is None:
                continue
            m = rc["metadata"]
            selector = (
                f"involvedObject.kind=ReplicationController,involvedObject.namespace={m['namespace']},"
                f"involvedObject.name={m['name']},involvedObject.uid={m.get('uid', '')}"
            )
            try:
                events = self.kube.get(f"/api/v1/namespaces/{m['namespace']}/events", fieldSelector=selector)
            except ApiError as e:
                out.append(dlog.events_unlisted(m["name"], str(e.body.get("message") or e)))
                continue
            for e in events.get("items") or []:
                if e.get("type") == "Warning":
                    reason, message = str(e.get("reason", "")), str(e.get("message", ""))
                    out.append(dlog.config_warning(reason, m["name"], message))
                    self.recorder.event(dc, "Warning", reason, message, component=pod["metadata"]["name"])
        return out

    def _rolling(self, params: JSON, old: JSON, new: JSON, desired: int, *, out: list[str], first: bool
                 ) -> tuple[bool, bool]:  # fmt: skip
        """One pass of the rolling updater's loop: scale up within the surge, down within availability."""
        surge, unavailable = u.fenceposts(params, desired)
        min_available = max(0, desired - unavailable)
        old_n, new_n = u.spec_replicas(old), u.spec_replicas(new)
        if desired == 0:
            min_available = 0
        if first:
            out.append(dlog.rolling_start(
                new=new["metadata"]["name"], new_replicas=new_n, desired=desired, old=old["metadata"]["name"],
                old_replicas=old_n, min_available=min_available, surge=surge,
            ))  # fmt: skip
        progressed = False
        if new_n != desired:
            increment = desired - new_n if old_n == 0 else (desired + surge) - (old_n + new_n)
            if increment > 0:
                new_n = min(desired, new_n + increment)
                new = self._scale(new, new_n)
                out.append(dlog.rolling_scale(new["metadata"]["name"], up=True, to=new_n))
                progressed = True
        if old_n > 0:
            new_available = u.status_int(new, "availableReplicas") if _fresh(new) else 0
            decrement = (old_n + new_n) - min_available - (new_n - new_available)
            target = max(0, old_n - decrement) if decrement > 0 else old_n
            if new_n == desired and new_available >= desired:
                target = 0
            if target != old_n:
                self._scale(old, target)
                out.append(dlog.rolling_scale(old["metadata"]["name"], up=False, to=target))
                old_n = target
                progressed = True
        return new_n == desired and old_n == 0, progressed

    def _recreate(self, old: JSON | None, new: JSON, desired: int, *, out: list[str], first: bool, timeout: int,
                  gate: Callable[[], bool]) -> tuple[bool, bool, str]:  # fmt: skip
        """Recreate (also a Rolling DC's first rollout): old down to zero and its pods terminated, `gate`
        (the mid hook: False while it holds the rollout), then new up and accepted.
        Returns (done, progressed, the error if the wait it is in now times out)."""
        name = new["metadata"]["name"]
        rejected = dlog.acceptor_rejected(namespace=new["metadata"]["namespace"], rc=name, timeout=timeout)
        if old is not None:
            if first:
                out.append(dlog.recreate_scale_down(old["metadata"]["name"]))
            stuck = dlog.scale_failed(old["metadata"]["name"], 0)
            if u.spec_replicas(old) > 0:
                self._scale(old, 0)
                return False, True, stuck
            if not _fresh(old) or u.status_int(old, "replicas") > 0:
                return False, False, stuck
            if not self._old_pods_gone(old, new, timeout, out):
                return False, True, stuck  # a wait with its own timeout, after which it goes on
        if not gate():
            return False, False, rejected
        new_n = u.spec_replicas(new)
        available = u.status_int(new, "availableReplicas") if _fresh(new) else -1

        def scaled(n: int) -> bool:  # recreate.go scaleAndWait: the RC's status has the pods
            return _fresh(new) and u.status_int(new, "replicas") == n

        if desired == 0:
            return True, False, ""
        if old is not None and desired > 1:  # one replica first, accepted before the full scale-up
            if new_n == 0:
                self._scale(new, 1)
                out.append(dlog.recreate_scale_to_one(name))
                return False, True, rejected
            if new_n == 1:
                if not scaled(1):  # scaleAndWait: its pod is not even created
                    return False, False, dlog.scale_failed(name, 1)
                if available >= 1:
                    self._scale(new, desired)
                    out.append(dlog.recreate_scale(name, desired))
                    return False, True, dlog.scale_failed(name, desired)
                return False, False, rejected
            return scaled(desired), False, dlog.scale_failed(name, desired)
        if new_n != desired:
            self._scale(new, desired)
            out.append(
                dlog.recreate_scale_to_one(name) if old is not None else dlog.recreate_scale(name, desired)
            )
            return False, True, dlog.scale_failed(name, desired)
        if not scaled(desired):
            return False, False, dlog.scale_failed(name, desired)
        return available >= desired, False, rejected

    def _old_pods_gone(self, old: JSON, new: JSON, timeout: int, out: list[str]) -> bool:
        """recreate.go waitForTerminatedPods: every pod of the old RC's selector in a terminal phase (a
        terminating pod still counts), polled up to timeoutSeconds; past it the strategy says so and goes
        on ("New pods may be scaled up before old pods get terminated!")."""
        uid = new["metadata"]["uid"]
        selector = (old.get("spec") or {}).get("selector") or {}
        with self._lock:
            if uid in self._terminated:
                return True
            since = self._terminated_wait.setdefault(uid, time.time())
        pods = self.pods.objects(old["metadata"]["namespace"])
        running = [
            p for p in pods
            if selector and all(((p["metadata"].get("labels") or {}).get(k)) == v for k, v in selector.items())
            and (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")
        ]  # fmt: skip
        if running and time.time() - since < timeout:
            return False
        if running:
            out.append(dlog.terminated_wait_failed())
        with self._lock:
            self._terminated.add(uid)
        return True

    # -- writes -----------------------------------------------------------------------------------------

    def _scale(self, rc: JSON, replicas: int) -> JSON:
        body: JSON = {"spec": {"replicas": replicas}}
        try:
            updated = self.kube.request("PATCH", u.rc_path(rc), body, content_type=MERGE_PATCH)
        except ApiError as e:
            if e.status == 404:
                return rc
            raise
        self.rcs.store(updated)
        return updated

    def _transition(self, rc: JSON, phase: str, extra: dict[str, str | None]) -> JSON:
        """Set the phase annotation (and others) on the RC as we read it, as the controller's Update does.

        A test DC's RC that ends (Complete or Failed) at a non-zero scale goes to 0 in the same write
        (deployer_controller.go handle: "we maintain the test invariant")."""
        m = rc["metadata"]
        path = u.rc_path(rc)
        patch: JSON = {"metadata": {"annotations": {**extra, u.PHASE: phase}}}
        config = u.decode_config(rc) or {}
        if phase in (u.COMPLETE, u.FAILED) and u.spec_replicas(rc) and (config.get("spec") or {}).get("test"):
            patch["spec"] = {"replicas": 0}
        for attempt in range(3):
            patch["metadata"]["resourceVersion"] = rc["metadata"]["resourceVersion"]
            try:
                updated = self.kube.request("PATCH", path, patch, content_type=MERGE_PATCH)
                break
            except ApiError as e:
                if e.status != 409 or attempt == 2:
                    raise
                # kube-controller-manager updates RC status all the time: re-read, and go on only if
                # nothing that matters here (phase, cancellation) changed meanwhile
                fresh = self.kube.get(path)
                self.rcs.store(fresh)
                if u.phase_of(fresh) != u.phase_of(rc) or u.is_cancelled(fresh) != u.is_cancelled(rc):
                    raise Requeue(f"{m['name']} changed while moving it to {phase}") from e
                rc = fresh
        self.rcs.store(updated)
        log.info("%s/%s: %s -> %s", m["namespace"], m["name"], u.phase_of(rc) or "New", phase)
        return updated
