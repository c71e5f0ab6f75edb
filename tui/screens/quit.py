"""`q` (or ctrl+c) while a repair runs: wait for it, or stop it and quit.

A repair started from the TUI runs in the TUI's own process: it cannot go on once the TUI has quit, and
"detaching" only blanked the screen while the process waited for the repair to end (issue 30). So the
choice is said plainly: wait, or stop the repair (interrupted as Ctrl-C interrupts the command: what it
changed is reverted, its journal says what is left) and quit once it has ended. Stopping changes the
cluster (the repair's changes are reverted), so it is a deliberate act as a confirmation is: Wait has
the focus (Enter, `w` and esc wait), and Stop is pressed only by moving to it (tab) and pressing Enter
once it is armed (`rollguard.tui.widgets.armed`); no letter stops, so a `q` and an `s` in one burst
change nothing.
"""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.widgets import Button, Label, Static

from rollguard.tui.screens.base import Dialog
from rollguard.tui.widgets.armed import ArmedButton


class QuitScreen(Dialog):
    """Dismisses with ``"stop"`` or None (stay, and wait for the repair in its dialog)."""

    BINDINGS = [
        Binding("w,escape", "wait", "Wait for the repair"),
    ]

    def __init__(self, running: str, command: str) -> None:
        super().__init__()
        self.running = running
        self.command = command

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog confirm"):
            yield Label(f"{self.running} is running", classes="dialog-title")
            yield Static(
                "It runs in this process: quitting cannot leave it running.\n"
                "Wait (w): stay and follow it to its end.\n"
                "Stop and quit (tab, then Enter): interrupt it as Ctrl-C interrupts the command (what it changed is "
                "reverted; its journal says what is left), then quit once it has ended. To finish the "
                "group later:\n"
                f"  {self.command}",
                id="summary",
            )
            with Horizontal(classes="buttons"):
                yield ArmedButton("Stop and quit", id="stop", variant="warning")
                yield Button("Wait (w)", id="wait")

    def on_mount(self) -> None:  # Dialog.on_mount runs too (Textual calls each class's handler)
        self.query_one("#stop", ArmedButton).offer()  # armed a moment after it gets the focus
        self.query_one("#wait", Button).focus()

    @on(Button.Pressed, "#wait")
    def action_wait(self) -> None:
        self.dismiss(None)

    @on(Button.Pressed, "#stop")
    def _stop_pressed(self) -> None:
        self.dismiss("stop")

    @on(ArmedButton.NotYet)
    def _not_yet(self) -> None:
        self.app.notify("Stop is armed a moment after it has the focus: press Enter again", timeout=3)
