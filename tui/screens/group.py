"""Enter (or `d`) on a group row: the rollout group itself: its journal, who holds its lock, its members.

The actions here act on the whole group (as on the group row of the main screen).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import DataTable, Label, Static

from rollguard.tui.screens.base import ACTION_BINDINGS, ActionsMixin, Selection, group_selection
from rollguard.tui.screens.detail import DetailScreen, journal_text
from rollguard.tui.screens.pods import PodsScreen
from rollguard.tui.views import Inventory, WorkloadRow, images_text
from rollguard.tui.widgets.badges import badges
from rollguard.tui.widgets.keybar import KeyBar
from rollguard.tui.widgets.nav import NavTable

if TYPE_CHECKING:
    from rollguard.tui.app import RollguardApp

MEMBER_COLUMNS = ("Workload", "Findings", "Rev", "Ready", "Images")


class GroupScreen(ActionsMixin, Screen[None]):
    """One rollout group; follows the live inventory like the main screen."""

    app: RollguardApp
    SCOPES = ("selection",)
    BINDINGS = [
        Binding("escape,backspace", "back", "Back"),
        Binding("enter,d", "member", "Workload detail"),
        Binding("p", "pods", "Pods"),
        *(b for b in ACTION_BINDINGS if b.action.endswith("('selection')")),
    ]

    def __init__(self, key: str) -> None:
        super().__init__()
        self.key = key
        self.members: list[WorkloadRow] = []

    def compose(self) -> ComposeResult:
        yield Static(id="status")
        with VerticalScroll(id="detail"):
            yield Label("Journal and lock", classes="section")
            yield Static(id="journal")
            yield Label("Members", classes="section")
            yield NavTable(id="members", cursor_type="row")
        yield KeyBar()

    def on_mount(self) -> None:
        self.query_one("#members", DataTable).add_columns(*MEMBER_COLUMNS)
        self.query_one("#members", DataTable).focus()
        if self.app.inventory is not None:
            self.inventory_changed(self.app.inventory, live=False)

    def inventory_changed(self, inventory: Inventory, *, live: bool) -> None:
        group = inventory.groups.get(self.key)
        self.members = inventory.group_rows(self.key)
        label = self.members[0].group if self.members else (group.selector if group else self.key)
        where = self.members[0].namespace if self.members else (group.namespace if group else "")
        title = Text.assemble(
            ("group ", ""), (label, "bold"), f"  in {where}  ·  {len(self.members)} workloads"
        )
        self.query_one("#status", Static).update(title)
        lock = f"[b]lock[/] held by {group.lock_holder}" if group and group.lock_holder else "[b]lock[/] free"
        self.query_one("#journal", Static).update(journal_text(group) + "\n" + lock)
        table = self.query_one("#members", DataTable)
        keep = table.cursor_row
        table.clear()
        for row in self.members:
            table.add_row(
                row.ref, badges(row.findings), str(row.revision), f"{row.ready}/{row.desired}",
                images_text(row.images), key=row.key,
            )  # fmt: skip
        if self.members:
            table.move_cursor(row=min(keep, len(self.members) - 1))
        self.refresh_bindings()

    def selection(self, scope: str) -> Selection | None:
        return group_selection(self.members)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("member", "pods"):
            return bool(self.members)
        return super().check_action(action, parameters)

    @on(DataTable.RowSelected, "#members")
    def _selected(self, _event: DataTable.RowSelected) -> None:
        self.action_member()

    def action_member(self) -> None:
        table = self.query_one("#members", DataTable)
        if 0 <= table.cursor_row < len(self.members):
            self.app.push_screen(DetailScreen(self.members[table.cursor_row]))

    def action_pods(self) -> None:
        """`p`: the pods of the group's workloads, and from there their logs."""
        label = self.members[0].group if self.members else self.key
        title = f"pods of group {label}" if label else "pods of the workloads in no group"
        self.app.push_screen(PodsScreen(members=tuple(self.members), title=title))

    def action_back(self) -> None:
        self.app.pop_screen()
