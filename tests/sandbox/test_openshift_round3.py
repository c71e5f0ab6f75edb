"""The OpenShift emulation against the live sandbox, round 3 (issue 24): what production DCs meet daily.

Each test names the OpenShift file whose behaviour it checks in the emulation (sandbox/openshift/);
`docs/openshift-fidelity.md` has a row for each. Waits are watches on a condition, never sleeps.
"""

from __future__ import annotations

import pytest

from sandbox.cluster import Sandbox
from sandbox.openshift.kube import MERGE_PATCH, Kube
from tests.sandbox.test_openshift import (
    APP,
    DCS,
    RCS,
    create_dc,
    dc_body,
    phase_is,
    wait_for,
    wait_rc,
)

pytestmark = pytest.mark.cluster


@pytest.fixture(scope="module")
def kube(sandbox: Sandbox) -> Kube:
    return Kube(str(sandbox.kubeconfig))


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
