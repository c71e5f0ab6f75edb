"""The emulation records a DC rollout's cause where OpenShift does (issue 30 point 6), for
`rollguard.kinds.revision_causes` to read: each RC encodes the whole DC, its annotations (the
``kubernetes.io/change-cause`` rollguard writes) and ``status.details`` included, and carries
``details.message`` as its ``openshift.io/deployment.status-reason`` (library-go pkg/apps/appsutil/util.go
MakeDeployment); a config change is recorded as ConfigChange / "config change"
(openshift-controller-manager pkg/apps/deploymentconfig/deploymentconfig_controller.go
recordConfigChangeCause); a client's ``latestVersion + 1`` on the main resource keeps the stored status,
so the new RC carries the previous rollout's details (openshift-apiserver
pkg/apps/apiserver/registry/deployconfig/strategy.go PrepareForUpdate). Waits are watches on a condition.
"""

from __future__ import annotations

import json

import pytest

from sandbox.openshift.kube import JSON, ApiError, Kube
from tests.helpers.openshift_api import APP, DCS, RCS, create_dc, dc_body, patch, settled, wait_for, wait_rc

pytestmark = pytest.mark.cluster

CHANGE_CAUSE = "kubernetes.io/change-cause"
CONFIG_CHANGE = {"message": "config change", "causes": [{"type": "ConfigChange"}]}


def _encoded(rc: JSON) -> JSON:
    encoded: JSON = json.loads(rc["metadata"]["annotations"]["openshift.io/encoded-deployment-config"])
    return encoded


def test_an_rc_encodes_the_dcs_cause_and_change_cause(kube: Kube, namespace: str) -> None:
    dcs = DCS.format(ns=namespace)
    create_dc(kube, namespace, dc_body("web", f"{APP}:v1"))
    rc1 = wait_rc(kube, namespace, "web-1", "Complete")
    assert _encoded(rc1)["status"]["details"] == CONFIG_CHANGE
    assert rc1["metadata"]["annotations"]["openshift.io/deployment.status-reason"] == "config change"
    wait_for(kube, dcs, "web", settled)
    mark = "rollguard rollout run 20261203-081500-1a2b3c (revision 2)"
    body = {
        "metadata": {"annotations": {CHANGE_CAUSE: mark}},
        "spec": {"template": {"spec": {"containers": [{"name": "app", "image": f"{APP}:v2"}]}}},
    }
    patch(kube, f"{dcs}/web", body)  # one write: the mark and the change, as rollguard writes them
    rc2 = wait_rc(kube, namespace, "web-2", "Complete")
    encoded = _encoded(rc2)
    assert encoded["metadata"]["annotations"][CHANGE_CAUSE] == mark
    assert encoded["status"]["details"] == CONFIG_CHANGE and encoded["status"]["latestVersion"] == 2
    assert CHANGE_CAUSE not in (rc2["spec"]["template"]["metadata"].get("annotations") or {})


def test_a_latest_version_bump_keeps_the_details_of_the_rollout_before(kube: Kube, namespace: str) -> None:
    dcs = DCS.format(ns=namespace)
    create_dc(kube, namespace, dc_body("web", f"{APP}:v1"))
    wait_rc(kube, namespace, "web-1", "Complete")
    dc = wait_for(kube, dcs, "web", settled)
    mark = "rollguard redeploy run 20261203-090000-abcdef (revision 2)"
    for _ in range(10):  # a client's update, read again on a conflict (the controller writes the status)
        body = {
            **dc,
            "metadata": {**dc["metadata"], "annotations": {CHANGE_CAUSE: mark}},
            "status": {**dc["status"], "latestVersion": 2},
        }
        try:
            kube.request("PUT", f"{dcs}/web", body)
            break
        except ApiError as e:
            if e.status != 409:
                raise
            dc = kube.get(f"{dcs}/web")
    rc2 = wait_rc(kube, namespace, "web-2", "Complete")
    encoded = _encoded(rc2)
    assert encoded["metadata"]["annotations"][CHANGE_CAUSE] == mark
    # no trigger fired: the stored details are the first rollout's, and so is the RC's status-reason
    assert encoded["status"]["details"] == CONFIG_CHANGE
    assert rc2["metadata"]["annotations"]["openshift.io/deployment.status-reason"] == "config change"
    rc1 = kube.get(f"{RCS.format(ns=namespace)}/web-1")
    assert encoded["spec"]["template"] == _encoded(rc1)["spec"]["template"]
