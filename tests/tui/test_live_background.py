"""Issue 19 point 5 on the live sandbox: a group revert sent to the background while the user moves in
the table; the group row's badge counts the elapsed time; the revert ends and the group is healthy."""

from __future__ import annotations

import threading

from rollguard.core.resources import LEASES
from rollguard.tui.screens.confirm import ConfirmScreen
from rollguard.tui.screens.workloads import WorkloadsScreen
from tests.helpers.cluster import JOURNAL
from tests.helpers.scenarios import reference_state, states
from tests.helpers.tui import SIZE, make_app, until
from tests.helpers.tui_live import findings


async def test_a_revert_runs_in_the_background_on_the_live_sandbox(sandbox, namespace, client):
    reference_state(client, namespace)
    app = make_app(client, namespace=namespace, live=True)
    # The sandbox reverts in a second or two: the real revert is held at its first progress line (it has
    # the group's Lease and journal by then) until the test has used the table, then goes on.
    gate = threading.Event()
    real_execute = app.backend.execute

    def execute(plan, out, cancel):
        def held(line: str) -> None:
            out(line)
            gate.wait(60)

        return real_execute(plan, held, cancel)

    app.backend.execute = execute
    try:
        await _run(app, gate, namespace)
    finally:
        gate.set()
    found = states(client, namespace)
    assert all(s.healthy for s in found.values()), {k: s.findings for k, s in found.items()}


async def _run(app, gate, namespace):
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await until(pilot, lambda: "failed" in findings(app).get("dc2", set()) and app.permissions_known,
                    timeout=30, what="the broken group")  # fmt: skip
        await pilot.press("v")
        dialog = app.screen
        assert isinstance(dialog, ConfirmScreen)
        await until(pilot, lambda: dialog.state == "ready", timeout=30, what="the plan")
        await pilot.press(*"app=shop-api", "enter")
        assert dialog.state == "running"
        repair = dialog.repair
        await pilot.press("escape")  # to the background: the revert goes on
        screen = app.screen
        assert isinstance(screen, WorkloadsScreen) and repair.running
        group = f"group:{namespace}/app=shop-api"
        row = next(i for i, ln in enumerate(screen.table.lines) if ln.key == group)
        await until(pilot, lambda: "⟳ revert 0:0" in str(screen.table.get_row_at(row)[0]), timeout=10,
                    what="the badge with the elapsed time")  # fmt: skip
        assert "⟳ revert" in str(screen.query_one("#status").render())
        before = screen.table.cursor_row
        await pilot.press("down", "down")  # the table answers while the revert runs
        assert screen.table.cursor_row == before + 2 and repair.running
        assert app.backend.client.get(LEASES, JOURNAL, namespace=namespace)  # held by the revert meanwhile
        gate.set()
        await until(pilot, lambda: not repair.running, timeout=240, what="the revert to end")
        assert repair.result.ok, (repair.result, repair.lines)
        assert any("(b shows it)" in n.message for n in app._notifications)
        await pilot.press("b")
        assert isinstance(app.screen, ConfirmScreen) and app.screen.state == "done"
