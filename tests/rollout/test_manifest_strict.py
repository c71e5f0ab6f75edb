"""Manifests as strict as ``kubectl apply`` (issue 31): a misspelled field is refused, never dropped.

Before: ``-f`` with ``envv:`` in a container passed the dry run (the API server drops a field its type
does not have), printed a clean diff and exited 0; the env was never applied, while ``kubectl apply``
refuses the same file (``unknown field "envv"``). Now the preflight checks every field against the
schema the API server publishes (``/openapi/v2``; the sandbox's kube-apiserver 1.20 has no
``fieldValidation=Strict``), for a Deployment and a DeploymentConfig alike (its spec by the type the
emulation publishes as openshift/api apps/v1 types.go declares it, its pod template as the core/v1
PodTemplateSpec that file names, which the CRD leaves open): exit 2, the field and its path named,
nothing changed.

Removals: before, a manifest that dropped `env:` or `resources:` kept the live values; now what the
previous verified run's manifest set and the new one omits is removed, as kubectl apply removes it,
while a label someone else added stays.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from rollguard.core.resources import DEPLOYMENT_CONFIGS, DEPLOYMENTS
from tests.helpers.cluster import (
    NEW,
    NEWER,
    OLD,
    SELECTOR,
    create_group,
    dc_body,
    deployment_body,
    resource_versions,
    rollguard,
)


def test_a_misspelled_field_is_refused_with_its_path(sandbox, namespace, client, tmp_path: Path):
    create_group(client, namespace, [dc_body("dc1", OLD), deployment_body("web", OLD)])
    dc1, web = dc_body("dc1", NEW), deployment_body("web", NEW)
    web["spec"]["template"]["spec"]["containers"][0]["envv"] = [{"name": "FEATURE", "value": "on"}]
    dc1["spec"]["template"]["spec"]["containers"][0]["envv"] = [{"name": "FEATURE", "value": "on"}]
    dc1["spec"]["template"]["spec"]["restartPolicyy"] = "Always"
    before = resource_versions(client, namespace)
    for body in (web, dc1):
        manifest = tmp_path / f"{body['metadata']['name']}.yaml"
        manifest.write_text(yaml.safe_dump(body))
        for extra in ((), ("--dry-run",)):
            result = rollguard(
                sandbox.kubeconfig, "rollout", "-n", namespace, "-l", SELECTOR, "-f", str(manifest), *extra
            )
            assert result.code == 2, result.stdout + result.stderr
            assert (
                '"spec.template.spec.containers[0].envv" (not a field of io.k8s.api.core.v1.Container)'
                in result.stderr
            )
            assert "unknown field" in result.stderr
    assert '"spec.template.spec.restartPolicyy"' in result.stderr  # every unknown field, not the first only
    # a field of the DC spec itself, by the type the API server publishes (openshift/api DeploymentConfigSpec)
    dc1 = dc_body("dc1", NEW)
    dc1["spec"]["strategy"]["rollingParamz"] = {"timeoutSeconds": 60}
    manifest = tmp_path / "strategy.yaml"
    manifest.write_text(yaml.safe_dump(dc1))
    result = rollguard(sandbox.kubeconfig, "rollout", "-n", namespace, "-l", SELECTOR, "-f", str(manifest))
    assert result.code == 2 and '"spec.strategy.rollingParamz"' in result.stderr, (
        result.stdout + result.stderr
    )
    assert resource_versions(client, namespace) == before


def test_what_the_last_manifest_set_and_the_next_omits_is_removed(sandbox, namespace, client, tmp_path: Path):
    create_group(client, namespace, [dc_body("dc1", OLD), deployment_body("web", OLD)])
    first = [dc_body("dc1", NEW), deployment_body("web", NEW)]
    for body in first:
        body["metadata"]["labels"]["release"] = "r2"
        container = body["spec"]["template"]["spec"]["containers"][0]
        container["env"] = [{"name": "FEATURE", "value": "on"}]
        container["resources"] = {"limits": {"cpu": "200m"}}
    manifest = tmp_path / "release.yaml"
    manifest.write_text(yaml.safe_dump_all(first))
    one = rollguard(sandbox.kubeconfig, "rollout", "-n", namespace, "-l", SELECTOR, "-f", str(manifest))
    assert one.code == 0, one.stdout + one.stderr
    client.patch(DEPLOYMENTS, "web", {"metadata": {"labels": {"owner": "team-b"}}}, namespace=namespace)

    manifest.write_text(yaml.safe_dump_all([dc_body("dc1", NEWER), deployment_body("web", NEWER)]))
    two = rollguard(sandbox.kubeconfig, "rollout", "-n", namespace, "-l", SELECTOR, "-f", str(manifest))
    assert two.code == 0, two.stdout + two.stderr
    for res, name in ((DEPLOYMENT_CONFIGS, "dc1"), (DEPLOYMENTS, "web")):
        obj = client.get(res, name, namespace=namespace)
        container = obj["spec"]["template"]["spec"]["containers"][0]
        assert container["image"] == NEWER, name
        assert "env" not in container and not container.get("resources"), (name, container)
        assert "release" not in obj["metadata"]["labels"], (name, obj["metadata"]["labels"])
    assert client.get(DEPLOYMENTS, "web", namespace=namespace)["metadata"]["labels"]["owner"] == "team-b"
