"""Field reduction (rollguard.cluster.reduce): assessing reduced objects gives exactly the states of full ones.

Run over every state fixture (tests/cases/state), the TUI's generated clusters (tests/helpers/tui_objects.py) and
the readiness and pod fixtures, so a field the state model starts reading and the reducer drops fails
here. Workload states are frozen dataclasses: equality covers findings, reasons, revisions and pods.
"""

from __future__ import annotations

import copy
import datetime as dt
import json
from pathlib import Path

import pytest
import yaml

from rollguard.cluster import reduce
from rollguard.core.readiness import pod_doom
from rollguard.core.resources import PODS, REPLICATION_CONTROLLERS
from rollguard.core.structs import DC, DEPLOYMENT
from rollguard.kinds import KINDS, dc_progress, deployment_progress
from rollguard.kinds.deployment import RS_REVISION_ANNOTATION as RS_REVISION
from rollguard.kinds.deploymentconfig import ENCODED_DC_ANNOTATION
from rollguard.state.assessment import assess_namespace
from tests.helpers import CASES
from tests.helpers import tui_objects as tui_fixtures
from tests.helpers.state_cases import AFTER_RUN, FIXTURES, PLURAL, load

RESOURCE = {
    "dcs": reduce.workload,
    "deployments": reduce.workload,
    "rcs": reduce.revision(KINDS[DC]),
    "rss": reduce.revision(KINDS[DEPLOYMENT]),
    "pods": reduce.pod,
    "configmaps": reduce.whole,
    "leases": reduce.whole,
}
UNIT = CASES


def reduced(lists: dict[str, list[dict]], *, intern: bool = False) -> dict[str, list[dict]]:
    """Each object reduced; ``intern``: and its equal parts shared, as the TUI's caches hold them."""
    shared = reduce.Interner().object if intern else (lambda o: o)
    return {arg: [shared(RESOURCE[arg](copy.deepcopy(o))) for o in objs] for arg, objs in lists.items()}


def size(lists: dict[str, list[dict]]) -> int:
    return len(json.dumps(lists))


@pytest.mark.parametrize("fixture", sorted(p.name for p in FIXTURES.glob("*.yaml")))
def test_state_fixtures_assess_alike(fixture: str) -> None:
    full = load(fixture)
    for selector in (None, "app=shop"):
        want = assess_namespace("shop-dev", now=AFTER_RUN, selector=selector, **full)
        for intern in (False, True):
            got = assess_namespace(
                "shop-dev", now=AFTER_RUN, selector=selector, **reduced(full, intern=intern)
            )
            assert got.workloads == want.workloads
            assert got.groups == want.groups


def _tui_lists(objs: list[dict]) -> dict[str, dict[str, list[dict]]]:
    by_ns: dict[str, dict[str, list[dict]]] = {}
    for obj in objs:
        arg = PLURAL.get(obj.get("kind", ""))
        if arg:
            lists = by_ns.setdefault(obj["metadata"]["namespace"], {a: [] for a in RESOURCE})
            lists[arg].append({k: v for k, v in obj.items() if k != "kind"})
    return by_ns


@pytest.mark.parametrize(
    "scene",
    ["reference_case", "neighbours", "many"],
)
def test_tui_scenes_assess_alike(scene: str) -> None:
    objs = getattr(tui_fixtures, scene)()
    now = tui_fixtures.NOW
    checked = 0
    for ns, full in _tui_lists(objs).items():
        want = assess_namespace(ns, now=now, **full)
        for intern in (False, True):
            got = assess_namespace(ns, now=now, **reduced(full, intern=intern))
            assert got.workloads == want.workloads, ns
        checked += len(want.workloads)
        assert size(reduced(full)) < size(full)
    assert checked


def test_paused_and_mid_rollout_states_assess_alike() -> None:
    """The findings that read revision templates (stuck: a diff) and pods (a doomed pod's reason)."""
    objs = tui_fixtures.dc_objects(
        "ns", "api", [("repo/api:1", "Complete"), ("repo/api:2-crash", "Running")], labels={"app": "a"}
    ) + tui_fixtures.deployment_objects("ns", "web", ["repo/web:1", "repo/web:2"], labels={"app": "a"})
    full = _tui_lists(objs)["ns"]
    for dc in full["dcs"]:
        dc["spec"]["paused"] = True
        dc["spec"]["template"]["spec"]["containers"][0]["image"] = "repo/api:3"
    for now in (tui_fixtures.NOW, tui_fixtures.NOW + dt.timedelta(hours=2)):
        want = assess_namespace("ns", now=now, **full)
        for intern in (False, True):
            got = assess_namespace("ns", now=now, **reduced(full, intern=intern))
            assert got.workloads == want.workloads
        assert any(w.findings for w in want.workloads)


