"""Pure rules that read what a real OpenShift writes (issue 13): failure texts, deployer pods,
normalised specs, Go timestamps and no-progress deadlines."""

from __future__ import annotations

import datetime as dt
import json

from rollguard.core.structs import DC, DEPLOYMENT, Progress, RolloutPhase, WorkloadRef
from rollguard.kinds import KINDS
from rollguard.kinds.base import parse_time
from rollguard.run.wait import Watched, judged
from tests.helpers.dc_objects import FAILED_CONDITION, dc, deployer_pod, rc


def test_a_failed_rc_reads_the_dc_condition_not_its_cause() -> None:
    """library-go appsutil/util.go: status-reason is the cause; const.go: the few failure texts."""
    kind = KINDS[DC]
    cause = kind.progress(
        dc(conditions=[FAILED_CONDITION]),
        [rc("Failed", **{"openshift.io/deployment.status-reason": "image change"})],
    )
    assert (cause.phase, cause.message) == (
        RolloutPhase.FAILED,
        'replication controller "api-2" has failed progressing',
    )
    refused = kind.progress(
        dc(), [rc("Failed", **{"openshift.io/deployment.status-reason": "unable to create deployer pod"})]
    )
    assert (
        refused.message
        == 'replication controller "api-2" has failed progressing: unable to create deployer pod'
    )


def test_explain_adds_the_deployer_pods_exit_and_names_one_that_cannot_start() -> None:
    kind = KINDS[DC]
    obj = dc(conditions=[FAILED_CONDITION])
    exited = deployer_pod(
        {"phase": "Failed", "containerStatuses": [{"name": "deployment", "state": {"terminated": {
            "exitCode": 1, "message": "--> Scaling api-2 to 1\nerror: timed out waiting for any update progress to be made",
        }}}]}
    )  # fmt: skip
    failed = kind.progress(obj, [rc("Failed")])
    explained = kind.explain(obj, [rc("Failed")], [exited], failed)
    assert explained.message == (
        'replication controller "api-2" has failed progressing; '
        "deployer pod api-2-deploy: error: timed out waiting for any update progress to be made"
    )
    pulling = deployer_pod(
        {"phase": "Pending", "containerStatuses": [{"name": "deployment", "restartCount": 0, "state": {
            "waiting": {"reason": "ImagePullBackOff", "message": 'Back-off pulling image "d"'}}}]}
    )  # fmt: skip
    pending = kind.progress(dc(), [rc("Pending")])
    stuck = kind.explain(dc(), [rc("Pending")], [pulling], pending)
    # a pull the kubelet retries is a verdict only if it lasts (rollguard.watch REFUSAL_GRACE)
    assert stuck.phase is RolloutPhase.PROGRESSING
    assert (
        stuck.blocked.startswith('deployer pod "api-2-deploy" cannot start')
        and "ImagePullBackOff" in stuck.blocked
    )
    invalid = deployer_pod(
        {"phase": "Pending", "containerStatuses": [{"name": "deployment", "restartCount": 0, "state": {
            "waiting": {"reason": "InvalidImageName", "message": "invalid reference format"}}}]}
    )  # fmt: skip
    never = kind.explain(dc(), [rc("Pending")], [invalid], pending)
    assert never.phase is RolloutPhase.FAILED and "InvalidImageName" in never.message
    # a pod that is not the RC's deployer (no ownerReference to it) is no evidence
    stranger = {**pulling, "metadata": {**pulling["metadata"], "ownerReferences": []}}
    assert kind.explain(dc(), [rc("Pending")], [stranger], pending) == pending


def test_comparable_spec_is_the_spec_as_the_api_stores_it() -> None:
    """openshift/api apps/v1/types.go omitempty; openshift-apiserver apps/v1/defaults.go."""
    kind = KINDS[DC]
    written = dc()
    written["spec"] |= {"paused": False, "triggers": [{"type": "ConfigChange"}, {"type": "ImageChange", "imageChangeParams": {
        "automatic": False, "containerNames": ["app"], "from": {"kind": "ImageStreamTag", "name": "api:v2"},
    }}]}  # fmt: skip
    stored = dc()
    stored["spec"]["triggers"] = [{"type": "ConfigChange"}, {"type": "ImageChange", "imageChangeParams": {
        "containerNames": ["app"], "from": {"kind": "ImageStreamTag", "name": "api:v2", "namespace": "shop"},
    }}]  # fmt: skip
    assert kind.comparable_spec(written) == kind.comparable_spec(stored)
    other = json.loads(json.dumps(stored))
    other["spec"]["triggers"][1]["imageChangeParams"]["automatic"] = True
    assert kind.comparable_spec(written) != kind.comparable_spec(other)
    assert KINDS[DEPLOYMENT].comparable_spec({"spec": {"paused": False, "replicas": 1}}) == {"replicas": 1}


def test_a_trigger_without_automatic_is_manual() -> None:
    (trigger,) = KINDS[DC].image_triggers(
        {"spec": {"triggers": [{"type": "ImageChange", "imageChangeParams": {"containerNames": ["app"],
                                "from": {"kind": "ImageStreamTag", "name": "api:latest"}}}]}}
    )  # fmt: skip
    assert trigger.automatic is False


def test_parse_time_reads_go_and_rfc3339() -> None:
    want = dt.datetime(2026, 12, 1, 18, 27, 34, tzinfo=dt.UTC)
    assert parse_time("2026-12-01T18:27:34Z") == want
    assert parse_time("2026-12-01 18:27:34 +0000 UTC") == want
    assert parse_time("2026-12-01 19:27:34.123456789 +0100 CET") == want
    assert parse_time("yesterday") is None and parse_time(None) is None


def test_own_deadline_counts_from_the_last_progress() -> None:
    """oc rolling_updater.go: a scale step restarts the deadline; only standing still fails."""
    item = Watched(
        ref=WorkloadRef(DEPLOYMENT, "web"), expected_images={"app": "x:v2"}, deadline=1000.0,
        deadline_reason="not complete within --timeout 1000s", stall_seconds=10.0,
        stall_reason="no progress within its own deadline of 5s", moved_at=100.0, last_progress="1 of 4 new replicas updated",
    )  # fmt: skip
    web = {
        "metadata": {
            "name": "web",
            "generation": 2,
            "annotations": {"deployment.kubernetes.io/revision": "2"},
        },
        "spec": {"replicas": 4, "template": {"spec": {"containers": [{"name": "app", "image": "x:v2"}]}}},
        "status": {"observedGeneration": 2, "updatedReplicas": 1, "replicas": 4, "availableReplicas": 3},
    }

    def at(now: float) -> Progress:
        return judged(item, web, [], [], now=now, fail_fast=False, crash_restarts=0)[0]

    assert at(109.0).phase is RolloutPhase.PROGRESSING
    assert (
        at(111.0).phase is RolloutPhase.FAILED and "no progress within its own deadline" in at(111.0).message
    )
    moved = json.loads(json.dumps(web))
    moved["status"]["updatedReplicas"] = 2
    assert (
        judged(item, moved, [], [], now=111.0, fail_fast=False, crash_restarts=0)[0].phase
        is RolloutPhase.PROGRESSING
    )
