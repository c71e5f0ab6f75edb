"""No write without a deliberate act (issue 30 point 3): bursts of keys, as a paste, fast typing or a slow
SSH link deliver them, on an in-memory cluster.

A burst is posted to the app all at once (``post_message`` of each key before the app handles the first),
which is how keys read from a terminal in one go arrive; Pilot's ``press`` waits for each key to be
handled and so never shows the problem. Assertions are on the cluster's objects and its write requests.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import random
import string
from typing import Any

from textual import events
from textual.keys import _character_to_key
from textual.worker import WorkerCancelled

from rollguard.core.structs import ExitStatus
from rollguard.tui.screens.confirm import ConfirmScreen
from rollguard.tui.screens.workloads import WorkloadsScreen
from rollguard.tui.views import ResultView
from tests.helpers.fakecluster import FakeCluster
from tests.helpers.tui import SIZE, make_app, until

PRINTABLE = string.ascii_letters + string.digits + string.punctuation + " "


def burst(app: Any, keys: str | list[str]) -> None:
    """Post every key at once: the app handles the first only after all of them are queued."""
    for key in keys:
        name = key if len(key) > 1 else _character_to_key(key)
        char = key if len(key) == 1 else {"tab": "\t", "enter": "\r"}.get(key)
        app.post_message(events.Key(name, char))


async def calm(app: Any, pilot: Any, rounds: int = 3) -> None:
    """`settle`, but a worker that follows a log never completes: wait for the others a moment only."""
    for _ in range(rounds):
        with contextlib.suppress(TimeoutError, WorkerCancelled):
            await asyncio.wait_for(app.workers.wait_for_complete(), 0.2)
        await pilot.pause()


def snapshot(fake: FakeCluster) -> tuple[int, dict[Any, Any]]:
    """Every object, and the resourceVersion counter (any stored write moves it; dry runs do not)."""
    return fake._rv, copy.deepcopy(fake._objects)


def no_write(fake: FakeCluster, before: tuple[int, dict[Any, Any]]) -> None:
    assert snapshot(fake) == before


def record_repairs(app: Any) -> list[object]:
    """Repairs confirmed (none may be): recorded, and ended at once (the fake has no controllers to
    finish a rollout, so a repair that ran would wait for ever; the list is the test's evidence)."""
    ran: list[object] = []

    def execute(plan: Any, out: Any, cancel: Any) -> Any:
        ran.append(plan.target)
        return ResultView(ExitStatus.SUCCEEDED, 0, "confirmed")

    app.backend.execute = execute
    return ran


async def test_keys_right_after_slash_go_to_the_filter(fake):
    """The reproduction: "/ready" opened Redeploy on the cursor's workload (the `r`), and its `y`
    confirmed it; "/paused" opened Resume. Now every key after `/` is typed into the filter."""
    before = snapshot(fake)
    app = make_app(fake)
    ran = record_repairs(app)
    async with app.run_test(size=SIZE) as pilot:
        await calm(app, pilot)
        await pilot.press("down")  # dc1
        for word in ("ready", "paused"):
            burst(app, "/" + word)
            await calm(app, pilot)
            screen = app.screen
            assert isinstance(screen, WorkloadsScreen), screen
            assert screen.text_filter == word
            burst(app, ["escape"])
            await calm(app, pilot)
            assert screen.text_filter == ""
        burst(app, ":ns shop-prod")
        await calm(app, pilot)
        assert isinstance(app.screen, WorkloadsScreen)
        assert app.screen.query_one("#command").value == "ns shop-prod"
    assert ran == []
    no_write(fake, before)


async def test_a_burst_never_confirms_a_repair(fake):
    """`r` then a tab and Enter in the same burst (a paste), and `r`, `y` (k9s's YAML key): no repair."""
    before = snapshot(fake)
    app = make_app(fake)
    ran = record_repairs(app)
    async with app.run_test(size=SIZE) as pilot:
        await calm(app, pilot)
        await pilot.press("down", "r")
        dialog = app.screen
        assert isinstance(dialog, ConfirmScreen)
        await until(pilot, lambda: dialog.state == "ready", what="the plan")
        burst(app, ["y", "shift+tab", "enter", "enter"])  # from Cancel back to Confirm, unarmed
        await calm(app, pilot)
        assert dialog.state == "ready" and dialog.focused is not None and dialog.focused.id == "confirm"
    assert ran == []
    no_write(fake, before)


# How each screen is reached with deliberate, one-at-a-time keys before the bursts (the bursts open
# the others themselves: `l` the logs, `y` the YAML, `n`/`:`/`/` the boxes and pickers).
OPENERS: list[tuple[str, ...]] = [
    (),  # the workloads screen, the cursor on the group row
    ("down",),  # a workload's row
    ("down", "r"),  # a single workload's confirmation
    ("v",),  # a group's confirmation (its name must be typed)
    ("d",),  # the group's page
    ("down", "enter"),  # a workload's detail
    ("down", "l"),  # a workload's logs, followed
]


async def test_bursts_of_printable_keys_on_the_main_screens_change_nothing(fake):
    """Bursts of every printable key (shuffled, two orders) into every screen: the cluster is unchanged
    and no repair was started. `q` would end the app: quitting is not a write, so the test keeps it
    running to let the rest of each burst through."""
    for pod in ("dc1-2-fd571", "dc1-2-9df89"):  # dc1's logs are followed (streams that never end)
        fake.set_log("shop-dev", pod, "app", ["INFO api v2 ready"], running=True)
    before = snapshot(fake)
    app = make_app(fake)
    ran = record_repairs(app)
    quits: list[object] = []
    app.exit = lambda *args, **kwargs: quits.append(args)  # type: ignore[method-assign]
    orders = []
    for seed in range(2):
        keys = list(PRINTABLE)
        random.Random(seed).shuffle(keys)
        orders.append(keys)
    async with app.run_test(size=SIZE) as pilot:
        await calm(app, pilot)
        for opener in OPENERS:
            for keys in orders:
                if opener:
                    await pilot.press(*opener)
                    await calm(app, pilot, rounds=2)
                burst(app, keys)
                await calm(app, pilot, rounds=2)
                # back to the workloads screen, its boxes closed, for the next burst
                for _ in range(60):
                    if isinstance(app.screen, WorkloadsScreen) and app.focused is app.screen.table:
                        break
                    await pilot.press("escape")
                    await pilot.pause()
                assert isinstance(app.screen, WorkloadsScreen), (opener, app.screen_stack)
                app.screen.action_clear_filter()
                await calm(app, pilot, rounds=1)
                assert isinstance(app.screen, WorkloadsScreen), (opener, app.screen)
        # every logs page the bursts opened is closed: none of their streams is still followed
        await until(pilot, lambda: fake.log_streams == 0, what="the closed pages' log streams cut")
    assert ran == []
    no_write(fake, before)


async def test_keys_after_q_in_the_same_burst_are_dropped(fake):
    """Found trying it out in tmux (QA of issue 30): a paste holding `q` then `c` ended the TUI with a
    traceback (`NoMatches: '#typed' on ContextPicker()`): `q` had asked the app to exit, and the `c` of the
    same burst pushed the context picker onto an app that was closing. Keys that come after `q` are for
    nothing: the app quits cleanly, exit code 0, nothing written."""
    before = snapshot(fake)
    for seed in range(2):
        keys = list(PRINTABLE.replace("q", ""))
        random.Random(seed).shuffle(keys)
        app = make_app(fake)
        ran = record_repairs(app)
        async with app.run_test(size=SIZE) as pilot:
            await calm(app, pilot)
            burst(app, ["q", *keys])
            await calm(app, pilot)
        assert app.return_code == 0 and ran == []
    no_write(fake, before)
