"""Readiness and fail-fast predicates, from YAML cases of real-shaped objects."""

from __future__ import annotations

import pytest
import yaml

from rollguard.core.readiness import pod_doom
from rollguard.kinds import dc_progress, deployment_progress
from tests.helpers import CASES

FIXTURES = CASES


def load(sub: str) -> list[tuple[str, dict]]:
    return [(p.stem, yaml.safe_load(p.read_text())) for p in sorted((FIXTURES / sub).glob("*.yaml"))]


@pytest.mark.parametrize(("case", "data"), load("readiness"), ids=[c for c, _ in load("readiness")])
def test_workload_progress(case: str, data: dict) -> None:
    if "dc" in data:
        progress = dc_progress(data["dc"], data.get("rc"))
    else:
        progress = deployment_progress(data["deployment"])
    assert progress.phase.value == data["expect"]["phase"], progress
    if "message" in data["expect"]:
        assert progress.message == data["expect"]["message"]


@pytest.mark.parametrize(("case", "data"), load("pods"), ids=[c for c, _ in load("pods")])
def test_pod_doom(case: str, data: dict) -> None:
    doom = pod_doom(data["pod"], crash_restarts=2)
    if data["expect"] is None:
        assert doom is None
    else:
        assert doom is not None
        assert (doom.reason, doom.container) == (data["expect"]["reason"], data["expect"]["container"])
        assert doom.pod == data["pod"]["metadata"]["name"]


def test_restarts_are_ignored_when_disabled() -> None:
    pod = dict(load("pods"))["restarted-twice"]["pod"]
    assert pod_doom(pod, crash_restarts=0) is None
    assert pod_doom(pod, crash_restarts=3) is None
