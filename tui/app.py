"""The rollguard repair TUI: the App, its data loop and the action flow.

Blocking work (API reads, watches, SelfSubjectAccessReviews, repairs) runs in thread workers that
post messages back; the event loop only builds widgets. Errors become notifications.
"""

from __future__ import annotations

import datetime as dt
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Any

from textual import on, work
from textual.app import App, SystemCommand
from textual.binding import Binding
from textual.screen import Screen
from textual.worker import get_current_worker

from rollguard.tui.backend import Backend
from rollguard.tui.messages import Connected, InventoryLoaded, PermissionsLoaded, Problem
from rollguard.tui.views import ACTIONS, Inventory, ResultView, Target

Clock = Callable[[], dt.datetime]


def describe_error(exc: BaseException) -> str:
    """One line for a notification: our errors carry their own text; others get their type."""
    from rollguard.errors import RollguardError

    if isinstance(exc, RollguardError):
        return str(exc)
    return f"{type(exc).__name__}: {exc}"


class RollguardApp(App[int]):
    """Workloads by rollout group, their findings, and guarded repairs."""

    CSS_PATH = "styles.tcss"
    TITLE = "rollguard"
    BINDINGS = [
        Binding("q", "quit", "Quit"),
        Binding("question_mark", "help", "Help"),
        Binding("ctrl+p", "command_palette", "Commands", show=False),
    ]
    LIVE_TICK = 0.5

    def __init__(
        self,
        backend: Backend,
        *,
        now: Clock | None = None,
        live: bool = True,
        static: bool = False,
    ) -> None:
        super().__init__()
        self.backend = backend
        self.clock: Clock = now or (lambda: dt.datetime.now(dt.UTC))
        self.live_enabled = live
        # static: snapshots and benchmarks; no blinking cursor, no animation
        self.static = static
        if static:
            self.animation_level = "none"
        self.inventory: Inventory | None = None
        self.allowed: dict[str, frozenset[str]] = {}
        self.permissions_known = False
        self.timings: dict[str, float] = {}
        self._dialogs = 0
        self._paused = threading.Event()
        self._dirty = threading.Event()

    @property
    def read_only(self) -> bool:
        return self.backend.options.read_only

    def on_mount(self) -> None:
        from rollguard.tui.screens.workloads import WorkloadsScreen

        self.push_screen(WorkloadsScreen())
        self.load()

    # -- the data loop ---------------------------------------------------------------------------------

    def load(
        self, *, context: str | None = None, namespace: str | None = None, all_namespaces: bool = False
    ) -> None:
        """(Re)connect and read; then follow changes through watches (unless live is off)."""
        self.permissions_known = False
        self.allowed = {}
        self._loader(context, namespace, all_namespaces)

    @work(thread=True, exclusive=True, group="loader", exit_on_error=False)
    def _loader(self, context: str | None, namespace: str | None, all_namespaces: bool) -> None:
        worker = get_current_worker()
        backend = self.backend
        try:
            if namespace is not None or all_namespaces:
                backend.namespace = namespace
                backend.all_namespaces = all_namespaces
            if context is not None or backend.client is None:
                backend.connect(context)
            else:
                backend.stop_live()
            self.post_message(Connected(backend.context_name, backend.namespace, backend.all_namespaces))
            inventory = backend.read(
                on_partial=lambda partial: self.post_message(
                    InventoryLoaded(partial, live=False, arrived=time.perf_counter())
                )
            )
            if worker.is_cancelled:
                return
            self.post_message(InventoryLoaded(inventory, live=False, arrived=backend.timings["listed"]))
            self.post_message(PermissionsLoaded(self._permissions(inventory)))
            if not self.live_enabled or worker.is_cancelled:
                return
            backend.start_live()
            while not worker.is_cancelled:
                changed = backend.wait(self.LIVE_TICK)
                if changed:
                    self._dirty.set()
                if worker.is_cancelled or not self._dirty.is_set() or self._paused.is_set():
                    continue  # paused: a dialog is open; the change is kept for when it closes
                self._dirty.clear()
                inventory = backend.cached()
                self.post_message(InventoryLoaded(inventory, live=True, arrived=backend.timings["listed"]))
        except Exception as exc:  # the API, the kubeconfig, anything: a notification, not a traceback
            if not worker.is_cancelled:
                self.post_message(Problem(describe_error(exc)))
        finally:
            if worker.is_cancelled:
                backend.stop_live()

    def _permissions(self, inventory: Inventory) -> dict[str, frozenset[str]]:
        """SelfSubjectAccessReviews per namespace in view, a few at a time."""
        kinds: dict[str, set[str]] = {}
        for row in inventory.rows:
            kinds.setdefault(row.namespace, set()).add(row.kind)
        if self.read_only:
            return {ns: frozenset() for ns in kinds}
        with ThreadPoolExecutor(max_workers=4) as pool:
            answers = pool.map(lambda item: (item[0], self.backend.permissions(*item)), kinds.items())
            return dict(answers)

    def refresh_now(self) -> None:
        """A fresh list from the API (the `r` key), without restarting the watches."""
        self._refresh_once()

    @work(thread=True, exclusive=True, group="refresh", exit_on_error=False)
    def _refresh_once(self) -> None:
        try:
            inventory = self.backend.read()
            self.post_message(InventoryLoaded(inventory, live=False, arrived=time.perf_counter()))
            self.post_message(PermissionsLoaded(self._permissions(inventory)))
        except Exception as exc:
            self.post_message(Problem(describe_error(exc)))

    @on(Connected)
    def _connected(self, message: Connected) -> None:
        where = "all namespaces" if message.all_namespaces else (message.namespace or "default")
        self.sub_title = f"{message.context or 'current context'} / {where}"
        for screen in self._screens():
            if hasattr(screen, "connection_changed"):
                screen.connection_changed()

    @on(InventoryLoaded)
    def _inventory_loaded(self, message: InventoryLoaded) -> None:
        old = self.inventory.errors if self.inventory else ()
        for problem in message.inventory.errors:
            if problem not in old:
                self.notify(problem, title="rollguard", severity="warning", timeout=8)
        self.inventory = message.inventory
        self.timings.setdefault("first_arrived", message.arrived)
        self.timings["arrived"] = message.arrived
        for screen in self._screens():
            if hasattr(screen, "inventory_changed"):
                screen.inventory_changed(message.inventory, live=message.live)
        self.call_after_refresh(self._shown)

    def _shown(self) -> None:
        self.timings["shown"] = time.perf_counter()
        self.timings.setdefault("first_shown", self.timings["shown"])

    @on(PermissionsLoaded)
    def _permissions_loaded(self, message: PermissionsLoaded) -> None:
        self.allowed = message.allowed
        self.permissions_known = True
        for screen in self._screens():
            if hasattr(screen, "bindings_changed"):
                screen.bindings_changed()
        self.screen.refresh_bindings()

    @on(Problem)
    def _problem(self, message: Problem) -> None:
        self.notify(message.text, title="rollguard", severity=message.severity, timeout=8)  # type: ignore[arg-type]

    def _screens(self) -> Iterable[Screen[Any]]:
        return list(self.screen_stack)

    # -- dialogs pause the live refresh -----------------------------------------------------------------

    def dialog_opened(self) -> None:
        self._dialogs += 1
        self._paused.set()

    def dialog_closed(self) -> None:
        self._dialogs = max(self._dialogs - 1, 0)
        if self._dialogs == 0:
            self._paused.clear()
            self.backend.poke()  # apply what changed meanwhile now, not at the next event

    @property
    def refresh_paused(self) -> bool:
        return self._paused.is_set()

    # -- actions ------------------------------------------------------------------------------------------

    def may(self, action: str, namespace: str) -> bool:
        return not self.read_only and action in self.allowed.get(namespace, frozenset())

    def open_action(self, action: str, target: Target) -> None:
        """Confirm, then run, an action: the dialog shows the plan, the progress and the result."""
        from rollguard.tui.screens.confirm import ConfirmScreen

        self.push_screen(ConfirmScreen(action, target), self._action_done)

    def _action_done(self, result: ResultView | None) -> None:
        if result is None:
            return
        self.notify(
            result.summary, title=f"{result.status}", severity="information" if result.ok else "error"
        )
        self.refresh_now()

    def action_help(self) -> None:
        from rollguard.tui.screens.help import HelpScreen

        self.push_screen(HelpScreen())

    def get_system_commands(self, screen: Screen[Any]) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        commands = getattr(screen, "palette_commands", None)
        if commands is not None:
            for title, help_text, callback in commands():
                yield SystemCommand(title, help_text, callback)
        yield SystemCommand("Help", "List every key", self.action_help)


def palette_entries(
    screen: Any, actions: Iterable[str] = ACTIONS
) -> list[tuple[str, str, Callable[[], Any]]]:
    """One command palette entry per action and scope that the screen offers right now."""
    out = []
    for action in actions:
        for scope in getattr(screen, "SCOPES", ("selection", "group")):
            if screen.check_action(action, (scope,)):
                label = screen.action_label(action, scope)
                out.append(
                    (
                        label,
                        f"rollguard {action}: shows what would change, then asks to confirm",
                        partial(screen.run_action, action, scope),
                    )
                )
    return out
