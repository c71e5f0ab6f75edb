"""The pods and events pages (issue 30 point 6) on the live sandbox, reached with `:events` and `:pods`
as a k9s user types them: the namespace's Events as the
controllers recorded them (kube-controller-manager's for the Deployment, the emulated DC controller's),
newest first with the object involved; the pods of a DC and a Deployment from the live caches, each with
its workload and revision, and `l` on one shows its log served by the stand-in kubelet (`t`: with the
kubelet's timestamps, sandbox/kubelet_logs.py)."""

from __future__ import annotations

import itertools
import re

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
        await pilot.press("colon", *"events", "enter")  # typed at once: all of it goes to the `:` line
        await until(pilot, lambda: isinstance(app.screen, EventsScreen), what="the events page")
        events = app.screen
        assert isinstance(events, EventsScreen)
        await until(pilot, lambda: events.loaded and not events.error, timeout=30, what="the events")
        involved = {e.involved for e in events.events}
        assert "Deployment/web" in involved, involved  # kube-controller-manager's ScalingReplicaSet
        assert "DeploymentConfig/dc1" in involved, involved  # the DC controller's DeploymentCreated
        seen = [e.last_seen for e in events.events]
        assert all(a >= b for a, b in itertools.pairwise(seen) if a and b), seen  # newest first
        scaled = next(e for e in events.events if e.involved == "Deployment/web")
        assert scaled.reason == "ScalingReplicaSet" and "web-" in scaled.message, scaled
        await pilot.press("escape")

        await pilot.press("colon", *"pods", "enter")
        await until(pilot, lambda: isinstance(app.screen, PodsScreen), what="the pods page")
        pods = app.screen
        assert isinstance(pods, PodsScreen)
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
        await pilot.press("t")  # the kubelet's times: the stream read again with timestamps=true
        stamped = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z ")
        await until(
            pilot, lambda: bool(logs.lines) and all(stamped.match(line) for line in logs.lines), timeout=30,
            what="stamped lines",
        )  # fmt: skip
        assert OLD in "\n".join(logs.lines), logs.lines
        workers = [w for w in app.workers if w.group == "logs"]
        await pilot.press("escape")
        await until(pilot, lambda: all(w.is_finished for w in workers), timeout=10, what="the log worker")
