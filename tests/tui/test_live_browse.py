"""The pods and events pages (issue 30 point 6) on the live sandbox: the namespace's Events as the
controllers recorded them (kube-controller-manager's for the Deployment, the emulated DC controller's),
newest first with the object involved; the pods of a DC and a Deployment from the live caches, each with
its workload and revision, and `l` on one shows its log served by the stand-in kubelet."""

from __future__ import annotations

import itertools

from rollguard.tui.screens.events import EventsScreen
from rollguard.tui.screens.logs import LogsScreen
from rollguard.tui.screens.pods import PodsScreen
from tests.helpers.cluster import OLD, create_group, dc_body, deployment_body
from tests.helpers.tui import SIZE, make_app, until


async def test_the_events_and_pods_pages_on_the_sandbox(sandbox, namespace, client):
    create_group(client, namespace, [dc_body("dc1", OLD), deployment_body("web", OLD)])
    app = make_app(client, namespace=namespace, live=True)
    async with app.run_test(size=SIZE) as pilot:
        await until(
            pilot,
            lambda: app.inventory is not None and {r.name for r in app.inventory.rows} == {"dc1", "web"},
            timeout=60,
            what="both workloads in view",
        )
        events = EventsScreen()
        await app.push_screen(events)
        await until(pilot, lambda: events.loaded and not events.error, timeout=30, what="the events")
        involved = {e.involved for e in events.events}
        assert "Deployment/web" in involved, involved  # kube-controller-manager's ScalingReplicaSet
        assert "DeploymentConfig/dc1" in involved, involved  # the DC controller's DeploymentCreated
        seen = [e.last_seen for e in events.events]
        assert all(a >= b for a, b in itertools.pairwise(seen) if a and b), seen  # newest first
        scaled = next(e for e in events.events if e.involved == "Deployment/web")
        assert scaled.reason == "ScalingReplicaSet" and "web-" in scaled.message, scaled
        await pilot.press("escape")

        pods = PodsScreen()
        await app.push_screen(pods)
        await until(
            pilot,
            lambda: {p.workload for p in pods.pods} == {"dc/dc1", "deployment/web"},
            timeout=30,
            what="the pods of both workloads",
        )
        dc_pod = next(p for p in pods.pods if p.workload == "dc/dc1")
        assert dc_pod.revision == "dc1-1" and dc_pod.ready == "yes", dc_pod
        pods.query_one("#pods").move_cursor(row=pods.pods.index(dc_pod))
        await pilot.press("l")
        await until(pilot, lambda: isinstance(app.screen, LogsScreen), what="the logs page")
        logs = app.screen
        assert isinstance(logs, LogsScreen) and logs.pod == dc_pod.name
        await until(pilot, lambda: bool(logs.lines), timeout=30, what="the pod's log")
        assert OLD in "\n".join(logs.lines), logs.lines
        workers = [w for w in app.workers if w.group == "logs"]
        await pilot.press("escape")
        await until(pilot, lambda: all(w.is_finished for w in workers), timeout=10, what="the log worker")
