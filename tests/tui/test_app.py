"""The TUI driven by Pilot on fixed data (an in-memory cluster): screens, keys, live refresh, errors."""

from __future__ import annotations

import copy
import json

from rollguard.core.errors import ServerError
from rollguard.tui.screens.confirm import ConfirmScreen
from rollguard.tui.screens.detail import DetailScreen
from rollguard.tui.screens.help import HelpScreen, _key, key_rows
from rollguard.tui.screens.workloads import WorkloadsScreen
from rollguard.tui.widgets.workload_table import WorkloadTable
from tests.helpers.fakecluster import read_only
from tests.helpers.tui import SIZE, footer_keys, make_app, settle, until
from tests.helpers.tui_objects import cluster_of, demo_cluster, neighbours, reference_case

ACTION_KEYS = {"u", "U", "v", "V", "r", "R"}


def table(app) -> WorkloadTable:
    return app.screen.query_one(WorkloadTable)


async def test_main_screen_groups_workloads_with_badges(fake):
    app = make_app(fake)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        keys = [ln.key for ln in table(app).lines]
        assert keys[0] == "group:shop-dev/app=shop-api"
        assert len([k for k in keys if not k.startswith("group:")]) == 6
        assert "failed" in str(table(app).get_row_at(2)[1])


async def test_keys_follow_the_selected_row(fake):
    app = make_app(fake)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        # the group row: resume (dc3 is paused) and revert act on the group; no redeploy of a paused one
        assert footer_keys(app) & ACTION_KEYS == {"u", "v"}
        await pilot.press("down")  # dc1: new and healthy, drifted from the verified state
        assert footer_keys(app) & ACTION_KEYS == {"v", "r", "U", "V"}
        await pilot.press("down", "down")  # dc3: paused
        assert footer_keys(app) & ACTION_KEYS == {"u", "v", "U", "V"}
        assert "enter" not in footer_keys(app) or isinstance(app.screen, WorkloadsScreen)


async def test_read_only_offers_no_action(fake):
    app = make_app(fake, read_only=True)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        for _ in table(app).lines:
            assert not footer_keys(app) & ACTION_KEYS
            await pilot.press("down")
        await pilot.press("home", "v", "V", "u")
        await settle(app, pilot)
        assert isinstance(app.screen, WorkloadsScreen)
        assert not [
            c
            for c in app.get_system_commands(app.screen)
            if c.title.split()[0] in ("Resume", "Revert", "Redeploy")
        ]


async def test_actions_the_role_forbids_are_not_offered():
    cluster = demo_cluster(allow=read_only)
    app = make_app(cluster)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        assert app.permissions_known and app.allowed == {"shop-dev": frozenset()}
        for _ in table(app).lines:
            assert not footer_keys(app) & ACTION_KEYS
            await pilot.press("down")
    cluster.close()


async def test_filter_and_sort_keep_the_groups(fake):
    app = make_app(fake)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("slash", *"worker", "enter")
        assert [ln.key for ln in table(app).lines] == [
            "group:shop-dev/app=shop-web",
            "shop-dev/deployment/web-worker",
        ]
        await pilot.press("escape")
        assert len(table(app).lines) == 9
        await pilot.press("s")  # by findings: the failed group first, its failed workload first
        assert table(app).lines[1].key == "shop-dev/dc/dc2"


async def test_cursor_stays_on_its_row_across_live_refreshes(fake):
    app = make_app(fake, live=True)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.backend.live and bool(table(app).lines), what="the live view")
        await pilot.press("down", "down", "down")
        assert table(app).current.key == "shop-dev/dc/dc3"
        # a new workload sorts before dc3 in its group: the rows move, the cursor must not leave dc3
        extra = copy.deepcopy(next(o for o in reference_case() if o["metadata"]["name"] == "dc1"))
        extra["metadata"]["name"] = "dc0"
        fake.apply(extra)
        await until(pilot, lambda: any(ln.key == "shop-dev/dc/dc0" for ln in table(app).lines), what="dc0")
        assert table(app).current.key == "shop-dev/dc/dc3"
        assert table(app).cursor_row == 4


