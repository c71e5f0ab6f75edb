"""A rollout's preflight decisions, pure: every refusal and trigger rule from YAML cases.

Each case of tests/cases/planning/rollout.yaml is a `RolloutRead` (what `read_rollout` would
gather) and the command's arguments; `decide_rollout` must refuse with the case's message or return its
plan. The sandbox tests (tests/rollout/test_refusals.py) cover the same refusals through the whole path.
"""

from __future__ import annotations

import fnmatch

import pytest

from rollguard.core.errors import RefusedError
from rollguard.plan.inputs import parse_image_target
from rollguard.plan.rollout_read import RolloutRequest, decide_rollout, read_refusal
from tests.helpers.planning import cases, rollout_read

CASES = cases("rollout.yaml")


def decide(case: dict):
    args = case.get("args") or {}
    read = rollout_read(case)
    request = RolloutRequest(
        namespace=read.namespace,
        selector=read.selector,
        targets=[parse_image_target(t) for t in args.get("images", [])],
        promote_from=args.get("promote_from"),
        tag=args.get("tag"),
        on_paused=args.get("on_paused", "take-over"),
        allow_never_completed=args.get("allow_never_completed", False),
        allow_failing=args.get("allow_failing", False),
    )
    return decide_rollout(read, request)


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_rollout_case(case: dict) -> None:
    if "refused" in case:
        with pytest.raises(RefusedError) as refused:
            decide(case)
        assert fnmatch.fnmatchcase(str(refused.value), case["refused"]), str(refused.value)
        return
    plan = decide(case)
    by_key = {w.key: w for w in plan.workloads}
    assert sorted(by_key) == sorted(case["group"])
    if "carried_forward" in case:
        assert plan.carried_forward is case["carried_forward"]
    for key, want in case["plan"].items():
        wp = by_key[key]
        if "target_images" in want:
            assert wp.target_images == want["target_images"], key
        if "promoted" in want:
            got = {c: f"{p.stream}:{p.tag}@{p.source_image}" for c, p in wp.promoted.items()}
            assert got == want["promoted"], key
            assert all(p.source_namespace == case["args"]["promote_from"] for p in wp.promoted.values())
        if "notes" in want:
            assert wp.notes == want["notes"], key
        if "needs_change" in want:
            assert wp.needs_change is want["needs_change"], key
        for flag in ("finish", "observe", "accepted"):  # how a member the run does not change is judged
            if flag in want:
                assert getattr(wp, flag) == want[flag], (key, flag)
        if "baseline_revision" in want:
            assert wp.baseline.revision == want["baseline_revision"], key


def test_every_read_refusal_has_a_case() -> None:
    """Each fact `read_refusal` can refuse on is exercised above (a new one needs its case)."""
    refused_by_read = set()
    for case in CASES:
        if "refused" in case and read_refusal(rollout_read(case)) is not None:
            refused_by_read.add(case["id"])
    assert refused_by_read == {
        "namespace-missing",
        "list-forbidden",
        "selector-matches-nothing",
        "promote-namespace-missing",
        "access-review-failed",
        "access-denied",
        "access-names-the-first-gap-of-the-list",
        "lock-held",
    }


def test_a_refusal_of_the_read_keeps_its_cause() -> None:
    case = next(c for c in CASES if c["id"] == "list-forbidden")
    with pytest.raises(RefusedError) as refused:
        decide(case)
    assert refused.value.__cause__ is not None and "forbidden" in str(refused.value.__cause__)
