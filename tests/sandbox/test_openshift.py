"""The OpenShift emulation against the live sandbox: DCs, their RCs and ImageStreams as OpenShift has them.

Every wait is a watch on the object until a condition holds (no sleeps); expected values are the ones
OpenShift's DC controller, deployer and image API produce (reference section 2).
"""

from __future__ import annotations

import copy
import itertools
import json
import secrets
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from sandbox.cluster import Sandbox
from sandbox.openshift.kube import JSON, MERGE_PATCH, ApiError, Kube
from tests.helpers.openshift_api import (
    APP,
    DCS,
    ISS,
    PHASE,
    RCS,
    create_dc,
    dc_body,
    has_items,
    image_stream,
    patch,
    phase_is,
    put_again_on_conflict,
    rc_replicas,
    rolled_out,
    set_image,
    settled,
    status_tag,
    wait_for,
    wait_gone,
    wait_rc,
)

pytestmark = pytest.mark.cluster


# -- helpers ----------------------------------------------------------------------------------------------


def condition(dc: JSON, type_: str) -> JSON:
    return next(c for c in dc["status"].get("conditions", []) if c["type"] == type_)


@pytest.fixture
def other_namespace(kube: Kube) -> Iterator[str]:
    name = f"source-{secrets.token_hex(3)}"
    kube.request("POST", "/api/v1/namespaces", {"metadata": {"name": name}})
    yield name
    kube.request("DELETE", f"/api/v1/namespaces/{name}")


# -- DeploymentConfigs ------------------------------------------------------------------------------------


def test_dc_rolls_out_like_openshift(kube: Kube, namespace: str) -> None:
    created = create_dc(kube, namespace, dc_body("web", f"{APP}:v1"))
    # API-server defaults are in the answer to the create itself
    spec = created["spec"]
    assert spec["triggers"] == [{"type": "ConfigChange"}]
    assert spec["revisionHistoryLimit"] == 10
    assert spec["strategy"]["type"] == "Rolling"
    assert spec["strategy"]["rollingParams"] == {
        "updatePeriodSeconds": 1,
        "intervalSeconds": 1,
        "timeoutSeconds": 600,
        "maxSurge": "25%",
        "maxUnavailable": "25%",
    }
    assert created["metadata"]["generation"] == 1

    rc = wait_rc(kube, namespace, "web-1", "Complete")
    ann = rc["metadata"]["annotations"]
    assert ann["openshift.io/deployment-config.latest-version"] == "1"
    assert ann["openshift.io/deployment-config.name"] == "web"
    assert ann["openshift.io/deployer-pod.name"] == "web-1-deploy"
    assert ann["openshift.io/deployment.replicas"] == "1"
    encoded = json.loads(ann["openshift.io/encoded-deployment-config"])
    assert encoded["kind"] == "DeploymentConfig" and encoded["status"]["latestVersion"] == 1
    assert encoded["spec"]["template"] == created["spec"]["template"]
    assert rc["metadata"]["labels"] == {"app": "shop", "openshift.io/deployment-config.name": "web"}
    owner = rc["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["name"], owner["uid"], owner["controller"]) == (
        "DeploymentConfig",
        "web",
        created["metadata"]["uid"],
        True,
    )
    assert rc["spec"]["selector"] == {"name": "web", "deployment": "web-1", "deploymentconfig": "web"}
    pod_meta = rc["spec"]["template"]["metadata"]
    assert pod_meta["labels"] == {
        "name": "web",
        "deployment": "web-1",
        "deploymentconfig": "web",
        "deployment-config.name": "web",
    }
    assert pod_meta["annotations"] == {
        "openshift.io/deployment.name": "web-1",
        "openshift.io/deployment-config.name": "web",
        "openshift.io/deployment-config.latest-version": "1",
    }

    # pods are ready before the deployer pod exits and the RC is Complete: wait for the DC to say so
    dc = wait_for(kube, DCS.format(ns=namespace), "web", rolled_out("web-1"))
    status = dc["status"]
    assert {k: v for k, v in status.items() if k != "conditions"} == {
        "latestVersion": 1,
        "observedGeneration": 1,
        "replicas": 1,
        "updatedReplicas": 1,
        "availableReplicas": 1,
        "unavailableReplicas": 0,
        "readyReplicas": 1,
        "details": {"message": "config change", "causes": [{"type": "ConfigChange"}]},
    }
    conds = {c["type"]: c for c in status["conditions"]}
    assert (conds["Available"]["status"], conds["Available"]["message"]) == (
        "True",
        "Deployment config has minimum availability.",
    )
    assert "reason" not in conds["Available"]
    progressing = conds["Progressing"]
    assert (progressing["status"], progressing["reason"], progressing["message"]) == (
        "True",
        "NewReplicationControllerAvailable",
        'replication controller "web-1" successfully rolled out',
    )
    assert progressing["lastUpdateTime"] and progressing["lastTransitionTime"]

    pods = kube.get(
        f"/api/v1/namespaces/{namespace}/pods", labelSelector="deployment=web-1,deploymentconfig=web"
    )
    assert len(pods["items"]) == 1
    events = kube.get(f"/api/v1/namespaces/{namespace}/events", fieldSelector="involvedObject.name=web")
    assert 'Created new replication controller "web-1" for version 1' in {
        e["message"] for e in events["items"]
    }


def test_template_change_rolls_out_next_version(kube: Kube, namespace: str) -> None:
    create_dc(kube, namespace, dc_body("web", f"{APP}:v1", replicas=2))
    wait_rc(kube, namespace, "web-1", "Complete")
    set_image(kube, namespace, "web", f"{APP}:v2")
    rc2 = wait_rc(kube, namespace, "web-2", "Complete")
    assert rc2["spec"]["template"]["spec"]["containers"][0]["image"] == f"{APP}:v2"
    assert rc_replicas(kube, namespace) == {"web-1": 0, "web-2": 2}
    dc = wait_for(
        kube,
        DCS.format(ns=namespace),
        "web",
        # the DC controller may write the scaled counts before it sees the RC Complete, as on OpenShift
        lambda d: (
            d["status"].get("updatedReplicas") == 2
            and d["status"]["replicas"] == 2
            and any(
                c["type"] == "Progressing" and c.get("reason") == "NewReplicationControllerAvailable"
                for c in d["status"].get("conditions", [])
            )
        ),
    )
    assert dc["status"]["latestVersion"] == 2 and settled(dc)
    assert condition(dc, "Progressing")["message"] == 'replication controller "web-2" successfully rolled out'


def test_scale_follows_the_active_rc(kube: Kube, namespace: str) -> None:
    create_dc(kube, namespace, dc_body("web", f"{APP}:v1"))
    wait_rc(kube, namespace, "web-1", "Complete")
    kube.request(
        "PATCH", f"{DCS.format(ns=namespace)}/web/scale", {"spec": {"replicas": 3}}, content_type=MERGE_PATCH
    )
    wait_for(kube, RCS.format(ns=namespace), "web-1", lambda rc: rc["spec"]["replicas"] == 3)
    dc = wait_for(kube, DCS.format(ns=namespace), "web", lambda d: d["status"].get("availableReplicas") == 3)
    assert dc["status"]["latestVersion"] == 1  # a scale is no new rollout