async def test_refresh_pauses_while_a_dialog_is_open(fake):
    app = make_app(fake, live=True)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.backend.live and bool(table(app).lines), what="the live view")
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen) and app.refresh_paused
        extra = copy.deepcopy(next(o for o in neighbours() if o["metadata"]["name"] == "redis"))
        extra["metadata"]["name"] = "redis-2"
        fake.apply(extra)
        await pilot.pause(1.5)
        assert not any(r.name == "redis-2" for r in app.inventory.rows)
        await pilot.press("escape")
        await until(
            pilot, lambda: any(r.name == "redis-2" for r in app.inventory.rows), what="redis-2 after close"
        )


async def test_detail_screen_shows_history_pods_events_and_journal(fake):
    app = make_app(fake)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("down", "down", "enter")
        await settle(app, pilot)
        screen = app.screen
        assert isinstance(screen, DetailScreen) and screen.row.name == "dc2"
        detail = screen.detail
        assert [(r.name, r.phase) for r in detail.revisions] == [("dc2-2", "Failed"), ("dc2-1", "Complete")]
        assert len(detail.pods) == 2 and {e.reason for e in detail.events} >= {"RolloutFailed"}
        assert detail.group.last_run.actor == "alice@ci"
        # the failed revision is the current one: no revert to it; the previous one may be chosen
        assert "t" not in footer_keys(app)
        await pilot.press("down")
        assert "t" in footer_keys(app)
        titles = [c.title for c in app.get_system_commands(screen)]
        assert "Revert dc/dc2 to revision 1" in titles and "Revert group app=shop-api" in titles
        await pilot.press("escape")
        assert isinstance(app.screen, WorkloadsScreen)


async def test_confirmation_dialog_shows_the_plan_and_the_command(fake):
    app = make_app(fake)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("v")
        await settle(app, pilot)
        dialog = app.screen
        assert isinstance(dialog, ConfirmScreen) and dialog.state == "ready"
        changes = {c.ref: c for c in dialog.plan.changes}
        assert set(changes) == {"dc/dc1", "dc/dc2", "dc/dc3"}
        assert changes["dc/dc3"].paused_before and not changes["dc/dc3"].paused_after
        assert all(c.images_after["app"].endswith("api:v1") for c in changes.values())
        assert dialog.plan.command == "rollguard revert -l app=shop-api -n shop-dev --context demo"
        await pilot.press("escape")
        assert isinstance(app.screen, WorkloadsScreen) and not app.refresh_paused


async def test_help_lists_every_key(fake):
    app = make_app(fake)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        listed = {(keys, d) for _section, rows in key_rows() for keys, d in rows}
        for screen_cls in (WorkloadsScreen, DetailScreen, ConfirmScreen, type(app)):
            for binding in screen_cls.BINDINGS:
                assert (_key(binding), binding.description) in listed, binding


async def test_command_palette_has_an_entry_per_action(fake):
    app = make_app(fake)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("down")  # dc1
        titles = [c.title for c in app.get_system_commands(app.screen)]
        for title in (
            "Revert dc/dc1",
            "Redeploy dc/dc1",
            "Revert group app=shop-api",
            "Resume group app=shop-api",
        ):
            assert title in titles
        await pilot.press("ctrl+p")
        await pilot.press(*"Redeploy dc")
        await pilot.pause(0.3)
        await pilot.press("enter")
        await settle(app, pilot)
        assert isinstance(app.screen, ConfirmScreen) and app.screen.action == "redeploy"


