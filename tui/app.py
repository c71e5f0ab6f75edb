"""The rollguard repair TUI: the App, its data loop and the action flow.

Blocking work (API reads, watches, SelfSubjectAccessReviews, repairs: all `rollguard.tui.backend`
calls) runs in thread workers that post messages (`rollguard.tui.messages`) back; the event loop only
builds widgets. Errors become notifications. The app imports its screens; screens and widgets import
the app only for typing, and reach it as ``self.app``.
"""

from __future__ import annotations

import datetime as dt
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

from textual import on, work
from textual.app import App, SystemCommand
from textual.screen import Screen
from textual.worker import get_current_worker

from rollguard.core.errors import EXIT_INCONSISTENT, ServerError, TooManyRequests, Unreachable
from rollguard.core.structs import ExitStatus
from rollguard.tui.backend import Backend
from rollguard.tui.errors import describe_error
from rollguard.tui.keys import APP_BINDINGS
from rollguard.tui.liveness import Link, Liveness, backoff, link_after
from rollguard.tui.messages import (
    ActionFinished,
    Connected,
    InventoryLoaded,
    LivenessChanged,
    PermissionsLoaded,
    Problem,
    ProgressLine,
)
from rollguard.tui.repairs import TrackedRepair
from rollguard.tui.screens.confirm import ConfirmScreen
from rollguard.tui.screens.help import HelpScreen
from rollguard.tui.screens.quit import QuitScreen
from rollguard.tui.screens.workloads import WorkloadsScreen
from rollguard.tui.views import Inventory, ResultView, Target

Clock = Callable[[], dt.datetime]


def transient(exc: BaseException) -> bool:
    """An outage worth retrying (the server down, overloaded or restarting), not a refusal to fix."""
    return isinstance(exc, Unreachable | ServerError | TooManyRequests | TimeoutError | OSError)


