"""The TUI on the live sandbox: repair the reference case by keys, read-only, and what a Role forbids."""

from __future__ import annotations

import contextlib
import socket
import threading

import yaml

from rollguard.cluster.client import Client
from rollguard.core.resources import DEPLOYMENT_CONFIGS
from rollguard.tui.screens.confirm import ConfirmScreen
from rollguard.tui.screens.workloads import WorkloadsScreen
from rollguard.tui.widgets.workload_table import WorkloadTable
from tests.helpers.cluster import DC, create_group, dc_body, deployment_body
from tests.helpers.scenarios import NEW, OLD, pause, reference_state, set_image, states
from tests.helpers.tui import SIZE, footer_keys, make_app, until
from tests.helpers.tui_live import READ, findings, grant

ACTION_KEYS = {"u", "U", "v", "V", "r", "R"}


async def test_revert_the_reference_case_from_the_tui(sandbox, namespace, client):
    """Reference section 1 (dc1 new, dc2 failed, dc3 paused): select the group, revert it, all healthy."""
    reference_state(client, namespace)
    app = make_app(client, namespace=namespace, live=True)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await until(pilot, lambda: "failed" in findings(app).get("dc2", set()) and app.permissions_known,
                    timeout=30, what="the broken group")  # fmt: skip
        assert "paused" in findings(app)["dc3"]
        table = app.screen.query_one(WorkloadTable)
        assert table.current.key == f"group:{namespace}/app=shop-api"  # the group row is selected
        assert "v" in footer_keys(app)
        await pilot.press("v")
        dialog = app.screen
        assert isinstance(dialog, ConfirmScreen)
        await until(pilot, lambda: dialog.state == "ready", timeout=30, what="the plan")
        changes = {c.ref: c for c in dialog.plan.changes}
        assert set(changes) == {"dc/dc1", "dc/dc2", "dc/dc3"}
        assert changes["dc/dc3"].paused_before and not changes["dc/dc3"].paused_after
        assert dialog.plan.command == f"rollguard revert -l app=shop-api -n {namespace}"
        # the side effect on dc3's trigger (its tag moved on: made manual) is in the text the dialog shows
        shown = str(dialog.query_one("#notes").render())
        assert "dc/dc3: image trigger of app on dc3:latest made manual" in shown, shown
        await pilot.press("y", "enter")  # a group's action needs its name typed: neither key confirms
        assert dialog.state == "ready" and dialog.query_one("#typed").value != "app=shop-api"
        dialog.query_one("#typed").value = ""
        await pilot.press(*"app=shop-api", "enter")
        await until(pilot, lambda: dialog.state == "done", timeout=240, what="the revert to end")
        assert dialog.result.ok, (dialog.result, dialog.query_one("#progress").lines)
        assert len(dialog.query_one("#progress").lines) >= 3  # progress was shown as it happened
        await pilot.press("escape")
        assert isinstance(app.screen, WorkloadsScreen)
        await until(pilot, lambda: all(f == {"healthy"} for f in findings(app).values()), timeout=60,
                    what="the live view to show the group healthy")  # fmt: skip
        assert [n.message for n in app._notifications if n.severity == "error"] == []
    found = states(client, namespace)
    assert all(s.healthy for s in found.values()), {k: s.findings for k, s in found.items()}
    assert len({tuple(s.images.values()) for s in found.values()}) == 1  # one version across the group


async def test_read_only_and_forbidden_actions_are_not_offered(sandbox, namespace, client):
    create_group(client, namespace, [dc_body("dc1", OLD), deployment_body("web", OLD)])
    pause(client, namespace, "dc1")
    set_image(client, namespace, DC, "dc1", NEW)  # paused with a change waiting: resume would apply
    grant(client, namespace, "alice", READ)  # may look, not touch
    grant(client, namespace, "bob", ["*"])

    async def offered(app) -> set[str]:
        async with app.run_test(size=SIZE) as pilot:
            await until(pilot, lambda: app.permissions_known and len(app.inventory.rows) == 2, timeout=30,
                        what="the workloads and permissions")  # fmt: skip
            keys: set[str] = set()
            for _ in app.screen.query_one(WorkloadTable).lines:
                keys |= footer_keys(app) & ACTION_KEYS
                await pilot.press("down")
            await pilot.press("home")
            offered_here = footer_keys(app) & ACTION_KEYS
            await pilot.press("u")
            if "u" in offered_here:
                await until(
                    pilot, lambda: isinstance(app.screen, ConfirmScreen), timeout=5, what="the dialog"
                )
            await pilot.pause(0.3)
            # the key does what the footer says: a dialog only where resume was offered
            assert isinstance(app.screen, ConfirmScreen) == ("u" in offered_here), (
                keys,
                offered_here,
                app.screen,
            )
            return keys

    admin_read_only = make_app(client, namespace=namespace, live=True, read_only=True)
    assert await offered(admin_read_only) == set()
    alice = Client.connect(kubeconfig=str(sandbox.user_kubeconfig("alice", namespace)))
    assert await offered(make_app(alice, namespace=namespace, live=True)) == set()
    bob = Client.connect(kubeconfig=str(sandbox.user_kubeconfig("bob", namespace)))
    assert {"u", "v"} <= await offered(make_app(bob, namespace=namespace, live=True))


