"""Issue 19 point 2 on the live sandbox: `l` on a DC whose new revision crash-loops shows, through the API
server and the stand-in kubelet (sandbox/kubelet_logs.py), the previous container's FATAL line under its
own heading, then that the current container waits in CrashLoopBackOff; `esc` ends the stream."""

from __future__ import annotations

from rollguard.core.resources import PODS, REPLICATION_CONTROLLERS
from rollguard.tui.logs import Heading, Note
from rollguard.tui.screens.logs import LogsScreen
from tests.helpers.cluster import CRASH, OLD, create_group, dc_body, wait_until
from tests.helpers.scenarios import set_image
from tests.helpers.tui import SIZE, make_app, until

FATAL = "FATAL api v2-crash: cannot start: dial tcp 10.0.0.12:5432: connect: connection refused"


def in_back_off(pod: dict) -> bool:
    statuses = (pod.get("status") or {}).get("containerStatuses") or []
    return any(
        (s.get("state") or {}).get("waiting", {}).get("reason") == "CrashLoopBackOff" for s in statuses
    )


async def test_l_on_a_crash_looping_dc_shows_the_previous_containers_error(sandbox, namespace, client):
    create_group(client, namespace, [dc_body("dc1", OLD)])
    set_image(client, namespace, "DeploymentConfig", "dc1", CRASH)  # revision 2: its pod crash-loops
    wait_until(client, REPLICATION_CONTROLLERS, namespace, "dc1-2",
               lambda rc: (rc.get("status") or {}).get("replicas", 0) >= 1, timeout=60, what="a pod")  # fmt: skip
    (pod,) = client.list(PODS, namespace=namespace, selector="deployment=dc1-2")["items"]
    name = pod["metadata"]["name"]
    wait_until(client, PODS, namespace, name, in_back_off, timeout=30, what="CrashLoopBackOff")
    app = make_app(client, namespace=namespace, live=True)
    async with app.run_test(size=SIZE) as pilot:

        def dc1_pods() -> list[str]:
            rows = [r for r in (app.inventory.rows if app.inventory else []) if r.name == "dc1"]
            return app.backend.log_pods(rows[0]) if rows else []

        await until(pilot, lambda: name in dc1_pods(), timeout=60, what="dc1-2's pod in view")
        await pilot.press("down", "l")
        screen = app.screen
        assert isinstance(screen, LogsScreen)
        await until(pilot, lambda: FATAL in screen.lines, timeout=30, what="the crash's FATAL line")
        headings = [e.text for e in screen.events if isinstance(e, Heading)]
        assert headings[0].startswith("previous container (restart ") and "exited 1 (Error)" in headings[0]
        assert screen.lines[0] == f"INFO starting api v2-crash (image {CRASH})"
        await until(pilot, lambda: any(isinstance(e, Note) and "not started again" in e.text for e in screen.events),
                    timeout=30, what="the back-off note")  # fmt: skip
        current = [e.text for e in screen.events if isinstance(e, Heading)][1]
        assert current.startswith("current container: CrashLoopBackOff: back-off"), current
        workers = [w for w in app.workers if w.group == "logs"]
        await pilot.press("escape")
        await until(
            pilot, lambda: all(w.is_finished for w in workers), timeout=10, what="the log worker to end"
        )


ROLLING_ERROR = "error: timed out waiting for any update progress to be made"


async def test_l_on_a_dc_whose_rollout_failed_shows_the_deployer_pods_error(sandbox, namespace, client):
    """As `oc logs dc/dc1` after a failed rollout (openshift-apiserver
    pkg/apps/apiserver/registry/deploylog/rest.go: a Failed RC's log is its deployer pod's): the revision's
    pods are gone, so `l` shows `dc1-2-deploy`'s log as the emulated deployer wrote it (oc
    pkg/cli/deployer/strategy/rolling/rolling_updater.go), served by the stand-in kubelet."""
    create_group(client, namespace, [dc_body("dc1", OLD, timeout=3)])
    set_image(client, namespace, "DeploymentConfig", "dc1", CRASH)
    phase = "openshift.io/deployment.phase"
    wait_until(client, REPLICATION_CONTROLLERS, namespace, "dc1-2",
               lambda rc: rc["metadata"].get("annotations", {}).get(phase) == "Failed", timeout=60,
               what="the rollout to fail")  # fmt: skip
    app = make_app(client, namespace=namespace, live=True)
    async with app.run_test(size=SIZE) as pilot:

        def dc1_rollback_seen() -> bool:  # dc1-2 failed and has no pods left, in the TUI's view
            rows = [r for r in (app.inventory.rows if app.inventory else []) if r.name == "dc1"]
            return bool(rows) and app.backend.deployer_pod(rows[0]) == "dc1-2-deploy"

        await until(pilot, dc1_rollback_seen, timeout=60, what="dc1-2 without pods in view")
        await pilot.press("down", "l")
        screen = app.screen
        assert isinstance(screen, LogsScreen)
        await until(pilot, lambda: ROLLING_ERROR in screen.lines, timeout=30, what="the deployer's error")
        notes = [e.text for e in screen.events if isinstance(e, Note)]
        assert notes[0] == "deployer pod dc1-2-deploy: the revision has no pods"
        assert screen.lines[0] == (
            "--> Scaling up dc1-2 from 0 to 1, scaling down dc1-1 from 1 to 0 "
            "(keep 1 pods available, don't exceed 2 pods)"
        )
        headings = [e.text for e in screen.events if isinstance(e, Heading)]
        assert headings[0].startswith("current container: exited 1 (Error)"), headings
        await pilot.press("escape")
