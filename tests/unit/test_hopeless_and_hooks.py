"""Pure rules of issue 24 points 2 and 5: hook pods as evidence, pods the API refuses, lasting conditions."""

from __future__ import annotations

import datetime as dt
import json

from rollguard.core.readiness import REFUSAL_GRACE
from rollguard.core.structs import DC, DEPLOYMENT, Progress, RolloutPhase, WorkloadRef
from rollguard.kinds import KINDS
from rollguard.run.refusals import add_evidence, newest_refusal
from rollguard.run.wait import Watched, held
from rollguard.state.assessment import assess
from tests.helpers.dc_objects import FAILED_CONDITION, dc, deployer_pod, rc

QUOTA = 'pods "api-2-x" is forbidden: exceeded quota: pods, requested: pods=1, used: pods=2, limited: pods=2'


def hook_pod(kind: str, status: dict) -> dict:
    return {
        "metadata": {
            "name": f"api-2-hook-{kind}",
            "labels": {
                "openshift.io/deployer-pod-for.name": "api-2",
                "openshift.io/deployer-pod.type": f"hook-{kind}",
            },
            "ownerReferences": [{"uid": "rc2", "kind": "ReplicationController", "name": "api-2"}],
        },
        "status": status,
    }


RUNNING_DEPLOYER = deployer_pod({"phase": "Running"})


def test_a_running_hook_is_shown_and_holds_the_clock() -> None:
    kind = KINDS[DC]
    running = kind.progress(dc(), [rc("Running")])
    hooked = kind.explain(
        dc(), [rc("Running")], [RUNNING_DEPLOYER, hook_pod("pre", {"phase": "Running"})], running
    )
    assert hooked.phase is RolloutPhase.PROGRESSING and hooked.hook == "api-2-hook-pre"
    assert hooked.message.endswith("; pre hook pod api-2-hook-pre running"), hooked.message
    done = hook_pod("pre", {"phase": "Succeeded"})
    assert kind.explain(dc(), [rc("Running")], [RUNNING_DEPLOYER, done], running) == running
    item = Watched(WorkloadRef(DC, "api"), {}, deadline=1000.0, deadline_reason="", moved_at=1.0)
    held(item, hooked, now=50.0)
    assert item.moved_at == 50.0  # the no-progress clock restarts while a hook runs


def test_a_failed_hook_is_named_with_its_pod() -> None:
    kind = KINDS[DC]
    failed = kind.progress(dc(conditions=[FAILED_CONDITION]), [rc("Failed")])
    exited = deployer_pod(
        {"phase": "Failed", "containerStatuses": [{"name": "deployment", "state": {"terminated": {
            "exitCode": 1, "message": "error: pre hook failed: the pre hook failed: , aborting rollout of shop/api-2"}}}]}
    )  # fmt: skip
    hook = hook_pod(
        "pre",
        {
            "phase": "Failed",
            "containerStatuses": [{"name": "lifecycle", "state": {"terminated": {"exitCode": 1}}}],
        },
    )
    explained = kind.explain(dc(conditions=[FAILED_CONDITION]), [rc("Failed")], [exited, hook], failed)
    assert explained.message == (
        'replication controller "api-2" has failed progressing; deployer pod api-2-deploy: error: pre hook '
        "failed: the pre hook failed: , aborting rollout of shop/api-2; pre hook pod api-2-hook-pre: exit code 1"
    )


def test_pods_the_api_refuses_block_a_dc_and_a_deployment() -> None:
    refused = {"type": "ReplicaFailure", "status": "True", "reason": "FailedCreate", "message": QUOTA}
    latest = {**rc("Running"), "status": {"conditions": [refused]}}
    kind = KINDS[DC]
    running = kind.progress(dc(), [latest])
    assert kind.explain(dc(), [latest], [RUNNING_DEPLOYER], running).blocked == (
        f'replication controller "api-2" cannot create its pods: {QUOTA}'
    )
    new = kind.progress(dc(), [rc("New")])
    no_deployer = kind.explain(dc(), [rc("New")], [], new)
    assert no_deployer.blocked.startswith('deployer pod "api-2-deploy" cannot be created')
    assert no_deployer.blocked_evidence == (DC, "api")
    deploy = {
        "metadata": {"name": "web", "generation": 2, "annotations": {}},
        "spec": {"replicas": 1, "template": {}},
        "status": {"observedGeneration": 2, "conditions": [refused]},
    }
    dkind = KINDS[DEPLOYMENT]
    progress = dkind.explain(deploy, [], [], dkind.progress(deploy, []))
    assert progress.blocked == f"its pods cannot be created: {QUOTA}"