class Outage:
    """A TCP relay in front of the sandbox's API server: `cut()` makes the server vanish for the client
    (connections reset, new ones refused, as when kube-apiserver is stopped) and `restore()` brings it
    back on the same address. The session's one API server stays up for the other tests."""

    def __init__(self, upstream_port: int) -> None:
        self.upstream = upstream_port
        probe = socket.socket()
        probe.bind(("127.0.0.1", 0))
        self.port = probe.getsockname()[1]
        probe.close()
        self._listener: socket.socket | None = None
        self._open: list[socket.socket] = []
        self.restore()

    def restore(self) -> None:
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(64)
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def cut(self) -> None:
        listener, self._listener = self._listener, None
        if listener is not None:
            listener.close()
        for conn in self._open:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
                conn.close()
        self._open.clear()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            try:
                server = socket.create_connection(("127.0.0.1", self.upstream))
            except OSError:
                client.close()
                continue
            self._open += [client, server]
            for a, b in ((client, server), (server, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    @staticmethod
    def _pump(src: socket.socket, dst: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while data := src.recv(65536):
                dst.sendall(data)
        with contextlib.suppress(OSError):
            dst.shutdown(socket.SHUT_WR)


async def test_api_server_gone_under_a_running_tui(sandbox, namespace, client, tmp_path):
    """The header says so within seconds, the banner shows, and the TUI recovers by itself; a change
    made during the outage is on screen once the server answers again."""
    create_group(client, namespace, [dc_body("dc1", OLD), deployment_body("web", OLD)])
    outage = Outage(sandbox.port)
    config = yaml.safe_load(sandbox.kubeconfig.read_text())
    config["clusters"][0]["cluster"]["server"] = f"https://127.0.0.1:{outage.port}"
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(yaml.safe_dump(config))
    relayed = Client.connect(kubeconfig=str(kubeconfig))
    app = make_app(relayed, namespace=namespace, live=True)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await until(pilot, lambda: app.liveness.live and len(app.inventory.rows) == 2, timeout=30,
                        what="the live view")  # fmt: skip
            outage.cut()
            await until(pilot, lambda: not app.liveness.live, timeout=15, what="the outage to show")
            status = lambda: str(app.screen.query_one("#status").render())  # noqa: E731
            assert "reconnecting" in status() or "disconnected" in status()
            assert app.screen.query_one("#banner").display
            await until(pilot, lambda: "disconnected · stale" in status(), timeout=30, what="disconnected")
            pause(client, namespace, "dc1")  # while the TUI cannot see the server
            outage.restore()
            await until(pilot, lambda: app.liveness.live, timeout=30, what="the recovery")
            await until(pilot, lambda: "paused" in findings(app).get("dc1", set()), timeout=30,
                        what="the change made during the outage")  # fmt: skip
            assert not app.screen.query_one("#banner").display
    finally:
        outage.cut()


async def test_d_then_enter_changes_nothing_on_the_cluster(sandbox, namespace, client):
    """Issue 19's reproduction on a real API server: `d` then Enter redeployed (latestVersion 2 -> 3).
    Now `d` describes, and a reflex Enter in a redeploy's dialog cancels it."""
    create_group(client, namespace, [dc_body("dc1", OLD)])
    before = client.get(DEPLOYMENT_CONFIGS, "dc1", namespace=namespace)
    app = make_app(client, namespace=namespace, live=True)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.permissions_known and len(app.inventory.rows) == 1, timeout=30,
                    what="the workload")  # fmt: skip
        await pilot.press("down", "d", "enter")
        await until(pilot, lambda: type(app.screen).__name__ == "DetailScreen", timeout=30, what="detail")
        await pilot.press("escape", "r")
        await until(pilot, lambda: isinstance(app.screen, ConfirmScreen) and app.screen.state == "ready",
                    timeout=30, what="the redeploy plan")  # fmt: skip
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, WorkloadsScreen), timeout=30, what="cancelled")
    after = client.get(DEPLOYMENT_CONFIGS, "dc1", namespace=namespace)
    assert after["status"]["latestVersion"] == before["status"]["latestVersion"]
    assert after["metadata"]["generation"] == before["metadata"]["generation"]