def test_paused_dc_makes_no_rc_and_rolls_out_on_resume(kube: Kube, namespace: str) -> None:
    """Mirrors openshift-controller-manager pkg/apps/deploymentconfig/deploymentconfig_controller.go:
    a paused DC gets no new RC, and its conditions still follow the latest RC (updateConditions never
    sets the DeploymentConfigPaused reason that openshift/api declares)."""
    create_dc(kube, namespace, dc_body("web", f"{APP}:v1"))
    wait_rc(kube, namespace, "web-1", "Complete")
    patch(kube, f"{DCS.format(ns=namespace)}/web", {"spec": {"paused": True}})
    set_image(kube, namespace, "web", f"{APP}:v2")
    changed = patch(
        kube,
        f"{DCS.format(ns=namespace)}/web",
        {"spec": {"template": {"metadata": {"labels": {"name": "web", "tier": "api"}}}}},
    )
    dc = wait_for(
        kube,
        DCS.format(ns=namespace),
        "web",
        lambda d: d["status"].get("observedGeneration") == changed["metadata"]["generation"],
    )
    assert dc["status"]["latestVersion"] == 1
    progressing = condition(dc, "Progressing")
    assert (progressing["status"], progressing["reason"], progressing["message"]) == (
        "True",
        "NewReplicationControllerAvailable",
        'replication controller "web-1" successfully rolled out',
    )
    assert set(rc_replicas(kube, namespace)) == {"web-1"}

    patch(kube, f"{DCS.format(ns=namespace)}/web", {"spec": {"paused": False}})
    rc2 = wait_rc(kube, namespace, "web-2", "Complete")
    template = rc2["spec"]["template"]
    assert template["spec"]["containers"][0]["image"] == f"{APP}:v2"  # both piled-up changes, one rollout
    assert template["metadata"]["labels"]["tier"] == "api"
    assert set(rc_replicas(kube, namespace)) == {"web-1", "web-2"}
    dc = wait_for(
        kube,
        DCS.format(ns=namespace),
        "web",
        lambda d: condition(d, "Progressing").get("reason") == "NewReplicationControllerAvailable",
    )
    assert dc["status"]["latestVersion"] == 2


def test_crash_fails_and_rolls_back(kube: Kube, namespace: str) -> None:
    """Mirrors openshift-controller-manager pkg/apps/deployer/deployer_controller.go (a failed deployer
    pod fails the RC, writing only the phase and completed-at), library-go pkg/apps/appsutil/util.go
    MakeDeployment (status-reason = the rollout's cause, set once at creation) and oc
    pkg/cli/deployer/strategy/rolling/rolling_updater.go (the error the deployer pod exits with)."""
    create_dc(kube, namespace, dc_body("web", f"{APP}:v1", strategy={"rollingParams": {"timeoutSeconds": 5}}))
    wait_rc(kube, namespace, "web-1", "Complete")
    set_image(kube, namespace, "web", f"{APP}:v2-crash")
    rc2 = wait_rc(kube, namespace, "web-2", "Failed", timeout=30)
    ann = rc2["metadata"]["annotations"]
    assert ann["openshift.io/deployment.status-reason"] == "config change"  # the cause, never the failure
    assert ann["openshift.io/deployer-pod.completed-at"].endswith(" +0000 UTC")  # Go's time.String()
    deployer = kube.get(f"/api/v1/namespaces/{namespace}/pods/web-2-deploy")
    assert deployer["status"]["phase"] == "Failed"  # kept after the rollout, for `oc logs`
    (terminated,) = [c["state"]["terminated"] for c in deployer["status"]["containerStatuses"]]
    assert (terminated["exitCode"], terminated["message"]) == (
        1,
        "error: timed out waiting for any update progress to be made",
    )
    wait_for(kube, RCS.format(ns=namespace), "web-2", lambda rc: rc["spec"]["replicas"] == 0)
    rc1 = wait_for(kube, RCS.format(ns=namespace), "web-1", lambda rc: rc["status"].get("readyReplicas") == 1)
    assert rc1["spec"]["replicas"] == 1
    dc = wait_for(
        kube, DCS.format(ns=namespace), "web", lambda d: condition(d, "Progressing").get("status") == "False"
    )
    progressing = condition(dc, "Progressing")
    assert (progressing["reason"], progressing["message"]) == (
        "ProgressDeadlineExceeded",
        'replication controller "web-2" has failed progressing',
    )
    assert dc["status"]["latestVersion"] == 2
    assert condition(dc, "Available")["status"] == "True"  # the old version still serves


PODS = "/api/v1/namespaces/{ns}/pods"


def test_deployer_pod_runs_each_rollout_and_is_kept(kube: Kube, namespace: str) -> None:
    """Mirrors openshift-controller-manager pkg/apps/deployer/deployer_controller.go (makeDeployerPod,
    handle, nextStatus): a new RC gets the pod `<rc>-deploy`, goes New -> Pending -> Running as the pod
    is created and runs, Complete when it succeeds; the pod is kept after the rollout."""
    created = create_dc(kube, namespace, dc_body("web", f"{APP}:v1"))
    phases: list[str] = []

    def record(rc: JSON) -> bool:
        phase = rc["metadata"].get("annotations", {}).get(PHASE, "")
        if rc["metadata"]["name"] == "web-1" and (not phases or phases[-1] != phase):
            phases.append(phase)
        return phase == "Complete"

    wait_for(kube, RCS.format(ns=namespace), "web-1", record)
    assert (
        phases[-1] == "Complete"
        and "Running" in phases
        and set(phases) <= {"New", "Pending", "Running", "Complete"}
    )
    rc = wait_rc(kube, namespace, "web-1", "Complete")
    ann = rc["metadata"]["annotations"]
    assert ann["openshift.io/deployer-pod.name"] == "web-1-deploy"
    for key in ("created-at", "started-at", "completed-at"):
        assert ann[f"openshift.io/deployer-pod.{key}"].endswith(" +0000 UTC"), key

    pod = wait_for(
        kube, PODS.format(ns=namespace), "web-1-deploy", lambda p: p["status"].get("phase") == "Succeeded"
    )
    meta, spec = pod["metadata"], pod["spec"]
    assert meta["labels"] == {"openshift.io/deployer-pod-for.name": "web-1"}
    assert meta["annotations"]["openshift.io/deployment.name"] == "web-1"
    assert meta["annotations"]["openshift.io/deployment-config.name"] == "web"
    (owner,) = meta["ownerReferences"]
    assert (owner["kind"], owner["name"], owner["uid"]) == (
        "ReplicationController",
        "web-1",
        rc["metadata"]["uid"],
    )
    assert not owner.get("controller")  # owned, not controlled: the RC's pods are only its template's
    assert (spec["restartPolicy"], spec["activeDeadlineSeconds"], spec["serviceAccountName"]) == (
        "Never",
        21600,
        "deployer",
    )
    assert [c["name"] for c in spec["containers"]] == ["deployment"]
    # the RC's own pods are the template's, selected by label: the deployer pod is not among them
    app_pods = kube.get(PODS.format(ns=namespace), labelSelector="deployment=web-1")["items"]
    assert [p["metadata"]["name"] for p in app_pods] != [] and all(
        not p["metadata"]["name"].endswith("-deploy") for p in app_pods
    )
    assert created["metadata"]["uid"] == rc["metadata"]["ownerReferences"][0]["uid"]


