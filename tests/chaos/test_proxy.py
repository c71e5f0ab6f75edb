"""The fault proxy's own rules, without a cluster: request classification and seeded determinism."""

from __future__ import annotations

import pytest

from tests.helpers.proxy import FaultPlan, FaultProxy, classify


@pytest.mark.parametrize(
    ("method", "path", "query", "expected"),
    [
        ("GET", "/api/v1/namespaces/ns", {}, ("get", "namespaces", False)),
        ("GET", "/api/v1/namespaces/ns/pods", {}, ("list", "pods", False)),
        ("GET", "/api/v1/namespaces/ns/pods", {"watch": "true"}, ("watch", "pods", False)),
        ("GET", "/apis/apps/v1/namespaces/ns/deployments/web", {}, ("get", "deployments", False)),
        (
            "PUT",
            "/apis/apps.openshift.io/v1/namespaces/ns/deploymentconfigs/dc1",
            {},
            ("update", "deploymentconfigs", True),
        ),
        ("PATCH", "/apis/apps/v1/namespaces/ns/deployments/web", {}, ("patch", "deployments", True)),
        ("POST", "/apis/coordination.k8s.io/v1/namespaces/ns/leases", {}, ("create", "leases", True)),
        ("DELETE", "/apis/coordination.k8s.io/v1/namespaces/ns/leases/x", {}, ("delete", "leases", True)),
        (
            "POST",
            "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
            {},
            ("create", "selfsubjectaccessreviews", False),
        ),
        (
            "POST",
            "/apis/apps.openshift.io/v1/namespaces/ns/deploymentconfigs/dc1/instantiate",
            {},
            ("create", "deploymentconfigs", True),
        ),
    ],
)
def test_classify(method, path, query, expected):
    assert classify(method, path, query) == expected


def faults_for(seed: int) -> list[str]:
    proxy = FaultProxy(
        "https://127.0.0.1:6443",
        _ca(),
        seed=seed,
        plan=FaultPlan(rates={"500": 0.2, "429": 0.2, "drop_after": 0.1}, max_faults=10),
    )
    return [proxy._admit("GET", "/api/v1/namespaces/ns/pods", {})[1] for _ in range(100)]


def _ca() -> str:
    import certifi

    return certifi.where()


def test_same_seed_same_faults_and_bounded():
    first, again, other = faults_for(3), faults_for(3), faults_for(4)
    assert first == again and first != other
    assert sum(1 for f in first if f) == 10  # max_faults: after that, everything goes through


def test_only_loopback_upstreams():
    with pytest.raises(ValueError):
        FaultProxy("https://example.com:6443", _ca())
