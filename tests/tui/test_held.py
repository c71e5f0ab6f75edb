"""With -A the TUI holds a whole cluster in its live caches: reduced objects (`rollguard.cluster.reduce`), their
equal parts held once. What a screen shows of one object is read whole when the screen opens (the YAML,
the template diffs), and a change another client makes still reaches its row, in whichever namespace."""

from __future__ import annotations

import json
import time

from rollguard.cluster.reduce import reducer_for
from rollguard.core.resources import (
    DEPLOYMENT_CONFIGS,
    DEPLOYMENTS,
    PODS,
    REPLICA_SETS,
    REPLICATION_CONTROLLERS,
)
from rollguard.tui.backend import Backend, Options
from rollguard.tui.data import WATCHED
from rollguard.tui.screens.detail import DetailScreen
from rollguard.tui.screens.diff import DiffScreen
from rollguard.tui.screens.yaml import YamlScreen
from rollguard.tui.widgets.workload_table import WorkloadTable
from tests.helpers.tui import SIZE, make_app, until
from tests.helpers.tui_objects import NOW, cluster_of, neighbours, reference_case

LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
PLURALS = {"DeploymentConfig": DEPLOYMENT_CONFIGS, "Deployment": DEPLOYMENTS, "ReplicaSet": REPLICA_SETS,
           "ReplicationController": REPLICATION_CONTROLLERS, "Pod": PODS}  # fmt: skip


def bulky(objs: list[dict]) -> list[dict]:
    """Objects as a real cluster holds them: managedFields and last-applied annotations (reduced away)."""
    for obj in objs:
        if obj.get("kind") not in PLURALS:
            continue
        meta = obj["metadata"]
        meta["managedFields"] = [{"manager": "kubectl", "operation": "Update", "fieldsV1": {"f:spec": {}}}]
        meta.setdefault("annotations", {})[LAST_APPLIED] = json.dumps(
            {"kind": obj["kind"], "name": meta["name"]}
        )
    return objs


def table(app) -> WorkloadTable:
    return app.screen.query_one(WorkloadTable)


def row_of(app, key: str):
    return next(r for r in app.inventory.rows if f"{r.namespace}/{r.ref}" == key)


async def open_row(app, pilot, key: str, press: str) -> None:
    keys = [ln.key for ln in table(app).lines]
    index = next((i for i, k in enumerate(keys) if k.endswith(key)), None)
    assert index is not None, keys
    table(app).move_cursor(row=index)
    await pilot.press(press)


async def test_caches_hold_reduced_objects_screens_show_the_live_ones_and_events_reach_rows():
    cluster = cluster_of(bulky(reference_case() + neighbours("shop-prod")))
    app = make_app(cluster, namespace=None, all_namespaces=True, live=True)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.backend.live and bool(table(app).lines), what="the live view")
        # every cached object is its reducer's output of the live object: less than the cluster holds
        for res in WATCHED:
            reducer = reducer_for(res)
            for held in app.backend.held(res):
                meta = held["metadata"]
                live = cluster.get(res, meta["name"], namespace=meta["namespace"])
                assert reducer is not None and held == reducer(live), (res.plural, meta["name"])
                assert "managedFields" not in meta and LAST_APPLIED not in meta.get("annotations", {})
        assert all(app.backend.held(res) for res in PLURALS.values())

        # the YAML screen reads the workload whole: its last-applied annotation is there
        await open_row(app, pilot, "shop-prod/deployment/web", "y")
        await until(pilot, lambda: bool(getattr(app.screen, "text", "")), what="the YAML")
        assert isinstance(app.screen, YamlScreen)
        assert LAST_APPLIED in app.screen.text and "resourceVersion" in app.screen.text
        await pilot.press("escape")

        # the detail screen: revisions and pods from the states; the diff against a revision reads it whole
        await open_row(app, pilot, "shop-dev/dc/dc2", "d")
        await until(
            pilot,
            lambda: isinstance(app.screen, DetailScreen) and app.screen.detail is not None,
            what="detail",
        )
        detail = app.screen.detail
        assert [r.number for r in detail.revisions][:2] == [2, 1] and detail.pods
        await pilot.press("down", "D")  # the cursor on revision 1
        await until(pilot, lambda: getattr(app.screen, "diff", None) is not None, what="the diff")
        assert isinstance(app.screen, DiffScreen) and app.screen.diff.left == "revision 1"
        assert any("api:v1" in str(line) for line in app.screen.diff.lines)
        await pilot.press("escape", "escape")

        # changes another client makes: each reaches its row (each namespace is re-judged alone)
        other = row_of(app, "shop-dev/dc/dc1")
        cluster.patch(DEPLOYMENTS, "web", {"spec": {"paused": True}}, namespace="shop-prod")
        await until(pilot, lambda: row_of(app, "shop-prod/deployment/web").paused, what="web paused")
        assert row_of(app, "shop-dev/dc/dc1") == other
        dc = cluster.get(DEPLOYMENT_CONFIGS, "dc1", namespace="shop-dev")
        dc["spec"]["template"]["spec"]["containers"][0]["image"] = "registry.example/api:v3"
        cluster.apply(dc)
        await until(
            pilot,
            lambda: "registry.example/api:v3" in row_of(app, "shop-dev/dc/dc1").images.values(),
            what="dc1's new image",
        )
        assert row_of(app, "shop-prod/deployment/web").paused
    cluster.close()