class RollguardApp(App[int]):
    """Workloads by rollout group, their findings, and guarded repairs."""

    CSS_PATH = "styles.tcss"
    TITLE = "rollguard"
    BINDINGS = APP_BINDINGS
    LIVE_TICK = 0.5
    PROBE_EVERY = 2.0  # seconds between liveness probes while live
    CLOCK_TICK = 5.0  # seconds between re-judgements of time-based findings without any event

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
        self._reviewing: set[str] = set()  # namespaces whose access reviews a worker is asking now
        self._generation = 0  # bumped by each load: reviews of an older connection are dropped
        self.timings: dict[str, float] = {}
        self._dialogs = 0
        self._paused = threading.Event()
        self._dirty = threading.Event()
        self._retry = threading.Event()
        self.liveness = Liveness()
        self.repairs: list[TrackedRepair] = []  # confirmed from this TUI, running or ended (`b` reopens them)
        self.detached = False  # quit while a repair ran: the process must not wait for its thread

    @property
    def read_only(self) -> bool:
        return self.backend.options.read_only

    def on_mount(self) -> None:
        self.push_screen(WorkloadsScreen())
        self.load()

    # -- the data loop ---------------------------------------------------------------------------------

    def load(
        self, *, context: str | None = None, namespace: str | None = None, all_namespaces: bool = False
    ) -> None:
        """(Re)connect and read; then follow changes through watches (unless live is off).

        Switching context or namespace clears the table at once: the old cluster's rows must not stand
        under the new name while the new cluster has not answered.
        """
        self.permissions_known = False
        self.allowed = {}
        self._reviewing = set()
        self._generation += 1
        if context is not None or namespace is not None or all_namespaces:
            self.inventory = None
            self._set_liveness(Liveness(Link.CONNECTING))
            for screen in self._screens():
                if hasattr(screen, "inventory_cleared"):
                    screen.inventory_cleared()
        self._retry.set()  # a loader waiting to reconnect (to the old context) ends now
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
        except Exception as exc:  # the kubeconfig: nothing to retry
            self.post_message(Problem(describe_error(exc)))
            return
        failures = 0
        contact: float | None = None
        self._retry.clear()
        while not worker.is_cancelled:
            try:
                inventory = backend.read(on_partial=self._partial, for_live=self.live_enabled)
                contact = time.monotonic()
                if worker.is_cancelled:
                    return
                self.post_message(InventoryLoaded(inventory, live=False, arrived=backend.timings["listed"]))
                if not self.live_enabled or worker.is_cancelled:
                    self.post_message(PermissionsLoaded(self._eager_permissions(inventory)))
                    return
                # Watches first, access reviews after: with -A the reviews are asked lazily (`may`),
                # one namespace at a time as its rows are acted on, never 22 per namespace up front.
                backend.start_live()
                failures = 0
                self.post_message(LivenessChanged(Liveness(Link.LIVE, contact=time.monotonic())))
                self.post_message(PermissionsLoaded(self._eager_permissions(inventory)))
                self._follow(worker)
                return
            except Exception as exc:  # the API, anything: a notification, not a traceback
                if worker.is_cancelled:
                    return
                if not transient(exc) or not self.live_enabled:
                    self.post_message(Problem(describe_error(exc)))
                    self.post_message(
                        LivenessChanged(Liveness(Link.DISCONNECTED, contact, describe_error(exc)))
                    )
                    return
                backend.stop_live()
                failures += 1
                if failures == 1:
                    self.post_message(Problem(describe_error(exc), severity="warning"))
                self.post_message(
                    LivenessChanged(Liveness(link_after(failures), contact, describe_error(exc), failures))
                )
                self._retry.wait(backoff(failures))
                self._retry.clear()
            finally:
                if worker.is_cancelled:
                    backend.stop_live()

    def _follow(self, worker: Any) -> None:
        """Follow the watches; probe the server every `PROBE_EVERY` s (raises when it stops answering);
        re-judge time-based findings every `CLOCK_TICK` s although nothing changed (lease expiry,
        deadlines, ages); with -A and a selector, start watching namespaces that appeared.

        An event re-assesses its namespace only; the clock tick re-judges every namespace, at most a
        quarter of the time (a whole cluster's assessment takes seconds: the tick must not take it all)."""
        backend = self.backend
        last_probe = last_tick = time.monotonic()
        everything = False
        while not worker.is_cancelled:
            changed = backend.wait(self.LIVE_TICK)
            now = time.monotonic()
            if changed:
                self._dirty.set()
            if now - last_probe >= self.PROBE_EVERY:
                backend.probe()
                last_probe = now
                self.post_message(LivenessChanged(Liveness(Link.LIVE, contact=now)))
            if now - last_tick >= max(self.CLOCK_TICK, 4 * backend.timings.get("everything_s", 0.0)):
                last_tick = now
                everything = True
                self._dirty.set()  # the same objects judged at a later now
                if backend.follow_new_namespaces():
                    self._dirty.set()
            if worker.is_cancelled or not self._dirty.is_set() or self._paused.is_set():
                continue  # paused: a dialog is open; the change is kept for when it closes
            self._dirty.clear()
            inventory = backend.cached(everything=everything)
            everything = False
            self.post_message(InventoryLoaded(inventory, live=True, arrived=backend.timings["listed"]))

    def reconnect_now(self) -> None:
        """Cut the reconnect backoff short (the `r`eload key while disconnected)."""
        self._retry.set()

    def _partial(self, inventory: Inventory) -> None:
        """From the loader's thread: what a long first read has found so far."""
        self.post_message(InventoryLoaded(inventory, live=False, arrived=time.perf_counter()))

    def refresh_now(self) -> None:
        """A fresh list from the API (ctrl+r), without restarting the watches; while the server does not
        answer, a reconnect attempt now instead."""
        if not self.liveness.live and self.live_enabled:
            self.reconnect_now()
            return
        self._refresh_once()

    @work(thread=True, exclusive=True, group="refresh", exit_on_error=False)
    def _refresh_once(self) -> None:
        try:
            inventory = self.backend.read()
            self.post_message(InventoryLoaded(inventory, live=False, arrived=time.perf_counter()))
            self.post_message(PermissionsLoaded(self._eager_permissions(inventory)))
        except Exception as exc:
            self.post_message(Problem(describe_error(exc)))

    def _eager_permissions(self, inventory: Inventory) -> dict[str, frozenset[str]]:
        """One namespace: its permissions now (a few reviews). All namespaces: none yet; `may` asks
        for a namespace's when a screen first offers an action there (100 namespaces would be 2,200
        reviews before anything else)."""
        if self.backend.all_namespaces and not self.read_only:
            return {}
        return self.backend.allowed(inventory)

    def _review(self, namespace: str) -> None:
        if namespace in self._reviewing:
            return
        self._reviewing.add(namespace)
        self._review_worker(namespace, self._generation)

    @work(thread=True, group="permissions", exit_on_error=False)
    def _review_worker(self, namespace: str, generation: int) -> None:
        inventory = self.inventory
        kinds = {row.kind for row in inventory.rows if row.namespace == namespace} if inventory else set()
        try:
            allowed = self.backend.permissions(namespace, kinds)
        except Exception as exc:  # unanswerable: offer nothing there, say why
            self.post_message(Problem(describe_error(exc)))
            allowed = frozenset()
        if generation == self._generation:
            self.post_message(PermissionsLoaded({namespace: allowed}))

    @on(Connected)
    def _connected(self, message: Connected) -> None:
        where = "all namespaces" if message.all_namespaces else (message.viewed_namespace or "default")
        self.sub_title = f"{message.context or 'current context'} / {where}"
        for screen in self._screens():
            if hasattr(screen, "connection_changed"):
                screen.connection_changed()

    @on(LivenessChanged)
    def _liveness_changed(self, message: LivenessChanged) -> None:
        self._set_liveness(message.liveness)

    def _set_liveness(self, liveness: Liveness) -> None:
        changed = liveness.link is not self.liveness.link
        self.liveness = liveness
        if changed:
            for screen in self._screens():
                if hasattr(screen, "liveness_changed"):
                    screen.liveness_changed()

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
        self.allowed = {**self.allowed, **message.allowed}  # lazy reviews add namespaces one by one
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
        """Whether the table's refresh is held while a dialog is open: a seam for the tests
        (tests/tui/test_app.py), which the app itself reads as ``_paused``."""
        return self._paused.is_set()

    # -- actions ------------------------------------------------------------------------------------------

    def may(self, action: str, namespace: str, kinds: Iterable[str] = ()) -> bool:
        """Whether ``action`` is offered in ``namespace`` on workloads of ``kinds`` (per kind and verb);
        a namespace not reviewed yet (-A) is asked for in a worker now and offers nothing until its
        answer arrives (the bindings refresh then)."""
        if self.read_only:
            return False
        if namespace not in self.allowed and self.permissions_known:
            self._review(namespace)
            return False
        if action in self.allowed.get(namespace, frozenset()):
            return True
        by_kind = [self.backend.by_kind.get((namespace, kind)) for kind in set(kinds)]
        return bool(by_kind) and all(allowed is not None and action in allowed for allowed in by_kind)

    def open_action(self, action: str, target: Target, *, group: str = "", warning: str = "") -> None:
        """Confirm, then run, an action: the dialog shows the plan, the progress and the result."""
        self.push_screen(ConfirmScreen(action, target, group=group, warning=warning), self._action_done)

    def _action_done(self, result: ResultView | None) -> None:
        if result is None:
            return
        self.notify(
            result.summary, title=f"{result.status}", severity="information" if result.ok else "error"
        )
        self.refresh_now()

    # -- repairs in the background --------------------------------------------------------------------

    def start_repair(self, repair: TrackedRepair) -> None:
        """A confirmed repair: the app owns it, so its dialog can go to the background and come back."""
        self.repairs.append(repair)
        self._run_repair(repair)
        self._repairs_changed()

    @work(thread=True, exit_on_error=False, group="action")
    def _run_repair(self, repair: TrackedRepair) -> None:
        def line(text: str) -> None:  # from this thread; post_message is thread-safe
            self.post_message(ProgressLine(repair, text))

        try:
            result = self.backend.execute(repair.plan, line, repair.cancel_event)
        except Exception as exc:
            # Nothing tells how far the action got: the status of a run that could not say what it left.
            result = ResultView(ExitStatus.INCONSISTENT, EXIT_INCONSISTENT, describe_error(exc))
        self.post_message(ActionFinished(repair, result))

    def _dialogs_of(self, repair: TrackedRepair) -> list[ConfirmScreen]:
        return [s for s in self.screen_stack if isinstance(s, ConfirmScreen) and s.repair is repair]

    @on(ProgressLine)
    def _repair_progress(self, message: ProgressLine) -> None:
        message.repair.lines.append(message.line)
        for dialog in self._dialogs_of(message.repair):
            dialog.repair_progress(message.line)

    @on(ActionFinished)
    def _repair_finished(self, message: ActionFinished) -> None:
        repair, result = message.repair, message.result
        repair.result = result
        dialogs = self._dialogs_of(repair)
        for dialog in dialogs:
            dialog.repair_finished(result)
        if not dialogs:  # it ended in the background: say so, and keep it for `b`
            repair.seen = False
            self.notify(
                f"{repair.what}: {result.summary} (b shows it)",
                title=f"{result.status}",
                severity="information" if result.ok else "error",
            )
            self.refresh_now()
        self._repairs_changed()

    def _repairs_changed(self) -> None:
        for screen in self._screens():
            if hasattr(screen, "repairs_changed"):
                screen.repairs_changed()

    def running_repairs(self) -> list[TrackedRepair]:
        return [r for r in self.repairs if r.running]

    def reopen_repair(self) -> bool:
        """`b`: the dialog of the newest running repair, else of one that ended unseen, else the last one."""
        candidates = self.running_repairs() or [r for r in self.repairs if not r.seen] or self.repairs[-1:]
        if not candidates:
            return False
        repair = candidates[-1]
        repair.seen = True
        self.push_screen(
            ConfirmScreen(repair.plan.action, repair.plan.target, group=repair.group, repair=repair),
            self._action_done,
        )
        return True

    def running_action(self) -> TrackedRepair | None:
        """The newest repair running now (in its dialog or in the background), if any."""
        running = self.running_repairs()
        return running[-1] if running else None

    async def action_quit(self) -> None:
        """Quit; while a repair runs, ask first: wait for it, or detach."""
        running = self.running_action()
        if running is None:
            self.exit()
            return
        what = running.what
        command = running.plan.command or "rollguard revert"
        if any(isinstance(s, QuitScreen) for s in self.screen_stack):
            return

        def chosen(choice: str | None) -> None:
            if choice == "detach":
                self.detached = True
                self.exit()

        self.push_screen(QuitScreen(what.capitalize(), command), chosen)

    def action_help(self) -> None:
        self.push_screen(HelpScreen())

    def get_system_commands(self, screen: Screen[Any]) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        commands = getattr(screen, "palette_commands", None)
        if commands is not None:
            for title, help_text, callback in commands():
                yield SystemCommand(title, help_text, callback)
        yield SystemCommand("Help", "List every key", self.action_help)
