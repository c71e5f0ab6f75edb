"""OpenShift DeploymentConfigs: their revisions (ReplicationControllers), readiness, triggers and deadline.

A DC's revisions are RCs named ``<dc>-<N>``, numbered by an annotation and labelled with the DC's name
(an RC orphaned by a re-created DC still belongs to it); each RC records the DC it was made from (its
pod template and triggers) in ``openshift.io/encoded-deployment-config``, and its rollout's phase in
``openshift.io/deployment.phase`` (reference section 2). Its image triggers live in ``spec.triggers``,
and a DC without a ConfigChange trigger rolls out by itself only a changed container image, and then
only if it has an image trigger: any other rollout rollguard asks for in its write (`dc_start`).

How a rollout failed is never read from the RC's ``status-reason``: OpenShift sets it once, when it makes
the RC, to the rollout's *cause* ("config change", "image change"), and later only for a handful of
deployer-controller failures (library-go pkg/apps/appsutil/const.go). What says how it failed is the DC's
``Progressing`` condition (``ProgressDeadlineExceeded``, ``replication controller "x-2" has failed
progressing``) and the deployer pod ``<rc>-deploy``, whose termination message carries the strategy's
error. The deployer pod (and hook pods) are owned by the RC, not controlled by it: they are never the
revision's pods (`pods_of_revision`), only evidence here (`explain`).
"""

from __future__ import annotations

import copy
import datetime as dt
import json
from collections.abc import Iterable
from dataclasses import replace
from typing import Any

from rollguard.core.readiness import condition, get, observed, replica_failure, replica_failure_since
from rollguard.core.resources import DEPLOYMENT_CONFIGS, REPLICATION_CONTROLLERS
from rollguard.core.structs import DC, KIND_NAMES, Obj, Progress, RolloutPhase, VerifiedState
from rollguard.kinds import dc_pods, dc_start
from rollguard.kinds import triggers as trig
from rollguard.kinds.base import DC_NAME_LABEL, DEFAULT_DEADLINE, Kind, as_int, owned_by, parse_time, pick
from rollguard.kinds.causes import CHANGE_CAUSE, Cause, Recorded
from rollguard.kinds.templates import same_template
from rollguard.kinds.triggers import ImageTrigger

PHASE_ANNOTATION = "openshift.io/deployment.phase"
CANCELLED_ANNOTATION = "openshift.io/deployment.cancelled"
STATUS_REASON_ANNOTATION = "openshift.io/deployment.status-reason"
ENCODED_DC_ANNOTATION = "openshift.io/encoded-deployment-config"
DC_VERSION_ANNOTATION = "openshift.io/deployment-config.latest-version"
DEPLOYER_STARTED_ANNOTATION = "openshift.io/deployer-pod.started-at"
DEPLOYER_POD_ANNOTATION = "openshift.io/deployer-pod.name"
# the status-reasons that say how a rollout failed (library-go pkg/apps/appsutil/const.go); any other
# status-reason is the rollout's cause
FAILURE_REASONS = frozenset(
    {
        "unable to create deployer pod",
        "deployer pod no longer exists",
        "unrelated pod with the same name as this deployment is already running",
    }
)


def encoded_config(rev: Obj) -> Any:
    """The DC as it was for an RC's revision (None for ReplicaSets)."""
    text = rev.get("metadata", {}).get("annotations", {}).get(ENCODED_DC_ANNOTATION)
    return json.loads(text) if text else None


def compact_encoded_config(text: str) -> str:
    """An RC's encoded DC cut to what rollguard reads of it: the spec's template and triggers, the
    rollout's cause (``status.details``) and the DC's change-cause."""
    try:
        config = json.loads(text)
    except ValueError:
        return text  # kept as it is: `rc_template` judges garbage the same way either way
    if not isinstance(config, dict) or not isinstance(config.get("spec"), dict):
        return text
    compact: Obj = {"spec": pick(config["spec"], ("template", "triggers"))}
    notes = pick((config.get("metadata") or {}).get("annotations"), (CHANGE_CAUSE,))
    if notes:
        compact["metadata"] = {"annotations": notes}
    details = pick(config.get("status"), ("details",))
    if details:
        compact["status"] = details
    return json.dumps(compact, separators=(",", ":"))


