"""Templates compared as OpenShift compares them (issue 24, point 3), on the live sandbox.

openshift-controller-manager pkg/apps/deploymentconfig/deploymentconfig_controller.go (hasLatestPodTemplate)
decodes the latest RC's `openshift.io/encoded-deployment-config` (library-go
pkg/apps/appsserialization/serialize.go DecodeDeploymentConfig) and compares `Spec.Template` typed, with
`reflect.DeepEqual`: a `"creationTimestamp": null` (what a controller built on Kubernetes libraries before
1.33 writes into every encoded template) or a `null` list is the same as none. The emulation's DC
controller compares so too (sandbox/openshift/triggers.py rollout_details, appsutil.normalized): it starts
no rollout for such an RC, as OpenShift does not. rollguard must read the DC as running its template.
"""

from __future__ import annotations

import json
from pathlib import Path

from rollguard.core.resources import DEPLOYMENT_CONFIGS, REPLICATION_CONTROLLERS
from tests.helpers.cluster import (
    DC,
    NEW,
    NEWER,
    OLD,
    SELECTOR,
    create_group,
    dc_body,
    rollguard,
    view,
    wait_until,
)
from tests.helpers.scenarios import guarded_rollout, states

ENCODED = "openshift.io/encoded-deployment-config"


def encoded_by_an_older_controller(client, namespace: str, rc_name: str) -> None:
    """Rewrite an RC's encoded DC as an openshift-controller-manager on Kubernetes < 1.33 wrote it: the
    template's metadata with `"creationTimestamp": null`, and empty members spelled `null`."""
    rc = client.get(REPLICATION_CONTROLLERS, rc_name, namespace=namespace)
    config = json.loads(rc["metadata"]["annotations"][ENCODED])
    template = config["spec"]["template"]
    template["metadata"]["creationTimestamp"] = None
    template["spec"]["volumes"] = None
    for container in template["spec"]["containers"]:
        container["env"] = None
    text = json.dumps(config, separators=(",", ":")) + "\n"
    client.patch(
        REPLICATION_CONTROLLERS, rc_name, {"metadata": {"annotations": {ENCODED: text}}}, namespace=namespace
    )


def test_an_rc_encoded_by_an_older_controller_still_runs_its_template(
    sandbox, namespace, client, tmp_path: Path
):
    """After an upgrade every DC not rolled out since has an RC encoded the old way: it is healthy (not
    `stuck`, not drifted), the drift check is clean, and the next guarded rollout starts from it."""
    create_group(client, namespace, [dc_body("api", OLD)])
    guarded_rollout(sandbox, namespace, {"dc/api": NEW})
    encoded_by_an_older_controller(client, namespace, "api-2")
    # the DC controller looks at the DC again (an RC of it changed) and, as OpenShift, starts nothing
    dc = wait_until(
        client, DEPLOYMENT_CONFIGS, namespace, "api",
        lambda d: d["status"].get("observedGeneration") == d["metadata"]["generation"],
    )  # fmt: skip
    assert dc["status"]["latestVersion"] == 2
    rc = client.get(REPLICATION_CONTROLLERS, "api-2", namespace=namespace)
    assert '"creationTimestamp":null' in rc["metadata"]["annotations"][ENCODED]

    found = states(client, namespace)["dc/api"]
    assert found.healthy, found.findings
    assert view(client, namespace, DC, "api").complete
    drift = rollguard(sandbox.kubeconfig, "drift-check", "-n", namespace, report=tmp_path / "drift.json")
    assert drift.code == 0, drift.stdout + drift.stderr
    status = rollguard(sandbox.kubeconfig, "status", "-n", namespace, "-l", SELECTOR)
    assert status.code == 0 and "stuck" not in status.stdout, status.stdout + status.stderr

    result = rollguard(
        sandbox.kubeconfig, "rollout", "-n", namespace, "-l", SELECTOR, "--image", f"dc/api={NEWER}",
        report=tmp_path / "report.json",
    )  # fmt: skip
    assert result.code == 0, result.stdout + result.stderr
    assert result.report["workloads"][0]["revision_before"] == 2
    assert view(client, namespace, DC, "api").images == {"app": NEWER}
