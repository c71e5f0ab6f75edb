"""Promoting the very tag a group's automatic triggers follow (`--promote-from CD --tag latest`, the
classic OpenShift setup; issue 13 point 8), on the live sandbox.

The tag copy makes OpenShift's trigger controller rewrite every DC following the tag (openshift-
controller-manager pkg/image/trigger/deploymentconfigs/deploymentconfigs.go, UpdateDeploymentConfigImages:
an automatic trigger whose tag resolves to a reference other than its lastTriggeredImage rewrites the
named containers, paused or not; emulated by sandbox/openshift/triggers.py update_images). rollguard
takes that rewrite as its own promotion, not as someone else's edit, and its revert puts the target
tags back before the workloads, so the restored automatic triggers find nothing to undo.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from rollguard.cluster.client import Client
from rollguard.core.resources import DEPLOYMENT_CONFIGS, IMAGE_STREAMS, NAMESPACES
from tests.helpers.chaos import expire_lease
from tests.helpers.cluster import (
    DC,
    SELECTOR,
    create_group,
    journal,
    rollguard,
    start_rollguard,
    view,
    wait_until,
)
from tests.helpers.scenarios import image_stream, triggered_dc

OLD = "registry.local/shop/api:v1"
NEW = "registry.local/shop/api:v2"
CRASH = "registry.local/shop/api:v2-crash"
NAMES = ("api", "worker")


def _latest(client: Client, namespace: str) -> tuple[dict, str]:
    """The target stream's spec tag `latest` and the image its status points at."""
    stream = client.get(IMAGE_STREAMS, "api", namespace=namespace)
    spec = next(t for t in stream["spec"]["tags"] if t["name"] == "latest")
    status = next(t for t in stream["status"]["tags"] if t["tag"] == "latest")
    return spec, status["items"][0]["dockerImageReference"]


@pytest.fixture
def classic_group(client: Client, namespace: str) -> Iterator[Callable[[str], str]]:
    """Builds two DCs with automatic triggers on `api:latest` (OLD), and a CD namespace whose `api:latest`
    is the image given; returns the CD namespace, deleted after the test whatever happens."""
    made: list[str] = []

    def build(promoted: str) -> str:
        cd = f"{namespace[:50]}-cd"
        client.create(NAMESPACES, {"metadata": {"name": cd}})
        made.append(cd)
        image_stream(client, cd, "api", {"latest": promoted})
        image_stream(client, namespace, "api", {"latest": OLD})
        create_group(client, namespace, [triggered_dc(n, "api:latest", timeout=20) for n in NAMES])
        wait_until(client, IMAGE_STREAMS, cd, "api", lambda s: bool((s.get("status") or {}).get("tags")))
        return cd

    yield build
    for cd in made:
        client.delete(NAMESPACES, cd)


def _automatic(client: Client, namespace: str, name: str) -> bool:
    dc = client.get(DEPLOYMENT_CONFIGS, name, namespace=namespace)
    return all(
        t["imageChangeParams"].get("automatic") is True
        for t in dc["spec"]["triggers"]
        if t["type"] == "ImageChange"
    )


def test_promoting_latest_ends_all_new_with_the_tag_moved(
    sandbox, namespace, client, tmp_path: Path, classic_group
):
    """Success: every DC on the promoted image, one rollout each, the tag moved, triggers automatic."""
    cd = classic_group(NEW)
    result = rollguard(
        sandbox.kubeconfig, "rollout", "-n", namespace, "-l", SELECTOR, "--promote-from", cd, "--tag", "latest",
        report=tmp_path / "report.json",
    )  # fmt: skip
    assert result.code == 0, result.stdout + result.stderr
    _, ref = _latest(client, namespace)
    assert ref.startswith("registry.local/shop/api@sha256:") or "@sha256:" in ref, ref
    for name in NAMES:
        state = view(client, namespace, DC, name)
        assert state.images == {"app": ref} and state.complete and not state.paused, state
        assert state.revision == 2, state  # the trigger's rollout is the run's: no second one
        assert _automatic(client, namespace, name)


