"""`?`: every key of every screen, from the screens' own bindings (so it cannot go stale)."""

from __future__ import annotations

from collections.abc import Sequence

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.widgets import Label, Static

from rollguard.tui.keys import APP_BINDINGS
from rollguard.tui.screens.base import Dialog
from rollguard.tui.screens.confirm import ConfirmScreen
from rollguard.tui.screens.detail import DetailScreen
from rollguard.tui.screens.diff import DiffScreen
from rollguard.tui.screens.group import GroupScreen
from rollguard.tui.screens.logs import LogsScreen
from rollguard.tui.screens.pick import Picker
from rollguard.tui.screens.quit import QuitScreen
from rollguard.tui.screens.workloads import WorkloadsScreen
from rollguard.tui.screens.yaml import YamlScreen
from rollguard.tui.widgets.nav import NAV_BINDINGS
from rollguard.tui.widgets.workload_table import WorkloadTable

SCOPE_NOTE = (
    "On a group row, resume/revert/redeploy act on the whole rollout group; on a workload row, on that "
    "workload (the capital letter: its whole group). Keys that do not apply to the selected row, or that "
    "you may not use (SelfSubjectAccessReview, --read-only), are hidden; pressing one says why. A "
    "workload's action is confirmed with y, a group's by typing the group's name: Enter alone never changes anything. l shows the newest "
    "pod's logs; in a workload's detail, of the revision under the cursor, or of the pod under it (tab to "
    "the pods)."
)


KEY_NAMES = {"question_mark": "?", "slash": "/", "colon": ":", "escape": "esc", "pageup": "pgup",
             "pagedown": "pgdn"}  # fmt: skip


def _key(binding: Binding) -> str:
    return " ".join(KEY_NAMES.get(k, k) for k in binding.key.split(","))


def key_rows() -> list[tuple[str, list[tuple[str, str]]]]:
    """(section, [(keys, description)]) for every screen."""

    def rows(bindings: Sequence[object]) -> list[tuple[str, str]]:
        out = []
        for b in bindings:
            if isinstance(b, Binding):
                out.append((_key(b), b.description or b.action))
        return out

    return [(section, rows(bindings)) for section, bindings in [*SECTIONS, ("Help", HelpScreen.BINDINGS)]]


# Every screen's and table's bindings, as they are bound: the help cannot list a key that does nothing.
SECTIONS: list[tuple[str, Sequence[BindingType]]] = [
    ("Workloads", [*WorkloadsScreen.BINDINGS, *WorkloadTable.BINDINGS]),
    ("Tables (workloads, members, revisions)", NAV_BINDINGS),
    ("Workload detail", DetailScreen.BINDINGS),
    ("Group", GroupScreen.BINDINGS),
    ("YAML", YamlScreen.BINDINGS),
    ("Template diff", DiffScreen.BINDINGS),
    ("Logs (followed live)", LogsScreen.BINDINGS),
    ("Confirmation dialog", ConfirmScreen.BINDINGS),
    ("Namespace and context pickers (type to filter)", Picker.BINDINGS),
    ("Quit while a repair runs", QuitScreen.BINDINGS),
    ("Everywhere", APP_BINDINGS),
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
