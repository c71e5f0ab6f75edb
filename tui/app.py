"""The rollguard repair TUI: the App and the action flow (the data loop is `rollguard.tui.dataloop`).

Blocking work (API reads, watches, SelfSubjectAccessReviews, repairs: all `rollguard.tui.backend`
calls) runs in thread workers that post messages (`rollguard.tui.messages`) back; the event loop only
builds widgets. Errors become notifications. The app imports its screens; screens and widgets import
the app only for typing, and reach it as ``self.app``.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable
from typing import Any

from textual import on, work
from textual.app import SystemCommand
from textual.screen import Screen

from rollguard.core.errors import EXIT_INCONSISTENT
from rollguard.core.structs import ExitStatus
from rollguard.tui.backend import Backend
from rollguard.tui.dataloop import DataLoop
from rollguard.tui.errors import describe_error
from rollguard.tui.keys import APP_BINDINGS
from rollguard.tui.liveness import Liveness
from rollguard.tui.messages import (
    ActionFinished,
    ProgressLine,
)
from rollguard.tui.repairs import TrackedRepair
from rollguard.tui.screens.confirm import ConfirmScreen
from rollguard.tui.screens.help import HelpScreen
from rollguard.tui.screens.quit import QuitScreen
from rollguard.tui.screens.workloads import WorkloadsScreen
from rollguard.tui.views import Inventory, ResultView, Target

Clock = Callable[[], dt.datetime]


class RollguardApp(DataLoop):
    """Workloads by rollout group, their findings, and guarded repairs."""

    CSS_PATH = "styles.tcss"
    TITLE = "rollguard"
    BINDINGS = APP_BINDINGS

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
        self.live_refreshes = 0  # inventories from the live caches shown (tests wait on it)
        self.liveness = Liveness()
        self.init_data_loop()
        self.repairs: list[TrackedRepair] = []  # confirmed from this TUI, running or ended (`b` reopens them)
        self.quitting = False  # the user chose to stop the running repairs and quit once they ended

    def on_mount(self) -> None:
        self.push_screen(WorkloadsScreen())
        self.load()

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
        if self.quitting and not self.running_repairs():
            self.exit()

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
        """Quit (`q`, ctrl+c as in k9s); while a repair runs, ask first: wait for it, or stop it and quit.

        A repair runs in this process: quitting cannot leave it running. Stopping it interrupts it as
        Ctrl-C interrupts the command (what it changed is reverted, its journal says the rest), and the
        TUI quits once it has ended."""
        running = self.running_action()
        if running is None:
            self.exit()
            return
        if self.quitting or any(isinstance(s, QuitScreen) for s in self.screen_stack):
            return
        command = running.plan.command or "rollguard revert"

        def chosen(choice: str | None) -> None:
            if choice == "stop":
                self.quitting = True
                for repair in self.running_repairs():
                    repair.cancel_event.set()
                self.notify(
                    "stopping the repair (what it changed is reverted); rollguard quits once it has ended"
                )

        self.push_screen(QuitScreen(running.what.capitalize(), command), chosen)

    def action_help(self) -> None:
        self.push_screen(HelpScreen())

    def get_system_commands(self, screen: Screen[Any]) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        commands = getattr(screen, "palette_commands", None)
        if commands is not None:
            for title, help_text, callback in commands():
                yield SystemCommand(title, help_text, callback)
        yield SystemCommand("Help", "List every key", self.action_help)
