"""Freshness on the live sandbox (issue 30 point 2): the API server stopped with SIGSTOP (a frozen control
plane or a black-holed load balancer: nothing is refused, nothing answers), then continued.

The header must say "no answer from the API server for Ns" within seconds, long before any of the TUI's
requests times out, and `live` again once the server answers; the table keeps the namespace's
workloads throughout. Behind a dialog the table says `paused`; a confirmation opened while the server
is stopped says that its dry run gets no answer and that esc cancels it, and esc does, with nothing
changed on the cluster. The server's pid is the one `sandbox.cluster` recorded (DIR/apiserver.pid).
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from rollguard.core.resources import DEPLOYMENT_CONFIGS, DEPLOYMENTS
from rollguard.tui.liveness import Link
from rollguard.tui.screens.confirm import ConfirmScreen
from rollguard.tui.widgets.workload_table import WorkloadTable
from tests.helpers.scenarios import reference_state
from tests.helpers.tui import SIZE, make_app, until


@contextlib.contextmanager
def stopped(sandbox) -> Iterator[int]:
    """The sandbox's kube-apiserver stopped (SIGSTOP) for the block; always continued after it."""
    pid = int((Path(sandbox.dir) / "apiserver.pid").read_text().strip())
    os.kill(pid, signal.SIGSTOP)
    try:
        yield pid
    finally:
        os.kill(pid, signal.SIGCONT)


def header(app_or_screen) -> str:
    screen = getattr(app_or_screen, "screen", app_or_screen)
    return str(screen.query_one("#status").render())


def summary(dialog) -> str:
    return str(dialog.query_one("#summary").render())


def specs(client, namespace: str) -> dict[str, object]:
    """Every workload's spec and generation: what a write would change."""
    return {
        f"{res.plural}/{o['metadata']['name']}": (o["metadata"].get("generation"), o["spec"])
        for res in (DEPLOYMENT_CONFIGS, DEPLOYMENTS)
        for o in client.list(res, namespace=namespace)["items"]
    }


def keys(app) -> set[str]:
    return {ln.key for ln in app.screen.query_one(WorkloadTable).lines if ln.row is not None}


@pytest.mark.timeout(300)
async def test_a_stopped_api_server_is_said_within_seconds_and_live_again_after(sandbox, namespace, client):
    reference_state(client, namespace)
    app = make_app(client, namespace=namespace, live=True)
    app.PROBE_EVERY = 1.0
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.liveness.live and len(keys(app)) == 3 and app.permissions_known,
                    timeout=60, what="live")  # fmt: skip
        shown, before = keys(app), specs(client, namespace)
        await pilot.press("question_mark")  # any dialog: the table behind it is held, and says so
        await until(pilot, lambda: header(app.screen_stack[-2]).split(" · ")[1].startswith("paused"),
                    what="paused behind the dialog")  # fmt: skip
        await pilot.press("escape")
        await until(pilot, lambda: header(app).split(" · ")[1] == "live", what="live after the dialog")
        await pilot.press("down")  # a workload's row
        with stopped(sandbox):
            # said while the probe still waits (its timeout is 8 s; the hang is said after 3 s)
            await until(pilot, lambda: "no answer from the API server for" in header(app), timeout=20,
                        what="the hang in the header")  # fmt: skip
            assert "live" not in header(app).split(" · ")[1]
            assert keys(app) == shown  # the last picture stays, said to be old
            await pilot.press("r")  # a redeploy's confirmation: its dry run gets no answer
            dialog = app.screen
            assert isinstance(dialog, ConfirmScreen), app.screen_stack
            await until(pilot, lambda: "No answer from the API server for" in summary(dialog), timeout=20,
                        what="the dialog says it waits")  # fmt: skip
            assert "esc cancels" in summary(dialog) and dialog.state == "planning"
            await pilot.press("escape")
            await until(pilot, lambda: not isinstance(app.screen, ConfirmScreen), what="cancelled")
            # the requests time out: the link is then reconnecting or disconnected, never live
            await until(pilot, lambda: app.liveness.link in (Link.RECONNECTING, Link.DISCONNECTED),
                        timeout=60, what="reconnecting")  # fmt: skip
            assert "live" not in header(app).split(" · ")[1]
        await until(pilot, lambda: app.liveness.live and header(app).split(" · ")[1] == "live",
                    timeout=120, what="live again")  # fmt: skip
        assert keys(app) == shown
        assert specs(client, namespace) == before and not app.repairs  # nothing was changed
