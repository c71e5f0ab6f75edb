"""`q` while a repair runs: wait for it, or detach (quit now and leave it to its journal and lock).

A repair started from the TUI holds its group's Lease and writes its journal at every step; a process
that leaves lets the lease expire, and the group shows as half-rolled until `rollguard revert` (or the
next run) finishes it from the journal. Detaching is therefore safe, but it must be a choice.
"""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.widgets import Button, Label, Static

from rollguard.tui.screens.base import Dialog


class QuitScreen(Dialog):
    """Dismisses with ``"detach"`` or None (stay, and wait for the repair in its dialog)."""

    BINDINGS = [
        Binding("w,escape", "wait", "Wait for the repair"),
        Binding("d", "detach", "Detach and quit"),
    ]

    def __init__(self, running: str, command: str) -> None:
        super().__init__()
        self.running = running
        self.command = command

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog confirm"):
            yield Label(f"{self.running} is running", classes="dialog-title")
            yield Static(
                "Wait (w): stay and follow it to its end.\n"
                "Detach (d): quit now. The repair stops with this process; its journal and lock keep the "
                "group safe, and it shows as half-rolled until finished with:\n"
                f"  {self.command}",
                id="summary",
            )
            with Horizontal(classes="buttons"):
                yield Button("Detach (d)", id="detach", variant="warning")
                yield Button("Wait (w)", id="wait")

    def on_mount(self) -> None:  # Dialog.on_mount runs too (Textual calls each class's handler)
        self.query_one("#wait", Button).focus()

    @on(Button.Pressed, "#wait")
    def action_wait(self) -> None:
        self.dismiss(None)

    @on(Button.Pressed, "#detach")
    def action_detach(self) -> None:
        self.dismiss("detach")