@pytest.mark.parametrize("path", sorted((UNIT / "pods").glob("*.yaml")), ids=lambda p: p.stem)
def test_pod_fixtures_doom_alike(path: Path) -> None:
    pod = yaml.safe_load(path.read_text())["pod"]
    for restarts in (0, 2, 5):
        assert pod_doom(reduce.pod(pod), crash_restarts=restarts) == pod_doom(pod, crash_restarts=restarts)


@pytest.mark.parametrize("path", sorted((UNIT / "readiness").glob("*.yaml")), ids=lambda p: p.stem)
def test_readiness_fixtures_alike(path: Path) -> None:
    data = yaml.safe_load(path.read_text())
    if "dc" in data:
        rc = reduce.revision(KINDS[DC])(data["rc"]) if data.get("rc") else None
        assert dc_progress(reduce.workload(data["dc"]), rc) == dc_progress(data["dc"], data.get("rc"))
    else:
        assert deployment_progress(reduce.workload(data["deployment"])) == deployment_progress(
            data["deployment"]
        )


def test_what_is_dropped() -> None:
    """The bulky parts go: managedFields, last-applied annotations, pod specs, the RC's copy of the DC."""
    rc = next(o for o in tui_fixtures.reference_case() if o["kind"] == "ReplicationController")
    rc = copy.deepcopy(rc)
    rc["metadata"]["managedFields"] = [{"manager": "kube-controller-manager", "fieldsV1": {"f:spec": {}}}]
    small = reduce.reducer_for(REPLICATION_CONTROLLERS)(rc)  # type: ignore[misc]
    assert "managedFields" not in small["metadata"]
    encoded = json.loads(small["metadata"]["annotations"][ENCODED_DC_ANNOTATION])
    assert set(encoded) == {"spec"} and set(encoded["spec"]) <= {"template", "triggers"}
    assert "template" not in small["spec"]
    pod = next(o for o in tui_fixtures.reference_case() if o["kind"] == "Pod")
    assert set(reduce.reducer_for(PODS)(pod)["spec"]) <= {"nodeName"}  # type: ignore[misc]


def test_interned_objects_are_equal_and_share_their_equal_parts() -> None:
    """Hash-consing keeps every value (True stays True, not 1) and holds a revision's unchanged parts once."""
    env = [{"name": "DB_URL", "value": "postgres://db:5432/web"}, {"name": "DEBUG", "value": "false"}]
    rss = []
    for image in ("repo/web:1", "repo/web:2"):
        tmpl = tui_fixtures.template("web", image)
        tmpl["spec"]["containers"][0].update(env=copy.deepcopy(env), resources={"limits": {"cpu": "1"}})
        rss.append({"metadata": {"name": f"web-{image[-1]}", "namespace": "ns", "annotations": {RS_REVISION: image[-1]}},
                    "spec": {"replicas": 1, "template": tmpl}, "status": {"replicas": 1}})  # fmt: skip
    before = copy.deepcopy(rss)
    intern = reduce.Interner()
    slim = reduce.revision(KINDS[DEPLOYMENT])
    shared = [intern.object(slim(o)) for o in rss]
    assert rss == before  # the input is not modified
    assert shared == [slim(o) for o in rss]
    first, second = (r["spec"]["template"]["spec"]["containers"][0] for r in shared)
    assert (first["image"], second["image"]) == ("repo/web:1", "repo/web:2")
    assert first["env"] is second["env"] and first["resources"] is second["resources"]
    assert intern({"a": "x"}) is intern({"a": "x"})
    assert intern([{"a": "x"}]) is intern([{"a": "x"}])
    flags = intern({"ready": True}), intern({"ready": 1}), intern({"ready": 1.0})
    assert [type(f["ready"]) for f in flags] == [bool, int, float]
    assert intern({"a": 1, "b": 2}) is not intern({"b": 2, "a": 1})  # key order is kept too
    intern.clear()
    assert intern({"a": "x"}) == {"a": "x"}


def test_an_interned_object_is_new_its_parts_are_shared() -> None:
    """`Interner.object`: the object and its metadata are unique (not remembered), what they hold is shared."""
    intern = reduce.Interner()
    pod = {"metadata": {"name": "p", "labels": {"app": "a"}}, "status": {"phase": "Pending"}}
    one, two = intern.object(copy.deepcopy(pod)), intern.object(copy.deepcopy(pod))
    assert one == two == pod and one is not two and one["metadata"] is not two["metadata"]
    assert one["metadata"]["labels"] is two["metadata"]["labels"] and one["status"] is two["status"]
