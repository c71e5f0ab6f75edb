"""The OpenShift emulation against the live sandbox, round 3 (issue 24): what production DCs meet daily.

Each test names the OpenShift file whose behaviour it checks in the emulation (sandbox/openshift/);
`docs/openshift-fidelity.md` has a row for each. Waits are watches on a condition, never sleeps.
"""

from __future__ import annotations

import json
import os
import signal
from typing import Any

import pytest

from sandbox.cluster import Sandbox
from sandbox.openshift.kube import JSON, MERGE_PATCH, Kube
from tests.helpers.openshift_api import (
    APP,
    DCS,
    ISS,
    RCS,
    create_dc,
    dc_body,
    has_items,
    image_stream,
    patch,
    phase_is,
    rc_replicas,
    status_tag,
    wait_for,
    wait_rc,
)

TRIGGERS = "image.openshift.io/triggers"

pytestmark = pytest.mark.cluster


def test_observed_generation_stays_behind_while_the_latest_rc_runs(kube: Kube, namespace: str) -> None:
    """openshift-controller-manager pkg/apps/deploymentconfig/deploymentconfig_controller.go (Handle):
    while the latest RC is not terminated, ``updateStatus(config, existingDeployments, false)`` keeps
    ``status.observedGeneration`` where it was ("we don't want to compete with the deployer"); a scale
    meanwhile (openshift-apiserver pkg/apps/apiserver/registry/deployconfig/strategy.go PrepareForUpdate
    bumps the generation on any spec change) is observed only once the rollout ended, and then the active
    RC follows the new count (reconcileDeployments)."""
    create_dc(kube, namespace, dc_body("web", f"{APP}:v1", replicas=2))
    wait_rc(kube, namespace, "web-1", "Complete")
    body = {"spec": {"template": {"spec": {"containers": [{"name": "app", "image": f"{APP}:v2-slow5"}]}}}}
    kube.request("PATCH", f"{DCS.format(ns=namespace)}/web", body, content_type=MERGE_PATCH)
    wait_rc(kube, namespace, "web-2", "Running")
    kube.request(
        "PATCH", f"{DCS.format(ns=namespace)}/web/scale", {"spec": {"replicas": 3}}, content_type=MERGE_PATCH
    )
    lagging = wait_for(
        kube, DCS.format(ns=namespace), "web",
        lambda d: d["metadata"]["generation"] > d["status"].get("observedGeneration", 0)
        and d["spec"]["replicas"] == 3,
    )  # fmt: skip
    rc = kube.get(f"{RCS.format(ns=namespace)}/web-2")
    assert phase_is("Running")(rc), rc["metadata"]["annotations"]  # still running while it lags
    wait_rc(kube, namespace, "web-2", "Complete", timeout=90)
    dc = wait_for(
        kube, DCS.format(ns=namespace), "web",
        lambda d: d["status"].get("observedGeneration") == d["metadata"]["generation"],
    )  # fmt: skip
    assert dc["metadata"]["generation"] >= lagging["metadata"]["generation"]
    wait_for(kube, RCS.format(ns=namespace), "web-2", lambda r: r["spec"]["replicas"] == 3)


# -- image triggers of annotated Deployments (point 4) ---------------------------------------------------


def annotated(name: str, entries: list[JSON], *, init: bool = True) -> JSON:
    """A Deployment with an init container `migrate` and a container `app`, and trigger ``entries``."""
    spec: JSON = {"containers": [{"name": "app", "image": f"{APP}:app"}]}
    if init:
        spec["initContainers"] = [{"name": "migrate", "image": f"{APP}:migrate"}]
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "annotations": {TRIGGERS: json.dumps(entries)}},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"name": name}},
            "template": {"metadata": {"labels": {"name": name}}, "spec": spec},
        },
    }


def entry(path: str, name: str = "tool:latest", **source: Any) -> JSON:
    return {
        "from": {"kind": "ImageStreamTag", "name": name, **source},
        "fieldPath": f"spec.template.spec.{path}",
    }


