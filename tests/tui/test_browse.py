"""What k9s users reach for (issue 30 point 6), on the fake cluster: the pods page (the namespace's, or a
group's) and its logs, the events page (newest first, the object involved, a refusal said with the fix),
search in the YAML and logs pages (`/`, `n`, `N`), the logs' timestamps (`t`). None of these pages can
write: a burst of every printable key on each leaves the cluster unwritten. Against the sandbox:
tests/tui/test_live_browse.py."""

from __future__ import annotations

import string

from rollguard.core.errors import Forbidden
from rollguard.core.resources import PODS
from rollguard.tui.screens.events import EventsScreen
from rollguard.tui.screens.group import GroupScreen
from rollguard.tui.screens.logs import LogsScreen
from rollguard.tui.screens.pods import PodsScreen
from rollguard.tui.screens.workloads import WorkloadsScreen
from rollguard.tui.screens.yaml import YamlScreen
from tests.helpers.tui import SIZE, make_app, settle, until

NS = "shop-dev"
WRITES = ("create", "update", "patch", "delete")


def _row(app, ref: str):
    return next(r for r in app.inventory.rows if r.ref == ref)


async def test_the_pods_page_lists_the_namespaces_pods_and_shows_a_pods_logs(fake):
    app = make_app(fake)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        screen = PodsScreen()
        await app.push_screen(screen)
        await settle(app, pilot)
        by_name = {p.name: p for p in screen.pods}
        assert {p.workload for p in screen.pods} >= {"dc/dc1", "dc/dc2", "deployment/web"}, by_name
        assert all(p.namespace == NS for p in screen.pods)
        first = screen.pods[0]
        assert str(screen.query_one("#pods").get_row_at(0)[0]) == first.name
        assert f"{len(screen.pods)} pods" in str(screen.query_one("#status").render())
        fake.set_log(NS, first.name, "app", ["INFO hello from the pods page"])
        await pilot.press("l")  # its follow worker runs until the page closes: no settle from here
        await until(pilot, lambda: isinstance(app.screen, LogsScreen), what="the logs page")
        logs = app.screen
        assert isinstance(logs, LogsScreen) and logs.pod == first.name
        await until(pilot, lambda: "INFO hello from the pods page" in logs.lines, what="the pod's log")
        await pilot.press("escape")
        assert app.screen is screen


async def test_a_groups_pods_only(fake):
    app = make_app(fake)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        screen = PodsScreen(selector="app=shop-api")
        await app.push_screen(screen)
        await settle(app, pilot)
        assert screen.pods and {p.workload for p in screen.pods} <= {"dc/dc1", "dc/dc2", "dc/dc3"}
        assert "pods of group app=shop-api" in str(screen.query_one("#status").render())


async def test_the_events_page_newest_first_with_the_object_involved(fake):
    app = make_app(fake)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        screen = EventsScreen()
        await app.push_screen(screen)
        await settle(app, pilot)
        reasons = [e.reason for e in screen.events]
        assert reasons[:2] == ["RolloutFailed", "DeploymentScaled"] or reasons[:2] == [
            "DeploymentScaled",
            "RolloutFailed",
        ]  # both 47 minutes ago
        assert reasons[-1] == "DeploymentCreated"  # 58 minutes ago: the oldest
        table = screen.query_one("#events")
        cells = [str(c) for c in table.get_row_at(reasons.index("RolloutFailed"))]
        assert cells[:4] == ["47m", "Warning", "RolloutFailed", "ReplicationController/dc2-2"], cells
        assert cells[4] == 'replication controller "dc2-2" has failed progressing'
        backoff = next(e for e in screen.events if e.reason == "BackOff")
        assert backoff.count == 9 and backoff.involved == "Pod/dc2-2-x7k2p"


