"""k9s keys and safe confirmation (issue 19 point 3), driven by Pilot on an in-memory cluster.

A reflex must never change the cluster: `d` describes, Enter in a dialog cancels, a workload's action
needs `y` and a group's needs its name typed. Assertions are on the (fake) cluster's objects.
"""

from __future__ import annotations

import inspect

from rollguard.core.resources import DEPLOYMENT_CONFIGS
from rollguard.core.structs import ExitStatus
from rollguard.tui.app import RollguardApp
from rollguard.tui.screens.confirm import ConfirmScreen
from rollguard.tui.screens.detail import DetailScreen
from rollguard.tui.screens.diff import DiffScreen
from rollguard.tui.screens.group import GroupScreen
from rollguard.tui.screens.help import SECTIONS, HelpScreen, _key, key_rows
from rollguard.tui.screens.logs import LogsScreen
from rollguard.tui.screens.quit import QuitScreen
from rollguard.tui.screens.workloads import WorkloadsScreen
from rollguard.tui.screens.yaml import YamlScreen
from rollguard.tui.views import ResultView
from rollguard.tui.widgets.workload_table import WorkloadTable
from tests.helpers.tui import SIZE, confirm, hold_repairs, make_app, settle, until
from tests.helpers.tui_objects import cluster_of, neighbours, reference_case, rollout_from_another_shell


def table(app) -> WorkloadTable:
    return app.screen.query_one(WorkloadTable)


def versions(fake) -> dict[str, int]:
    return {
        name: fake.get(DEPLOYMENT_CONFIGS, name, namespace="shop-dev")["status"].get("latestVersion", 0)
        for name in ("dc1", "dc2", "dc3")
    }


async def test_d_then_enter_describes_and_changes_nothing(fake):
    """The reproduction of the issue: `d` then Enter redeployed (latestVersion 2 -> 3)."""
    before = versions(fake)
    app = make_app(fake)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("down")  # dc1
        await pilot.press("d")
        await settle(app, pilot)
        assert isinstance(app.screen, DetailScreen) and app.screen.row.name == "dc1"
        await pilot.press("enter")
        await settle(app, pilot)
        assert isinstance(app.screen, DetailScreen)
        await pilot.press("escape")
        # the redeploy key now, then a reflex Enter: focus is on Cancel, so Enter cancels
        await pilot.press("r")
        await settle(app, pilot)
        dialog = app.screen
        assert isinstance(dialog, ConfirmScreen) and dialog.state == "ready"
        assert dialog.focused is not None and dialog.focused.id == "cancel"
        await pilot.press("enter")
        await settle(app, pilot)
        assert isinstance(app.screen, WorkloadsScreen)
    assert versions(fake) == before
    assert fake.requests["update"] == fake.requests["patch"] == 0


def stub_execute(app) -> list[object]:
    """The repair itself needs controllers (the live tests run it): here, record what was confirmed."""
    ran: list[object] = []

    def execute(plan, out, cancel):
        ran.append(plan.target)
        return ResultView(ExitStatus.SUCCEEDED, 0, "done")

    app.backend.execute = execute
    return ran


async def test_focus_starts_on_cancel_and_only_an_armed_confirm_confirms_one_workload(fake):
    app = make_app(fake)
    ran = stub_execute(app)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("down", "r")  # dc1: redeploy
        dialog = app.screen
        assert isinstance(dialog, ConfirmScreen)
        assert dialog.focused is not None and dialog.focused.id == "cancel"  # while planning, too
        await settle(app, pilot)
        assert dialog.state == "ready" and dialog.focused.id == "cancel"
        await pilot.press("y", "enter")  # no letter confirms; Enter on Cancel cancels
        await settle(app, pilot)
        assert isinstance(app.screen, WorkloadsScreen) and ran == []
        await pilot.press("r")
        dialog = app.screen
        await confirm(pilot, dialog)
        await settle(app, pilot)
        assert dialog.state == "done", dialog.state
    assert [t.refs for t in ran] == [("dc/dc1",)]


async def test_a_group_action_needs_the_group_name_typed(fake):
    before = versions(fake)
    app = make_app(fake)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("v")  # on the group row: revert the whole group
        await settle(app, pilot)
        dialog = app.screen
        assert isinstance(dialog, ConfirmScreen) and dialog.state == "ready"
        assert dialog.typed_name == "app=shop-api"
        await pilot.press("y", "enter", "enter")  # neither a `y` nor Enter confirms a group action
        await settle(app, pilot)
        assert dialog.state == "ready" and versions(fake) == before
        assert dialog.query_one("#confirm").disabled
        await pilot.press(*"app=shop-ap")  # almost
        assert dialog.query_one("#confirm").disabled
        await pilot.press("escape")
        await settle(app, pilot)
        assert isinstance(app.screen, WorkloadsScreen)
    assert versions(fake) == before and fake.requests["update"] == 0