def image_of(d: JSON, name: str) -> str:
    spec = d["spec"]["template"]["spec"]
    return next(
        c["image"] for c in [*(spec.get("initContainers") or []), *spec["containers"]] if c["name"] == name
    )


def tool_stream(kube: Kube, namespace: str) -> str:
    """An ImageStream `tool` whose `latest` resolves; the reference a trigger writes for it."""
    iss = ISS.format(ns=namespace)
    kube.request(
        "POST", iss, image_stream("tool", {"latest": {"kind": "DockerImage", "name": f"{APP}:tool1"}})
    )
    return str(
        status_tag(wait_for(kube, iss, "tool", has_items("latest")), "latest")["items"][0][
            "dockerImageReference"
        ]
    )


def test_a_named_container_is_looked_up_in_the_init_containers_first_whatever_the_prefix(
    kube: Kube, namespace: str
) -> None:
    """library-go pkg/image/trigger/annotations.go (parseContainerReference, findContainerBySelector) and
    pkg/image/referencemutator/pods.go (GetContainerByName: init containers first, then the regular
    ones; GetContainerByIndex: in the list the prefix names): `containers[?(@.name=="migrate")]` and
    `initContainers[?(@.name=="migrate")]` both feed the init container; `initContainers[0]` the first
    init container; `containers[0]` the first regular one."""
    ref = tool_stream(kube, namespace)
    deployments = f"/apis/apps/v1/namespaces/{namespace}/deployments"
    cases = {
        "by-name-in-containers": ('containers[?(@.name=="migrate")].image', "migrate"),
        "by-name-in-init": ('initContainers[?(@.name=="migrate")].image', "migrate"),
        "by-index-in-init": ("initContainers[0].image", "migrate"),
        "by-index-in-containers": ("containers[0].image", "app"),
    }
    for name, (path, _container) in cases.items():
        kube.request("POST", deployments, annotated(name, [entry(path)]))
    for name, (_path, container) in cases.items():
        done = wait_for(kube, deployments, name, lambda d, c=container: image_of(d, c) == ref)
        other = "app" if container == "migrate" else "migrate"
        assert image_of(done, other) == f"{APP}:{other}", (name, done["spec"]["template"])


def test_entries_not_indexed_by_stream_do_not_follow_their_tag_but_resolve_on_the_objects_write(
    kube: Kube, namespace: str
) -> None:
    """openshift-controller-manager pkg/image/controller/trigger/cache.go (triggerCacheIndexer) indexes
    an entry by its stream only when `from.kind` is exactly ImageStreamTag (nothing defaults an
    annotation) and it sets no `from.apiVersion`: a tag move queues only objects so indexed. But the
    object's own update (pkg/image/trigger/annotations/annotations.go Index: a triggered container's
    image changed) queues it, and library-go UpdateObjectFromImages resolves every entry not paused by
    name, whatever its kind or apiVersion."""
    ref = tool_stream(kube, namespace)
    deployments = f"/apis/apps/v1/namespaces/{namespace}/deployments"
    no_kind = entry('containers[?(@.name=="app")].image')
    del no_kind["from"]["kind"]
    with_version = entry('initContainers[?(@.name=="migrate")].image', apiVersion="image.openshift.io/v1")
    kube.request("POST", deployments, annotated("unindexed", [no_kind, with_version]))
    kube.request("POST", deployments, annotated("indexed", [entry('containers[?(@.name=="app")].image')]))
    # added with triggers: both are synced once, so every entry resolves
    for name in ("unindexed", "indexed"):
        wait_for(kube, deployments, name, lambda d: image_of(d, "app") == ref)
    assert image_of(kube.get(f"{deployments}/unindexed"), "migrate") == ref
    # the tag moves: only the indexed Deployment follows it
    patch(kube, f"{ISS.format(ns=namespace)}/tool",
          {"spec": {"tags": [{"name": "latest", "from": {"kind": "DockerImage", "name": f"{APP}:tool2"}}]}})  # fmt: skip
    moved = wait_for(kube, ISS.format(ns=namespace), "tool", has_items("latest", 2))
    ref2 = str(status_tag(moved, "latest")["items"][0]["dockerImageReference"])
    wait_for(kube, deployments, "indexed", lambda d: image_of(d, "app") == ref2)
    unindexed = kube.get(f"{deployments}/unindexed")
    assert image_of(unindexed, "app") == ref and image_of(unindexed, "migrate") == ref
    # a write of the unindexed one's triggered image: the controller resolves its entries again
    body = {"spec": {"template": {"spec": {"containers": [{"name": "app", "image": f"{APP}:hotfix"}]}}}}
    kube.request(
        "PATCH", f"{deployments}/unindexed", body, content_type="application/strategic-merge-patch+json"
    )
    done = wait_for(kube, deployments, "unindexed", lambda d: image_of(d, "app") == ref2)
    assert image_of(done, "migrate") == ref2


