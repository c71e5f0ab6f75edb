"""A repair's preflight decisions, pure: every refusal and trigger rule from YAML cases.

Each case of tests/cases/planning/repair.yaml gives a repair's arguments (checked by
`repair_request`) and a `RepairRead` (what `read_repair` would gather); `decide_repair` must refuse with
the case's message or return its plan. tests/repair/ covers the whole path on the sandbox.
"""

from __future__ import annotations

import fnmatch

import pytest

from rollguard.core.errors import RefusedError
from rollguard.plan.repair_read import decide_repair, read_refusal
from tests.helpers.planning import cases, repair_read

CASES = cases("repair.yaml")
FIELDS = (
    "changed",
    "target_revision",
    "images_after",
    "images_running",
    "paused_before",
    "paused_after",
    "triggers_before",
    "triggers_after",
    "notes",
)


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_repair_case(case: dict) -> None:
    if "refused" in case:
        with pytest.raises(RefusedError) as refused:
            decide_repair(repair_read(case))
        assert fnmatch.fnmatchcase(str(refused.value), case["refused"]), str(refused.value)
        return
    plan = decide_repair(repair_read(case))
    changes = {c.key: c for c in plan.changes}
    for key, want in (case.get("changes") or {}).items():
        change = changes[key]
        for name in FIELDS:
            if name in want:
                got = getattr(change, name)
                assert (list(got) if isinstance(got, tuple) else got) == want[name], (key, name)
    if "manual_triggers" in case:
        assert {k: sorted(v) for k, v in plan.manual_triggers.items()} == case["manual_triggers"]
    for key, texts in (case.get("baseline_triggers") or {}).items():
        wp = next(w for w in plan.run_plan.workloads if w.key == key)
        assert list(wp.kind.trigger_texts(wp.kind.with_state(wp.snapshot.raw, wp.baseline))) == texts
    for name in ("whole_group", "selector", "stamp"):
        if name in case:
            assert getattr(plan, name) == case[name], name
    if "carried_forward" in case:
        assert plan.run_plan.carried_forward is case["carried_forward"]


def test_every_read_refusal_has_a_case() -> None:
    """Each fact `read_refusal` can refuse on is exercised above (a new one needs its case)."""
    by_read = set()
    for case in CASES:
        try:
            read = repair_read(case)
        except RefusedError:
            continue  # refused by repair_request, before anything is read
        if read_refusal(read) is not None:
            by_read.add(case["id"])
    assert by_read == {
        "namespace-missing",
        "group-list-forbidden",
        "selector-matches-nothing",
        "access-denied",
        "access-review-failed",
        "journals-and-leases-forbidden",
        "target-missing",
        "targets-in-different-groups",
        "targets-in-a-group-and-in-none",
        "group-members-list-forbidden",
        "group-locked",
        "overlapping-group-locked",
    }


def test_the_plan_body_is_what_the_diff_shows() -> None:
    """The body written for a revert carries the target's images and the triggers made manual."""
    case = next(c for c in CASES if c["id"] == "revert-sets-a-trigger-whose-tag-moved-on-to-manual")
    plan = decide_repair(repair_read(case))
    wp = plan.run_plan.workloads[0]
    body = plan.body(wp.key, wp.snapshot.raw)
    assert wp.kind.trigger_texts(body) == plan.changes[0].triggers_after
    assert body["spec"]["template"]["spec"]["containers"][0]["image"].endswith("sha256:a1")