async def test_events_not_allowed_are_said_with_the_fix(fake):
    app = make_app(fake)

    def refused():
        raise Forbidden('events is forbidden: User "bob" cannot list resource "events"', status=403)

    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        app.backend.events = refused
        screen = EventsScreen()
        await app.push_screen(screen)
        await settle(app, pilot)
        status = str(screen.query_one("#status").render())
        assert f"not allowed to list events in {NS}: grant the Role verb 'list' on events" in status


async def test_search_in_the_yaml_page(fake):
    app = make_app(fake)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        screen = YamlScreen(_row(app, "dc/dc2"))
        await app.push_screen(screen)
        await settle(app, pilot)
        lines = screen.text.splitlines()
        images = [i for i, line in enumerate(lines) if "dc2" in line]
        assert len(images) >= 3, screen.text  # its name, its labels, its conditions' messages
        await pilot.press("slash", *"DC2", "backspace", "backspace", *"c2", "enter")  # smartcase: "Dc2"? no
        await pilot.pause()
        assert screen.pattern == "Dc2" and screen.match_line is None  # an upper-case letter: that case only
        await pilot.press("slash", "ctrl+u", *"dc2", "enter")  # typed at once, as a burst: all in the box
        await pilot.pause()
        assert screen.pattern == "dc2" and screen.match_line == images[0]
        status = str(screen.query_one("#status").render())
        assert f"/dc2 1/{len(images)}" in status
        await pilot.press("n")
        assert screen.match_line == images[1]
        await pilot.press("N", "N")  # back to the first, then round to the last
        assert screen.match_line == images[-1]
        await pilot.press("slash", *"no such text", "enter")
        assert screen.match_line is None and "no match" in str(screen.query_one("#status").render())
        await pilot.press("slash", "escape")  # esc closes the box, not the page
        assert app.screen is screen and not screen.query_one("#search").display


async def test_search_and_timestamps_in_the_logs_page(fake):
    pod = "dc1-2-fd571"
    lines = ["INFO starting", "ERROR payment declined", "INFO retry", "ERROR payment declined again"]
    fake.set_log(NS, pod, "app", lines)
    app = make_app(fake)
    async with app.run_test(size=(120, 35)) as pilot:
        await settle(app, pilot)
        screen = LogsScreen(_row(app, "dc/dc1"), pod=pod)
        await app.push_screen(screen)
        await until(pilot, lambda: lines[-1] in screen.lines, what="the log")
        shown = screen.search_lines()
        errors = [i for i, text in enumerate(shown) if text.startswith("ERROR")]
        await pilot.press("slash", *"error", "enter")  # smartcase: any case
        assert screen.match_line == errors[0]
        await pilot.press("n")
        assert screen.match_line == errors[1]
        await pilot.press("n")  # past the last: the first again
        assert screen.match_line == errors[0]
        assert "/error 1/2" in str(screen.query_one("#status").render())

        await pilot.press("t")  # the kubelet's times, the stream read again
        await until(pilot, lambda: any(line.endswith(lines[-1]) for line in screen.lines), what="stamped")
        assert all(line.startswith("2024-05-01T10:") for line in screen.lines), screen.lines
        assert screen.lines[-1].endswith(" " + lines[-1])
        assert "timestamps" in str(screen.query_one("#status").render())
        await pilot.press("t")
        await until(pilot, lambda: screen.lines == lines, what="plain lines again")


async def test_no_key_on_these_pages_writes(fake):
    """Every printable key, as one burst, on the pods, events, YAML and logs pages: nothing written."""
    fake.set_log(NS, "dc1-2-fd571", "app", ["INFO a line"])
    app = make_app(fake)
    burst = [c for c in string.printable if c.isprintable() and c not in " "] + ["enter", "space"]
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        before = {k: fake.requests[k] for k in WRITES}
        for make in (
            PodsScreen,
            EventsScreen,
            lambda: YamlScreen(_row(app, "dc/dc1")),
            lambda: LogsScreen(_row(app, "dc/dc1"), pod="dc1-2-fd571"),
        ):
            screen = make()
            await app.push_screen(screen)
            await pilot.pause(0.3)  # a logs page's worker follows until it closes: no settle here
            await pilot.press(*burst)
            await pilot.pause(0.3)
            while len(app.screen_stack) > 1:  # whatever the burst opened, then the page itself
                app.pop_screen()
                await pilot.pause()
        assert {k: fake.requests[k] for k in WRITES} == before
        assert not app.repairs
        assert fake.get(PODS, "dc1-2-fd571", namespace=NS)["metadata"]["name"] == "dc1-2-fd571"