# -- smaller differences (point 7) ------------------------------------------------------------------------

PODS = "/api/v1/namespaces/{ns}/pods"
QUOTAS = "/api/v1/namespaces/{ns}/resourcequotas"


def test_deployer_pod_name_only_once_the_pod_exists_and_desired_replicas_is_kubectls(
    kube: Kube, namespace: str
) -> None:
    """library-go pkg/apps/appsutil/util.go (MakeDeployment) makes the RC with
    `kubectl.kubernetes.io/desired-replicas` (openshift/api apps/v1 deprecated_consts.go
    DesiredReplicasAnnotation) and without `openshift.io/deployer-pod.name`, which openshift-controller-
    manager pkg/apps/deployer/deployer_controller.go (handle) sets once it created (or found) the deployer
    pod; on success (nextStatus) `openshift.io/deployment.replicas` takes the desired count and the
    desired-replicas annotation goes. A deployer pod the quota refuses leaves the RC New without it."""
    create_dc(kube, namespace, dc_body("web", f"{APP}:v1", replicas=1))
    wait_rc(kube, namespace, "web-1", "Complete")
    wait_for(
        kube, PODS.format(ns=namespace), "web-1-deploy", lambda p: p["status"].get("phase") == "Succeeded"
    )
    quota = {"metadata": {"name": "pods"}, "spec": {"hard": {"pods": "1"}}}
    kube.request("POST", QUOTAS.format(ns=namespace), quota)
    wait_for(
        kube,
        QUOTAS.format(ns=namespace),
        "pods",
        lambda q: q.get("status", {}).get("used", {}).get("pods") == "1",
    )
    body = {"spec": {"template": {"spec": {"containers": [{"name": "app", "image": f"{APP}:v2"}]}}}}
    kube.request("PATCH", f"{DCS.format(ns=namespace)}/web", body, content_type=MERGE_PATCH)
    rc = wait_rc(kube, namespace, "web-2", "New")
    ann = rc["metadata"]["annotations"]
    assert "openshift.io/deployer-pod.name" not in ann, ann
    assert ann["kubectl.kubernetes.io/desired-replicas"] == "1" and "openshift.io/desired-replicas" not in ann
    kube.request("DELETE", f"{QUOTAS.format(ns=namespace)}/pods")
    done = wait_rc(kube, namespace, "web-2", "Complete", timeout=60)
    ann = done["metadata"]["annotations"]
    assert ann["openshift.io/deployer-pod.name"] == "web-2-deploy"
    assert (
        ann["openshift.io/deployment.replicas"] == "1" and "kubectl.kubernetes.io/desired-replicas" not in ann
    )


