"""Issue 19 point 2 on the live sandbox: `l` on a DC whose new revision crash-loops shows, through the API
server and the stand-in kubelet (sandbox/kubelet_logs.py), the previous container's FATAL line under its
own heading, then that the current container waits in CrashLoopBackOff; `esc` ends the stream."""

from __future__ import annotations

from rollguard.resources import PODS, REPLICATION_CONTROLLERS
from rollguard.tui.logs import Heading, Note
from rollguard.tui.screens.logs import LogsScreen
from tests.scenarios import set_image
from tests.support import CRASH, OLD, create_group, dc_body, wait_until
from tests.tui.conftest import SIZE, make_app, until

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
