"""The state model, from real-shaped cases (tests/cases/state/*.yaml): findings and their reasons."""

from __future__ import annotations

import datetime as dt
import json

import pytest

from rollguard.core.errors import RefusedError
from rollguard.plan.inputs import parse_selector
from rollguard.state.assessment import (
    DEFAULT_FAIL_ON,
    FINDINGS,
    NamespaceState,
    WorkloadState,
    assess_namespace,
    matches,
    moving_tag,
    parse_findings,
    selected,
    template_changes,
)
from tests.helpers.state_cases import AFTER_RUN, load


def states(name: str, *, now: dt.datetime = AFTER_RUN, selector: str | None = None) -> NamespaceState:
    return assess_namespace("shop-dev", now=now, selector=selector, **load(name))


def by_key(ns: NamespaceState) -> dict[str, WorkloadState]:
    return {w.key: w for w in ns.workloads}


def names(state: WorkloadState) -> set[str]:
    return set(state.names)


def test_healthy_group_has_no_findings() -> None:
    ns = states("healthy_group.yaml")
    found = by_key(ns)
    assert set(found) == {"dc/api", "deployment/web"}
    for state in found.values():
        assert state.healthy and state.names == ("healthy",), state.findings
        assert state.group == ns.groups[0].name and state.selector == "app=shop-api"
    api = found["dc/api"]
    assert (api.revision, api.ready, api.desired, api.phase) == (2, 2, 2, "complete")
    assert [r.status for r in api.revisions] == ["Complete", "Complete"]
    assert [p.name for p in api.pods] == ["api-2-1", "api-2-2"] and all(p.ready for p in api.pods)
    assert api.triggers == ("ConfigChange", "ImageChange app <- api:v2 (auto)")
    assert found["deployment/web"].revisions[0].number == 2
    assert ns.by_group()[0][0] is ns.groups[0]


def test_reference_case_state() -> None:
    found = by_key(states("reference_case.yaml"))
    dc1, dc2, dc3 = found["dc/dc1"], found["dc/dc2"], found["dc/dc3"]
    assert names(dc1) == {"mutable-image"}
    assert "follows dc1:latest" in dc1.findings[0].reason
    assert names(dc2) == {"failed", "mutable-image"}
    # the DC's Progressing condition, never the RC's status-reason (the rollout's cause, "image change")
    assert dc2.findings[0].reason == 'replication controller "dc2-2" has failed progressing'
    assert [r.status for r in dc2.revisions] == ["Failed", "Complete"]
    assert names(dc3) == {"paused", "stuck", "mutable-image"}
    stuck = next(f for f in dc3.findings if f.name == "stuck")
    assert stuck.reason.startswith("paused with un-rolled changes: app: ") and "dc1@sha256:" in stuck.reason
    assert dc3.paused and all(w.group is None for w in found.values())
    assert [f.name for f in dc3.findings] == ["stuck", "paused", "mutable-image"]  # most serious first


def test_progressing_within_deadline_then_stuck_past_it() -> None:
    early = by_key(states("dc_progressing.yaml", now=dt.datetime(2024, 5, 2, 9, 2, tzinfo=dt.UTC)))["dc/pay"]
    assert names(early) == {"progressing"}
    reason = early.findings[0].reason
    assert "pay-3 running: 1 of 2 new replicas ready" in reason and "(90s of its 600s deadline)" in reason
    assert "CrashLoopBackOff" in reason  # the crash-looping new pod is named
    late = by_key(states("dc_progressing.yaml", now=dt.datetime(2024, 5, 2, 9, 20, tzinfo=dt.UTC)))["dc/pay"]
    assert names(late) == {"stuck"}
    assert late.findings[0].reason.startswith("progressing for 1170s, past its 600s deadline")


def test_deployments() -> None:
    found = by_key(states("deployments.yaml"))
    assert names(found["deployment/broken"]) == {"failed"}
    assert "exceeded its progress deadline" in found["deployment/broken"].findings[0].reason
    held = found["deployment/held"]
    assert names(held) == {"paused", "stuck"}
    assert "paused with un-rolled changes: app: quay.io/shop/web@sha256:" in held.findings[0].reason
    thin = found["deployment/thin"]
    assert names(thin) == {"unavailable"} and thin.findings[0].reason == "1 of 3 replicas available"
    cache = found["deployment/cache"]
    assert names(cache) == {"mutable-image"}
    assert cache.findings[0].reason == "container app runs redis (tag 'latest' moves)"


def test_run_killed_mid_way_is_half_rolled_once_its_lease_expired() -> None:
    ns = states("killed_run.yaml")
    assert ns.groups[0].state == "watching" and not ns.groups[0].lock_live
    for state in ns.workloads:
        assert "half-rolled" in names(state), state.key
        reason = next(f.reason for f in state.findings if f.name == "half-rolled")
        assert (
            "run 20240502-090000-a1b2c3 (rollout by tekton@shop-cart-deploy-pod) stopped in state 'watching'"
            in reason
        )
    # while its holder still renews the lease, the run is alive: not half-rolled, not drifted
    live = states("killed_run.yaml", now=dt.datetime(2024, 5, 2, 9, 0, 50, tzinfo=dt.UTC))
    assert live.groups[0].lock_live
    assert not any(s.has("half-rolled", "drifted") for s in live.workloads)