def test_revision_history_limit_is_defaulted_on_create_only(kube: Kube, namespace: str) -> None:
    """openshift-apiserver pkg/apps/apiserver/registry/deployconfig/strategy.go: groupStrategy.
    PrepareForCreate alone applies appsV1DeploymentConfigLayeredDefaults (revisionHistoryLimit 10); an
    update that leaves the field out stores none (and the controller then prunes nothing)."""
    created = create_dc(kube, namespace, dc_body("web", f"{APP}:v1"))
    assert created["spec"]["revisionHistoryLimit"] == 10
    wait_rc(kube, namespace, "web-1", "Complete")
    for _ in range(10):
        dc = kube.get(f"{DCS.format(ns=namespace)}/web")
        dc["spec"].pop("revisionHistoryLimit")
        try:
            updated = kube.request("PUT", f"{DCS.format(ns=namespace)}/web", dc)
            break
        except Exception as e:  # a 409: the controller wrote the status meanwhile
            if getattr(e, "status", None) != 409:
                raise
    assert "revisionHistoryLimit" not in updated["spec"], updated["spec"]
    settled = wait_for(
        kube, DCS.format(ns=namespace), "web",
        lambda d: d["status"].get("observedGeneration") == d["metadata"]["generation"],
    )  # fmt: skip
    assert "revisionHistoryLimit" not in settled["spec"]  # nor put back by the controller


def test_a_cancel_racing_the_deployer_pods_success_ends_complete(
    kube: Kube, sandbox: Sandbox, namespace: str
) -> None:
    """openshift-controller-manager pkg/apps/deployer/deployer_controller.go (handle, nextStatus): the next
    phase is read from the deployer pod first, so an RC whose deployer pod has succeeded ends Complete
    even though a cancel was recorded meanwhile (event FailedCancellation "Succeeded before cancel
    recorded"; DeleteStatusReasons clears the copy read, not the annotations written, so the cancel
    annotations stay); the deployer pods are cleaned up all the same. Played by freezing the emulation's
    controllers (SIGSTOP) while the deployer's process exits 0 and `oc rollout cancel` writes."""
    create_dc(kube, namespace, dc_body("web", f"{APP}:v1"))
    wait_rc(kube, namespace, "web-1", "Complete")
    body = {"spec": {"template": {"spec": {"containers": [{"name": "app", "image": f"{APP}:v2-slow60"}]}}}}
    kube.request("PATCH", f"{DCS.format(ns=namespace)}/web", body, content_type=MERGE_PATCH)
    wait_rc(kube, namespace, "web-2", "Running")
    pid = int((sandbox.dir / "openshift.pid").read_text())
    os.kill(pid, signal.SIGSTOP)
    try:
        patch(kube, f"{PODS.format(ns=namespace)}/web-2-deploy",
              {"metadata": {"annotations": {"sandbox.rollguard.io/exit": "0"}}})  # fmt: skip
        wait_for(
            kube, PODS.format(ns=namespace), "web-2-deploy", lambda p: p["status"].get("phase") == "Succeeded"
        )
        patch(kube, f"{RCS.format(ns=namespace)}/web-2", {"metadata": {"annotations": {
            "openshift.io/deployment.cancelled": "true",
            "openshift.io/deployment.status-reason": "cancelled by the user"}}})  # fmt: skip
    finally:
        os.kill(pid, signal.SIGCONT)
    rc = wait_rc(kube, namespace, "web-2", "Complete", "Failed", timeout=60)
    ann = rc["metadata"]["annotations"]
    assert ann["openshift.io/deployment.phase"] == "Complete", ann
    assert ann["openshift.io/deployment.cancelled"] == "true"  # left as OpenShift leaves it
    events = kube.get(f"/api/v1/namespaces/{namespace}/events", fieldSelector="involvedObject.name=web")
    assert any(e["reason"] == "FailedCancellation" for e in events["items"]), [
        e["reason"] for e in events["items"]
    ]


