"""The TUI tests' harness: an app on fixed data (an in-memory cluster) or on the sandbox, and Pilot waits."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from rollguard.cluster.client import Api
from rollguard.core.structs import ExitStatus
from rollguard.tui.app import RollguardApp
from rollguard.tui.backend import Backend, Options
from rollguard.tui.views import ResultView
from tests.helpers.fakecluster import FakeCluster
from tests.helpers.tui_objects import NOW

SIZE = (130, 36)


def make_app(
    cluster: Api,
    *,
    namespace: str | None = "shop-dev",
    all_namespaces: bool = False,
    read_only: bool = False,
    live: bool = False,
    selector: str = "",
    context: str | None = None,
    kubeconfig: str | None = None,
) -> RollguardApp:
    """An app whose backend talks to ``cluster`` (a FakeCluster or a rollguard.cluster.client.Client), at a fixed now."""
    if context is None and kubeconfig is None and isinstance(cluster, FakeCluster):
        context = "demo"  # not whatever KUBECONFIG names: snapshots must not depend on the environment
    options = Options(
        namespace=namespace,
        all_namespaces=all_namespaces,
        read_only=read_only,
        selector=selector,
        context=context,
        kubeconfig=kubeconfig,
    )
    backend = Backend(options, factory=lambda _kubeconfig, _context: cluster, now=lambda: NOW)
    return RollguardApp(backend, now=lambda: NOW, live=live, static=True)


def hold_repairs(
    app: RollguardApp,
    *,
    before: Sequence[str],
    after: Sequence[str] = (),
    result: ResultView | None = None,
) -> threading.Event:
    """Make the app's repairs print ``before``, then run until the returned event is set (or 30 s),
    then print ``after`` and end with ``result`` (succeeded, "done"): a repair a test can watch running."""
    release = threading.Event()

    def execute(plan: Any, out: Callable[[str], None], cancel: Any) -> ResultView:
        for line in before:
            out(line)
        deadline = time.monotonic() + 30
        while not release.wait(0.05) and time.monotonic() < deadline:
            if cancel.is_set():  # stopped (quit): interrupted, as the real repair ends
                return ResultView(ExitStatus.REVERTED, 1, "interrupted")
        for line in after:
            out(line)
        return result or ResultView(ExitStatus.SUCCEEDED, 0, "done")

    app.backend.execute = execute
    return release


async def settle(app: RollguardApp, pilot: Any, rounds: int = 3) -> None:
    """Let thread workers finish and their messages land (pilot.pause() does not wait for workers)."""
    for _ in range(rounds):
        await app.workers.wait_for_complete()
        await pilot.pause()


async def until(pilot: Any, predicate: Callable[[], bool], *, timeout: float = 10.0, what: str = "") -> None:
    """Poll ``predicate`` while the app runs (live workers never complete, so no wait_for_complete)."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what or predicate}")
        await pilot.pause(0.05)
        await asyncio.sleep(0)


async def confirm(pilot: Any, dialog: Any, *, timeout: float = 10.0) -> None:
    """Confirm a single workload's repair as a user must: tab to Confirm, wait until it is armed, Enter."""
    await until(pilot, lambda: dialog.state == "ready", timeout=timeout, what="the plan")
    for _ in range(4):
        if dialog.focused is not None and dialog.focused.id == "confirm":
            break
        await pilot.press("tab")
    button = dialog.query_one("#confirm")
    await until(pilot, lambda: button.armed, what="Confirm armed")
    await pilot.press("enter")


def footer_keys(app: RollguardApp) -> set[str]:
    """The keys the footer offers now (bindings whose check_action says visible)."""
    return {
        key for key, active in app.screen.active_bindings.items() if active.binding.show and active.enabled
    }