async def test_typing_the_group_name_confirms(fake):
    app = make_app(fake)
    ran = stub_execute(app)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("v")
        await settle(app, pilot)
        dialog = app.screen
        dialog.query_one("#typed").value = ""
        await pilot.press(*"app=shop-api")
        assert not dialog.query_one("#confirm").disabled
        await pilot.press("enter")
        await settle(app, pilot)
        assert dialog.state == "done"
    assert [t.selector for t in ran] == ["app=shop-api"]


async def test_vi_keys_home_end_move_the_cursor(fake):
    app = make_app(fake)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        last = len(table(app).lines) - 1
        await pilot.press("j", "j")
        assert table(app).cursor_row == 2
        await pilot.press("k")
        assert table(app).cursor_row == 1
        await pilot.press("G")
        assert table(app).cursor_row == last
        await pilot.press("g")
        assert table(app).cursor_row == 0
        await pilot.press("end")
        assert table(app).cursor_row == last
        await pilot.press("home")
        assert table(app).cursor_row == 0


async def test_space_folds_a_group_and_enter_opens_it(fake):
    app = make_app(fake)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        rows = len(table(app).lines)
        await pilot.press("down", "space")  # on dc1: folds its group, the cursor goes to the group row
        await settle(app, pilot)
        assert len(table(app).lines) == rows - 3
        assert table(app).current.key == "group:shop-dev/app=shop-api"
        assert str(table(app).current.cells[0]).startswith("▸")
        await pilot.press("space")
        assert len(table(app).lines) == rows
        await pilot.press("enter")
        await settle(app, pilot)
        screen = app.screen
        assert isinstance(screen, GroupScreen)
        assert [r.name for r in screen.members] == ["dc1", "dc2", "dc3"]
        journal = str(screen.query_one("#journal").render())
        assert "alice@ci" in journal and "lock" in journal
        await pilot.press("j", "enter")  # a member: its detail
        await settle(app, pilot)
        assert isinstance(app.screen, DetailScreen) and app.screen.row.name == "dc2"


async def test_y_shows_the_yaml(fake):
    app = make_app(fake)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("down", "y")
        await settle(app, pilot)
        assert isinstance(app.screen, YamlScreen)
        assert "kind: DeploymentConfig" in app.screen.text and "name: dc1" in app.screen.text
        await pilot.press("escape")
        assert isinstance(app.screen, WorkloadsScreen)


async def test_colon_jumps_to_a_namespace():
    cluster = cluster_of(reference_case("shop-dev") + neighbours("other"))
    app = make_app(cluster)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await settle(app, pilot)
        await pilot.press("colon", *"ns other", "enter")
        await settle(app, pilot)
        assert {r.namespace for r in app.inventory.rows} == {"other"}
        await pilot.press("colon", *"ns all", "enter")
        await settle(app, pilot)
        assert {r.namespace for r in app.inventory.rows} == {"shop-dev", "other"}
        await pilot.press("colon", *"bogus", "enter")
        await settle(app, pilot)
        assert any(":ns NAME" in n.message for n in app._notifications)
    cluster.close()


async def test_picker_filters_as_you_type():
    cluster = cluster_of(reference_case("shop-dev") + neighbours("other"))
    app = make_app(cluster)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("n")
        await settle(app, pilot)
        await pilot.press(*"shop")
        options = app.screen.query_one("OptionList")
        assert [options.get_option_at_index(i).id for i in range(options.option_count)] == ["shop-dev"]
        await pilot.press("enter")
        await settle(app, pilot)
        assert app.backend.namespace == "shop-dev"
    cluster.close()


def test_help_lists_exactly_the_bound_keys():
    """Every binding of every screen is in the help, the help lists nothing else, and every listed key
    has its action (an `action_*` method of the screen, its table or the app)."""
    listed = [(keys, d) for _section, rows in key_rows() for keys, d in rows]
    bound = [
        (_key(b), b.description or b.action)
        for _section, bindings in [*SECTIONS, ("Help", HelpScreen.BINDINGS)]
        for b in bindings
    ]
    assert listed == bound
    owners = {
        "Workloads": (WorkloadsScreen, WorkloadTable), "Workload detail": (DetailScreen,),
        "Group": (GroupScreen,), "YAML": (YamlScreen,), "Confirmation dialog": (ConfirmScreen,),
        "Template diff": (DiffScreen,), "Logs (followed live)": (LogsScreen,),
        "Quit while a repair runs": (QuitScreen,),
        "Everywhere": (RollguardApp,), "Help": (HelpScreen,),
    }  # fmt: skip
    for section, bindings in [*SECTIONS, ("Help", HelpScreen.BINDINGS)]:
        classes = next((v for k, v in owners.items() if section == k), None)
        for b in bindings:
            name = "action_" + b.action.split("(")[0]
            candidates = classes or (WorkloadTable,)
            if b.action.startswith("app."):
                name, candidates = "action_" + b.action[4:], (RollguardApp,)
            if section.startswith("Namespace"):
                from rollguard.tui.screens.pick import Picker

                candidates = (Picker,)
            assert any(inspect.isfunction(getattr(c, name, None)) for c in candidates), (section, b)