def test_a_reference_tag_holds_no_image(kube: Kube, namespace: str) -> None:
    """openshift-apiserver pkg/image/apiserver/registry/imagestream/strategy.go (tagsChanged,
    tagReferenceToTagEvent): a `DockerImage` tag with `reference: true` is not imported; its status item
    is the pull spec alone, with an empty `image`."""
    iss = ISS.format(ns=namespace)
    stream = image_stream("app", {"v1": {"kind": "DockerImage", "name": f"{APP}:v1"}})
    stream["spec"]["tags"][0]["reference"] = True
    kube.request("POST", iss, stream)
    item = status_tag(wait_for(kube, iss, "app", has_items("v1")), "v1")["items"][0]
    assert item["dockerImageReference"] == f"{APP}:v1" and not item.get("image"), item


def test_a_test_dc_ends_at_zero_replicas(kube: Kube, namespace: str) -> None:
    """openshift-controller-manager deployer_controller.go (handle: a test deployment that ends goes to 0
    in the same update) and deploymentconfig_controller.go (reconcileDeployments: a test DC's RCs stay at
    0): `spec.test` runs the pods only while the rollout runs."""
    create_dc(kube, namespace, dc_body("web", f"{APP}:v1", replicas=2, test=True))
    wait_rc(kube, namespace, "web-1", "Complete")
    wait_for(kube, RCS.format(ns=namespace), "web-1", lambda r: r["spec"]["replicas"] == 0)
    dc = wait_for(kube, DCS.format(ns=namespace), "web", lambda d: d["status"].get("replicas") == 0
                  and d["status"].get("observedGeneration") == d["metadata"]["generation"])  # fmt: skip
    assert dc["spec"]["replicas"] == 2


def test_an_annotation_trigger_splits_stream_and_tag_at_the_first_colon(kube: Kube, namespace: str) -> None:
    """openshift-controller-manager pkg/image/controller/trigger/image_trigger_controller.go (tagRetriever
    ImageStreamTag) and cache.go read an entry's name with library-go pkg/image/imageutil/helpers.go
    SplitImageStreamTag: the stream before the first colon, an empty tag is `latest` (`tool:` follows
    tool:latest), and a name without a colon never resolves."""
    ref = tool_stream(kube, namespace)
    deployments = f"/apis/apps/v1/namespaces/{namespace}/deployments"
    kube.request(
        "POST", deployments, annotated("empty-tag", [entry('containers[?(@.name=="app")].image', "tool:")])
    )
    kube.request(
        "POST", deployments, annotated("no-colon", [entry('containers[?(@.name=="app")].image', "tool")])
    )
    wait_for(kube, deployments, "empty-tag", lambda d: image_of(d, "app") == ref)
    assert image_of(kube.get(f"{deployments}/no-colon"), "app") == f"{APP}:app"


def test_the_image_policy_admission_rewrites_local_names_of_local_lookup_streams(
    kube: Kube, namespace: str
) -> None:
    """openshift/kubernetes openshift-kube-apiserver/admission/imagepolicy (resolveImageReference,
    resolveImageStreamTag, RewriteImagePullSpec; default rules cover apps/deployments with localNames):
    a Deployment's single-segment image `tool:latest` whose stream has `lookupPolicy.local` is rewritten
    on every write to the tag's pull spec by digest (`referencePolicy: Local`: the stream's
    `status.dockerImageRepository@sha256:...`, imagestreamtag/rest.go newISTag); a stream without local
    lookup leaves the name as it is."""
    iss = ISS.format(ns=namespace)
    local = image_stream("tool", {"latest": {"kind": "DockerImage", "name": f"{APP}:tool1"}})
    local["spec"]["lookupPolicy"] = {"local": True}
    local["spec"]["tags"][0]["referencePolicy"] = {"type": "Local"}
    kube.request("POST", iss, local)
    kube.request(
        "POST", iss, image_stream("other", {"latest": {"kind": "DockerImage", "name": f"{APP}:other"}})
    )
    stream = wait_for(kube, iss, "tool", has_items("latest"))
    wait_for(kube, iss, "other", has_items("latest"))
    image = status_tag(stream, "latest")["items"][0]["image"]
    expected = f"{stream['status']['dockerImageRepository']}@{image}"
    deployments = f"/apis/apps/v1/namespaces/{namespace}/deployments"
    body = annotated("web", [], init=False)
    del body["metadata"]["annotations"]
    body["spec"]["template"]["spec"]["containers"] = [
        {"name": "app", "image": "tool"},
        {"name": "side", "image": "other:latest"},
    ]
    created = kube.request("POST", deployments, body)
    assert image_of(created, "app") == expected, created["spec"]["template"]
    assert image_of(created, "side") == "other:latest"
    # an update is resolved again
    patch_body = {"spec": {"template": {"spec": {"containers": [{"name": "app", "image": "tool:latest"}]}}}}
    updated = kube.request(
        "PATCH", f"{deployments}/web", patch_body, content_type="application/strategic-merge-patch+json"
    )
    assert image_of(updated, "app") == expected