# openshift/api apps/v1 types.go DeploymentTriggerType, as status.details.causes[].type names them
_RECORDED = {"ConfigChange": Cause.CONFIG, "ImageChange": Cause.IMAGE, "Manual": Cause.MANUAL}
# openshift-apiserver instantiate/rest.go and openshift-controller-manager deploymentconfig_controller.go:
# status.details.message, which MakeDeployment also copies into the RC's status-reason
_RECORDED_MESSAGES = {
    "config change": Cause.CONFIG,
    "image change": Cause.IMAGE,
    "manual change": Cause.MANUAL,
}


def recorded_cause(rc: Obj) -> Recorded | None:
    """The cause OpenShift recorded for an RC's rollout: its encoded DC's ``status.details`` (the first
    cause's type, and the images or ImageStreamTags image causes name), else the status-reason set when
    the RC was made (overwritten later by a failure or a cancellation, so only its three cause words).

    Where they come from: the DC controller's triggerActivated records ConfigChange (a changed template,
    and the first rollout) or ImageChange with each new image as a DockerImage (openshift-controller-manager
    pkg/apps/deploymentconfig/deploymentconfig_controller.go recordConfigChangeCause /
    recordImageChangeCauses); `oc rollout latest` (the instantiate subresource, forced) records Manual,
    and an image change it resolves names the ImageStreamTag (openshift-apiserver
    pkg/apps/apiserver/registry/instantiate/rest.go). A client's ``latestVersion + 1`` through the main
    resource records nothing: the stored status, the previous rollout's details included, is kept
    (deployconfig/strategy.go PrepareForUpdate), so its RC carries the cause of the rollout before it.
    """
    config = encoded_config_or_none(rc)
    details = ((config or {}).get("status") or {}).get("details") if isinstance(config, dict) else None
    causes = (details or {}).get("causes") if isinstance(details, dict) else None
    if isinstance(causes, list) and causes and isinstance(causes[0], dict):
        cause = _RECORDED.get(str(causes[0].get("type")))
        if cause is not None:
            sources = tuple(
                str(((c.get("imageTrigger") or {}).get("from") or {}).get("name") or "")
                for c in causes
                if isinstance(c, dict) and c.get("type") == "ImageChange"
            )
            return Recorded(cause=cause, sources=tuple(s for s in sources if s))
    message = str(get(rc, "metadata", "annotations", STATUS_REASON_ANNOTATION, default="") or "")
    cause = _RECORDED_MESSAGES.get(message)
    return Recorded(cause=cause) if cause is not None else None


def encoded_config_or_none(rev: Obj) -> Any:
    """`encoded_config`, None when the annotation is not JSON."""
    try:
        return encoded_config(rev)
    except ValueError:
        return None


def rc_template(rc: Obj) -> Obj | None:
    """The DC pod template an RC was made from (from its encoded-deployment-config annotation)."""
    encoded = get(rc, "metadata", "annotations", ENCODED_DC_ANNOTATION)
    if not encoded:
        return None
    try:
        template = json.loads(encoded).get("spec", {}).get("template")
    except ValueError:
        return None
    return template if isinstance(template, dict) else None


