"""Issue 30 point 5: the revert of an `inconsistent` group names the edit it discards. A run that met a
colleague's hotfix left it as they set it and recorded it (entry `edited`); the group revert's dialog says,
above the plan and in the CLI's words (`rollguard.plan.repair_decide.discarded_edit`), which workload's
edit it throws away: each field, old -> theirs. The CLI side: tests/repair/test_discarded_edit.py."""

from __future__ import annotations

from rollguard.tui.screens.confirm import ConfirmScreen, DialogState
from tests.helpers.tui import SIZE, make_app, settle, until
from tests.helpers.tui_objects import REGISTRY, hotfix_left_by_the_last_run


async def test_the_group_revert_of_an_inconsistent_group_names_the_hotfix_it_discards(fake):
    hotfix_left_by_the_last_run(fake)  # dc1 runs v2, its verified state is v1, its entry `edited`
    app = make_app(fake)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("v")  # on the group row: revert the whole group
        await settle(app, pilot)
        dialog = app.screen
        assert isinstance(dialog, ConfirmScreen)
        await until(pilot, lambda: dialog.state is DialogState.READY, what="the plan")
        said = str(dialog.query_one("#discards").render())
        assert dialog.query_one("#discards").display
        assert said.startswith(
            "⚠ dc/dc1: discards the edit someone else made during run 20240501-091500-a1b2c3"
        )
        assert f"containers[app].image: {REGISTRY}/api:v1 -> {REGISTRY}/api:v2" in said, said
        assert "dc/dc2" not in said and "dc/dc3" not in said  # their entries are not someone else's edit
        assert "discards" not in str(dialog.query_one("#notes").render())  # said once, above the plan


async def test_no_warning_without_a_recorded_edit(fake):
    app = make_app(fake)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("v")
        await settle(app, pilot)
        dialog = app.screen
        assert isinstance(dialog, ConfirmScreen)
        await until(pilot, lambda: dialog.state is DialogState.READY, what="the plan")
        assert not dialog.query_one("#discards").display
