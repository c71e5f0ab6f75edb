"""`tui -A` on the live sandbox: its first read becomes the watches' first lists (rollguard.cluster.cache's
Keeping and NamespaceCache.seed), its caches hold reduced objects, yet a pause and an image change made by
another client after the read reach their rows, and the YAML screen shows the live object whole."""

from __future__ import annotations

from rollguard.core.resources import DEPLOYMENTS
from rollguard.tui.screens.yaml import YamlScreen
from rollguard.tui.widgets.workload_table import WorkloadTable
from tests.helpers.cluster import create_group, dc_body, deployment_body
from tests.helpers.scenarios import NEW, OLD, pause, set_image
from tests.helpers.tui import SIZE, make_app, until

NOTE = "example.com/owner-note"  # an annotation the state model does not read: the caches drop it


def row(app, namespace: str, name: str):
    rows = app.inventory.rows if app.inventory else ()
    return next((r for r in rows if r.namespace == namespace and r.name == name), None)


async def test_all_namespaces_follows_changes_made_after_its_read(sandbox, namespace, client):
    create_group(client, namespace, [dc_body("dc1", OLD), deployment_body("web", OLD)])
    client.patch(
        DEPLOYMENTS, "web", {"metadata": {"annotations": {NOTE: "ask the web team"}}}, namespace=namespace
    )
    app = make_app(client, namespace=None, all_namespaces=True, live=True)
    async with app.run_test(size=SIZE) as pilot:
        await until(
            pilot,
            lambda: app.backend.live and row(app, namespace, "web") is not None,
            timeout=60,
            what="live",
        )
        held = [o for o in app.backend.held(DEPLOYMENTS) if o["metadata"]["namespace"] == namespace]
        assert [o["metadata"]["name"] for o in held] == ["web"]
        assert NOTE not in held[0]["metadata"].get("annotations", {})
        assert not row(app, namespace, "dc1").paused

        pause(client, namespace, "dc1")  # another client, after the read
        await until(
            pilot, lambda: row(app, namespace, "dc1").paused, timeout=30, what="dc1 paused on its row"
        )
        set_image(client, namespace, "Deployment", "web", NEW)
        await until(
            pilot,
            lambda: NEW in row(app, namespace, "web").images.values(),
            timeout=30,
            what="web's new image",
        )

        table = app.screen.query_one(WorkloadTable)
        table.move_cursor(
            row=next(i for i, ln in enumerate(table.lines) if ln.key == f"{namespace}/deployment/web")
        )
        await pilot.press("y")
        await until(pilot, lambda: bool(getattr(app.screen, "text", "")), timeout=30, what="the YAML")
        assert isinstance(app.screen, YamlScreen)
        assert NOTE in app.screen.text and NEW in app.screen.text
