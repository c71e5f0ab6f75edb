"""The emulated deployer's lifecycle hooks, Recreate waits and Custom strategy, on the live sandbox.

Each test names the OpenShift code it mirrors: oc pkg/cli/deployer/deployer.go (strategyFor),
pkg/cli/deployer/strategy/support/lifecycle.go (hook pods, failure policies, tagImages),
pkg/cli/deployer/strategy/recreate/recreate.go and rolling/rolling.go (where each hook runs), and
openshift-controller-manager pkg/apps/deployer/deployer_controller.go (makeDeployerPod with customParams,
setDeployerPodsOwnerRef, cleanupDeployerPods). A hook says what it does by its command (the sandbox
registry's rules: `migrate-slow3` runs 3 s and ends, `migrate-exit1` fails).
"""

from __future__ import annotations

import pytest
from kubernetes import client

from sandbox.openshift.kube import JSON, ApiError, Kube
from tests.helpers.openshift_api import APP, ISS, RCS, create_dc, dc_body, patch, set_image, wait_for, wait_rc

pytestmark = pytest.mark.cluster
PODS = "/api/v1/namespaces/{ns}/pods"


def hook(command: list[str], policy: str = "Abort") -> JSON:
    return {
        "failurePolicy": policy,
        "execNewPod": {"containerName": "app", "command": command, "env": [{"name": "STEP", "value": "1"}]},
    }


def ended(pod: JSON) -> bool:
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")


def deployer_message(kube: Kube, ns: str, rc: str) -> str:
    pod = wait_for(kube, PODS.format(ns=ns), f"{rc}-deploy", ended)
    (status,) = pod["status"]["containerStatuses"]
    return str(status["state"]["terminated"].get("message", ""))


def test_recreate_runs_pre_mid_post_hook_pods_as_lifecycle_go_makes_them(
    kube: Kube, k8s: client.ApiClient, namespace: str
) -> None:
    """recreate.go: pre before anything is scaled, mid once the old RC is at zero and its pods are gone,
    post after the new RC is up; each in pod `<rc>-hook-<kind>` (createHookPodManifest), owned by the RC
    but not controlled (setDeployerPodsOwnerRef), restartPolicy Never, activeDeadlineSeconds at most the
    strategy's, the strategy's labels."""
    strategy = {
        "type": "Recreate",
        "labels": {"team": "shop"},
        "recreateParams": {
            "pre": hook(["migrate-slow1"]),
            "mid": hook(["migrate-slow3"]),
            "post": hook(["notify"]),
        },
    }
    create_dc(kube, namespace, dc_body("web", f"{APP}:v1", strategy=strategy))
    wait_rc(kube, namespace, "web-1", "Complete", timeout=60)
    set_image(kube, namespace, "web", f"{APP}:v2")
    mid = wait_for(
        kube, PODS.format(ns=namespace), "web-2-hook-mid", lambda p: p["status"].get("phase") == "Running"
    )
    rcs = {
        rc["metadata"]["name"]: rc["spec"]["replicas"] for rc in kube.get(RCS.format(ns=namespace))["items"]
    }
    assert rcs == {"web-1": 0, "web-2": 0}, rcs  # old down, new not up while the mid hook runs
    pre = kube.get(f"{PODS.format(ns=namespace)}/web-2-hook-pre")
    assert pre["status"]["phase"] == "Succeeded"
    assert pre["metadata"]["labels"] == {
        "openshift.io/deployer-pod-for.name": "web-2", "openshift.io/deployer-pod.type": "hook-pre", "team": "shop",
    }  # fmt: skip
    assert pre["metadata"]["annotations"]["openshift.io/deployment.name"] == "web-2"
    (owner,) = pre["metadata"]["ownerReferences"]
    assert (
        owner["kind"] == "ReplicationController" and owner["name"] == "web-2" and not owner.get("controller")
    )
    spec = pre["spec"]
    (container,) = spec["containers"]
    assert (container["name"], container["image"], container["command"]) == (
        "lifecycle",
        f"{APP}:v2",
        ["migrate-slow1"],
    )
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert env == {
        "STEP": "1",
        "OPENSHIFT_DEPLOYMENT_NAME": "web-2",
        "OPENSHIFT_DEPLOYMENT_NAMESPACE": namespace,
    }
    assert spec["restartPolicy"] == "Never" and 0 < spec["activeDeadlineSeconds"] <= 21600
    assert mid["metadata"]["labels"]["openshift.io/deployer-pod.type"] == "hook-mid"
    wait_rc(kube, namespace, "web-2", "Complete", timeout=60)
    post = wait_for(kube, PODS.format(ns=namespace), "web-2-hook-post", ended)
    assert post["status"]["phase"] == "Succeeded"
    text = str(client.CoreV1Api(k8s).read_namespaced_pod_log("web-2-deploy", namespace))
    assert text.index("--> pre: Running hook pod ...") < text.index("--> Scaling web-1 down to zero")
    assert text.index("--> mid: Success") < text.index("--> Scaling web-2 to 1")


