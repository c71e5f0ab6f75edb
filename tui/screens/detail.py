"""Enter on a workload: its conditions, revision history, pods, recent events and its group's journal."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import DataTable, Label, Static

from rollguard.tui.errors import describe_error
from rollguard.tui.messages import DetailLoaded, Problem
from rollguard.tui.revisions import rollback_warning
from rollguard.tui.screens.base import (
    ACTION_BINDINGS,
    ActionsMixin,
    Selection,
    group_selection,
    workload_selection,
)
from rollguard.tui.screens.diff import DiffScreen
from rollguard.tui.screens.logs import LogsScreen
from rollguard.tui.screens.yaml import YamlScreen
from rollguard.tui.views import DetailView, GroupView, Inventory, WorkloadRow, age, images_text
from rollguard.tui.widgets.badges import badges
from rollguard.tui.widgets.keybar import KeyBar
from rollguard.tui.widgets.nav import NavTable

if TYPE_CHECKING:
    from rollguard.tui.app import RollguardApp

ROLLING = ("New", "Pending", "Running")
TABLES = {
    "conditions": ("Type", "Status", "Reason", "Message"),
    "revisions": ("Revision", "Phase", "Journal", "Cause", "Ready", "Images", "Age"),
    "pods": ("Pod", "Status", "Ready", "Restarts", "Revision", "Node"),
    "events": ("Last seen", "Type", "Reason", "Object", "Message"),
}


class DetailScreen(ActionsMixin, Screen[None]):
    """One workload in depth; the same actions as the main screen, plus revert to a chosen revision."""

    app: RollguardApp
    SCOPES = ("selection", "group", "revision")
    BINDINGS = [
        Binding("escape,backspace", "back", "Back"),
        Binding("t", "revert('revision')", "Revert to this revision"),
        Binding("y", "yaml", "YAML"),
        Binding("l", "logs", "Logs"),
        Binding("equals_sign", "diff('verified')", "Diff vs verified"),
        Binding("D", "diff('revision')", "Diff vs revision"),
        Binding("ctrl+r", "reload", "Reload", show=False),
        *ACTION_BINDINGS,
    ]

    def __init__(self, row: WorkloadRow) -> None:
        super().__init__()
        self.row = row
        self.detail: DetailView | None = None

    def compose(self) -> ComposeResult:
        yield Static(id="status")
        with VerticalScroll(id="detail"):
            yield Static(id="summary")
            for name in TABLES:
                yield Label(
                    name.capitalize() if name != "revisions" else "Revision history", classes="section"
                )
                if name in ("revisions", "pods"):  # tab moves between them
                    yield NavTable(id=name, cursor_type="row")
                else:
                    yield DataTable(id=name, cursor_type="none", show_cursor=False)
            yield Label("Journal", classes="section")
            yield Static(id="journal")
        yield KeyBar()

    def on_mount(self) -> None:
        for name, columns in TABLES.items():
            table = self.query_one(f"#{name}", DataTable)
            table.add_columns(*columns)
            table.can_focus = name in ("revisions", "pods")
        self.query_one("#revisions", DataTable).focus()
        self.show_header()
        self.load()

    # -- data ----------------------------------------------------------------------------------------------

    def load(self) -> None:
        self._load(self.row)

    @work(thread=True, exclusive=True, group="detail", exit_on_error=False)
    def _load(self, row: WorkloadRow) -> None:
        try:
            self.post_message(DetailLoaded(self.app.backend.detail(row)))
        except Exception as exc:
            self.app.post_message(Problem(describe_error(exc)))

    def inventory_changed(self, inventory: Inventory, *, live: bool) -> None:
        fresh = next((r for r in inventory.rows if r.key == self.row.key), None)
        if fresh is None:
            self.app.notify(f"{self.row.ref} no longer exists", severity="warning")
            return
        self.row = fresh
        self.show_header()
        self.load()

    @on(DetailLoaded)
    def _loaded(self, message: DetailLoaded) -> None:
        chosen = self.chosen_revision()  # kept by revision number: a new revision inserts a row above
        self.detail = message.detail
        self.show(message.detail, keep_revision=chosen)

    def show_header(self) -> None:
        row = self.row
        title = Text.assemble(
            (row.ref, "bold"), f"  in {row.namespace}  ·  group ", (row.group or "(none)", "bold")
        )
        title.append("   ")
        title.append_text(badges(row.findings))
        self.query_one("#status", Static).update(title)

    def show(self, detail: DetailView, *, keep_revision: int | None = None) -> None:
        now = self.app.clock()
        row = detail.row
        lines = [f"[b]{f.code}[/]: {f.reason}" for f in row.findings if f.reason]
        lines.append(f"[b]revision[/] {row.revision}   [b]ready[/] {row.ready}/{row.desired}   "
                     f"[b]paused[/] {'yes' if row.paused else 'no'}   [b]images[/] {images_text(row.images)}")  # fmt: skip
        if detail.triggers:
            lines.append(f"[b]triggers[/] {'; '.join(detail.triggers)}")
        self.query_one("#summary", Static).update("\n".join(lines))
        self._fill("conditions", [(c.type, c.status, c.reason, c.message) for c in detail.conditions])
        revisions = self.query_one("#revisions", DataTable)
        keep = revisions.cursor_row
        self._fill(
            "revisions",
            [
                (
                    Text(f"{r.name}{' ●' if r.active else ''}", style="bold" if r.active else ""),
                    r.phase,
                    Text(r.mark, style="bold red" if r.mark.startswith(("failed", "cancelled")) else ""),
                    r.cause,
                    r.replicas,
                    images_text(r.images),
                    age(r.created, now),
                )
                for r in detail.revisions
            ],
            keys=[str(r.number) for r in detail.revisions],
        )
        numbers = [r.number for r in detail.revisions]
        if keep_revision in numbers:
            revisions.move_cursor(row=numbers.index(keep_revision))
        elif detail.revisions:
            revisions.move_cursor(row=min(keep, len(detail.revisions) - 1))
        self._fill(
            "pods",
            [(p.name, p.status, p.ready, str(p.restarts), p.revision, p.node) for p in detail.pods],
            keys=[p.name for p in detail.pods],
        )
        self._fill(
            "events",
            [
                (
                    age(e.last_seen, now),
                    e.type,
                    e.reason,
                    e.object,
                    e.message + (f" (x{e.count})" if e.count > 1 else ""),
                )
                for e in detail.events
            ],
        )
        self.query_one("#journal", Static).update(journal_text(detail.group))
        self.refresh_bindings()

    def _fill(self, name: str, rows: list[tuple[object, ...]], keys: list[str] | None = None) -> None:
        table = self.query_one(f"#{name}", DataTable)
        table.clear()
        if not rows:
            table.add_row(*(["(none)"] + [""] * (len(TABLES[name]) - 1)))
            return
        for i, cells in enumerate(rows):
            table.add_row(*cells, key=keys[i] if keys else None)

    # -- selection and keys --------------------------------------------------------------------------------

    def chosen_revision(self) -> int | None:
        if self.detail is None or not self.detail.revisions:
            return None
        table = self.query_one("#revisions", DataTable)
        if not 0 <= table.cursor_row < len(self.detail.revisions):
            return None
        return self.detail.revisions[table.cursor_row].number

    def selection(self, scope: str) -> Selection | None:
        if scope == "revision":
            number = self.chosen_revision()
            return workload_selection(self.row, to_revision=number) if number is not None else None
        if scope == "group":
            inventory = self.app.inventory
            rows = inventory.group_rows(self.row.group_key) if inventory else [self.row]
            return group_selection(rows)
        return workload_selection(self.row)

    def action_warning(self, action: str, scope: str) -> str:
        """Before a rollback to a failed or never-verified revision, the confirm dialog warns."""
        if scope != "revision" or self.detail is None:
            return ""
        table = self.query_one("#revisions", DataTable)
        if not 0 <= table.cursor_row < len(self.detail.revisions):
            return ""
        chosen = self.detail.revisions[table.cursor_row]
        return rollback_warning(chosen.number, chosen.phase, chosen.mark)

    def offers(self, action: str, scope: str) -> bool:
        if scope == "revision" and self.detail is not None:
            table = self.query_one("#revisions", DataTable)
            revisions = self.detail.revisions
            if 0 <= table.cursor_row < len(revisions) and revisions[table.cursor_row].phase in ROLLING:
                return False  # like the console: no rollback to a revision still rolling out
        return super().offers(action, scope)

    @on(DataTable.RowHighlighted, "#revisions")
    def _revision_highlighted(self, _event: DataTable.RowHighlighted) -> None:
        self.refresh_bindings()

    def action_back(self) -> None:
        self.app.pop_screen()

    def action_reload(self) -> None:
        self.app.refresh_now()  # a fresh list; the new inventory reloads this page

    def action_diff(self, against: str) -> None:
        revision = self.chosen_revision() if against == "revision" else None
        if against == "revision" and revision is None:
            self.app.notify("no revision chosen", severity="warning")
            return
        self.app.push_screen(DiffScreen(self.row, revision=revision))

    def action_yaml(self) -> None:
        self.app.push_screen(YamlScreen(self.row))

    def chosen_pod(self) -> str | None:
        """The pod under the cursor of the pods table, when that table has the focus."""
        table = self.query_one("#pods", DataTable)
        if (
            self.detail is None
            or self.focused is not table
            or not 0 <= table.cursor_row < len(self.detail.pods)
        ):
            return None
        return self.detail.pods[table.cursor_row].name

    def action_logs(self) -> None:
        """`l`: the logs of the pod under the cursor, else of the newest pod of the chosen revision."""
        pod = self.chosen_pod()
        if pod is not None:
            self.app.push_screen(LogsScreen(self.row, pod=pod))
        else:
            self.app.push_screen(LogsScreen(self.row, revision=self.chosen_revision()))

    def why_unoffered(self, action: str, parameters: tuple[object, ...]) -> str:
        if action == "revert" and parameters and parameters[0] == "revision" and self.detail is not None:
            table = self.query_one("#revisions", DataTable)
            revisions = self.detail.revisions
            if 0 <= table.cursor_row < len(revisions) and revisions[table.cursor_row].phase in ROLLING:
                chosen = revisions[table.cursor_row]
                return f"Revert to revision {chosen.number}: it is still rolling out ({chosen.phase})"
        return super().why_unoffered(action, parameters)


def journal_text(group: GroupView | None) -> str:
    """Who ran what on the group, when, with what targets, and how it ended."""
    if group is None or not group.journal:
        return "[dim]no journal: rollguard has not run on this group yet[/]"
    lines = [f"[b]journal[/] ConfigMap {group.journal}   [b]selector[/] {group.selector}"]
    if group.lock_holder:
        lines.append(f"[b]running now[/] {group.lock_holder}")
    if group.kept_dcs:  # a migrated group: its DCs at 0 are the way back, not damage
        lines.append(
            f"[b]migrated[/] to Deployments; {', '.join(f'dc/{n}' for n in group.kept_dcs)} kept at 0 replicas: "
            f"rollguard migrate -l {group.selector!r} --finish deletes them, --revert returns to them"
        )
    run = group.last_run
    if run is not None:
        lines.append(
            f"[b]last run[/] {run.run_id}  {run.command or 'rollout'} by {run.actor or '?'}  "
            f"started {run.started or '?'}  finished {run.finished or '-'}  [b]outcome[/] {run.state}"
        )
        if run.error:
            lines.append(f"[b]error[/] {run.error}")
        for key, images in sorted(run.targets.items()):
            lines.append(f"  target {key}: {images_text(images)}")
    earlier = [h for h in group.history if run is None or h.run_id != run.run_id][-4:]
    for h in reversed(earlier):
        lines.append(f"[dim]  earlier {h.run_id}  {h.command} by {h.actor}: {h.state} ({h.finished})[/]")
    return "\n".join(lines)
