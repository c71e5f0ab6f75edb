"""Issue 19 point 4: `D` on a revision and `=` show the live template's whole diff (not only images)."""

from __future__ import annotations

import pytest

from rollguard.core.resources import DEPLOYMENT_CONFIGS
from rollguard.tui.screens.detail import DetailScreen
from rollguard.tui.screens.diff import DiffScreen
from tests.helpers.snapshot import SVGScreenshot
from tests.helpers.tui import make_app, settle


def set_env(fake, value: str) -> None:
    dc = fake.get(DEPLOYMENT_CONFIGS, "dc2", namespace="shop-dev")
    dc["spec"]["template"]["spec"]["containers"][0]["env"] = [{"name": "MODE", "value": value}]
    fake.apply(dc)


async def open_diff(app, pilot, *keys: str) -> DiffScreen:
    await settle(app, pilot)
    await pilot.press("down", "down", "d")  # dc2: revisions dc2-2 (Failed), dc2-1
    await settle(app, pilot)
    assert isinstance(app.screen, DetailScreen)
    await pilot.press(*keys)
    await settle(app, pilot)
    screen = app.screen
    assert isinstance(screen, DiffScreen)
    for _ in range(50):
        if screen.diff is not None:
            break
        await pilot.pause(0.05)
    return screen


async def test_d_on_a_revision_diffs_the_whole_live_template(fake):
    set_env(fake, "hotfix")  # a change outside the images: drift an image-only view would hide
    app = make_app(fake)
    async with app.run_test(size=(120, 35)) as pilot:
        screen = await open_diff(app, pilot, "j", "D")
        diff = screen.diff
        assert diff is not None and diff.left == "revision 1" and diff.right == "live"
        added = [line.text for line in diff.lines if line.style == "add"]
        assert any("value: hotfix" in text for text in added), added
        await pilot.press("escape")
        assert isinstance(app.screen, DetailScreen)


async def test_equals_diffs_against_the_verified_template(fake):
    app = make_app(fake)
    async with app.run_test(size=(120, 35)) as pilot:
        screen = await open_diff(app, pilot, "equals_sign")
        assert screen.diff is not None and screen.revision is None
        assert screen.diff.left.startswith(("verified by run", "no verified template"))


@pytest.fixture
def svg(snapshot):
    return snapshot.use_extension(SVGScreenshot)


async def test_80x24_revision_diff(fake, svg):
    set_env(fake, "hotfix")
    app = make_app(fake)
    async with app.run_test(size=(80, 24)) as pilot:
        await open_diff(app, pilot, "j", "D")
        assert app.export_screenshot() == svg
