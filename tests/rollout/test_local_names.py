"""The image policy admission's rewrite of a local name is not someone else's change (issue 24, point 7).

openshift/kubernetes openshift-kube-apiserver/admission/imagepolicy (resolveImageStreamTag,
RewriteImagePullSpec) rewrites a single-segment image (`api:v2`) of a Deployment or DC whose ImageStream
has `lookupPolicy.local` to the tag's pull spec by digest, on every write; emulated by
sandbox/openshift/imagepolicy.py (tests/sandbox/test_openshift_round3.py). When the answer to
rollguard's write is lost, its retry finds the rewritten image: that is its own write as the API stored
it, not a hotfix (`kinds/templates.py` `local_name_rewrite`, `as_admitted`).
"""

from __future__ import annotations

from pathlib import Path

from rollguard.core.resources import DEPLOYMENTS, IMAGE_STREAMS
from tests.helpers.cluster import (
    DEPLOYMENT,
    SELECTOR,
    create_group,
    deployment_body,
    rollguard,
    view,
    wait_until,
)
from tests.helpers.proxy import FaultPlan, FaultProxy

V1 = "registry.local/shop/api:v1"
V2 = "registry.local/shop/api:v2"


def test_a_lost_reply_to_a_write_of_a_local_name_is_recognised_as_ours(
    sandbox, namespace, client, tmp_path: Path
):
    stream = {"apiVersion": "image.openshift.io/v1", "kind": "ImageStream", "metadata": {"name": "api"},
              "spec": {"lookupPolicy": {"local": True}, "tags": [
                  {"name": t, "from": {"kind": "DockerImage", "name": ref}, "referencePolicy": {"type": "Local"}}
                  for t, ref in (("v1", V1), ("v2", V2))]}}  # fmt: skip
    client.create(IMAGE_STREAMS, stream, namespace=namespace)
    wait_until(client, IMAGE_STREAMS, namespace, "api",
               lambda s: len([t for t in (s.get("status") or {}).get("tags") or [] if t.get("items")]) == 2)  # fmt: skip
    create_group(client, namespace, [deployment_body("web", "api:v1")])
    running = view(client, namespace, DEPLOYMENT, "web").images["app"]
    assert running.startswith("image-registry.openshift-image-registry.svc:5000/") and "@sha256:" in running
    with FaultProxy(sandbox.server, sandbox.ca, seed=24) as proxy:
        kubeconfig = proxy.kubeconfig(sandbox.kubeconfig, tmp_path / "kubeconfig")
        proxy.reset(FaultPlan(rates={"drop_after": 1.0}, verbs=frozenset({"update"}),
                              resources=frozenset({"deployments"}), mutating_only=True, max_faults=1))  # fmt: skip
        result = rollguard(
            kubeconfig, "rollout", "-n", namespace, "-l", SELECTOR, "--image", "deploy/web=api:v2",
            report=tmp_path / "report.json",
        )  # fmt: skip
        assert proxy.faults["drop_after"] == 1
    assert result.code == 0, result.stdout + result.stderr
    now = client.get(DEPLOYMENTS, "web", namespace=namespace)["spec"]["template"]["spec"]["containers"][0][
        "image"
    ]
    assert (
        now != running
        and now.startswith("image-registry.openshift-image-registry.svc:5000/")
        and "@sha256:" in now
    )
    assert view(client, namespace, DEPLOYMENT, "web").complete