def test_deployer_pod_that_cannot_be_created_fails_the_rollout_after_timeout(
    kube: Kube, namespace: str
) -> None:
    """Mirrors openshift-controller-manager pkg/apps/deployer/deployer_controller.go: a refused deployer
    pod (here: the namespace's pod quota) leaves the RC New with a FailedCreate event; past the strategy's
    timeoutSeconds since the RC's creation it is Failed with status-reason "unable to create deployer pod"."""
    create_dc(kube, namespace, dc_body("web", f"{APP}:v1", strategy={"rollingParams": {"timeoutSeconds": 4}}))
    wait_rc(kube, namespace, "web-1", "Complete")
    wait_for(
        kube, PODS.format(ns=namespace), "web-1-deploy", lambda p: p["status"].get("phase") == "Succeeded"
    )
    kube.request(
        "POST",
        f"/api/v1/namespaces/{namespace}/resourcequotas",
        {"metadata": {"name": "pods"}, "spec": {"hard": {"pods": "1"}}},
    )
    wait_for(
        kube,
        f"/api/v1/namespaces/{namespace}/resourcequotas",
        "pods",
        lambda q: q.get("status", {}).get("used", {}).get("pods") == "1",
    )
    set_image(kube, namespace, "web", f"{APP}:v2")
    rc2 = wait_rc(kube, namespace, "web-2", "New")
    rc2 = wait_rc(kube, namespace, "web-2", "Failed", timeout=30)
    assert (
        rc2["metadata"]["annotations"]["openshift.io/deployment.status-reason"]
        == "unable to create deployer pod"
    )
    events = kube.get(f"/api/v1/namespaces/{namespace}/events", fieldSelector="involvedObject.name=web")
    messages = [e["message"] for e in events["items"]]
    assert any(m.startswith("Error creating deployer pod: ") and "exceeded quota" in m for m in messages), (
        messages
    )
    assert any("failed to create deployer pod (timeoutSeconds: 4s)" in m for m in messages), messages
    dc = wait_for(
        kube, DCS.format(ns=namespace), "web", lambda d: condition(d, "Progressing").get("status") == "False"
    )
    assert condition(dc, "Progressing")["message"] == 'replication controller "web-2" has failed progressing'


def test_cancellation_rolls_back(kube: Kube, namespace: str) -> None:
    create_dc(kube, namespace, dc_body("web", f"{APP}:v1"))
    wait_rc(kube, namespace, "web-1", "Complete")
    set_image(kube, namespace, "web", f"{APP}:v2-slow60")
    wait_rc(kube, namespace, "web-2", "Running")
    patch(
        kube,
        f"{RCS.format(ns=namespace)}/web-2",
        {
            "metadata": {
                "annotations": {
                    "openshift.io/deployment.cancelled": "true",
                    "openshift.io/deployment.status-reason": "cancelled by the user",
                }
            }
        },
    )
    rc2 = wait_rc(kube, namespace, "web-2", "Failed")
    assert rc2["metadata"]["annotations"]["openshift.io/deployment.status-reason"] == "cancelled by the user"
    dc = wait_for(
        kube,
        DCS.format(ns=namespace),
        "web",
        lambda d: condition(d, "Progressing").get("reason") == "RolloutCancelled",
    )
    assert (
        condition(dc, "Progressing")["message"] == 'rollout of replication controller "web-2" was cancelled'
    )
    assert condition(dc, "Progressing")["status"] == "False"
    wait_for(kube, RCS.format(ns=namespace), "web-2", lambda rc: rc["spec"]["replicas"] == 0)
    assert rc_replicas(kube, namespace)["web-1"] == 1


def test_newer_version_cancels_running_rollout(kube: Kube, namespace: str) -> None:
    create_dc(kube, namespace, dc_body("web", f"{APP}:v1"))
    wait_rc(kube, namespace, "web-1", "Complete")
    set_image(kube, namespace, "web", f"{APP}:v2-slow60")
    wait_rc(kube, namespace, "web-2", "Running")
    set_image(kube, namespace, "web", f"{APP}:v3")
    wait_rc(kube, namespace, "web-3", "Complete")
    rc2 = kube.get(f"{RCS.format(ns=namespace)}/web-2")
    ann = rc2["metadata"]["annotations"]
    assert (ann[PHASE], ann["openshift.io/deployment.cancelled"]) == ("Failed", "true")
    assert "newer deployment was found running" in ann["openshift.io/deployment.status-reason"]
    assert rc_replicas(kube, namespace) == {"web-1": 0, "web-2": 0, "web-3": 1}


def test_no_config_change_trigger_no_rollout_on_template_change(kube: Kube, namespace: str) -> None:
    created = create_dc(kube, namespace, dc_body("web", f"{APP}:v1", triggers=[]))
    dc = wait_for(kube, DCS.format(ns=namespace), "web", settled)
    assert created["spec"]["triggers"] == [] and dc["status"]["latestVersion"] == 0
    changed = set_image(kube, namespace, "web", f"{APP}:v2")
    dc = wait_for(
        kube,
        DCS.format(ns=namespace),
        "web",
        lambda d: d["status"].get("observedGeneration") == changed["metadata"]["generation"],
    )
    assert dc["status"]["latestVersion"] == 0 and rc_replicas(kube, namespace) == {}
    # a client-side "rollout latest" that works without the instantiate subresource: bump latestVersion
    kube.request(
        "PUT",
        f"{DCS.format(ns=namespace)}/web/status",
        {**dc, "status": {**dc["status"], "latestVersion": 1}},
    )
    rc = wait_rc(kube, namespace, "web-1", "Complete")
    assert rc["spec"]["template"]["spec"]["containers"][0]["image"] == f"{APP}:v2"


def test_revision_history_limit_prunes_scaled_down_rcs(kube: Kube, namespace: str) -> None:
    create_dc(kube, namespace, dc_body("web", f"{APP}:v1", revisionHistoryLimit=1))
    wait_rc(kube, namespace, "web-1", "Complete")
    for v in (2, 3):
        set_image(kube, namespace, "web", f"{APP}:v{v}")
        wait_rc(kube, namespace, f"web-{v}", "Complete")
    wait_for(
        kube, DCS.format(ns=namespace), "web", lambda d: d["status"].get("latestVersion") == 3 and settled(d)
    )
    wait_gone(kube, RCS.format(ns=namespace), "web-1")
    assert rc_replicas(kube, namespace) == {"web-2": 0, "web-3": 1}


# -- ImageStreams and image triggers ----------------------------------------------------------------------


def trigger_dc(name: str, tag: str) -> JSON:
    return dc_body(
        name,
        " ",
        triggers=[
            {"type": "ConfigChange"},
            {
                "type": "ImageChange",
                "imageChangeParams": {
                    "automatic": True,
                    "containerNames": ["app"],
                    "from": {"kind": "ImageStreamTag", "name": tag},
                },
            },
        ],
    )


