"""The pure parts of the repair preflight: revert targets from real-shaped cases, and the diff."""

from __future__ import annotations

import pytest

from rollguard.core.errors import RefusedError
from rollguard.core.structs import DC, DEPLOYMENT, WorkloadRef
from rollguard.kinds import KINDS
from rollguard.plan.repair_read import Change, revert_target
from tests.helpers.state_cases import load


def target(fixture: str, kind: str, name: str, **kwargs):
    lists = load(fixture)
    objs = lists["dcs" if kind == DC else "deployments"]
    obj = next(o for o in objs if o["metadata"]["name"] == name)
    k = KINDS[kind]
    revisions = k.owned(obj, lists["rcs"] + lists["rss"])
    return revert_target(k, obj, revisions, **{"verified": None, "to_revision": None, **kwargs})


def test_reference_case_reverts_every_dc_to_revision_1() -> None:
    for name in ("dc1", "dc2"):
        state, source = target("reference_case.yaml", DC, name)
        assert (state.revision, source) == (1, "the previous complete revision 1"), name
        assert state.triggers and state.triggers[1]["imageChangeParams"]["from"]["name"] == f"{name}:latest"
    state, source = target("reference_case.yaml", DC, "dc3")
    assert state.revision == 1 and source == "the revision it runs (its un-rolled changes are dropped)"


def test_deployment_previous_revision_and_to_revision() -> None:
    state, _ = target("deployments.yaml", DEPLOYMENT, "broken")
    assert state.revision == 1 and "pod-template-hash" not in state.template["metadata"]["labels"]
    state, source = target("deployments.yaml", DEPLOYMENT, "broken", to_revision=2)
    assert (state.revision, source) == (2, "revision 2")
    with pytest.raises(RefusedError, match="has no revision 7 to revert to; its revisions are: 2, 1"):
        target("deployments.yaml", DEPLOYMENT, "broken", to_revision=7)
    with pytest.raises(RefusedError, match="no earlier complete revision"):
        target("deployments.yaml", DEPLOYMENT, "thin")


def test_change_diff() -> None:
    change = Change(
        ref=WorkloadRef(DC, "dc3"), namespace="shop", action="revert", images_before={"app": "a@new"},
        images_running={"app": "a@old"}, images_after={"app": "a@old"}, paused_before=True, paused_after=False,
        revision_before=1, target_revision=1, triggers_before=("ImageChange app <- dc3:latest (auto)",),
        triggers_after=("ImageChange app <- dc3:latest (manual)",), changed=True, notes=("target: x",),
    )  # fmt: skip
    assert change.diff() == [
        "shop/dc/dc3: revert to revision 1",
        "- image app: a@new   (running: a@old)",
        "+ image app: a@old",
        "- paused: true",
        "+ paused: false",
        "- trigger: ImageChange app <- dc3:latest (auto)",
        "+ trigger: ImageChange app <- dc3:latest (manual)",
        "# target: x",
    ]