def test_promoting_a_crashing_latest_fails_fast_and_restores_the_tag(
    sandbox, namespace, client, tmp_path: Path, classic_group
):
    """A crash image promoted to `latest`: fail fast, every DC back on its old image with its trigger
    still automatic, the tag back where it was, and the group STAYS old (the trigger controller finds
    nothing to undo)."""
    cd = classic_group(CRASH)
    spec_before, ref_before = _latest(client, namespace)
    before = {n: view(client, namespace, DC, n).images for n in NAMES}
    result = rollguard(
        sandbox.kubeconfig, "rollout", "-n", namespace, "-l", SELECTOR, "--promote-from", cd, "--tag", "latest",
        "--timeout", "120", report=tmp_path / "report.json",
    )  # fmt: skip
    assert result.code == 1, result.stdout + result.stderr  # reverted, not inconsistent (3)
    assert "changed by someone else" not in result.stdout + result.stderr
    assert "crash" in result.report["error"].lower() or "restart" in result.report["error"].lower(), (
        result.report
    )
    spec_after, ref_after = _latest(client, namespace)
    assert spec_after["from"] == spec_before["from"] and ref_after == ref_before
    generations = {}
    for name in NAMES:
        state = view(client, namespace, DC, name)
        assert state.images == before[name] and state.complete and not state.paused, state
        assert _automatic(client, namespace, name)
        generations[name] = client.get(DEPLOYMENT_CONFIGS, name, namespace=namespace)["metadata"][
            "generation"
        ]
    # stays old: the emulated trigger controller resyncs every few seconds; no DC may change again
    deadline = time.monotonic() + 8
    while time.monotonic() < deadline:
        for name in NAMES:
            dc = client.get(DEPLOYMENT_CONFIGS, name, namespace=namespace)
            assert dc["metadata"]["generation"] == generations[name], dc["spec"]["template"]
        time.sleep(0.5)
    assert {n: view(client, namespace, DC, n).images for n in NAMES} == before


def test_a_killed_promotion_is_finished_by_revert_with_the_tag_restored(
    sandbox, namespace, client, tmp_path: Path, classic_group
):
    """SIGKILL once the tag has moved (the journal holds where it was): `rollguard revert -l` puts the tag
    back and every DC on its old image, its trigger still automatic (judged against the tag as restored)."""
    cd = classic_group(CRASH)
    spec_before, ref_before = _latest(client, namespace)
    before = {n: view(client, namespace, DC, n).images for n in NAMES}
    proc = start_rollguard(
        sandbox.kubeconfig, "rollout", "-n", namespace, "-l", SELECTOR, "--promote-from", cd, "--tag", "latest",
        "--no-fail-fast", "--timeout", "300",
    )  # fmt: skip
    try:
        wait_until(
            client,
            IMAGE_STREAMS,
            namespace,
            "api",
            lambda s: _latest_from(s)["kind"] == "ImageStreamImage",
        )
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=30)
    assert (journal(client, namespace) or {}).get("tags", {}).get("api:latest", {}).get("spec") == spec_before
    expire_lease(client, namespace)
    result = rollguard(sandbox.kubeconfig, "revert", "-n", namespace, "-l", SELECTOR, "--timeout", "120")
    assert result.code == 0, result.stdout + result.stderr
    spec_after, ref_after = _latest(client, namespace)
    assert spec_after["from"] == spec_before["from"] and ref_after == ref_before
    for name in NAMES:
        state = view(client, namespace, DC, name)
        assert state.images == before[name] and state.complete and not state.paused, state
        assert _automatic(client, namespace, name)  # judged against the restored tag: nothing fires
    assert "tags" not in (journal(client, namespace) or {})


def _latest_from(stream: dict) -> dict:
    return next(t for t in stream["spec"]["tags"] if t["name"] == "latest")["from"]
