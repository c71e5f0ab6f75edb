"""Smaller differences between OpenShift and what rollguard assumed (issue 24, point 7), on the live sandbox.

Each behaviour is emulated after the OpenShift file its docstring names (sandbox/openshift/, tested by
tests/sandbox/test_openshift_round3.py) and met by rollguard here.
"""

from __future__ import annotations

from pathlib import Path

from rollguard.core.resources import DEPLOYMENT_CONFIGS, IMAGE_STREAMS, NAMESPACES, REPLICATION_CONTROLLERS
from tests.helpers.cluster import (
    DC,
    NEW,
    OLD,
    SELECTOR,
    create_group,
    dc_body,
    resource_versions,
    rollguard,
    view,
    wait_until,
)
from tests.helpers.scenarios import image_stream, states


def test_promoting_a_reference_tag_is_refused_in_preflight(sandbox, namespace, client, tmp_path: Path):
    """openshift-apiserver pkg/image/apiserver/registry/imagestream/strategy.go (tagsChanged,
    tagReferenceToTagEvent): a `reference: true` tag is never imported, its status item names a pull
    spec and no image. There is nothing to copy or pin: `--promote-from` refuses it before the lock (exit
    2, the tag named, nothing changed), instead of failing after it."""
    image_stream(client, namespace, "api", {"latest": OLD})
    trigger = {"type": "ImageChange", "imageChangeParams": {
        "automatic": True, "containerNames": ["app"], "from": {"kind": "ImageStreamTag", "name": "api:latest"}}}  # fmt: skip
    create_group(client, namespace, [dc_body("api", " ", triggers=[{"type": "ConfigChange"}, trigger])])
    cd = f"{namespace[:50]}-cd"
    client.create(NAMESPACES, {"metadata": {"name": cd}})
    try:
        stream = {"apiVersion": "image.openshift.io/v1", "kind": "ImageStream", "metadata": {"name": "api"},
                  "spec": {"tags": [{"name": "abc123", "reference": True,
                                     "from": {"kind": "DockerImage", "name": NEW}}]}}  # fmt: skip
        client.create(IMAGE_STREAMS, stream, namespace=cd)
        wait_until(client, IMAGE_STREAMS, cd, "api", lambda s: bool((s.get("status") or {}).get("tags")))
        before = resource_versions(client, namespace)
        result = rollguard(
            sandbox.kubeconfig, "rollout", "-n", namespace, "-l", SELECTOR, "--promote-from", cd, "--tag", "abc123",
            report=tmp_path / "report.json",
        )  # fmt: skip
        assert result.code == 2, result.stdout + result.stderr
        assert (
            f"tag 'abc123' of ImageStream {cd}/api is a reference tag (reference: true)" in result.stderr
        ), result.stderr
        assert result.report["status"] == "refused"
        assert resource_versions(client, namespace) == before
    finally:
        client.delete(NAMESPACES, cd)


def test_a_test_dc_rolls_out_and_ends_at_zero_replicas_without_being_unavailable(
    sandbox, namespace, client, tmp_path: Path
):
    """openshift-controller-manager pkg/apps/deployer/deployer_controller.go (handle) and
    deploymentconfig_controller.go (reconcileDeployments): a `spec.test` DC runs its pods while the
    rollout runs, then its RCs go to 0. That is its healthy end: not `unavailable`, and the drift check
    does not page on it; a guarded rollout of it succeeds."""
    body = dc_body("api", OLD, replicas=2)
    body["spec"]["test"] = True
    create_group(client, namespace, [body])
    wait_until(client, DEPLOYMENT_CONFIGS, namespace, "api", lambda d: d["status"].get("replicas") == 0)
    result = rollguard(
        sandbox.kubeconfig, "rollout", "-n", namespace, "-l", SELECTOR, "--image", f"dc/api={NEW}",
        report=tmp_path / "report.json",
    )  # fmt: skip
    assert result.code == 0, result.stdout + result.stderr
    assert view(client, namespace, DC, "api").images == {"app": NEW}
    wait_until(client, REPLICATION_CONTROLLERS, namespace, "api-2", lambda r: r["spec"]["replicas"] == 0)
    wait_until(client, DEPLOYMENT_CONFIGS, namespace, "api", lambda d: d["status"].get("replicas") == 0
               and d["status"].get("observedGeneration") == d["metadata"]["generation"])  # fmt: skip
    found = states(client, namespace)["dc/api"]
    assert "unavailable" not in {f.name for f in found.findings}, found.findings
    drift = rollguard(sandbox.kubeconfig, "drift-check", "-n", namespace, report=tmp_path / "drift.json")
    assert drift.code == 0, drift.stdout + drift.stderr
