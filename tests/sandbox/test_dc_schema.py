"""The DeploymentConfig's type in the emulation: exactly openshift/api's fields (issue 31).

openshift/api apps/v1 types.go (DeploymentConfigSpec, DeploymentStrategy): OpenShift decodes a DC into
that type, so a spec field it lacks is dropped on write, and its API server publishes the type in
/openapi/v2 for clients (kubectl's validation, rollguard's manifest check) to refuse such a field. The
emulation's CRD names the same fields: an unknown one is pruned, never stored, and the published schema
lists the spec's fields.
"""

from __future__ import annotations

import time

import pytest

from sandbox.openshift.kube import Kube
from tests.helpers.openshift_api import DCS, create_dc, dc_body

pytestmark = pytest.mark.cluster
GVK = {"group": "apps.openshift.io", "version": "v1", "kind": "DeploymentConfig"}


def published_dc(kube: Kube, timeout: float = 60) -> dict:
    """The DC's definition in /openapi/v2 once the API server's OpenAPI controller has published the
    CRD's schema (it does so on its own time after the CRD is created; no watch tells when)."""
    deadline = time.monotonic() + timeout
    while True:
        for definition in kube.get("/openapi/v2")["definitions"].values():
            if GVK in definition.get("x-kubernetes-group-version-kind", []) and definition["properties"][
                "spec"
            ].get("properties"):
                return dict(definition)
        assert time.monotonic() < deadline, "the DC's schema was not published"
        time.sleep(1)


def test_a_spec_field_the_type_lacks_is_dropped_and_the_schema_is_published(
    kube: Kube, namespace: str
) -> None:
    body = dc_body("typed", "registry.local/shop/api:v1", strategyy={"type": "Rolling"})
    body["spec"]["strategy"] = {
        "type": "Rolling",
        "rollingParamz": {},
        "rollingParams": {"timeoutSeconds": 60},
    }
    stored = create_dc(kube, namespace, body)
    assert "strategyy" not in stored["spec"]
    assert "rollingParamz" not in stored["spec"]["strategy"]
    assert stored["spec"]["strategy"]["rollingParams"]["timeoutSeconds"] == 60
    again = kube.get(f"{DCS.format(ns=namespace)}/typed")
    assert "strategyy" not in again["spec"]

    dc = published_dc(kube)
    spec = dc["properties"]["spec"]["properties"]
    assert set(spec) == {"replicas", "paused", "test", "minReadySeconds", "revisionHistoryLimit", "selector",
                         "strategy", "triggers", "template"}  # fmt: skip
    assert "rollingParams" in spec["strategy"]["properties"]
