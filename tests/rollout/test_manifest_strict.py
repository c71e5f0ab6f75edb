"""Manifests as strict as ``kubectl apply`` (issue 31): a misspelled field is refused, never dropped.

Before: ``-f`` with ``envv:`` in a container passed the dry run (the API server drops a field its type
does not have), printed a clean diff and exited 0; the env was never applied, while ``kubectl apply``
refuses the same file (``unknown field "envv"``). Now the preflight checks every field against the
schema the API server publishes (``/openapi/v2``; the sandbox's kube-apiserver 1.20 has no
``fieldValidation=Strict``), for a Deployment and for a DeploymentConfig's pod template alike (a
PodTemplateSpec in openshift/api apps/v1 types.go, whatever the emulation's open CRD schema says):
exit 2, the field and its path named, nothing changed.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from tests.helpers.cluster import (
    NEW,
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
            result = rollguard(sandbox.kubeconfig, "rollout", "-n", namespace, "-l", SELECTOR, "-f", str(manifest), *extra)
            assert result.code == 2, result.stdout + result.stderr
            assert '"spec.template.spec.containers[0].envv" (not a field of io.k8s.api.core.v1.Container)' in result.stderr
            assert "unknown field" in result.stderr
    assert '"spec.template.spec.restartPolicyy"' in result.stderr  # every unknown field, not the first only
    assert resource_versions(client, namespace) == before