async def test_help_screen_shows_the_keys(fake):
    app = make_app(fake)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("escape")
        assert isinstance(app.screen, WorkloadsScreen)


async def test_the_revision_cursor_follows_the_revision_not_the_row(fake):
    """A rollout from another shell inserts a revision above the chosen one: `t` must still offer the
    revision the user chose (issue 19: the cursor followed the row)."""
    app = make_app(fake)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("down", "down", "d")  # dc2: revisions dc2-2 (Failed), dc2-1
        await settle(app, pilot)
        screen = app.screen
        assert isinstance(screen, DetailScreen)
        await pilot.press("j")
        assert screen.chosen_revision() == 1
        rollout_from_another_shell(fake)
        await pilot.press("ctrl+r")  # the app would refresh by itself when live; here by hand
        await settle(app, pilot)
        assert [r.number for r in screen.detail.revisions][:1] == [3]
        assert screen.chosen_revision() == 1
        assert screen.action_label("revert", "revision").endswith("to revision 1")


async def test_quitting_while_a_repair_runs_asks_wait_or_stop(fake):
    app = make_app(fake)
    release = hold_repairs(app, before=["dc/dc1: redeploying"])
    try:
        async with app.run_test(size=SIZE) as pilot:
            await settle(app, pilot)
            await pilot.press("down", "r")
            await settle(app, pilot)
            await confirm(pilot, app.screen)
            await pilot.pause(0.2)
            assert app.running_action() is not None
            await pilot.press("q")
            await pilot.pause()
            assert isinstance(app.screen, QuitScreen) and app.is_running
            assert app.screen.focused.id == "wait"
            await pilot.press("enter")  # a reflex Enter waits: nothing is left behind
            await pilot.pause()
            assert isinstance(app.screen, ConfirmScreen) and app.is_running and not app.quitting
            repair = app.running_action()
            await pilot.press("q", "s", "enter")  # no letter stops it; a reflex Enter waits
            await pilot.pause()
            assert isinstance(app.screen, ConfirmScreen) and app.is_running and not app.quitting
            assert not repair.cancel_event.is_set()
            await pilot.press("ctrl+c", "tab", "enter")  # ctrl+c as q: asks; Stop not armed yet
            await pilot.pause()
            assert isinstance(app.screen, QuitScreen) and not repair.cancel_event.is_set()
            stop = app.screen.query_one("#stop")
            await until(pilot, lambda: stop.armed, what="Stop armed")
            await pilot.press("enter")  # deliberate: stop it, and quit once it has ended
            await until(pilot, lambda: not app.is_running, what="quit after the repair stopped")
            assert repair.cancel_event.is_set() and repair.result is not None
    finally:
        release.set()


async def test_the_shown_command_is_complete_and_c_copies_it(fake):
    """The equivalent command names the context and kubeconfig the TUI uses; `c` copies it (OSC 52)."""
    app = make_app(fake, context="dev", kubeconfig="/home/me/.kube/shop")
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("down", "r")
        dialog = app.screen
        await settle(app, pilot)
        assert isinstance(dialog, ConfirmScreen) and dialog.state == "ready"
        command = dialog.plan.command
        assert (
            command == "rollguard redeploy dc/dc1 -n shop-dev --context dev --kubeconfig /home/me/.kube/shop"
        )
        await pilot.press("c")
        assert app.clipboard == command
        assert dialog.state == "ready" and isinstance(app.screen, ConfirmScreen)  # copying changes nothing


async def test_a_group_key_on_the_group_row_names_the_key_that_acts_on_it(fake):
    """Found trying it out in tmux (QA of issue 30): `V` on a group's row said "Revert group: the cursor
    is on the group itself, r acts on all of it": the first letter of the action, and `r` is Redeploy.
    Each message names the action's own key: `u` resume, `v` revert, `r` redeploy."""
    app = make_app(fake)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await settle(app, pilot)
        for key, title in (("U", "Resume"), ("V", "Revert"), ("R", "Redeploy")):
            app.clear_notifications()
            await pilot.press(key)
            await settle(app, pilot)
            said = [n.message for n in app._notifications if "acts on all of it" in n.message]
            assert said == [
                f"{title} group: the cursor is on the group itself, {key.lower()} acts on all of it"
            ]


async def test_one_tab_from_cancel_reaches_confirm(fake):
    """Found trying it out in tmux (QA of issue 30): the dialog says "move to Confirm (tab) and press
    Enter", but one tab from Cancel landed on the plan's table (then the notes, then Confirm): the Enter
    that followed did nothing. One tab reaches Confirm."""
    app = make_app(fake)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("down", "r")
        dialog = app.screen
        assert isinstance(dialog, ConfirmScreen)
        await until(pilot, lambda: dialog.state == "ready", what="the plan")
        assert dialog.focused is not None and dialog.focused.id == "cancel"
        await pilot.press("tab")
        assert dialog.focused is not None and dialog.focused.id == "confirm", dialog.focused
        await pilot.press("shift+tab")  # back from Confirm: the notes and the plan stay reachable
        assert dialog.focused is not None and dialog.focused.id != "cancel", dialog.focused
