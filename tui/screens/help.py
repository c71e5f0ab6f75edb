"""`?`: every key of every screen, from the screens' own bindings (so it cannot go stale)."""

from __future__ import annotations

from collections.abc import Sequence

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.widgets import Label, Static

from rollguard.tui.keys import APP_BINDINGS
from rollguard.tui.screens.base import Dialog
from rollguard.tui.screens.confirm import ConfirmScreen
from rollguard.tui.screens.detail import DetailScreen
from rollguard.tui.screens.workloads import WorkloadsScreen

# Keys the DataTable and the app handle themselves.
TABLE_KEYS = [
    ("↑ ↓ / k j", "move the cursor"),
    ("pgup pgdn home end", "page, first row, last row"),
]
SCOPE_NOTE = (
    "On a group row, resume/revert/redeploy act on the whole rollout group; on a workload row, on that "
    "workload (the capital letter: its whole group). Keys that do not apply to the selected row, or that "
    "you may not use (SelfSubjectAccessReview, --read-only), are hidden."
)


def _key(binding: Binding) -> str:
    names = {"question_mark": "?", "slash": "/", "escape": "esc", "enter": "enter"}
    return " ".join(names.get(k, k) for k in binding.key.split(","))


def key_rows() -> list[tuple[str, list[tuple[str, str]]]]:
    """(section, [(keys, description)]) for every screen."""

    def rows(bindings: Sequence[object]) -> list[tuple[str, str]]:
        out = []
        for b in bindings:
            if isinstance(b, Binding):
                out.append((_key(b), b.description or b.action))
        return out

    return [
        ("Workloads", rows(WorkloadsScreen.BINDINGS) + TABLE_KEYS),
        ("Detail", rows(DetailScreen.BINDINGS)),
        ("Confirmation dialog", rows(ConfirmScreen.BINDINGS)),
        ("Everywhere", [*rows(APP_BINDINGS), ("ctrl+p", "command palette: every action by name")]),
    ]


class HelpScreen(Dialog):
    BINDINGS = [Binding("escape,question_mark,q", "close", "Close")]

    def compose(self) -> ComposeResult:
        table = Table.grid(padding=(0, 2))
        table.add_column(style="bold cyan", no_wrap=True)
        table.add_column()
        for section, rows in key_rows():
            table.add_row(Text(section, style="bold underline"), "")
            for keys, description in rows:
                table.add_row(keys, description)
            table.add_row("", "")
        with VerticalScroll(classes="dialog help"):
            yield Label("Keys", classes="dialog-title")
            yield Static(table)
            yield Static(SCOPE_NOTE, classes="note")

    def action_close(self) -> None:
        self.dismiss(None)
