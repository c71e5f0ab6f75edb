"""Namespace and context switches show the new namespace's workloads and keep them (issue 30 point 1).

Reproduction: `:ns web` (or the `n` picker) left an empty table under "live · ns web · 0 workloads" in 9 of
14 switches: the loader of the namespace left behind, cancelled, stopped the live caches the new
loader had just started (its `finally`), so the next refresh from the caches was empty. Here a live app
on an in-memory cluster switches back and forth many times; after each switch the table must equal the
namespace's workloads on the cluster, and still equal them after two more live refreshes.
"""

from __future__ import annotations

import json

from rollguard.tui.app import RollguardApp
from rollguard.tui.widgets.workload_table import WorkloadTable
from tests.helpers.fakecluster import FakeCluster
from tests.helpers.tui import SIZE, make_app, until
from tests.helpers.tui_objects import cluster_of, neighbours, reference_case

WORKLOAD_KINDS = ("DeploymentConfig", "Deployment")
SWITCHES = 14


def on_cluster(fake: FakeCluster, namespace: str) -> set[str]:
    """The workloads of ``namespace`` as the table keys them (``ns/kind/name``)."""
    kinds = {"DeploymentConfig": "dc", "Deployment": "deployment"}
    return {
        f"{ns}/{kinds[obj['kind']]}/{name}"
        for (_plural, ns, name), obj in fake._objects.items()
        if ns == namespace and obj.get("kind") in WORKLOAD_KINDS
    }


def in_table(app: RollguardApp) -> set[str]:
    return {ln.key for ln in app.screen.query_one(WorkloadTable).lines if ln.row is not None}


def fast(app: RollguardApp) -> RollguardApp:
    app.PROBE_EVERY = 0.2
    app.CLOCK_TICK = 0.3
    return app


async def test_switching_namespaces_back_and_forth_keeps_the_new_namespaces_workloads():
    fake = cluster_of(reference_case("shop-dev") + neighbours("shop-dev") + neighbours("web"))
    app = fast(make_app(fake, namespace="shop-dev", live=True))
    assert on_cluster(fake, "web") and on_cluster(fake, "shop-dev")
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.liveness.live and in_table(app) == on_cluster(fake, "shop-dev"),
                    what="shop-dev live")  # fmt: skip
        for i in range(SWITCHES):
            target = "web" if i % 2 == 0 else "shop-dev"
            if i % 3 == 2:  # the picker, as well as `:ns`
                await pilot.press("n")
                await until(pilot, lambda: app.screen.query("OptionList") and "loading" not in str(
                    app.screen.query_one("OptionList").get_option_at_index(0).prompt), what="the picker")  # fmt: skip
                await pilot.press(*target, "enter")
            else:
                await pilot.press("colon", *f"ns {target}", "enter")
            expected = on_cluster(fake, target)

            def shown(target: str = target, expected: set[str] = expected) -> bool:
                return app.liveness.live and app.backend.namespace == target and in_table(app) == expected

            await until(pilot, shown, what=f"switch {i + 1} to {target}")
            # and it stays: two more refreshes from the live caches show the same
            seen = app.live_refreshes
            await until(pilot, lambda seen=seen: app.live_refreshes >= seen + 2, what="two live refreshes")
            assert in_table(app) == expected, f"switch {i + 1} to {target}: {in_table(app)}"
            assert f"{len(expected)} workloads" in str(app.screen.query_one("#status").render())
    fake.close()


async def test_switching_contexts_back_and_forth_keeps_the_new_clusters_workloads(tmp_path):
    """The same for `:ctx`: two clusters whose shop-dev namespaces differ; after each switch the table is
    the new cluster's, and stays so."""
    contexts = [
        {"name": n, "context": {"cluster": "c", "user": "u", "namespace": "shop-dev"}}
        for n in ("dev", "prod")
    ]
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "dev", "contexts": contexts,
        "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:1"}}], "users": [{"name": "u", "user": {}}],
    }))  # fmt: skip
    clusters = {
        "dev": cluster_of(reference_case("shop-dev") + neighbours("shop-dev")),
        "prod": cluster_of(neighbours("shop-dev")),
    }
    assert on_cluster(clusters["dev"], "shop-dev") != on_cluster(clusters["prod"], "shop-dev")
    app = fast(make_app(clusters["dev"], namespace="shop-dev", kubeconfig=str(kubeconfig), live=True))
    app.backend._factory = lambda _kubeconfig, context: clusters[context or "dev"]
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.liveness.live and in_table(app) == on_cluster(clusters["dev"], "shop-dev"),
                    what="dev live")  # fmt: skip
        for i in range(SWITCHES // 2):
            target = "prod" if i % 2 == 0 else "dev"
            await pilot.press("colon", *f"ctx {target}", "enter")
            expected = on_cluster(clusters[target], "shop-dev")

            def shown(target: str = target, expected: set[str] = expected) -> bool:
                return app.liveness.live and app.backend.context == target and in_table(app) == expected

            await until(pilot, shown, what=f"switch {i + 1} to {target}")
            seen = app.live_refreshes
            await until(pilot, lambda seen=seen: app.live_refreshes >= seen + 2, what="two live refreshes")
            assert in_table(app) == expected, f"switch {i + 1} to {target}: {in_table(app)}"
    for cluster in clusters.values():
        cluster.close()