async def test_colon_jumps_as_in_k9s(fake):
    """`:dc`, `:deploy` and `:all` filter the table by kind; `:pods`, `:pods SELECTOR`, `:events` open the
    pages (typed as a burst right after `:`: all of it goes to the command line)."""
    app = make_app(fake)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        main = app.screen
        assert isinstance(main, WorkloadsScreen)

        def kinds() -> set[str]:
            return {line.row.kind for line in main.table.lines if line.row is not None}

        assert kinds() == {"DeploymentConfig", "Deployment"}
        await pilot.press("colon", *"dc", "enter")
        await settle(app, pilot)
        assert kinds() == {"DeploymentConfig"}
        assert "DCs only" in str(main.query_one("#status").render())
        await pilot.press("colon", *"deploy", "enter")
        await settle(app, pilot)
        assert kinds() == {"Deployment"}
        deployments = sum(1 for r in app.inventory.rows if r.kind == "Deployment")
        main.table.move_cursor(row=0)
        await pilot.press("space")  # the first group folded: its Deployments still count as shown
        await settle(app, pilot)
        assert main.folded, "no group folded"
        assert f"{deployments}/{len(app.inventory.rows)} workloads" in str(main.query_one("#status").render())
        await pilot.press("space")
        await pilot.press("colon", *"all", "enter")
        await settle(app, pilot)
        assert kinds() == {"DeploymentConfig", "Deployment"}

        await pilot.press("colon", *"pods", "enter")
        await settle(app, pilot)
        assert isinstance(app.screen, PodsScreen) and app.screen.pods
        await pilot.press("escape")
        await pilot.press("colon", *"pods app=shop-web", "enter")
        await settle(app, pilot)
        pods = app.screen
        assert isinstance(pods, PodsScreen)
        assert pods.pods and {p.workload for p in pods.pods} <= {"deployment/web", "deployment/web-worker"}
        await pilot.press("escape")
        await pilot.press("colon", *"events", "enter")
        await settle(app, pilot)
        assert isinstance(app.screen, EventsScreen) and app.screen.events
        await pilot.press("escape")
        assert app.screen is main


async def test_p_on_a_groups_page_shows_its_pods(fake):
    app = make_app(fake)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("d")  # the cursor starts on the first group's row: its page
        await settle(app, pilot)
        group = app.screen
        assert isinstance(group, GroupScreen)
        members = {r.ref for r in group.members}
        await pilot.press("p")
        await settle(app, pilot)
        pods = app.screen
        assert isinstance(pods, PodsScreen) and pods.pods
        assert {p.workload for p in pods.pods} <= members
        assert f"pods of group {group.members[0].group}" in str(pods.query_one("#status").render())


async def test_the_command_palette_offers_the_jumps(fake):
    app = make_app(fake)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        main = app.screen
        assert isinstance(main, WorkloadsScreen)
        entries = {title: run for title, _help, run in main.palette_commands()}
        assert {"Pods", "Events", "Only DeploymentConfigs", "Only Deployments"} <= set(entries)
        entries["Only Deployments"]()
        await settle(app, pilot)
        assert {line.row.kind for line in main.table.lines if line.row is not None} == {"Deployment"}
        entries["Events"]()
        await settle(app, pilot)
        assert isinstance(app.screen, EventsScreen)