def test_drift_and_a_hand_rollback_in_a_succeeded_group() -> None:
    found = by_key(states("drifted_group.yaml"))
    assert found["dc/ok"].healthy
    edit = found["dc/edit"]
    assert names(edit) == {"drifted"}
    assert "differs from what run 20240502-090000-a1b2c3 verified: app: " in edit.findings[0].reason
    assert "edit@sha256:" in edit.findings[0].reason
    undone = found["dc/undone"]
    assert names(undone) == {"drifted", "half-rolled"}
    half = next(f.reason for f in undone.findings if f.name == "half-rolled")
    assert (
        half.startswith("runs revision 1's images, not run 20240502-090000-a1b2c3's targets")
        and "dc/ok" in half
    )


def test_selector_filters_workloads_but_groups_stay() -> None:
    ns = states("healthy_group.yaml", selector="name=nothing")
    assert ns.workloads == () and len(ns.groups) == 1


def test_json_and_selection() -> None:
    ns = states("reference_case.yaml")
    data = json.loads(json.dumps([w.to_json() for w in ns.workloads]))
    dc2 = next(d for d in data if d["name"] == "dc2")
    assert dc2["state"] == ["failed", "mutable-image"] and dc2["findings"][0]["name"] == "failed"
    assert [s.key for s in selected(ns.workloads, DEFAULT_FAIL_ON)] == ["dc/dc2", "dc/dc3"]
    assert [s.key for s in selected(ns.workloads, {"mutable-image"})] == ["dc/dc1", "dc/dc2", "dc/dc3"]


@pytest.mark.parametrize(
    ("selector", "labels", "expected"),
    [
        ("app=x", {"app": "x"}, True),
        ("app==x", {"app": "x"}, True),
        ("app=x", {"app": "y"}, False),
        ("app=x", {}, False),
        ("app!=x", {}, True),
        ("app!=x", {"app": "x"}, False),
        ("app in (a, b),tier", {"app": "b", "tier": ""}, True),
        ("app notin (a,b)", {"app": "b"}, False),
        ("app notin (a,b)", {}, True),
        ("!canary,app=x", {"app": "x", "canary": "1"}, False),
        ("example.com/team=a,app", {"example.com/team": "a", "app": "q"}, True),
    ],
)
def test_matches_normalized_selectors(selector: str, labels: dict[str, str], expected: bool) -> None:
    assert matches(parse_selector(selector), labels) is expected


def test_parse_findings_and_helpers() -> None:
    assert parse_findings("paused, drifted") == {"paused", "drifted"}
    assert parse_findings("all") == set(FINDINGS)
    with pytest.raises(RefusedError, match="unknown finding bogus"):
        parse_findings("paused,bogus")
    assert moving_tag("redis") == "latest" and moving_tag("r:5000/a/b:latest") == "latest"
    assert (
        moving_tag("r:5000/a/b") == "latest"
        and moving_tag("a:v1") is None
        and moving_tag("a@sha256:ab") is None
    )
    before = {"spec": {"containers": [{"name": "app", "image": "a:1", "env": [{"name": "X", "value": "1"}]}]}}
    after = {"spec": {"containers": [{"name": "app", "image": "a:2", "env": [{"name": "X", "value": "2"}]}]}}
    assert template_changes(before, after) == ["app: a:1 -> a:2", "spec.containers[app].env[X].value changed"]


def test_a_change_the_controller_has_not_picked_up_is_not_stuck() -> None:
    lists = load("healthy_group.yaml")
    dc = next(o for o in lists["dcs"] if o["metadata"]["name"] == "api")
    dc["spec"]["template"]["spec"]["containers"][0]["image"] = "quay.io/shop/api@sha256:" + "e" * 64
    dc["metadata"]["generation"] += 1  # just written: not yet observed, no RC for it yet
    late = dt.datetime(2024, 6, 1, tzinfo=dt.UTC)
    found = by_key(assess_namespace("shop-dev", now=late, **lists))["dc/api"]
    assert found.names == ("drifted", "progressing")
    assert found.findings[1].reason == "waiting for the controller to observe the change"


def test_a_deadline_exceeded_before_our_write_does_not_fail_our_rollout() -> None:
    """After an undo of a timed-out Deployment the controller keeps the old condition for a sync."""
    from rollguard.kinds import deployment_progress

    broken = next(o for o in load("deployments.yaml")["deployments"] if o["metadata"]["name"] == "broken")
    assert deployment_progress(broken).phase.value == "failed"
    assert deployment_progress(broken, since="2024-05-02T09:05:00Z").phase.value == "progressing"
    assert deployment_progress(broken, since="2024-05-02T08:00:00Z").phase.value == "failed"