def dc_progress(dc: Obj, latest_rc: Obj | None) -> Progress:
    """Is the DC's current template rolled out by its latest RC? (reference section 2)"""
    name = get(dc, "metadata", "name", default="?")
    version = int(get(dc, "status", "latestVersion", default=0))
    if not observed(dc) and not _running_rollout(dc, latest_rc, version):
        return Progress(RolloutPhase.PENDING, "waiting for the controller to observe the change", version)
    if get(dc, "spec", "paused", default=False):
        return Progress(RolloutPhase.PAUSED, f'deployment config "{name}" is paused', version)
    if latest_rc is None or get(latest_rc, "metadata", "name") != f"{name}-{version}":
        return Progress(RolloutPhase.PENDING, "waiting for a new replication controller", version)
    if not same_template(rc_template(latest_rc), get(dc, "spec", "template")):
        return Progress(RolloutPhase.PENDING, "waiting for a rollout of the new template", version)
    rc_name = f"{name}-{version}"
    annotations = get(latest_rc, "metadata", "annotations", default={})
    phase = annotations.get(PHASE_ANNOTATION, "New")
    if annotations.get(CANCELLED_ANNOTATION) == "true" and phase != "Complete":
        return Progress(
            RolloutPhase.FAILED, f'rollout of replication controller "{rc_name}" was cancelled', version
        )
    if phase == "Complete":
        return Progress(
            RolloutPhase.COMPLETE, f'replication controller "{rc_name}" successfully rolled out', version
        )
    if phase == "Failed":
        return Progress(RolloutPhase.FAILED, _failure(dc, rc_name, annotations), version)
    want = int(get(dc, "spec", "replicas", default=1))
    have = int(get(latest_rc, "status", "readyReplicas", default=0))
    return Progress(
        RolloutPhase.PROGRESSING, f"{rc_name} {phase.lower()}: {have} of {want} new replicas ready", version
    )


def _running_rollout(dc: Obj, latest_rc: Obj | None, version: int) -> bool:
    """Whether the DC's latest RC runs its current template and has yet to end.

    openshift-controller-manager pkg/apps/deploymentconfig/deploymentconfig_controller.go (Handle): while
    the latest RC is not terminated the controller calls ``updateStatus(config, ..., false)`` ("we don't
    want to compete with the deployer"), leaving ``status.observedGeneration`` behind any spec write made
    meanwhile (an HPA or `oc scale`, a trigger recording ``lastTriggeredImage``) until the rollout ends.
    The RC then says where the rollout stands; waiting for the controller to observe would freeze the
    judgement (and the no-progress clock) for the rest of the rollout.
    """
    if latest_rc is None or get(latest_rc, "metadata", "name") != f"{get(dc, 'metadata', 'name')}-{version}":
        return False
    phase = get(latest_rc, "metadata", "annotations", PHASE_ANNOTATION, default="New")
    if phase not in ("New", "Pending", "Running"):
        return False
    return same_template(rc_template(latest_rc), get(dc, "spec", "template"))


def _failure(dc: Obj, rc_name: str, annotations: dict[str, str]) -> str:
    """How the rollout of ``rc_name`` failed: the DC's Progressing condition, and a failure status-reason."""
    message = f'replication controller "{rc_name}" has failed progressing'
    progressing = condition(dc, "Progressing") or {}
    if progressing.get("status") == "False" and f'"{rc_name}"' in str(progressing.get("message", "")):
        message = str(progressing["message"])
    reason = annotations.get(STATUS_REASON_ANNOTATION, "")
    return f"{message}: {reason}" if reason in FAILURE_REASONS else message


def deployer_pod_trouble(pod: Obj) -> str:
    """What went wrong with a deployer pod, in a few words ("" when nothing did or it still runs)."""
    return dc_pods.pod_trouble(pod)


def _still_scaled(latest: Obj, revisions: list[Obj]) -> str:
    """What else holds pods while ``latest`` cannot get its own: an older RC that failed (a cancelled
    rollout included) and is still scaled up. On OpenShift nobody scales it down until a deployer pod of
    a newer RC starts (oc pkg/cli/deployer/deployer.go) or the latest RC ends (openshift-controller-manager
    deploymentconfig_controller.go reconcileDeployments), so its pods keep their share of the quota
    meanwhile: said, so that the refusal names what to free ("" when there is none)."""
    held = [
        f'replication controller "{rev["metadata"]["name"]}" (failed) is still scaled to '
        f"{as_int((rev.get('spec') or {}).get('replicas'))}"
        for rev in revisions
        if rev is not latest
        and (rev.get("metadata", {}).get("annotations") or {}).get(PHASE_ANNOTATION) == "Failed"
        and as_int((rev.get("spec") or {}).get("replicas")) > 0
    ]
    if not held:
        return ""
    return f"{', '.join(held)}: its pods hold their share of the quota until this rollout ends"


