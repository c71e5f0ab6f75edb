"""`q` (or ctrl+c) while a repair runs: wait for it, or stop it and quit.

A repair started from the TUI runs in the TUI's own process: it cannot go on once the TUI has quit, and
"detaching" only blanked the screen while the process waited for the repair to end (issue 30). So the
choice is said plainly: wait, or stop the repair (interrupted as Ctrl-C interrupts the command: what it
changed is reverted, its journal says what is left) and quit once it has ended.
"""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.widgets import Button, Label, Static

from rollguard.tui.screens.base import Dialog


class QuitScreen(Dialog):
    """Dismisses with ``"stop"`` or None (stay, and wait for the repair in its dialog)."""

    BINDINGS = [
        Binding("w,escape", "wait", "Wait for the repair"),
        Binding("s", "stop", "Stop the repair and quit"),
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
                "Stop and quit (s): interrupt it as Ctrl-C interrupts the command (what it changed is "
                "reverted; its journal says what is left), then quit once it has ended. To finish the "
                "group later:\n"
                f"  {self.command}",
                id="summary",
            )
            with Horizontal(classes="buttons"):
                yield Button("Stop and quit (s)", id="stop", variant="warning")
                yield Button("Wait (w)", id="wait")

    def on_mount(self) -> None:  # Dialog.on_mount runs too (Textual calls each class's handler)
        self.query_one("#wait", Button).focus()

    @on(Button.Pressed, "#wait")
    def action_wait(self) -> None:
        self.dismiss(None)

    @on(Button.Pressed, "#stop")
    def action_stop(self) -> None:
        self.dismiss("stop")
