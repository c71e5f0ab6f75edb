"""The read plan of a selector's revisions and pods (`rollguard.state.list_plan`): pure decisions.

The live equivalence of the two plans is in tests/state/test_narrowed_reads.py.
"""

from __future__ import annotations

import itertools

from rollguard.core.selectors import matches
from rollguard.state.list_plan import NAMES_PER_QUERY, NARROW_MAX, keeps, needs, plan_list, queries


def dc(name: str, selector: dict[str, str] | None = None) -> tuple[str, dict]:
    return "DeploymentConfig", {
        "metadata": {"name": name},
        "spec": {"selector": selector if selector is not None else {"app": name, "deploymentconfig": name}},
    }


def deployment(name: str, match_labels: dict[str, str] | None = None) -> tuple[str, dict]:
    labels = match_labels if match_labels is not None else {"app": name}
    return "Deployment", {"metadata": {"name": name}, "spec": {"selector": {"matchLabels": labels}}}


def test_needs_name_the_dcs_and_the_pod_selectors():
    wanted = needs({"a": [dc("api"), deployment("web")], "b": [deployment("web")], "empty": []})
    assert wanted["rcs"] == {"a": frozenset({"openshift.io/deployment-config.name=api"})}
    assert wanted["rss"] == {"a": frozenset({"app=web"}), "b": frozenset({"app=web"})}
    assert wanted["pods"]["a"] == frozenset({"app=api,deploymentconfig=api", "app=web"})


def test_a_workload_selecting_no_label_reads_that_list_whole():
    wanted = needs({"a": [dc("api", selector={}), deployment("web")]})
    assert wanted["pods"] == {"a": None} and wanted["rss"] == {"a": frozenset({"app=web"})}
    assert wanted["rcs"] == {"a": frozenset({"openshift.io/deployment-config.name=api"})}  # by name still


def test_many_workloads_in_a_namespace_read_it_whole():
    wanted = needs({"big": [deployment(f"w{i}") for i in range(NARROW_MAX + 1)], "small": [deployment("x")]})
    plan = plan_list(wanted["pods"])
    assert plan.per_namespace == {"big": None, "small": ("app in (x)",)} and plan.requests == 2


def test_one_namespace_is_asked_in_its_namespace():
    plan = plan_list(needs({"a": [dc("api"), deployment("web")]})["pods"])
    assert plan.cluster_wide == () and plan.per_namespace == {"a": ("app in (api,web)",)}


def test_spread_over_namespaces_is_asked_cluster_wide_in_a_few_requests():
    """1% of 10,000 workloads over all 100 namespaces: 3 lists instead of ~300."""
    spread = {f"ns{i:02d}": [dc(f"dc{i}"), deployment(f"web{i}")] for i in range(100)}
    wanted = needs(spread)
    plans = {arg: plan_list(wanted[arg]) for arg in wanted}
    assert all(p.covered == frozenset(spread) and not p.per_namespace for p in plans.values())
    # 100 DC names, 100 Deployment selectors, 200 pod selectors that all share the key app
    assert {arg: p.requests for arg, p in plans.items()} == {"rcs": 2, "rss": 2, "pods": 4}
    assert sum(plan_list(wanted[arg], cluster_wide=False).requests for arg in wanted) == 300


def test_two_namespaces_save_a_request_per_list():
    plan = plan_list(needs({"a": [deployment("web")], "b": [deployment("web")]})["rss"])
    assert plan.cluster_wide == ("app in (web)",) and plan.covered == {"a", "b"} and plan.requests == 1


def test_a_tie_stays_in_the_namespaces():
    """Two namespaces of 30 DCs each: 2 requests either way, and namespaced ones read less."""
    half = NAMES_PER_QUERY * 3 // 5
    wanted = needs({ns: [dc(f"{ns}-{i}") for i in range(half)] for ns in ("a", "b")})
    plan = plan_list(wanted["rcs"])
    assert plan.cluster_wide == () and plan.requests == 2 and set(plan.per_namespace) == {"a", "b"}


def test_whole_namespaces_are_never_covered_cluster_wide():
    wanted = needs({"a": [deployment("x", {})], "b": [deployment("y")], "c": [deployment("z")]})
    plan = plan_list(wanted["pods"])
    assert plan.per_namespace == {"a": None} and plan.covered == {"b", "c"}
    assert plan.cluster_wide == ("app in (y,z)",)


def test_queries_pick_the_most_selective_shared_key():
    # every selector shares app=shop: asking by it would fetch the whole app; name tells them apart
    assert queries(["app=shop,name=a", "app=shop,name=b"]) == ["name in (a,b)"]
    assert queries(["tier in (web,db)", "!legacy"]) == ["!legacy", "tier in (web,db)"]


LABELS = [{}, {"app": "a"}, {"app": "b"}, {"app": "a", "tier": "web"}, {"tier": "web"},
          {"app": "a", "tier": "db", "v": "1"}, {"app": "b", "tier": "db"}]  # fmt: skip


def test_the_queries_select_a_superset_and_keeps_cuts_it_to_the_exact_union():
    selectors = ["app=a", "app=a,tier=web", "app=b,tier=db", "tier=web,v=1", "tier in (db)", "!app", "tier"]
    for chosen in itertools.combinations(selectors, 3):
        asked = queries(chosen)
        served = [labels for labels in LABELS if any(matches(q, labels) for q in asked)]
        exact = [labels for labels in LABELS if any(matches(s, labels) for s in chosen)]
        kept = [labels for labels in served if keeps(chosen, {"metadata": {"labels": labels}})]
        assert kept == exact, (chosen, asked)