def test_image_trigger_fires_on_tag_move(kube: Kube, sandbox: Sandbox, namespace: str) -> None:
    iss = ISS.format(ns=namespace)
    kube.request("POST", iss, image_stream("app", {"v1": {"kind": "DockerImage", "name": f"{APP}:v1"}}))
    stream = wait_for(kube, iss, "app", has_items("v1"))
    v1 = sandbox.pin(f"{APP}:v1")
    item = status_tag(stream, "v1")["items"][0]
    assert (item["dockerImageReference"], item["image"]) == (v1, v1.split("@")[1])
    assert stream["status"]["dockerImageRepository"] == (
        f"image-registry.openshift-image-registry.svc:5000/{namespace}/app"
    )
    # `oc tag app:v1 app:latest` writes the image the source tag points at now
    digest1 = v1.split("@")[1]
    kube.request(
        "PUT",
        f"{iss}/app",
        {
            **stream,
            "spec": {
                "tags": [
                    *stream["spec"]["tags"],
                    {"name": "latest", "from": {"kind": "ImageStreamImage", "name": f"app@{digest1}"}},
                ]
            },
        },
    )

    create_dc(kube, namespace, trigger_dc("web", "app:latest"))
    rc1 = wait_rc(kube, namespace, "web-1", "Complete")
    assert rc1["spec"]["template"]["spec"]["containers"][0]["image"] == v1
    dc = kube.get(f"{DCS.format(ns=namespace)}/web")
    assert dc["status"]["details"]["causes"] == [
        {"type": "ConfigChange"}
    ]  # the first rollout says ConfigChange
    assert dc["spec"]["triggers"][1]["imageChangeParams"]["lastTriggeredImage"] == v1

    # a new build, then the tag moves: new item first, DC image rewritten to the digest, rollout 2
    stream = patch(
        kube,
        f"{iss}/app",
        {
            "spec": {
                "tags": [
                    {"name": "v1", "from": {"kind": "DockerImage", "name": f"{APP}:v1"}},
                    {"name": "v2", "from": {"kind": "DockerImage", "name": f"{APP}:v2"}},
                    {"name": "latest", "from": {"kind": "ImageStreamImage", "name": f"app@{digest1}"}},
                ]
            }
        },
    )
    stream = wait_for(kube, iss, "app", has_items("v2"))
    v2 = status_tag(stream, "v2")["items"][0]["dockerImageReference"]
    assert v2 == sandbox.pin(f"{APP}:v2")
    tags = [t for t in stream["spec"]["tags"] if t["name"] != "latest"]
    patch(
        kube,
        f"{iss}/app",
        {
            "spec": {
                "tags": [
                    *tags,
                    {
                        "name": "latest",
                        "from": {"kind": "ImageStreamImage", "name": f"app@{v2.split('@')[1]}"},
                    },
                ]
            }
        },
    )
    stream = wait_for(kube, iss, "app", has_items("latest", 2))
    assert [i["dockerImageReference"] for i in status_tag(stream, "latest")["items"]] == [v2, v1]

    rc2 = wait_rc(kube, namespace, "web-2", "Complete")
    assert rc2["spec"]["template"]["spec"]["containers"][0]["image"] == v2
    dc = kube.get(f"{DCS.format(ns=namespace)}/web")
    assert dc["spec"]["template"]["spec"]["containers"][0]["image"] == v2
    assert dc["status"]["details"] == {
        "message": "image change",
        "causes": [{"type": "ImageChange", "imageTrigger": {"from": {"kind": "DockerImage", "name": v2}}}],
    }


def test_blank_image_waits_for_the_trigger(kube: Kube, namespace: str) -> None:
    create_dc(kube, namespace, trigger_dc("web", "app:latest"))
    dc = wait_for(kube, DCS.format(ns=namespace), "web", settled)
    assert dc["status"]["latestVersion"] == 0 and rc_replicas(kube, namespace) == {}
    kube.request(
        "POST",
        ISS.format(ns=namespace),
        image_stream("app", {"latest": {"kind": "DockerImage", "name": f"{APP}:v1"}}),
    )
    rc = wait_rc(kube, namespace, "web-1", "Complete")
    assert rc["spec"]["template"]["spec"]["containers"][0]["image"].startswith(f"{APP}@sha256:")


def test_manual_trigger_does_not_fire(kube: Kube, namespace: str) -> None:
    kube.request(
        "POST",
        ISS.format(ns=namespace),
        image_stream("app", {"latest": {"kind": "DockerImage", "name": f"{APP}:v1"}}),
    )
    wait_for(kube, ISS.format(ns=namespace), "app", has_items("latest"))
    body = trigger_dc("web", "app:latest")
    body["spec"]["triggers"][1]["imageChangeParams"]["automatic"] = False
    body["spec"]["template"]["spec"]["containers"][0]["image"] = f"{APP}:v0"
    create_dc(kube, namespace, body)
    dc = wait_for(kube, DCS.format(ns=namespace), "web", settled)
    assert dc["spec"]["template"]["spec"]["containers"][0]["image"] == f"{APP}:v0"
    assert "lastTriggeredImage" not in dc["spec"]["triggers"][1]["imageChangeParams"]
    assert dc["status"]["latestVersion"] == 0  # waits for `oc rollout latest`


def test_image_stream_image_copies_across_namespaces(
    kube: Kube, namespace: str, other_namespace: str
) -> None:
    src = ISS.format(ns=other_namespace)
    kube.request(
        "POST", src, image_stream("build", {"abc123": {"kind": "DockerImage", "name": f"{APP}:abc123"}})
    )
    source = wait_for(kube, src, "build", has_items("abc123"))
    item = status_tag(source, "abc123")["items"][0]
    kube.request(
        "POST",
        ISS.format(ns=namespace),
        image_stream(
            "app",
            {
                "abc123": {
                    "kind": "ImageStreamImage",
                    "namespace": other_namespace,
                    "name": f"build@{item['image']}",
                },
                "follow": {"kind": "ImageStreamTag", "namespace": other_namespace, "name": "build:abc123"},
            },
        ),
    )
    copy = wait_for(
        kube, ISS.format(ns=namespace), "app", lambda s: has_items("abc123")(s) and has_items("follow")(s)
    )
    copied = status_tag(copy, "abc123")["items"][0]
    assert (copied["dockerImageReference"], copied["image"]) == (item["dockerImageReference"], item["image"])
    assert status_tag(copy, "follow")["items"][0]["image"] == item["image"]
    # the source tag moving on, a stream that does not exist: see the tag-copy tests below


def test_rolling_respects_surge_and_unavailability(kube: Kube, namespace: str) -> None:
    create_dc(kube, namespace, dc_body("web", f"{APP}:v1", replicas=4))
    wait_rc(kube, namespace, "web-1", "Complete")
    wait_for(kube, RCS.format(ns=namespace), "web-1", lambda rc: rc["status"].get("availableReplicas") == 4)
    rcs = RCS.format(ns=namespace)
    start = kube.get(rcs)
    set_image(kube, namespace, "web", f"{APP}:v2")
    specs: dict[str, int] = {rc["metadata"]["name"]: rc["spec"]["replicas"] for rc in start["items"]}
    most = sum(specs.values())
    for ev in kube.watch(rcs, start["metadata"]["resourceVersion"], 30):
        rc = ev["object"]
        specs[rc["metadata"]["name"]] = rc["spec"]["replicas"]
        most = max(most, sum(specs.values()))
        if rc["metadata"]["name"] == "web-2" and phase_is("Complete", "Failed")(rc):
            break
    assert phase_is("Complete")(rc)
    assert most <= 5, f"maxSurge 25% of 4 allows 5 pods, saw {most}"  # 4 + ceil(25% of 4)
    assert specs == {"web-1": 0, "web-2": 4}


