"""Screen snapshots (SVG, reviewed by eye): main screen, detail screen, confirmation dialog, the pods and
events pages, a search in the YAML page, the warning of a revert that discards a recorded edit.

Deterministic: fixed data (an in-memory cluster), a fixed "now", a fixed terminal size, no live
refresh, no blinking cursor, no notifications. Update with `pytest tests/tui --snapshot-update` and
look at the result (e.g. `rsvg-convert x.svg -o x.png`) before committing.
"""

from __future__ import annotations

import time

import pytest

from rollguard.tui.liveness import Link, Liveness
from rollguard.tui.screens.confirm import ConfirmScreen
from rollguard.tui.screens.detail import DetailScreen
from rollguard.tui.screens.events import EventsScreen
from rollguard.tui.screens.pods import PodsScreen
from rollguard.tui.screens.quit import QuitScreen
from rollguard.tui.screens.yaml import YamlScreen
from rollguard.tui.widgets.badges import SHORT
from rollguard.tui.widgets.workload_table import WorkloadTable
from tests.helpers.snapshot import SVGScreenshot
from tests.helpers.tui import SIZE, confirm, hold_repairs, make_app, settle
from tests.helpers.tui_objects import cluster_of, hotfix_left_by_the_last_run, neighbours, reference_case


@pytest.fixture
def svg(snapshot):
    return snapshot.use_extension(SVGScreenshot)


async def test_main_screen(fake, svg):
    app = make_app(fake)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("down", "down")  # dc2: its findings' reasons show under the table
        await settle(app, pilot)
        assert app.export_screenshot() == svg


async def test_detail_screen(fake, svg):
    app = make_app(fake)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("down", "down", "enter")
        await settle(app, pilot)
        assert isinstance(app.screen, DetailScreen)
        assert app.export_screenshot() == svg


async def test_confirmation_dialog(fake, svg):
    app = make_app(fake)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("v")  # on the group row: revert the whole group
        await settle(app, pilot)
        assert isinstance(app.screen, ConfirmScreen) and app.screen.state == "ready"
        assert app.export_screenshot() == svg


async def test_pods_page(fake, svg):
    app = make_app(fake)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("colon", *"pods", "enter")
        await settle(app, pilot)
        assert isinstance(app.screen, PodsScreen)
        assert app.export_screenshot() == svg


async def test_events_page(fake, svg):
    app = make_app(fake)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("colon", *"events", "enter")
        await settle(app, pilot)
        assert isinstance(app.screen, EventsScreen)
        assert app.export_screenshot() == svg


async def test_yaml_search(fake, svg):
    app = make_app(fake)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("down", "down", "y")  # dc2's YAML
        await settle(app, pilot)
        await pilot.press("slash", *"dc2", "enter", "n")  # the second match, marked with the others
        await settle(app, pilot)
        assert isinstance(app.screen, YamlScreen) and app.screen.match_line is not None
        assert app.export_screenshot() == svg


async def test_revert_that_discards_a_recorded_edit(fake, svg):
    hotfix_left_by_the_last_run(fake)
    app = make_app(fake)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("v")  # the group revert
        await settle(app, pilot)
        assert isinstance(app.screen, ConfirmScreen) and app.screen.state == "ready"
        assert app.export_screenshot() == svg


async def test_80x24_all_namespaces(svg):
    """80 columns first: with -A every finding is readable (short forms), columns dropped by priority,
    the context and `?` in view."""
    cluster = cluster_of(reference_case("shop-dev") + neighbours("shop-dev") + reference_case("shop-test"))
    app = make_app(cluster, namespace=None, all_namespaces=True)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        await pilot.press("down", "down")  # dc2: three findings' reasons, one line each
        await settle(app, pilot)
        table = app.screen.query_one(WorkloadTable)
        assert table.columns_shown == ("workload", "findings", "rev", "ready")
        for line in table.lines:
            shown = str(line.cells[1])
            assert all(SHORT[f.code] in shown for f in (line.row.findings if line.row else ()))
        assert app.export_screenshot() == svg
    cluster.close()


async def test_80x24_group_revert_dialog(fake, svg):
    """The buttons and the name to type stay in view on a small terminal."""
    app = make_app(fake)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        await pilot.press("v")
        await settle(app, pilot)
        dialog = app.screen
        assert isinstance(dialog, ConfirmScreen) and dialog.state == "ready"
        for widget in (dialog.query_one("#confirm"), dialog.query_one("#cancel"), dialog.query_one("#typed")):
            region = widget.region
            assert region.height > 0 and region.bottom <= 24 and region.right <= 80, widget
        changes = dialog.query_one("#changes")
        assert changes.max_scroll_x == 0, "the changes table scrolls sideways: a column is cut"
        assert "Rev" in [str(c.label) for c in changes.columns.values()]
        assert app.export_screenshot() == svg


async def test_80x24_repair_running(fake, svg):
    """A long progress line wraps in the running dialog; its Background button stays in view."""
    app = make_app(fake)
    release = hold_repairs(
        app,
        before=[
            "dc/dc1: rolled out revision 3; waiting for 2 of 2 pods ready (deadline 600s, progressDeadline)"
        ],
    )
    try:
        async with app.run_test(size=(80, 24)) as pilot:
            await settle(app, pilot)
            await pilot.press("down", "r")
            await settle(app, pilot)
            await confirm(pilot, app.screen)
            await pilot.pause(0.3)
            dialog = app.screen
            assert isinstance(dialog, ConfirmScreen) and dialog.state == "running"
            dialog.repair.started += 3600  # the elapsed time shows 0:00 in a fixed picture
            dialog.update_elapsed()
            progress = dialog.query_one("#progress")
            assert len(progress.lines) >= 2 and progress.max_scroll_x == 0  # wrapped, nothing cut
            region = dialog.query_one("#cancel").region
            assert region.height > 0 and region.bottom <= 24
            await pilot.pause()
            assert app.export_screenshot() == svg
    finally:
        release.set()


async def test_80x24_quit_while_a_repair_runs(fake, svg):
    """`q` while a repair runs: the dialog says plainly that quitting stops it; Wait has the focus."""
    app = make_app(fake)
    release = hold_repairs(app, before=["dc/dc1: redeploying"])
    try:
        async with app.run_test(size=(80, 24)) as pilot:
            await settle(app, pilot)
            await pilot.press("down", "r")
            await settle(app, pilot)
            await confirm(pilot, app.screen)
            await pilot.pause(0.3)
            await pilot.press("q")
            await pilot.pause()
            assert isinstance(app.screen, QuitScreen) and app.screen.focused.id == "wait"
            assert app.screen.query_one("#stop").region.bottom <= 24  # in view at 80x24
            assert app.export_screenshot() == svg
    finally:
        release.set()


async def test_disconnected_banner(fake, svg):
    app = make_app(fake)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        app.live_enabled = True  # the header as a live app shows it; no watches run (a fixed picture)
        app._set_liveness(
            Liveness(Link.DISCONNECTED, contact=time.monotonic() - 42, error="connection refused")
        )
        app.screen.update_status()
        await pilot.pause()
        assert "disconnected · stale 42s" in str(app.screen.query_one("#status").render())
        assert app.export_screenshot() == svg
