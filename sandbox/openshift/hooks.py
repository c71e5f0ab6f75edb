"""Lifecycle hooks of a DC rollout, as the deployer process runs them: one hook pod per hook, waited for.

Mirrors oc pkg/cli/deployer/strategy/support/lifecycle.go (hookExecutor.Execute, executeExecNewPod,
createHookPodManifest): an `execNewPod` hook runs in pod `<rc>-hook-<pre|mid|post>` (label
`openshift.io/deployer-pod-for.name=<rc>` and `openshift.io/deployer-pod.type=hook-<kind>`, annotation
`openshift.io/deployment.name=<rc>`, one container `lifecycle` with the named container's image, the
hook's command and the merged env plus OPENSHIFT_DEPLOYMENT_NAME/NAMESPACE, restartPolicy Never, or
OnFailure for the `Retry` policy, activeDeadlineSeconds = the strategy's activeDeadlineSeconds less the
deployer pod's age, terminationGracePeriodSeconds 10, the strategy's labels and annotations). The
deployer controller then sets the RC as the pod's plain owner (openshift-controller-manager
pkg/apps/deployer/deployer_controller.go setDeployerPodsOwnerRef), once an update of the pod enqueues
the RC (factory.go updatePod: not at the pod's creation). A hook has no timeout of its own.
A failed hook (the pod's `status.message`, usually empty, is its error) with `Abort` or `Retry` fails the
strategy with `<kind> hook failed: the <kind> hook failed: <message>, aborting rollout of <ns>/<rc>`
(recreate.go, rolling.go wrap Execute's error); with `Ignore` the rollout goes on. Events: Started,
Completed, Failed on the DC. A `tagImages` hook (hookExecutor.tagImages) sets each named container's
image as ImageStreamTag `to` (`DockerImage`; the stream is made if missing, as an ImageStreamTag update
provisions it), each failure collected into one error. Not emulated: volumes, and copying the hook
pod's log into the deployer's.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from sandbox.openshift import appsutil as u
from sandbox.openshift.events import Recorder
from sandbox.openshift.informer import Informer
from sandbox.openshift.kube import JSON, MERGE_PATCH, ApiError, Kube

POD_TYPE = "openshift.io/deployer-pod.type"
RUNNING, DONE = "running", "done"


@dataclass
class Report:
    """Where a hook stands: RUNNING, DONE, or a failure message that aborts the rollout."""

    state: str
    lines: tuple[str, ...] = ()


def hook_pod_name(rc: str, kind: str) -> str:
    """naming.GetPodName(rc, "hook-<kind>") for names that need no shortening."""
    return f"{rc}-hook-{kind}"


def make_hook_pod(hook: JSON, rc: JSON, strategy: JSON, kind: str, deployer_started: float) -> JSON | str:
    """The hook pod (createHookPodManifest), or the error when its container is not in the template."""
    exec_ = hook.get("execNewPod") or {}
    m = rc["metadata"]
    template = ((rc.get("spec") or {}).get("template") or {}).get("spec") or {}
    base = next(
        (c for c in template.get("containers") or [] if c.get("name") == exec_.get("containerName")), None
    )
    if base is None:
        return f"no container named '{exec_.get('containerName')}' found in rc template"
    env = {e["name"]: e for e in base.get("env") or []}
    env.update({e["name"]: e for e in exec_.get("env") or []})
    merged = [*env.values(), {"name": "OPENSHIFT_DEPLOYMENT_NAME", "value": m["name"]},
              {"name": "OPENSHIFT_DEPLOYMENT_NAMESPACE", "value": m["namespace"]}]  # fmt: skip
    deadline = int(strategy.get("activeDeadlineSeconds") or u.DEFAULT_ACTIVE_DEADLINE)
    labels = {u.DEPLOYER_POD_FOR: m["name"], POD_TYPE: f"hook-{kind}"}
    annotations = {u.DEPLOYMENT_NAME: m["name"]}
    for k, v in (strategy.get("labels") or {}).items():
        labels.setdefault(k, v)
    for k, v in (strategy.get("annotations") or {}).items():
        annotations.setdefault(k, v)
    container: JSON = {"name": "lifecycle", "image": base.get("image", ""), "command": exec_.get("command") or [],
                       "env": merged, "resources": base.get("resources") or {}}  # fmt: skip
    for key in ("imagePullPolicy", "workingDir", "securityContext"):
        if base.get(key):
            container[key] = base[key]
    spec: JSON = {
        "containers": [container],
        "activeDeadlineSeconds": max(1, deadline - int(time.time() - deployer_started)),
        "restartPolicy": "OnFailure" if hook.get("failurePolicy") == "Retry" else "Never",
        "terminationGracePeriodSeconds": 10,
    }
    for key in ("nodeSelector", "imagePullSecrets", "securityContext"):
        if template.get(key):
            spec[key] = template[key]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": hook_pod_name(m["name"], kind),
            "namespace": m["namespace"],
            "labels": labels,
            "annotations": annotations,
        },
        "spec": spec,
    }


class Hooks:
    """Runs hooks for the deployer: `run` is called at each reconcile until it says DONE or fails."""

    def __init__(self, kube: Kube, pods: Informer, recorder: Recorder) -> None:
        self.kube, self.pods, self.recorder = kube, pods, recorder

    def run(self, dc: JSON, rc: JSON, config: JSON, kind: str, deployer: JSON) -> Report:
        strategy = (config.get("spec") or {}).get("strategy") or {}
        params = strategy.get(
            "rollingParams" if strategy.get("type", "Rolling") == "Rolling" else "recreateParams"
        )
        hook = (params or {}).get(kind)
        if not hook:
            return Report(DONE)
        m = rc["metadata"]
        label = f"{m['namespace']}/{m['name']}"
        if not hook.get("execNewPod"):
            return self._tag_images(dc, hook, rc, kind, label)
        name = hook_pod_name(m["name"], kind)
        pod = self.pods.get(m["namespace"], name)
        if pod is None:
            started = u.parse_time((deployer.get("status") or {}).get("startTime")) or time.time()
            body = make_hook_pod(hook, rc, strategy, kind, started)
            if isinstance(body, str):
                return self._failed(dc, hook, kind, label, body, ())
            command = " ".join(hook["execNewPod"].get("command") or [])
            self.recorder.event(dc, "Normal", "Started", f'Running {kind}-hook ("{command}") for rc {label}')
            try:
                pod = self.kube.request("POST", f"/api/v1/namespaces/{m['namespace']}/pods", body)
            except ApiError as e:
                if e.status == 409:
                    return Report(RUNNING)  # there, not cached yet
                why = f"couldn't create lifecycle pod for {m['name']}: {e.body.get('message') or e}"
                return self._failed(dc, hook, kind, label, why, ())
            self.pods.store(pod)
            return Report(RUNNING, (f"--> {kind}: Running hook pod ...",))
        if not pod["metadata"].get("ownerReferences"):
            # the deployer controller's setDeployerPodsOwnerRef, when a pod update (binding, status) of
            # a pod annotated with the RC's name enqueues the RC (factory.go updatePod): not at creation
            self._own(pod, rc)
        phase = (pod.get("status") or {}).get("phase")
        if phase == "Succeeded":
            self.recorder.event(
                dc, "Normal", "Completed", f"The {kind}-hook for rc {label} completed successfully"
            )
            return Report(DONE, (f"--> {kind}: Success",))
        if phase == "Failed":
            message = str((pod.get("status") or {}).get("message") or "")
            return self._failed(dc, hook, kind, label, message, (f"--> {kind}: Failed",))
        return Report(RUNNING)

    def _tag_images(self, dc: JSON, hook: JSON, rc: JSON, kind: str, label: str) -> Report:
        """lifecycle.go tagImages: each container's image into ImageStreamTag `to`, errors aggregated."""
        template = ((rc.get("spec") or {}).get("template") or {}).get("spec") or {}
        images = {c.get("name"): c.get("image", "") for c in template.get("containers") or []}
        actions = hook.get("tagImages") or []
        tagged = [
            f'image "{images[a.get("containerName")]}" as "{(a.get("to") or {}).get("name", "")}"'
            for a in actions
            if a.get("containerName") in images
        ]
        started = f"Running {kind}-hook (TagImages) {','.join(tagged)} for rc {label}"
        self.recorder.event(dc, "Normal", "Started", started)
        errors, lines = [], []
        for action in actions:
            name = action.get("containerName")
            if name not in images:
                errors.append(f'unable to find image for container "{name}", container could not be found')
                continue
            to = action.get("to") or {}
            namespace = to.get("namespace") or rc["metadata"]["namespace"]
            error = self._set_tag(namespace, str(to.get("name", "")), images[name])
            if error:
                errors.append(error)
                continue
            lines.append(
                f'--> {kind}: Tagged "{images[name]}" into {to.get("namespace", "")}/{to.get("name", "")}'
            )
        if not errors:
            done = f"The {kind}-hook for rc {label} completed successfully"
            self.recorder.event(dc, "Normal", "Completed", done)
            return Report(DONE, tuple(lines))
        message = errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]"  # utilerrors.NewAggregate
        return self._failed(dc, hook, kind, label, message, tuple(lines))

    def _set_tag(self, namespace: str, istag: str, image: str) -> str:
        """ImageStreamTag update: the spec tag `from: DockerImage image`; "" or the API's error."""
        stream, _, tag = istag.partition(":")
        streams = f"{u.IS_PATH}/namespaces/{namespace}/imagestreams"
        spec_tag = {"name": tag or "latest", "from": {"kind": "DockerImage", "name": image}}
        for _attempt in range(3):
            try:
                current = self.kube.get(f"{streams}/{stream}")
            except ApiError as e:
                if e.status != 404:
                    return str(e.body.get("message") or e)
                body = {
                    "apiVersion": "image.openshift.io/v1",
                    "kind": "ImageStream",
                    "metadata": {"name": stream, "namespace": namespace},
                    "spec": {"tags": [spec_tag]},
                }
                try:
                    self.kube.request("POST", streams, body)
                    return ""
                except ApiError as e2:
                    if e2.status == 409:
                        continue
                    return str(e2.body.get("message") or e2)
            tags = [
                t for t in (current.get("spec") or {}).get("tags") or [] if t.get("name") != spec_tag["name"]
            ]
            current.setdefault("spec", {})["tags"] = [*tags, spec_tag]
            try:
                self.kube.request("PUT", f"{streams}/{stream}", current)
                return ""
            except ApiError as e:
                if e.status != 409:
                    return str(e.body.get("message") or e)
        return f'Operation cannot be fulfilled on imagestreams "{stream}": the object has been modified'

    def _failed(
        self, dc: JSON, hook: JSON, kind: str, label: str, err: str, lines: tuple[str, ...]
    ) -> Report:
        if hook.get("failurePolicy") == "Ignore":
            self.recorder.event(
                dc,
                "Warning",
                "Failed",
                f"The {kind}-hook failed: {err} (ignore), rollout of {label} will continue",
            )
            return Report(DONE, lines)
        self.recorder.event(
            dc, "Warning", "Failed", f"The {kind}-hook failed: {err}, aborting rollout of {label}"
        )
        return Report(
            f"{kind} hook failed: the {kind} hook failed: {err}, aborting rollout of {label}", lines
        )

    def _own(self, pod: JSON, rc: JSON) -> None:
        m = pod["metadata"]
        owner = {"apiVersion": "v1", "kind": "ReplicationController", "name": rc["metadata"]["name"],
                 "uid": rc["metadata"]["uid"]}  # fmt: skip
        try:
            updated = self.kube.request(
                "PATCH", f"/api/v1/namespaces/{m['namespace']}/pods/{m['name']}",
                {"metadata": {"ownerReferences": [owner]}}, content_type=MERGE_PATCH,
            )  # fmt: skip
        except ApiError as e:
            if e.status != 404:
                raise
            return
        self.pods.store(updated)