def test_recreate_strategy(kube: Kube, namespace: str) -> None:
    created = create_dc(
        kube, namespace, dc_body("web", f"{APP}:v1", replicas=2, strategy={"type": "Recreate"})
    )
    assert created["spec"]["strategy"]["recreateParams"] == {"timeoutSeconds": 600}
    wait_rc(kube, namespace, "web-1", "Complete")
    set_image(kube, namespace, "web", f"{APP}:v2")
    wait_rc(kube, namespace, "web-2", "Complete")
    assert rc_replicas(kube, namespace) == {"web-1": 0, "web-2": 2}


def test_invalid_dc_is_refused(kube: Kube, namespace: str) -> None:
    body = dc_body("web", f"{APP}:v1")
    body["spec"]["selector"] = {"name": "other"}
    with pytest.raises(ApiError) as err:
        create_dc(kube, namespace, body)
    assert err.value.status == 422
    assert "`selector` does not match template `labels`" in str(err.value)


def test_promoted_crash_image_fails_through_the_trigger(kube: Kube, sandbox: Sandbox, namespace: str) -> None:
    """A tag promoted by digest keeps its tag's behaviour: `v2-crash` still crashes when pinned."""
    iss = ISS.format(ns=namespace)
    kube.request("POST", iss, image_stream("app", {"latest": {"kind": "DockerImage", "name": f"{APP}:v1"}}))
    body = trigger_dc("web", "app:latest")
    body["spec"]["strategy"] = {"rollingParams": {"timeoutSeconds": 5}}
    create_dc(kube, namespace, body)
    wait_rc(kube, namespace, "web-1", "Complete")
    patch(
        kube,
        f"{iss}/app",
        {"spec": {"tags": [{"name": "latest", "from": {"kind": "DockerImage", "name": f"{APP}:v2-crash"}}]}},
    )
    rc2 = wait_rc(kube, namespace, "web-2", "Failed")
    assert rc2["spec"]["template"]["spec"]["containers"][0]["image"] == sandbox.pin(f"{APP}:v2-crash")
    dc = wait_for(
        kube, DCS.format(ns=namespace), "web", lambda d: condition(d, "Progressing").get("status") == "False"
    )
    assert dc["status"]["details"]["causes"][0]["type"] == "ImageChange"
    wait_for(kube, RCS.format(ns=namespace), "web-1", lambda rc: rc["spec"]["replicas"] == 1)


def test_local_reference_policy_triggers_the_integrated_registry_reference(
    kube: Kube, namespace: str
) -> None:
    stream = image_stream("app", {"latest": {"kind": "DockerImage", "name": f"{APP}:v1"}})
    stream["spec"]["tags"][0]["referencePolicy"] = {"type": "Local"}
    kube.request("POST", ISS.format(ns=namespace), stream)
    create_dc(kube, namespace, trigger_dc("web", "app:latest"))
    rc = wait_rc(kube, namespace, "web-1", "Complete")
    image = rc["spec"]["template"]["spec"]["containers"][0]["image"]
    assert image.startswith(f"image-registry.openshift-image-registry.svc:5000/{namespace}/app@sha256:")


# -- what the API normalises and refuses ----------------------------------------------------------------


def test_api_omits_zero_values_and_fills_in_the_trigger_source(kube: Kube, namespace: str) -> None:
    """Mirrors openshift/api apps/v1/types.go (`automatic`, `containerNames`, `lastTriggeredImage`,
    `paused` are `omitempty`) and openshift-apiserver pkg/apps/apis/apps/v1/defaults.go and conversion.go
    (`from.namespace` defaults to the DC's namespace; `from.kind: ImageStream` becomes ImageStreamTag
    `<name>:latest`): what a client writes is not what it reads back."""
    body = trigger_dc("web", "app:latest")
    body["spec"]["template"]["spec"]["containers"][0]["image"] = f"{APP}:v0"
    body["spec"]["paused"] = False
    params = body["spec"]["triggers"][1]["imageChangeParams"]
    params["automatic"] = False
    params["from"] = {"kind": "ImageStream", "name": "app"}
    created = create_dc(kube, namespace, body)
    spec = created["spec"]
    assert "paused" not in spec
    assert spec["triggers"][1]["imageChangeParams"] == {
        "containerNames": ["app"],
        "from": {"kind": "ImageStreamTag", "name": "app:latest", "namespace": namespace},
    }
    changed = patch(
        kube, f"{DCS.format(ns=namespace)}/web", {"spec": {"paused": False, "minReadySeconds": 0}}
    )
    assert "paused" not in changed["spec"] and "minReadySeconds" not in changed["spec"]

    stream = image_stream("app", {"v1": {"kind": "DockerImage", "name": f"{APP}:v1"}})
    stream["spec"]["tags"][0] |= {"reference": False, "importPolicy": {"insecure": False, "scheduled": False}}
    tag = kube.request("POST", ISS.format(ns=namespace), stream)["spec"]["tags"][0]
    assert "reference" not in tag and tag["importPolicy"] == {}


def test_create_clears_last_triggered_image(kube: Kube, namespace: str) -> None:
    """Mirrors openshift-apiserver pkg/apps/apiserver/registry/deployconfig/strategy.go PrepareForCreate:
    no trigger has fired for a new DC, so a lastTriggeredImage sent with it is dropped."""
    body = trigger_dc("web", "app:latest")
    body["spec"]["triggers"][1]["imageChangeParams"]["lastTriggeredImage"] = f"{APP}:v9"
    created = create_dc(kube, namespace, body)
    assert "lastTriggeredImage" not in created["spec"]["triggers"][1]["imageChangeParams"]