def test_a_failed_abort_hook_fails_the_rc_with_openshifts_message(kube: Kube, namespace: str) -> None:
    """lifecycle.go Execute: `the pre hook failed: <pod status message>, aborting rollout of ns/rc`, wrapped
    by rolling.go as `pre hook failed: ...`; kcmdutil.CheckErr prints it as the deployer's last line."""
    body = dc_body(
        "web", f"{APP}:v1", strategy={"type": "Rolling", "rollingParams": {"pre": hook(["migrate"])}}
    )
    create_dc(kube, namespace, body)
    wait_rc(kube, namespace, "web-1", "Complete", timeout=60)
    set_image(kube, namespace, "web", f"{APP}:v2-exit1")  # the hook runs the new image: it fails
    wait_rc(kube, namespace, "web-2", "Failed", timeout=60)
    assert deployer_message(kube, namespace, "web-2") == (
        f"error: pre hook failed: the pre hook failed: , aborting rollout of {namespace}/web-2"
    )
    pod = kube.get(f"{PODS.format(ns=namespace)}/web-2-hook-pre")
    assert pod["status"]["phase"] == "Failed"
    rcs = {
        rc["metadata"]["name"]: rc["spec"]["replicas"] for rc in kube.get(RCS.format(ns=namespace))["items"]
    }
    assert rcs == {"web-1": 1, "web-2": 0}, rcs  # nothing was scaled: the old version still runs


def test_an_ignored_hook_failure_lets_the_rollout_go_on(kube: Kube, namespace: str) -> None:
    """lifecycle.go Execute, LifecycleHookFailurePolicyIgnore: a Failed event "(ignore)", and on."""
    body = dc_body(
        "web",
        f"{APP}:v1",
        strategy={"type": "Rolling", "rollingParams": {"post": hook(["notify-exit1"], "Ignore")}},
    )
    create_dc(kube, namespace, body)
    wait_rc(kube, namespace, "web-1", "Complete", timeout=60)
    assert kube.get(f"{PODS.format(ns=namespace)}/web-1-hook-post")["status"]["phase"] == "Failed"
    events = kube.get(f"/api/v1/namespaces/{namespace}/events", fieldSelector="involvedObject.name=web")[
        "items"
    ]
    assert any(
        e["message"].startswith("The post-hook failed: ") and "(ignore), rollout of" in e["message"]
        for e in events
    )


def test_a_retry_hook_is_restarted_until_cancelled(kube: Kube, namespace: str) -> None:
    """lifecycle.go createHookPodManifest: Retry is restartPolicy OnFailure (the kubelet retries); a
    cancelled rollout's hook pods go with its deployer pod (deployer_controller.go cleanupDeployerPods)."""
    body = dc_body(
        "web", f"{APP}:v1", strategy={"type": "Rolling", "rollingParams": {"pre": hook(["migrate"], "Retry")}}
    )
    create_dc(kube, namespace, body)
    wait_rc(kube, namespace, "web-1", "Complete", timeout=60)
    set_image(kube, namespace, "web", f"{APP}:v2-exit1")
    pod = wait_for(
        kube, PODS.format(ns=namespace), "web-2-hook-pre",
        lambda p: any(c.get("restartCount", 0) >= 2 for c in p["status"].get("containerStatuses") or []),
    )  # fmt: skip
    assert pod["spec"]["restartPolicy"] == "OnFailure"
    assert wait_rc(kube, namespace, "web-2", "Running")  # still running: a Retry hook holds the rollout
    patch(kube, f"{RCS.format(ns=namespace)}/web-2", {"metadata": {"annotations": {
        "openshift.io/deployment.cancelled": "true", "openshift.io/deployment.status-reason": "cancelled by the user"}}})  # fmt: skip
    wait_rc(kube, namespace, "web-2", "Failed")
    names = [p["metadata"]["name"] for p in kube.get(PODS.format(ns=namespace))["items"]]
    assert "web-2-hook-pre" not in names and "web-2-deploy" not in names, names