async def test_api_errors_are_notifications_not_crashes():
    class Broken:
        def list(self, *args, **kwargs):
            raise ServerError("GET /api/v1/pods: 500 etcdserver: request timed out", status=500)

        pages = list  # the paginated reads fail alike

        def create(self, *args, **kwargs):
            raise ServerError("500", status=500)

    app = make_app(Broken())
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await settle(app, pilot)
        messages = [n.message for n in app._notifications]
        assert any("request timed out" in m for m in messages), messages
        assert isinstance(app.screen, WorkloadsScreen) and app.is_running


async def test_namespace_switch(fake):
    cluster = cluster_of(reference_case("shop-dev") + neighbours("other"))
    app = make_app(cluster)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        assert {r.namespace for r in app.inventory.rows} == {"shop-dev"}
        await pilot.press("n")
        await settle(app, pilot)
        await pilot.press(*"oth", "enter")  # typing filters the list: (all namespaces), other, shop-dev
        await settle(app, pilot)
        assert {r.namespace for r in app.inventory.rows} == {"other"}
        await pilot.press("n")
        await settle(app, pilot)
        await pilot.press("up", "enter")  # the arrows move in the list: other -> (all namespaces)
        await settle(app, pilot)
        assert {r.namespace for r in app.inventory.rows} == {"shop-dev", "other"}
    cluster.close()


async def test_context_switch(fake, tmp_path):
    contexts = [
        {"name": n, "context": {"cluster": "c", "user": "u", "namespace": "shop-dev"}}
        for n in ("dev", "prod")
    ]
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "dev", "contexts": contexts,
        "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:1"}}], "users": [{"name": "u", "user": {}}],
    }))  # fmt: skip
    asked: list[str | None] = []
    app = make_app(fake, kubeconfig=str(kubeconfig))
    app.backend._factory = lambda _kubeconfig, context: asked.append(context) or fake
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        assert app.backend.context_name == "dev" and asked == [None]
        await pilot.press("c")
        await settle(app, pilot)
        await pilot.press("down", "enter")  # dev, prod
        await settle(app, pilot)
        assert asked == [None, "prod"] and app.backend.context_name == "prod"
        assert "prod" in str(app.screen.query_one("#status").render())


async def test_a_refused_plan_is_shown_not_confirmable(fake):
    app = make_app(fake)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        fake.allow = read_only  # the Role changed after the screen was loaded
        await pilot.press("v")
        await settle(app, pilot)
        dialog = app.screen
        assert isinstance(dialog, ConfirmScreen) and dialog.state == "refused"
        assert "not allowed to update" in dialog.plan.refusal
        assert not dialog.query_one("#confirm").display
        await pilot.press("y")  # nothing to confirm
        assert dialog.state == "refused" and fake.requests["update"] == 0
        await pilot.press("escape")
        assert isinstance(app.screen, WorkloadsScreen)


async def test_all_namespaces_reviews_access_only_where_an_action_is_offered():
    """-A asks no SelfSubjectAccessReview up front (22 per namespace would be 2,200 on a 100-namespace
    cluster): the namespace of the cursor's row is reviewed when the screen first offers its actions, the
    others only when the cursor reaches them; the offered keys are those of a namespace-scoped read."""
    asked: set[str] = set()

    def allow(verb: str, plural: str, namespace: str) -> bool:
        asked.add(namespace)
        return True

    cluster = cluster_of(reference_case() + neighbours() + neighbours("shop-prod"), allow=allow)
    app = make_app(cluster, namespace=None, all_namespaces=True)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await until(pilot, lambda: bool(app.allowed), what="the cursor's namespace reviewed")
        await settle(app, pilot)
        first = table(app).lines[0].key.split(":")[1].split("/")[0]
        assert set(app.allowed) == {first} and asked == {first}
        assert footer_keys(app) & ACTION_KEYS  # the cursor's row offers its actions once reviewed
        others = {ns for ns in ("shop-dev", "shop-prod") if ns != first}
        for _ in table(app).lines:  # walk to the other namespace's rows
            await pilot.press("down")
            await settle(app, pilot)
        assert asked == {first, *others} and set(app.allowed) == {first, *others}
    cluster.close()