class DeploymentConfigKind(Kind):
    kind = DC
    noun = "DC"
    resource = DEPLOYMENT_CONFIGS
    revisions = REPLICATION_CONTROLLERS
    aliases = KIND_NAMES[DC].aliases
    template_noise_labels = ("deployment", "deploymentconfig")
    template_noise_annotations = (
        "openshift.io/deployment-config.name",
        "openshift.io/deployment.name",
        "openshift.io/deployment-config.latest-version",
    )
    optional_api = True
    revision_label = DC_NAME_LABEL
    # openshift/api apps/v1 types.go: DeploymentConfigSpec.Template is a *corev1.PodTemplateSpec
    schema_parts = {
        "metadata": "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta",
        "spec.template": "io.k8s.api.core.v1.PodTemplateSpec",
    }
    # (the encoded config too; rollguard.cluster.reduce compacts it to the template and triggers)
    revision_annotations = (
        DC_VERSION_ANNOTATION,
        PHASE_ANNOTATION,
        CANCELLED_ANNOTATION,
        STATUS_REASON_ANNOTATION,
        DEPLOYER_STARTED_ANNOTATION,
    )

    def revision(self, obj: Obj) -> int:
        return int(obj.get("status", {}).get("latestVersion", 0) or 0)

    def triggers(self, obj: Obj) -> list[Obj] | None:
        return trig.copied(obj.get("spec", {}).get("triggers"))

    def image_triggers(self, obj: Obj) -> list[ImageTrigger]:
        return trig.parse_dc_triggers(obj.get("spec", {}).get("triggers"))

    def trigger_texts(self, obj: Obj) -> tuple[str, ...]:
        return trig.dc_trigger_texts(obj.get("spec", {}).get("triggers"))

    def pod_selector(self, obj: Obj) -> str:
        """A DC's selector is a plain label map."""
        selector = obj.get("spec", {}).get("selector") or {}
        if not isinstance(selector, dict):
            return ""
        return ",".join(f"{k}={v}" for k, v in sorted(selector.items()))

    def owned(self, obj: Obj, revisions: Iterable[Obj]) -> list[Obj]:
        name = obj["metadata"]["name"]
        mine = [
            r
            for r in revisions
            if owned_by(r, obj) or r.get("metadata", {}).get("labels", {}).get(DC_NAME_LABEL) == name
        ]
        return sorted(mine, key=self.revision_number, reverse=True)

    def revision_number(self, rev: Obj) -> int:
        value = rev.get("metadata", {}).get("annotations", {}).get(DC_VERSION_ANNOTATION, "0")
        return int(value) if str(value).isdigit() else 0

    def revision_template(self, rev: Obj) -> Obj | None:
        return rc_template(rev)

    def revision_status(self, rev: Obj, *, newest: bool) -> str:
        """The RC's phase: New|Pending|Running|Complete|Failed, or Cancelled."""
        notes = rev.get("metadata", {}).get("annotations") or {}
        status = str(notes.get(PHASE_ANNOTATION, "New"))
        if notes.get(CANCELLED_ANNOTATION) == "true" and status != "Complete":
            status = "Cancelled"
        return status

    def revision_failure(self, rev: Obj) -> str | None:
        status = self.revision_status(rev, newest=False)
        return status.lower() if status in ("Failed", "Cancelled") else None

    def deployer_pod(self, rev: Obj) -> str | None:
        """The RC's deployer pod while its rollout is New, Pending or Running and once it Failed; None once
        it is Complete. As `oc logs dc/NAME` reads it: openshift-apiserver
        pkg/apps/apiserver/registry/deploylog/rest.go serves the deployer pod's log in those phases and an
        application pod's once the RC is Complete (the deployer pod may be gone by then)."""
        notes = rev.get("metadata", {}).get("annotations") or {}
        if notes.get(PHASE_ANNOTATION) == "Complete":
            return None
        return str(notes.get(DEPLOYER_POD_ANNOTATION) or f"{rev['metadata']['name']}-deploy")

    def change_cause(self, rev: Obj) -> str:
        """The DC's change-cause as its RC encoded it (MakeDeployment encodes the whole DC)."""
        config = encoded_config_or_none(rev)
        notes = ((config.get("metadata") or {}).get("annotations") or {}) if isinstance(config, dict) else {}
        return str(notes.get(CHANGE_CAUSE) or "") if isinstance(notes, dict) else ""

    def recorded_cause(self, rev: Obj) -> Recorded | None:
        return recorded_cause(rev)

    def trigger_source(self, rev: Obj, container: str, image: str) -> str:
        """The ImageChange trigger feeding ``container`` whose lastTriggeredImage is ``image`` in the DC the
        RC encoded: its ImageStreamTag (with its namespace when it names one)."""
        config = encoded_config_or_none(rev)
        spec = config.get("spec") if isinstance(config, dict) else None
        for trigger in trig.parse_dc_triggers(
            (spec or {}).get("triggers") if isinstance(spec, dict) else None
        ):
            if container in trigger.containers and trigger.last_image and trigger.last_image == image:
                return f"{trigger.namespace}/{trigger.name}" if trigger.namespace else trigger.name
        return ""

    def next_revision(self, obj: Obj, body: Obj, revisions: list[Obj]) -> int | None:
        """latestVersion + 1 when the write asks for it (`with_start_request`) or the DC's triggers start
        it by themselves (`dc_start.rolls_out`); a paused DC starts none."""
        if (body.get("spec") or {}).get("paused"):
            return None
        version = self.revision(obj)
        if as_int((body.get("status") or {}).get("latestVersion")) == version + 1:
            return version + 1
        latest = self._latest(obj, revisions)
        running = rc_template(latest) if latest is not None else None
        if running is None:
            running = (obj.get("spec") or {}).get("template")
        return version + 1 if dc_start.rolls_out(body, running=running, version=version) else None

    def slim_revision(self, rev: Obj, *, metadata: Obj) -> Obj:
        """An RC: its phase annotations and the DC it was made from (compacted)."""
        encoded = ((rev.get("metadata") or {}).get("annotations") or {}).get(ENCODED_DC_ANNOTATION)
        spec = pick(rev.get("spec"), ("replicas",))
        if encoded:
            metadata.setdefault("annotations", {})[ENCODED_DC_ANNOTATION] = compact_encoded_config(encoded)
        elif "template" in (rev.get("spec") or {}):
            spec["template"] = rev["spec"]["template"]  # no encoded config: the RC's own template is shown
        return {
            "metadata": metadata,
            "spec": spec,
            "status": pick(rev.get("status"), ("replicas", "readyReplicas")),
        }

    def is_complete_revision(self, rev: Obj) -> bool:
        return bool(rev.get("metadata", {}).get("annotations", {}).get(PHASE_ANNOTATION) == "Complete")

    def revision_state(self, rev: Obj) -> VerifiedState | None:
        state = super().revision_state(rev)
        config = encoded_config(rev)
        triggers = config.get("spec", {}).get("triggers") if isinstance(config, dict) else None
        if state is None or triggers is None:
            return state
        return VerifiedState(
            template=state.template,
            triggers=copy.deepcopy(triggers),
            revision=state.revision,
            images=state.images,
            paused=False,
        )

    def _latest(self, obj: Obj, revisions: list[Obj]) -> Obj | None:
        wanted = f"{obj['metadata']['name']}-{self.revision(obj)}"
        return next((r for r in revisions if r["metadata"]["name"] == wanted), None)

    def progress(self, obj: Obj, revisions: list[Obj], *, since: str = "") -> Progress:
        return dc_progress(obj, self._latest(obj, revisions))

    def explain(self, obj: Obj, revisions: list[Obj], pods: list[Obj], progress: Progress) -> Progress:
        """Adds what the latest RC's deployer and hook pods say: how it failed, that it cannot start, a
        hook running, or that its pods cannot be created (`dc_pods`)."""
        latest = self._latest(obj, revisions)
        if latest is None or progress.phase not in (RolloutPhase.FAILED, RolloutPhase.PROGRESSING):
            return progress
        notes = latest.get("metadata", {}).get("annotations") or {}
        rc_name = latest["metadata"]["name"]
        name = notes.get(DEPLOYER_POD_ANNOTATION) or f"{rc_name}-deploy"
        pod = next((p for p in pods if p.get("metadata", {}).get("name") == name), None)
        if pod is not None and not owned_by(pod, latest):
            pod = None
        if progress.phase is RolloutPhase.FAILED:
            message = progress.message
            trouble = deployer_pod_trouble(pod) if pod is not None else ""
            if trouble and trouble not in message:
                message = f"{message}; deployer pod {name}: {trouble}"
            for hook in dc_pods.failed_hooks(latest, pods):
                message = f"{message}; {hook}"
            return replace(progress, message=message)
        phase = notes.get(PHASE_ANNOTATION, "New")
        if pod is None:
            if phase == "New" and notes.get(CANCELLED_ANNOTATION) != "true":
                # the deployer controller retries a refused deployer pod until timeoutSeconds after the
                # RC's creation; only a FailedCreate Event on the DC says why
                return replace(
                    progress,
                    blocked=f'deployer pod "{name}" cannot be created, so replication controller '
                    f'"{rc_name}" stays New',
                    holding=_still_scaled(latest, revisions),
                    blocked_evidence=(self.kind, obj["metadata"]["name"]),
                    # the deployer controller tries to create it as soon as the RC is made
                    blocked_at=str(latest.get("metadata", {}).get("creationTimestamp") or ""),
                )
            return progress
        if phase in ("New", "Pending"):
            # a deployer pod that cannot start blocks the rollout for its activeDeadlineSeconds (6 h by
            # default): nothing the platform's timeoutSeconds would end
            stuck = dc_pods.deployer_cannot_start(pod)
            if stuck is not None:
                doom, final = stuck
                why = (
                    f'deployer pod "{name}" cannot start, so replication controller '
                    f'"{rc_name}" cannot roll out: {doom.describe()}'
                )
                if final:
                    return Progress(RolloutPhase.FAILED, why, progress.revision)
                since = (pod.get("status") or {}).get("startTime") or pod["metadata"].get("creationTimestamp")
                # a pull the kubelet retries: a verdict if it lasts
                return replace(progress, blocked=why, blocked_at=str(since or ""))
        hook_pod = dc_pods.running_hook(latest, pods)
        if hook_pod is not None:
            hook_name = hook_pod["metadata"]["name"]
            return replace(
                progress,
                message=f"{progress.message}; {dc_pods.hook_label(hook_pod)} hook pod {hook_name} "
                f"{dc_pods.hook_state(hook_pod)}",
                hook=hook_name,
            )
        refused = replica_failure(latest)
        if refused:
            return replace(
                progress,
                blocked=f'replication controller "{rc_name}" cannot create its pods: {refused}',
                holding=_still_scaled(latest, revisions),
                blocked_at=replica_failure_since(latest),
            )
        return progress

    def evidence_pending(self, obj: Obj, revisions: list[Obj], pods: list[Obj]) -> bool:
        # The deployer controller fails an RC only after its deployer pod failed, but the pod's watch
        # event may arrive after the RC's: until it does, the error could not say how it failed.
        latest = self._latest(obj, revisions)
        if latest is None:
            return False
        notes = latest.get("metadata", {}).get("annotations") or {}
        name = notes.get(DEPLOYER_POD_ANNOTATION) or f"{latest['metadata']['name']}-deploy"
        pod = next((p for p in pods if p.get("metadata", {}).get("name") == name), None)
        return pod is not None and (pod.get("status") or {}).get("phase") not in ("Failed", "Succeeded")

    def new_revision(self, obj: Obj, revisions: list[Obj]) -> Obj | None:
        latest = self._latest(obj, revisions)
        if latest is not None and same_template(rc_template(latest), obj.get("spec", {}).get("template")):
            return latest
        return None

    def deadline(self, obj: Obj) -> int:
        """The strategy's timeoutSeconds; a Custom strategy's is 600 s whatever params it carries
        (openshift-controller-manager deployer_controller.go getTimeoutSecondsForStrategy)."""
        strategy = obj.get("spec", {}).get("strategy", {}) or {}
        if strategy.get("type") == "Custom":
            return DEFAULT_DEADLINE
        params = (
            strategy.get("recreateParams" if strategy.get("type") == "Recreate" else "rollingParams") or {}
        )
        return int(params.get("timeoutSeconds") or DEFAULT_DEADLINE)

    def rollout_start(self, obj: Obj, revisions: list[Obj]) -> dt.datetime | None:
        """When the deployer pod of its newest RC started (else when that RC was created)."""
        latest = next(iter(revisions), None)
        meta = (latest or {}).get("metadata", {})
        notes = meta.get("annotations") or {}
        return parse_time(notes.get(DEPLOYER_STARTED_ANNOTATION)) or parse_time(meta.get("creationTimestamp"))

    def desired_running(self, obj: Obj) -> int:
        """A ``spec.test`` DC runs its pods only while a rollout runs and ends at 0 (openshift-controller-
        manager pkg/apps/deployer/deployer_controller.go handle and deploymentconfig_controller.go
        reconcileDeployments scale a test DC's RCs to 0): 0 pods is what it should run."""
        return 0 if (obj.get("spec") or {}).get("test") else super().desired_running(obj)

    def comparable_spec(self, obj: Obj) -> Obj:
        spec = super().comparable_spec(obj)
        for key in ("minReadySeconds", "selector"):
            if not spec.get(key):
                spec.pop(key, None)
        if spec.get("triggers") is not None:
            namespace = str(obj.get("metadata", {}).get("namespace", ""))
            spec["triggers"] = trig.dc_api_normal(spec["triggers"], namespace=namespace)
        return spec

    def start_request(self, obj: Obj, body: Obj, revisions: list[Obj]) -> str | None:
        """A rollout the DC's triggers would not start is asked for with latestVersion + 1 (dc_start)."""
        version = self.revision(obj)
        latest = self._latest(obj, revisions)
        running = rc_template(latest) if latest is not None else None
        if running is None:
            running = obj.get("spec", {}).get("template")
        if dc_start.starts_by_itself(body, running=running, version=version):
            return None
        return dc_start.start_note(version)

    def with_start_request(self, obj: Obj, body: Obj, revisions: list[Obj]) -> Obj:
        if self.start_request(obj, body, revisions) is None:
            return body
        asked = copy.deepcopy(body)
        asked.setdefault("status", {})["latestVersion"] = self.revision(obj) + 1
        return asked

    def with_images(self, obj: Obj, images: dict[str, str], *, trigger_tags: dict[str, str]) -> Obj:
        body = super().with_images(obj, images, trigger_tags=trigger_tags)
        trig.dc_pin(body["spec"].get("triggers") or [], images, trigger_tags=trigger_tags)
        return body

    def with_state(self, obj: Obj, state: VerifiedState) -> Obj:
        body = super().with_state(obj, state)
        if state.triggers is not None:
            body["spec"]["triggers"] = copy.deepcopy(state.triggers)
        return body

    def with_manual_triggers(self, obj: Obj, containers: set[str]) -> Obj:
        body = super().with_manual_triggers(obj, containers)
        trig.dc_set_manual(body.get("spec", {}).get("triggers") or [], containers)
        return body