@pytest.mark.parametrize(
    ("edit", "error"),
    [
        (
            # no trigger names the container, so nothing fills its empty image in for the validation
            lambda s: s["triggers"][1]["imageChangeParams"].pop("containerNames"),
            "[spec.triggers[1].imageChangeParams.containerNames: Required value, "
            "spec.template.spec.containers[0].image: Required value]",
        ),
        (
            lambda s: s["triggers"][1]["imageChangeParams"]["from"].update(kind="DockerImage"),
            'spec.triggers[1].imageChangeParams.from.kind: Invalid value: "DockerImage": kind must be an ImageStreamTag',
        ),
        (
            lambda s: s.update(
                strategy={"activeDeadlineSeconds": 600, "rollingParams": {"timeoutSeconds": 600}}
            ),
            "spec.strategy.activeDeadlineSeconds: Invalid value: 600: activeDeadlineSeconds must be greater than timeoutSeconds",
        ),
        (
            lambda s: s.update(strategy={"rollingParams": {"maxSurge": 0, "maxUnavailable": "0%"}}),
            'spec.strategy.rollingParams.maxUnavailable: Invalid value: "0%": cannot be 0 when maxSurge is 0 as well',
        ),
        (
            lambda s: s.update(triggers=[{"type": "ConfigChange"}]),
            "spec.template.spec.containers[0].image: Required value",
        ),
        (
            lambda s: s["triggers"][1]["imageChangeParams"]["from"].update(name="app"),
            'spec.triggers[1].imageChangeParams.from.name: Invalid value: "app": must be in the form of <name>:<tag>',
        ),
        (
            lambda s: s["triggers"][1]["imageChangeParams"]["from"].update(name="App:v1"),
            'spec.triggers[1].imageChangeParams.from.name: Invalid value: "App:v1": '
            'must match "[a-z0-9]+(?:[._-][a-z0-9]+)*"',
        ),
        (
            lambda s: s["triggers"][1]["imageChangeParams"]["from"].update(name="team/app:v1"),
            "spec.triggers[1].imageChangeParams.from.name: Invalid value: \"team/app:v1\": may not contain '/'",
        ),
        (
            lambda s: s["triggers"][1]["imageChangeParams"]["from"].update(namespace="Shop_CD"),
            'spec.triggers[1].imageChangeParams.from.namespace: Invalid value: "Shop_CD": '
            "namespace must be a valid subdomain",
        ),
        (
            lambda s: s.update(strategy={"rollingParams": {"intervalSeconds": 0, "maxUnavailable": "150%"}}),
            "[spec.strategy.rollingParams.intervalSeconds: Invalid value: 0: must be >0, "
            'spec.strategy.rollingParams.maxUnavailable: Invalid value: "150%": should not be more than 100%]',
        ),
        (
            lambda s: s.update(strategy={"rollingParams": {"maxSurge": "one"}}),
            'spec.strategy.rollingParams.maxSurge: Invalid value: "one": value should be int(5) or percentage(5%)',
        ),
        (
            lambda s: s.update(revisionHistoryLimit=-1, replicas=-2),
            "[spec.revisionHistoryLimit: Invalid value: -1: must be greater than or equal to 0, "
            "spec.replicas: Invalid value: -2: replicas cannot be negative]",
        ),
        (
            lambda s: s.update(minReadySeconds=600),
            "spec.minReadySeconds: Invalid value: 600: must be less than the deployment timeout (600s)",
        ),
        (
            # (a deadline that minReadySeconds reaches is below the rollout's timeout too: both are said)
            lambda s: s.update(minReadySeconds=30, strategy={"activeDeadlineSeconds": 30}),
            "[spec.strategy.activeDeadlineSeconds: Invalid value: 30: activeDeadlineSeconds must be greater "
            "than timeoutSeconds, spec.minReadySeconds: Invalid value: 30: must be less than "
            "activeDeadlineSeconds (30s - used by the deployer pod)]",
        ),
        (
            lambda s: (s.pop("selector"), s["template"]["metadata"].pop("labels")),
            "spec.selector: Invalid value: map[string]string(nil): selector cannot be empty",
        ),
    ],
    ids=[
        "containerNames",
        "from-kind",
        "active-deadline",
        "surge-and-unavailable",
        "empty-image",
        "from-name-without-tag",
        "from-name-pattern",
        "from-name-slash",
        "from-namespace",
        "interval-and-unavailable-percent",
        "surge-pattern",
        "history-and-replicas",
        "min-ready-timeout",
        "min-ready-deadline",
        "no-selector",
    ],
)
def test_validation_refuses_what_openshift_refuses(
    kube: Kube, namespace: str, edit: Callable[[JSON], Any], error: str
) -> None:
    """Mirrors openshift-apiserver pkg/apps/apis/apps/validation/validation.go (validateImageChangeParams,
    validateImageStreamTagName, validateDeploymentStrategy, validateRollingParams, ValidatePositiveIntOrPercent,
    IsNotMoreThan100Percent, ValidateDeploymentConfigSpec's counts, handleEmptyImageReferences), pkg/image/apis/image/validation/validation.go (ValidateImageStreamName)
    and library-go pkg/image/imageutil (SplitImageStreamTag)."""
    body = trigger_dc("web", "app:latest")
    body["spec"]["template"]["spec"]["containers"][0]["image"] = ""
    edit(body["spec"])
    with pytest.raises(ApiError) as err:
        create_dc(kube, namespace, body)
    assert err.value.status == 422
    # (the sandbox's admission webhook prefixes the message with its own name)
    assert err.value.body["message"].endswith(f'DeploymentConfig.apps.openshift.io "web" is invalid: {error}')
    assert kube.get(DCS.format(ns=namespace))["items"] == []


# Kubernetes' own words (kube-apiserver v1.20, as sandbox/scripts/build-control-plane.sh builds it).
_RFC1123 = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start "
    "and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)
_ENV_NAME = (
    "a valid environment variable name must consist of alphabetic characters, digits, '_', '-', or '.', "
    "and must not start with a digit (e.g. 'my.env-name',  or 'MY_ENV.NAME',  or 'MyEnvName1', regex used "
    "for validation is '[-._a-zA-Z][-._a-zA-Z0-9]*')"
)


def _container(spec: JSON, **fields: Any) -> None:
    spec["template"]["spec"]["containers"][0].update(fields)


TEMPLATE_CASES = [
    (
        lambda s: _container(s, name="App_1"),
        f'spec.template.spec.containers[0].name: Invalid value: "App_1": {_RFC1123}',
    ),
    (
        lambda s: _container(s, env=[{"name": "1FEATURE", "value": "on"}]),
        f'spec.template.spec.containers[0].env[0].name: Invalid value: "1FEATURE": {_ENV_NAME}',
    ),
    (
        lambda s: s["template"]["spec"]["containers"].append({"name": "app", "image": f"{APP}:v2"}),
        'spec.template.spec.containers[1].name: Duplicate value: "app"',
    ),
    (
        lambda s: _container(s, ports=[{"containerPort": 70000}]),
        "spec.template.spec.containers[0].ports[0].containerPort: Invalid value: 70000: "
        "must be between 1 and 65535, inclusive",
    ),
    (
        lambda s: s["template"]["spec"].update(restartPolicy="Never"),
        'spec.template.spec.restartPolicy: Unsupported value: "Never": supported values: "Always"',
    ),
]
TEMPLATE_CASE_IDS = ["container-name", "env-name", "duplicate-container", "port", "restart-policy"]


def _refused(
    kube: Kube, method: str, path: str, body: JSON, status: int, *, dry_run: bool = False
) -> ApiError:
    with pytest.raises(ApiError) as err:
        kube.request(method, path, body, query={"dryRun": "All"} if dry_run else None)
    assert err.value.status == status, err.value.body
    return err.value


