"""Image triggers on Deployments (the `image.openshift.io/triggers` annotation; issue 13 point 2): the
revert puts the entry back, and `status` (the TUI's state model) shows it, on the live sandbox.

OpenShift's trigger controller (openshift-controller-manager pkg/image/trigger/annotations/
annotations.go, with library-go pkg/image/trigger ObjectFieldTrigger: `paused` a JSON bool) rewrites the
container an unpaused entry names to its tag's image; emulated by sandbox/openshift/annotationtriggers.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rollguard.cluster.client import Client
from rollguard.core.resources import DEPLOYMENTS, IMAGE_STREAMS
from tests.helpers.cluster import DEPLOYMENT, SELECTOR, create_group, rollguard, view
from tests.helpers.triggers import annotated_web, trigger_entries

OLD = "registry.local/shop/api:v1"
NEW = "registry.local/shop/api:v2"
CRASH = "registry.local/shop/api:v2-crash"


@pytest.fixture
def client(sandbox) -> Client:
    return Client.connect(kubeconfig=str(sandbox.kubeconfig))


def _web_triggers(sandbox, namespace: str) -> list[str]:
    result = rollguard(sandbox.kubeconfig, "status", "-n", namespace, "-l", SELECTOR, "-o", "json")
    assert result.code == 0, result.stdout + result.stderr
    (web,) = [w for ns in json.loads(result.stdout) for w in ns["workloads"] if w["name"] == "web"]
    return list(web["triggers"])


def test_a_failed_direct_image_restores_the_deployments_trigger_entry(
    sandbox, namespace, client, tmp_path: Path
):
    """`--image` pauses the entry (`paused: true`) so the platform does not undo it; the crash fails and
    the revert restores the entry as it was (unpaused), the container on the tag's image, and it stays so.
    `status -o json` names the trigger and shows it paused while an image is set directly."""
    stream = {"apiVersion": "image.openshift.io/v1", "kind": "ImageStream", "metadata": {"name": "api"},
              "spec": {"tags": [{"name": "latest", "from": {"kind": "DockerImage", "name": OLD}}]}}  # fmt: skip
    client.create(IMAGE_STREAMS, stream, namespace=namespace)
    create_group(client, namespace, [annotated_web("api:latest")])
    entries_before = trigger_entries(client, namespace)
    images_before = view(client, namespace, DEPLOYMENT, "web").images
    assert _web_triggers(sandbox, namespace) == ["ImageChange app <- api:latest (auto)"]

    result = rollguard(
        sandbox.kubeconfig, "rollout", "-n", namespace, "-l", SELECTOR, "--image", f"deploy/web={CRASH}",
        "--timeout", "120", report=tmp_path / "report.json",
    )  # fmt: skip
    assert result.code == 1, result.stdout + result.stderr
    assert trigger_entries(client, namespace) == entries_before
    state = view(client, namespace, DEPLOYMENT, "web")
    assert state.images == images_before and state.complete, state
    generation = client.get(DEPLOYMENTS, "web", namespace=namespace)["metadata"]["generation"]

    ok = rollguard(
        sandbox.kubeconfig, "rollout", "-n", namespace, "-l", SELECTOR, "--image", f"deploy/web={NEW}"
    )
    assert ok.code == 0, ok.stdout + ok.stderr
    # the reverted state held until this run: its write is the only change since (one generation on)
    assert client.get(DEPLOYMENTS, "web", namespace=namespace)["metadata"]["generation"] == generation + 1
    (entry,) = trigger_entries(client, namespace)
    assert entry["paused"] is True
    assert _web_triggers(sandbox, namespace) == ["ImageChange app <- api:latest (manual)"]