def test_states_kept_up_namespace_by_namespace_equal_a_fresh_read():
    """The read seeds the caches, events re-assess their namespace, the clock tick every namespace one
    at a time: the rows and groups are those a fresh read of the cluster gives, finding for finding."""
    cluster = cluster_of(bulky(reference_case() + neighbours("shop-prod") + neighbours("shop-qa")))

    def backend() -> Backend:
        made = Backend(
            Options(all_namespaces=True, context="demo"), factory=lambda *_: cluster, now=lambda: NOW
        )
        made.connect()
        return made

    live = backend()
    first = live.read(for_live=True)
    # before the caches serve, the screens find revisions and pods among what the read listed
    assert not any(ws.revisions or ws.pods for s in live._states.values() for ws in s.workloads)
    reference = backend()
    reference.read()
    for row in first.rows:
        assert live.detail(row).revisions == reference.detail(row).revisions, row.key
        assert live.log_pods(row) == reference.log_pods(row)
    live.start_live()
    assert live.cached().rows == first.rows  # nothing changed: the read's states stand
    cluster.patch(DEPLOYMENTS, "web", {"spec": {"paused": True}}, namespace="shop-prod")
    dc = cluster.get(DEPLOYMENT_CONFIGS, "dc3", namespace="shop-dev")
    dc["spec"]["paused"] = False
    cluster.apply(dc)
    deadline = time.monotonic() + 10
    while not any(r.paused for r in live.cached().rows if r.namespace == "shop-prod" and r.name == "web"):
        assert time.monotonic() < deadline, "the pause never reached the caches"
        live.wait(0.5)
    while any(r.paused for r in live.cached().rows if r.namespace == "shop-dev" and r.name == "dc3"):
        assert time.monotonic() < deadline, "the resume never reached the caches"
        live.wait(0.5)
    got, everything = live.cached(), live.cached(everything=True)
    fresh = backend()
    want = fresh.read()
    assert got.rows == want.rows == everything.rows and got.groups == want.groups == everything.groups
    assert got.rows != first.rows
    # the held states leave revisions and pods to the caches; the screens that show them judge the
    # workload's namespace again and see what a fresh read sees
    assert not any(ws.revisions or ws.pods for s in live._states.values() for ws in s.workloads)
    for row in want.rows:
        mine, theirs = live.detail(row), fresh.detail(row)
        assert (mine.revisions, mine.pods) == (theirs.revisions, theirs.pods), row.key
        assert live.log_pods(row) == fresh.log_pods(row)
    assert any(live.detail(row).revisions for row in want.rows)
    # an event re-assesses its namespace only, and a row that did not change is the very object shown
    before = live.cached()
    cluster.patch(DEPLOYMENTS, "web", {"spec": {"paused": False}}, namespace="shop-prod")
    deadline = time.monotonic() + 10
    while not any(not r.paused for r in live.cached().rows if r.namespace == "shop-prod" and r.name == "web"):
        assert time.monotonic() < deadline, "the resume never reached the caches"
        live.wait(0.5)
    after = live.cached()
    remade = {r.key for r, s in zip(before.rows, after.rows, strict=True) if r is not s}
    assert remade == {"shop-prod/deployment/web"}
    assert live.cached(everything=True).rows == after.rows  # judged again, equal: the same objects
    assert all(r is s for r, s in zip(after.rows, live.inventory.rows, strict=True))
    assert after.rows == fresh.read().rows
    live.stop_live()
    cluster.close()