def test_pod_template_is_validated_as_kubernetes_validates_it(kube: Kube, namespace: str) -> None:
    """Mirrors openshift-apiserver pkg/apps/apis/apps/validation/validation.go (ValidateDeploymentConfigSpec:
    the template goes through kubernetes pkg/apis/core/validation/validation.go ValidatePodTemplateSpecForRC)
    and k8s.io/apimachinery pkg/api/errors/errors.go (NewInvalid): a DC whose pod template Kubernetes
    refuses is a 422 at create, dry-run create, update and dry-run update, in Kubernetes' words under the
    DC's field paths; nothing is stored and the DC updated keeps its resourceVersion."""
    collection = DCS.format(ns=namespace)
    existing = create_dc(kube, namespace, dc_body("kept", f"{APP}:v1"))
    for edit, error in zip(TEMPLATE_CASES, TEMPLATE_CASE_IDS, strict=True):
        change, words = edit
        body = dc_body("web", f"{APP}:v1")
        change(body["spec"])
        expected = f'DeploymentConfig.apps.openshift.io "web" is invalid: {words}'
        for dry_run in (False, True):
            message = _refused(kube, "POST", collection, body, 422, dry_run=dry_run).body["message"]
            # (the sandbox's admission webhook prefixes the message with its own name)
            assert message.endswith(expected), (error, message)
        updated = copy.deepcopy(existing)
        change(updated["spec"])
        expected = f'DeploymentConfig.apps.openshift.io "kept" is invalid: {words}'
        for dry_run in (False, True):
            message = _refused(kube, "PUT", f"{collection}/kept", updated, 422, dry_run=dry_run).body[
                "message"
            ]
            assert message.endswith(expected), (error, message)
    assert [dc["metadata"]["name"] for dc in kube.get(collection)["items"]] == ["kept"]
    kept = kube.get(f"{collection}/kept")
    assert kept["metadata"]["generation"] == existing["metadata"]["generation"]
    assert kept["spec"] == existing["spec"]


def test_template_errors_come_after_trigger_and_strategy_errors_all_in_one_message(
    kube: Kube, namespace: str
) -> None:
    """Mirrors openshift-apiserver pkg/apps/apis/apps/validation/validation.go (ValidateDeploymentConfigSpec
    checks the triggers, then the strategy, then the template, and reports them all) and
    k8s.io/apimachinery pkg/api/errors/errors.go (NewInvalid: several errors in brackets, each a cause)."""
    body = trigger_dc("web", "app:latest")
    body["spec"]["triggers"][1]["imageChangeParams"]["from"]["kind"] = "DockerImage"
    body["spec"]["strategy"] = {"rollingParams": {"timeoutSeconds": 0}}
    _container(body["spec"], name="App_1", env=[{"name": "1FEATURE", "value": "on"}])
    refusal = _refused(kube, "POST", DCS.format(ns=namespace), body, 422)
    message = refusal.body["message"]
    errors = [
        'spec.triggers[1].imageChangeParams.from.kind: Invalid value: "DockerImage": kind must be an ImageStreamTag',
        "spec.strategy.rollingParams.timeoutSeconds: Invalid value: 0: must be >0",
        f'spec.template.spec.containers[0].name: Invalid value: "App_1": {_RFC1123}',
        f'spec.template.spec.containers[0].env[0].name: Invalid value: "1FEATURE": {_ENV_NAME}',
    ]
    expected = f'DeploymentConfig.apps.openshift.io "web" is invalid: [{", ".join(errors)}]'
    assert message.endswith(expected), message
    details = refusal.body["details"]
    assert [details["kind"], details["group"], details["name"]] == [
        "DeploymentConfig",
        "apps.openshift.io",
        "web",
    ]
    assert [c["field"] for c in details["causes"]] == [e.split(": ", 1)[0] for e in errors]
    assert kube.get(DCS.format(ns=namespace))["items"] == []


def test_empty_image_is_left_only_to_an_image_trigger_naming_its_container(
    kube: Kube, namespace: str
) -> None:
    """Mirrors openshift-apiserver pkg/apps/apis/apps/validation/validation.go (handleEmptyImageReferences):
    an empty image passes Kubernetes' validation only in a container an ImageChange trigger names, and
    only for the validation: the DC is stored with its image still empty."""
    body = trigger_dc("web", "app:latest")
    _container(body["spec"], image="")
    body["spec"]["template"]["spec"]["containers"].append({"name": "side", "image": ""})
    message = _refused(kube, "POST", DCS.format(ns=namespace), body, 422).body["message"]
    assert message.endswith(
        'DeploymentConfig.apps.openshift.io "web" is invalid: spec.template.spec.containers[1].image: Required value'
    ), message
    body["spec"]["template"]["spec"]["containers"].pop()
    created = create_dc(kube, namespace, body)
    assert created["spec"]["template"]["spec"]["containers"][0]["image"] == ""


def test_template_that_cannot_be_decoded_is_a_bad_request(kube: Kube, namespace: str) -> None:
    """Mirrors k8s.io/apiserver pkg/endpoints/handlers/rest.go (transformDecodeError): OpenShift decodes a
    DC into its typed struct before any validation, so a quantity that is no quantity is a 400 BadRequest
    naming the DC's type, at create, dry-run create and update alike; nothing is stored or changed."""
    collection = DCS.format(ns=namespace)
    existing = create_dc(kube, namespace, dc_body("kept", f"{APP}:v1"))
    body = dc_body("web", f"{APP}:v1")
    _container(body["spec"], resources={"limits": {"cpu": "lots"}})
    updated = copy.deepcopy(existing)
    _container(updated["spec"], resources={"limits": {"cpu": "lots"}})
    writes = [("POST", collection, body), ("PUT", f"{collection}/kept", updated)]
    for (method, path, sent), dry_run in itertools.product(writes, (False, True)):
        refusal = _refused(kube, method, path, sent, 400, dry_run=dry_run)
        assert refusal.reason == "BadRequest", refusal.body
        message = refusal.body["message"]
        assert 'DeploymentConfig in version "v1" cannot be handled as a DeploymentConfig: ' in message, (
            message
        )
        assert "v1.DeploymentConfigSpec.Template: v1.PodTemplateSpec.Spec: " in message, message
        assert "quantities must match the regular expression" in message, message
        assert "ReplicationController" not in message, message
    assert [dc["metadata"]["name"] for dc in kube.get(collection)["items"]] == ["kept"]
    assert kube.get(f"{collection}/kept")["spec"] == existing["spec"]


# -- ImageStream tag copies ------------------------------------------------------------------------------

REGISTRY = "image-registry.openshift-image-registry.svc:5000"


def test_tag_copy_of_a_missing_stream_or_image_is_refused_in_the_write(
    kube: Kube, namespace: str, other_namespace: str
) -> None:
    """Mirrors openshift-apiserver pkg/image/apiserver/registry/imagestream/strategy.go (tagsChanged):
    a spec tag copying from a stream that does not exist, or an image it does not hold, is a 422 at once."""
    src = ISS.format(ns=other_namespace)
    kube.request("POST", src, image_stream("build", {"abc": {"kind": "DockerImage", "name": f"{APP}:abc"}}))
    wait_for(kube, src, "build", has_items("abc"))
    unknown = "sha256:" + "1" * 64
    cases = {
        "nothere@" + unknown: "Not found",
        "build@"
        + unknown: f'error generating tag event: imagestreamimage.image.openshift.io "{unknown}" not found',
    }
    for name, words in cases.items():
        body = image_stream(
            "app", {"v1": {"kind": "ImageStreamImage", "namespace": other_namespace, "name": name}}
        )
        with pytest.raises(ApiError) as err:
            kube.request("POST", ISS.format(ns=namespace), body)
        assert err.value.status == 422 and words in err.value.body["message"], err.value.body["message"]
        assert "spec.tags[v1].from.name" in err.value.body["message"]
    assert kube.get(ISS.format(ns=namespace))["items"] == []


