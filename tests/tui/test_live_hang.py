"""Freshness on the live sandbox (issue 30 point 2): the API server stopped with SIGSTOP (a frozen control
plane or a black-holed load balancer: nothing is refused, nothing answers), then continued.

The header must say "no answer from the API server for Ns" within seconds, long before any of the TUI's
requests times out, and `live` again once the server answers; the table keeps the namespace's
workloads throughout. The server's pid is the one `sandbox.cluster` recorded (DIR/apiserver.pid).
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from rollguard.tui.liveness import Link
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


def header(app) -> str:
    return str(app.screen.query_one("#status").render())


def keys(app) -> set[str]:
    return {ln.key for ln in app.screen.query_one(WorkloadTable).lines if ln.row is not None}


@pytest.mark.timeout(300)
async def test_a_stopped_api_server_is_said_within_seconds_and_live_again_after(sandbox, namespace, client):
    reference_state(client, namespace)
    app = make_app(client, namespace=namespace, live=True)
    app.PROBE_EVERY = 1.0
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.liveness.live and len(keys(app)) == 3, timeout=60, what="live")
        shown = keys(app)
        with stopped(sandbox):
            # said while the probe still waits (its timeout is 8 s; the hang is said after 3 s)
            await until(pilot, lambda: "no answer from the API server for" in header(app), timeout=20,
                        what="the hang in the header")  # fmt: skip
            assert "live" not in header(app).split(" · ")[1]
            assert keys(app) == shown  # the last picture stays, said to be old
            # the requests time out: the link is then reconnecting or disconnected, never live
            await until(pilot, lambda: app.liveness.link in (Link.RECONNECTING, Link.DISCONNECTED),
                        timeout=60, what="reconnecting")  # fmt: skip
            assert "live" not in header(app).split(" · ")[1]
        await until(pilot, lambda: app.liveness.live and header(app).split(" · ")[1] == "live",
                    timeout=120, what="live again")  # fmt: skip
        assert keys(app) == shown