def test_a_lasting_block_fails_and_a_passing_one_does_not() -> None:
    item = Watched(WorkloadRef(DC, "api"), {}, deadline=1000.0, deadline_reason="")
    message = "api-2 running: 0 of 2 new replicas ready"
    item.last_progress = message  # as the wait loop records it
    blocked = Progress(RolloutPhase.PROGRESSING, message, blocked="pods refused")
    assert held(item, blocked, now=10.0) is blocked and item.next_deadline() == 10.0 + REFUSAL_GRACE
    held(item, Progress(RolloutPhase.PROGRESSING, message), now=20.0)  # the refusal cleared: its clock stops
    assert held(item, blocked, now=10.0 + REFUSAL_GRACE).phase is RolloutPhase.PROGRESSING  # and restarts
    moved = Progress(
        RolloutPhase.PROGRESSING, "api-2 running: 1 of 2 new replicas ready", blocked="pods refused"
    )
    held(item, moved, now=20.0 + REFUSAL_GRACE)  # refused still, but the rollout moved: not standing still
    item.last_progress = moved.message
    assert held(item, moved, now=19.0 + 2 * REFUSAL_GRACE).phase is RolloutPhase.PROGRESSING
    verdict = held(item, moved, now=20.0 + 2 * REFUSAL_GRACE)
    assert verdict.phase is RolloutPhase.FAILED
    assert verdict.message == f"dc/api: pods refused (for {REFUSAL_GRACE:.0f}s)"


def test_the_newest_failed_create_event_of_the_object_names_the_refusal() -> None:
    def event(name: str, at: str, message: str, reason: str = "FailedCreate") -> dict:
        return {
            "involvedObject": {"kind": DC, "name": name},
            "reason": reason,
            "lastTimestamp": at,
            "message": message,
        }

    events = [
        event("api", "2026-01-01T00:00:01Z", "old"),
        event("api", "2026-01-01T00:00:03Z", "Error creating deployer pod: quota"),
        event("other", "2026-01-01T00:00:09Z", "not ours"),
        event("api", "2026-01-01T00:00:09Z", "started", reason="DeploymentCreated"),
    ]
    assert newest_refusal(events, kind=DC, name="api") == "Error creating deployer pod: quota"
    assert newest_refusal(events, kind=DC, name="none") == ""


def test_status_of_a_running_hook_is_progressing_past_the_deadline() -> None:
    """A hook has no deadline but its pod's: `status` says progressing, naming it, not `stuck`."""
    started = {"openshift.io/deployer-pod.started-at": "2026-01-01T00:00:00Z"}
    now = dt.datetime(2026, 1, 1, 1, 0, tzinfo=dt.UTC)  # an hour later: far past timeoutSeconds (600)
    pods = [RUNNING_DEPLOYER, hook_pod("mid", {"phase": "Running"})]
    state = assess(DC, dc(), [rc("Running", **started)], pods=pods, now=now)
    assert "progressing" in [f.name for f in state.findings] and "stuck" not in [
        f.name for f in state.findings
    ]
    assert state.message.endswith("; mid hook pod api-2-hook-mid running")
    stuck = assess(DC, dc(), [rc("Running", **started)], pods=[RUNNING_DEPLOYER], now=now)
    assert "stuck" in [f.name for f in stuck.findings], stuck.findings


def test_a_custom_strategy_has_the_default_deadline() -> None:
    """getTimeoutSecondsForStrategy: Custom is DefaultRecreateTimeoutSeconds, its params notwithstanding."""
    custom = dc()
    custom["spec"]["strategy"] = {
        "type": "Custom",
        "customParams": {},
        "rollingParams": {"timeoutSeconds": 5},
    }
    assert KINDS[DC].deadline(custom) == 600


