"""Shared fixtures: one sandbox cluster per test session, a fresh namespace per test.

`sandbox` (session): a `sandbox.cluster.Sandbox` started on a free port in a temporary directory and
stopped by PID at the end, even when tests fail; it sets KUBECONFIG for the session. Token users
`alice` and `bob` exist in it (no permissions until a test binds a Role): `sandbox.user_kubeconfig("alice")`.
Set ROLLGUARD_TEST_SANDBOX=DIR to use a sandbox you started with `python -m sandbox up --dir DIR`
instead (it is left running; only `alice`/`bob` need `up` with those tokens).
`k8s` (session): a kubernetes ApiClient for the sandbox's admin. `client`: rollguard's own Client for the
sandbox's admin. `namespace`: a new namespace, deleted after. Constants and helpers: tests/helpers/cluster.py.
Tests that use the sandbox are marked `cluster` automatically.
"""

from __future__ import annotations

import atexit
import os
import re
import secrets
import signal
import sys
from collections.abc import Iterator

import pytest
from kubernetes import client as kube
from kubernetes import config, watch
from kubernetes.client.rest import ApiException

from rollguard.cluster.client import Client
from sandbox import cluster

TEST_USERS = [("alice-token", "alice", "alice"), ("bob-token", "bob", "bob")]


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects by marker
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "sandbox" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.cluster)


@pytest.fixture(scope="session")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> Iterator[cluster.Sandbox]:
    old_kubeconfig = os.environ.get("KUBECONFIG")
    if os.environ.get("ROLLGUARD_TEST_SANDBOX"):
        sb = cluster.load(os.environ["ROLLGUARD_TEST_SANDBOX"])
        os.environ["KUBECONFIG"] = str(sb.kubeconfig)
        yield sb
        return
    d = tmp_path_factory.mktemp("sandbox")
    atexit.register(cluster.down, d)  # backstop should the session die before the teardown below
    if signal.getsignal(signal.SIGTERM) == signal.SIG_DFL:  # so that a killed session still runs atexit
        signal.signal(signal.SIGTERM, lambda signum, _frame: sys.exit(128 + signum))
    try:
        for attempt in range(3):
            try:
                sb = cluster.up(d, cluster.free_port(), extra_tokens=TEST_USERS)
                break
            except cluster.PortInUse:  # another session took the port between the check and the start
                if attempt == 2:
                    raise
        os.environ["KUBECONFIG"] = str(sb.kubeconfig)
        yield sb
    finally:
        cluster.down(d)
        if old_kubeconfig is None:
            os.environ.pop("KUBECONFIG", None)
        else:
            os.environ["KUBECONFIG"] = old_kubeconfig


@pytest.fixture(scope="session")
def k8s(sandbox: cluster.Sandbox) -> Iterator[kube.ApiClient]:
    api = config.new_client_from_config(config_file=str(sandbox.kubeconfig))
    yield api
    api.close()


@pytest.fixture
def client(sandbox: cluster.Sandbox) -> Client:
    return Client.connect(kubeconfig=str(sandbox.kubeconfig))


@pytest.fixture
def namespace(k8s: kube.ApiClient, request: pytest.FixtureRequest) -> Iterator[str]:
    core = kube.CoreV1Api(k8s)
    name = namespace_name(request.node.name)
    core.create_namespace({"metadata": {"name": name}})
    # Pods are refused until the token controller has given the default service account its token.
    w = watch.Watch()
    for event in w.stream(core.list_namespaced_service_account, name, field_selector="metadata.name=default",
                          timeout_seconds=30):  # fmt: skip
        if event["object"].secrets:
            w.stop()
    yield name
    try:
        core.delete_namespace(name)
    except ApiException as e:
        if e.status != 404:
            raise


def namespace_name(test_name: str) -> str:
    """A DNS-1123 label (<= 63 chars) from a test name, with a random suffix."""
    base = re.sub(r"[^a-z0-9]+", "-", test_name.lower().removeprefix("test_")).strip("-")[:56].strip("-")
    return f"{base or 'test'}-{secrets.token_hex(3)}"