def test_a_cancelled_rollout_keeps_its_pods_until_the_newer_one_ends_then_goes_to_zero(
    kube: Kube, namespace: str
) -> None:
    """Who scales a failed RC down on OpenShift: neither its deployer pod (oc pkg/cli/deployer/deployer.go
    returns the strategy's error; the rolling updater scales nothing back) nor the cancel
    (openshift-controller-manager pkg/apps/deploymentconfig/deploymentconfig_controller.go
    cancelRunningRollouts only sets the cancel annotations; pkg/apps/deployer/deployer_controller.go
    deletes the deployer pod, then fails the RC), but the next deployer pod as it starts (deployer.go
    scales down every RC but `from` and `to`) or, once the latest RC has ended, the DC controller
    (reconcileDeployments: every RC but the newest Complete one to 0). So a cancelled RC keeps its pods
    while the newer RC has no deployer pod (here a ResourceQuota refuses it: rolloutExceededTimeoutSeconds
    fails it after timeoutSeconds, "unable to create deployer pod"), then goes to 0 with it."""
    quotas = f"/api/v1/namespaces/{namespace}/resourcequotas"
    rolling = {"type": "Rolling", "rollingParams": {"timeoutSeconds": 15}}
    create_dc(kube, namespace, dc_body("web", f"{APP}:v1", strategy=rolling))
    wait_rc(kube, namespace, "web-1", "Complete")
    kube.request("DELETE", f"/api/v1/namespaces/{namespace}/pods/web-1-deploy", {})
    rcs = RCS.format(ns=namespace)
    body = {"spec": {"template": {"spec": {"containers": [{"name": "app", "image": f"{APP}:v2-slow300"}]}}}}
    patch(kube, f"{DCS.format(ns=namespace)}/web", body)
    wait_for(kube, rcs, "web-2", lambda r: (r.get("status") or {}).get("replicas") == 1)  # its pod, not ready
    # web-1's pod, web-2's pod and web-2-deploy run: a quota of 2 lets no new pod in once one of them goes
    kube.request("POST", quotas, {"metadata": {"name": "pods"}, "spec": {"hard": {"pods": "2"}}})
    wait_for(kube, quotas, "pods", lambda q: (q.get("status") or {}).get("used", {}).get("pods") == "3")
    body = {"spec": {"template": {"spec": {"containers": [{"name": "app", "image": f"{APP}:v3"}]}}}}
    patch(
        kube, f"{DCS.format(ns=namespace)}/web", body
    )  # a new rollout cancels web-2 (its deployer pod goes)
    wait_rc(kube, namespace, "web-2", "Failed")
    wait_rc(kube, namespace, "web-3", "New")
    assert rc_replicas(kube, namespace) == {"web-1": 1, "web-2": 1, "web-3": 0}  # nobody scaled web-2 down
    failed = wait_rc(kube, namespace, "web-3", "Failed", timeout=90)
    assert failed["metadata"]["annotations"]["openshift.io/deployment.status-reason"] == (
        "unable to create deployer pod"
    )
    wait_for(kube, rcs, "web-2", lambda r: r["spec"]["replicas"] == 0)
    assert rc_replicas(kube, namespace) == {"web-1": 1, "web-2": 0, "web-3": 0}