def test_status_calls_a_lasting_refusal_stuck_naming_it_and_a_young_one_progressing() -> None:
    """The state model judges as a run judges (REFUSAL_GRACE without progress): a rollout whose pods the
    API has refused since the condition's lastTransitionTime is `stuck` with the refusal as its reason,
    never `progressing` until the platform's 600 s deadline (or, for a DC's refused deployer pod, since
    its RC was made, naming where the refusal is recorded)."""
    since = "2026-01-01T00:00:00Z"
    refused = {"type": "ReplicaFailure", "status": "True", "reason": "FailedCreate", "message": QUOTA,
               "lastTransitionTime": since}  # fmt: skip
    started = {"openshift.io/deployer-pod.started-at": since}
    latest = {**rc("Running", **started), "status": {"conditions": [refused]}}
    young = dt.datetime(2026, 1, 1, 0, 0, 30, tzinfo=dt.UTC)
    old = young + dt.timedelta(seconds=REFUSAL_GRACE)

    def found(obj: dict, revisions: list[dict], pods: list[dict], now: dt.datetime, kind: str = DC) -> dict:
        return {f.name: f.reason for f in assess(kind, obj, revisions, pods=pods, now=now).findings}

    api = dc(availableReplicas=1)  # the old pod still serves
    assert set(found(api, [latest], [RUNNING_DEPLOYER], young)) == {"progressing"}
    late = found(api, [latest], [RUNNING_DEPLOYER], old)
    assert set(late) == {"stuck"}, late
    assert late["stuck"] == (
        f'replication controller "api-2" cannot create its pods: {QUOTA}, for 75s: it rolls out only once '
        "that is cleared (a rollout run fails it after 45s)"
    )
    new = {**rc("New"), "metadata": {**rc("New")["metadata"], "creationTimestamp": since}}
    del new["metadata"]["annotations"]["openshift.io/deployer-pod.name"]
    no_deployer = found(api, [new], [], old)
    assert set(no_deployer) == {"stuck"}, no_deployer
    assert no_deployer["stuck"].startswith(
        'deployer pod "api-2-deploy" cannot be created, so replication controller "api-2" stays New (its '
        "Events say why: oc describe deploymentconfig/api), for 75s"
    ), no_deployer
    deploy = {
        "metadata": {"name": "web", "generation": 2, "annotations": {}},
        "spec": {"replicas": 1, "template": {}},
        "status": {"observedGeneration": 2, "conditions": [refused]},
    }
    web = found(deploy, [], [], old, kind=DEPLOYMENT)
    assert set(web) == {"stuck", "unavailable"} and web["stuck"].startswith(
        f"its pods cannot be created: {QUOTA}, for 75s"
    ), web


def test_a_failed_rc_still_scaled_up_is_named_beside_the_refusal() -> None:
    """A revert's RC whose deployer pod the quota refuses, while the cancelled RC it replaces still runs its
    pod (nobody scales it down before a newer deployer pod starts or the latest RC ends: oc
    pkg/cli/deployer/deployer.go, openshift-controller-manager deploymentconfig_controller.go
    reconcileDeployments): the refusal says what holds the quota, in the run's error and in `status`."""
    since = "2026-01-01T00:00:00Z"
    cancelled = rc("Failed")
    cancelled["spec"] = {"replicas": 1}
    new = json.loads(json.dumps(rc("New")).replace("api-2", "api-3").replace('"rc2"', '"rc3"'))
    new["metadata"]["creationTimestamp"] = since
    new["metadata"]["annotations"]["openshift.io/deployment-config.latest-version"] = "3"
    del new["metadata"]["annotations"]["openshift.io/deployer-pod.name"]
    api = dc(availableReplicas=1, latestVersion=3)
    kind = KINDS[DC]
    explained = kind.explain(api, [new, cancelled], [], kind.progress(api, [new, cancelled]))
    held_by = 'replication controller "api-2" (failed) is still scaled to 1: its pods hold their share'
    assert explained.holding.startswith(held_by), explained
    item = Watched(WorkloadRef(DC, "api"), {}, deadline=1000.0, deadline_reason="")
    item.last_progress = explained.message  # as the wait records it: no progress since
    held(item, explained, now=1.0)
    verdict = held(item, explained, now=1.0 + REFUSAL_GRACE)
    assert verdict.phase is RolloutPhase.FAILED and held_by not in verdict.message  # after the Event's text
    events = [{"involvedObject": {"kind": DC, "name": "api"}, "reason": "FailedCreate", "message": QUOTA}]
    item.verdict = verdict

    class Events:
        def list(self, *_args: object, **_kw: object) -> dict:
            return {"items": events}

    add_evidence(Events(), "shop", [item])  # type: ignore[arg-type]
    assert item.verdict.message.endswith(
        f"(for 45s): {QUOTA}; {held_by} of the quota until this rollout ends"
    )
    now = dt.datetime(2026, 1, 1, 0, 1, tzinfo=dt.UTC)
    state = assess(DC, api, [new, cancelled], now=now)
    stuck = next(f.reason for f in state.findings if f.name == "stuck")
    assert stuck.endswith(f"; {held_by} of the quota until this rollout ends"), stuck