def test_a_tag_images_hook_tags_the_new_image(kube: Kube, namespace: str) -> None:
    """lifecycle.go tagImages: the container's image as ImageStreamTag `to` (the stream provisioned)."""
    tag = {
        "failurePolicy": "Abort",
        "tagImages": [{"containerName": "app", "to": {"kind": "ImageStreamTag", "name": "web:deployed"}}],
    }
    create_dc(
        kube,
        namespace,
        dc_body("web", f"{APP}:v1", strategy={"type": "Rolling", "rollingParams": {"post": tag}}),
    )
    wait_rc(kube, namespace, "web-1", "Complete", timeout=60)
    stream = wait_for(kube, ISS.format(ns=namespace), "web", lambda s: bool(s.get("spec", {}).get("tags")))
    (spec_tag,) = stream["spec"]["tags"]
    assert spec_tag["name"] == "deployed" and spec_tag["from"] == {"kind": "DockerImage", "name": f"{APP}:v1"}


def test_the_custom_strategy_runs_its_own_image(kube: Kube, namespace: str) -> None:
    """deployer_controller.go makeDeployerContainer: customParams give the deployer pod's image, command
    and environment; the RC follows that pod's exit. The stock deployer image cannot run a Custom
    strategy (deployer.go strategyFor: `unsupported strategy type: Custom`)."""
    custom = {
        "image": f"{APP}:deployer-slow2",
        "command": ["/bin/deploy"],
        "environment": [{"name": "MODE", "value": "fast"}],
    }
    create_dc(
        kube, namespace, dc_body("web", f"{APP}:v1", strategy={"type": "Custom", "customParams": custom})
    )
    wait_rc(kube, namespace, "web-1", "Complete", timeout=60)
    pod = kube.get(f"{PODS.format(ns=namespace)}/web-1-deploy")
    (container,) = pod["spec"]["containers"]
    assert (container["image"], container["command"]) == (f"{APP}:deployer-slow2", ["/bin/deploy"])
    assert {"name": "MODE", "value": "fast"} in container["env"]
    failing = dc_body(
        "bad", f"{APP}:v1", strategy={"type": "Custom", "customParams": {"image": f"{APP}:deployer-exit1"}}
    )
    create_dc(kube, namespace, failing)
    wait_rc(kube, namespace, "bad-1", "Failed", timeout=60)
    stock = dc_body(
        "stock",
        f"{APP}:v1",
        strategy={"type": "Custom", "customParams": {"environment": [{"name": "A", "value": "b"}]}},
    )
    create_dc(kube, namespace, stock)
    wait_rc(kube, namespace, "stock-1", "Failed", timeout=60)
    assert deployer_message(kube, namespace, "stock-1") == "error: unsupported strategy type: Custom"


def test_hooks_and_custom_params_are_validated_as_openshift_validates_them(
    kube: Kube, namespace: str
) -> None:
    """openshift-apiserver pkg/apps/apis/apps/validation/validation.go validateLifecycleHook,
    validateExecNewPod, validateRecreateParams (pre, mid, post), validateDeploymentStrategy (customParams
    required for Custom): a 422 naming each field."""
    recreate = {
        "type": "Recreate",
        "recreateParams": {
            "pre": {
                "execNewPod": {
                    "containerName": "app",
                    "command": ["x"],
                    "env": [{"name": "bad-name", "value": "1"}],
                }
            },
            "mid": {"failurePolicy": "Abort"},
            "post": {
                "failurePolicy": "Ignore",
                "tagImages": [{"containerName": "nope", "to": {"kind": "DockerImage"}}],
            },
        },
    }
    with pytest.raises(ApiError) as refused:
        create_dc(kube, namespace, dc_body("web", f"{APP}:v1", strategy=recreate))
    message = str(refused.value.body.get("message"))
    assert refused.value.status == 422, message
    for expected in (
        "spec.strategy.recreateParams.pre.failurePolicy: Required value",
        'spec.strategy.recreateParams.pre.execNewPod.env[0].name: Invalid value: "bad-name"',
        'spec.strategy.recreateParams.mid: Invalid value: "<empty>": One of execNewPod or tagImages must be specified',
        'spec.strategy.recreateParams.post.tagImages[0].containerName: Invalid value: "nope": no container "nope" found',
        "spec.strategy.recreateParams.post.tagImages[0].to.kind: Invalid value: \"DockerImage\": Must be 'ImageStreamTag'",
        "spec.strategy.recreateParams.post.tagImages[0].to.name: Required value: a destination tag name is required",
    ):
        assert expected in message, message
    with pytest.raises(ApiError) as custom:
        create_dc(kube, namespace, dc_body("web", f"{APP}:v1", strategy={"type": "Custom"}))
    assert "spec.strategy.customParams: Required value" in str(custom.value.body.get("message"))
