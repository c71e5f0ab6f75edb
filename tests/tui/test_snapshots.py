"""Screen snapshots (SVG, reviewed by eye): main screen, detail screen, confirmation dialog.

Deterministic: fixed data (an in-memory cluster), a fixed "now", a fixed terminal size, no live
refresh, no blinking cursor, no notifications. Update with `pytest tests/tui --snapshot-update` and
look at the result (e.g. `rsvg-convert x.svg -o x.png`) before committing.
"""

from __future__ import annotations

import pytest

from rollguard.tui.screens.confirm import ConfirmScreen
from rollguard.tui.screens.detail import DetailScreen
from tests.tui.conftest import SIZE, make_app, settle
from tests.tui.snapshot import SVGScreenshot


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