def test_tag_copy_is_rewritten_to_the_destination_and_does_not_follow_the_source(
    kube: Kube, namespace: str, other_namespace: str
) -> None:
    """Mirrors openshift-apiserver pkg/image/apiserver/registry/imagestream/strategy.go: a copy of an image
    the integrated registry holds under the source stream points at the destination stream instead, and an
    ImageStreamTag of another stream is resolved when written (only same-stream tags track)."""
    src = ISS.format(ns=other_namespace)
    built = f"{REGISTRY}/{other_namespace}/build:abc"
    kube.request("POST", src, image_stream("build", {"abc": {"kind": "DockerImage", "name": built}}))
    item = status_tag(wait_for(kube, src, "build", has_items("abc")), "abc")["items"][0]
    assert item["dockerImageReference"].startswith(f"{REGISTRY}/{other_namespace}/build@sha256:")
    body = image_stream(
        "app",
        {
            "copy": {
                "kind": "ImageStreamImage",
                "namespace": other_namespace,
                "name": f"build@{item['image']}",
            },
            "follow": {"kind": "ImageStreamTag", "namespace": other_namespace, "name": "build:abc"},
            "same": {"kind": "ImageStreamTag", "name": "follow"},
        },
    )
    body["spec"]["tags"][2]["from"]["name"] = "app:follow"
    kube.request("POST", ISS.format(ns=namespace), body)
    dest = wait_for(
        kube,
        ISS.format(ns=namespace),
        "app",
        lambda s: all(has_items(t)(s) for t in ("copy", "follow", "same")),
    )
    for tag in ("copy", "follow"):
        assert (
            status_tag(dest, tag)["items"][0]["dockerImageReference"]
            == f"{REGISTRY}/{namespace}/app@{item['image']}"
        )
    # the source tag moves on: the copy across streams stays where it was written
    patch(
        kube,
        f"{src}/build",
        {"spec": {"tags": [{"name": "abc", "from": {"kind": "DockerImage", "name": f"{APP}:def"}}]}},
    )
    wait_for(kube, src, "build", lambda s: status_tag(s, "abc")["items"][0]["image"] != item["image"])

    # a spec change of its own after the source moved: once it resolves, the stream has been synced since
    def poke(stream: JSON) -> JSON:
        stream["spec"]["tags"].append({"name": "poke", "from": {"kind": "DockerImage", "name": f"{APP}:v1"}})
        return stream

    put_again_on_conflict(kube, f"{ISS.format(ns=namespace)}/app", poke)  # the importer writes status too
    again = wait_for(kube, ISS.format(ns=namespace), "app", has_items("poke"))
    assert [i["image"] for i in status_tag(again, "follow")["items"]] == [item["image"]]


# -- image triggers on annotated Deployments -----------------------------------------------------------


def test_annotated_deployment_follows_its_tag_unless_paused(kube: Kube, namespace: str) -> None:
    """Mirrors openshift-controller-manager pkg/image/trigger/annotations/ and library-go
    pkg/image/trigger/annotations.go (UpdateObjectFromImages): a container named by an
    `image.openshift.io/triggers` entry gets its tag's image, and keeps it while the entry is paused."""
    iss = ISS.format(ns=namespace)
    kube.request("POST", iss, image_stream("app", {"latest": {"kind": "DockerImage", "name": f"{APP}:v1"}}))
    v1 = status_tag(wait_for(kube, iss, "app", has_items("latest")), "latest")["items"][0][
        "dockerImageReference"
    ]
    entry = {
        "from": {"kind": "ImageStreamTag", "name": "app:latest"},
        "fieldPath": 'spec.template.spec.containers[?(@.name=="app")].image',
    }
    deployments = f"/apis/apps/v1/namespaces/{namespace}/deployments"
    body = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "annotations": {"image.openshift.io/triggers": json.dumps([entry])}},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"name": "web"}},
            "template": {
                "metadata": {"labels": {"name": "web"}},
                "spec": {
                    "containers": [{"name": "app", "image": " "}, {"name": "side", "image": f"{APP}:side"}]
                },
            },
        },
    }
    kube.request("POST", deployments, body)

    def image(d: JSON, name: str = "app") -> str:
        return next(c["image"] for c in d["spec"]["template"]["spec"]["containers"] if c["name"] == name)

    web = wait_for(kube, deployments, "web", lambda d: image(d) == v1)
    assert image(web, "side") == f"{APP}:side"  # not named by any entry
    # paused: the tag moves, the container stays
    entry["paused"] = True
    patch(
        kube,
        f"{deployments}/web",
        {"metadata": {"annotations": {"image.openshift.io/triggers": json.dumps([entry])}}},
    )
    patch(
        kube,
        f"{iss}/app",
        {"spec": {"tags": [{"name": "latest", "from": {"kind": "DockerImage", "name": f"{APP}:v2"}}]}},
    )
    moved = wait_for(kube, iss, "app", has_items("latest", 2))
    v2 = status_tag(moved, "latest")["items"][0]["dockerImageReference"]
    assert image(kube.get(f"{deployments}/web")) == v1
    # resumed: it follows the tag again
    entry["paused"] = False
    patch(
        kube,
        f"{deployments}/web",
        {"metadata": {"annotations": {"image.openshift.io/triggers": json.dumps([entry])}}},
    )
    wait_for(kube, deployments, "web", lambda d: image(d) == v2)


def test_a_trigger_naming_no_container_is_accepted_and_fires_on_none(kube: Kube, namespace: str) -> None:
    """Mirrors openshift-apiserver pkg/apps/apis/apps/validation/validation.go (validateImageChangeParams asks
    only for some containerNames, not that the template has them) and openshift-controller-manager
    pkg/image/trigger/deploymentconfigs/deploymentconfigs.go (calculateDeploymentConfigTrigger "silently
    ignore[s] triggers that do not point to valid container"; UpdateDeploymentConfigImages writes only the
    containers named). An empty tag is "latest" (library-go imageutil SplitImageStreamTag): the trigger
    on `app:` follows app:latest."""
    kube.request(
        "POST",
        ISS.format(ns=namespace),
        image_stream("app", {"latest": {"kind": "DockerImage", "name": f"{APP}:v1"}}),
    )
    body = trigger_dc("web", "app:")
    body["spec"]["triggers"][1]["imageChangeParams"]["containerNames"] = ["app", "sidecar"]
    body["spec"]["triggers"].append(
        {
            "type": "ImageChange",
            "imageChangeParams": {
                "automatic": True,
                "containerNames": ["gone"],
                "from": {"kind": "ImageStreamTag", "name": "app:latest"},
            },
        }
    )
    create_dc(kube, namespace, body)
    rc = wait_rc(kube, namespace, "web-1", "Complete")
    containers = rc["spec"]["template"]["spec"]["containers"]
    assert [c["name"] for c in containers] == ["app"]
    assert containers[0]["image"].startswith(f"{APP}@sha256:"), containers
