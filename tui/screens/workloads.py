"""The main screen: every DC and Deployment in view, grouped by rollout group, live."""

from __future__ import annotations

import time
from functools import partial
from typing import TYPE_CHECKING

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import Input, Static

from rollguard.kinds import Kind, kind_of
from rollguard.tui.liveness import banner, header
from rollguard.tui.repairs import badges_by_group
from rollguard.tui.repairs import header_text as repairs_header
from rollguard.tui.screens.base import (
    ACTION_BINDINGS,
    TITLES,
    ActionsMixin,
    PaletteEntry,
    Selection,
    group_selection,
    workload_selection,
)
from rollguard.tui.screens.detail import DetailScreen
from rollguard.tui.screens.events import EventsScreen
from rollguard.tui.screens.group import GroupScreen
from rollguard.tui.screens.logs import LogsScreen
from rollguard.tui.screens.pick import ALL_NAMESPACES, ContextPicker, NamespacePicker
from rollguard.tui.screens.pods import PodsScreen
from rollguard.tui.screens.yaml import YamlScreen
from rollguard.tui.views import SORT_KEYS, Inventory
from rollguard.tui.widgets.keybar import KeyBar
from rollguard.tui.widgets.workload_table import WIDE, GroupCells, WorkloadTable, build_lines, visible_columns

if TYPE_CHECKING:
    from rollguard.tui.app import RollguardApp


def escape(text: str) -> str:
    """``text`` shown as it is in Textual markup (typed text: a filter can hold any `[`, `=`, `"`)."""
    return text.replace("[", "\\[")


COMMAND_HINT = ":ns NAME  :ns all  :ctx NAME  :pods  :events  :dc  :deploy  :all  (esc: back)"


def _kind_named(word: str) -> Kind | None:
    """The kind a `:` word names (``dc``, ``deploy``, ``deployments`` ...: `kind_of`'s aliases), if any."""
    try:
        return kind_of(word)
    except KeyError:
        return None


class WorkloadsScreen(ActionsMixin, Screen[None]):
    """Rollout groups and their workloads; the keys in the footer follow the selected row."""

    app: RollguardApp
    BINDINGS = [
        Binding("d", "details", "Describe"),
        Binding("y", "yaml", "YAML", show=False),
        Binding("l", "logs", "Logs"),
        Binding("space", "fold", "Fold group", show=False),
        Binding("slash", "filter", "Filter"),
        Binding("colon", "command", "Jump (:ns NAME, :ctx NAME, :pods, :events, :dc, :deploy)", show=False),
        Binding("escape", "clear_filter", "Clear filter", show=False),
        Binding("s", "sort", "Sort", show=False),
        Binding("S", "reverse_sort", "Reverse sort", show=False),
        Binding("n", "namespace", "Namespace", show=False),
        Binding("c", "context", "Context", show=False),
        Binding("ctrl+r", "reload", "Reload", show=False),
        Binding("b", "repairs", "Repair in background"),
        *ACTION_BINDINGS,
    ]
    # keys that open a text box: the keys typed right after them go there (`rollguard.tui.keysink`)
    TYPING_KEYS = {"slash": "filter", "colon": "command", "n": "typed", "c": "typed"}

    def __init__(self) -> None:
        super().__init__()
        self.text_filter = ""
        self.sort = "name"
        self.reverse = False
        self._offered: tuple[bool, ...] = ()
        self.folded: set[str] = set()
        self._shown_status = ("", "")
        self.findings_room = 0  # columns the findings take at < WIDE (see `redraw`)
        self._drawn_short: bool | None = None  # whether the last redraw used the short finding words
        self.only: Kind | None = None  # `:dc`, `:deploy`: the rows of that kind alone (`:all` again)

    def compose(self) -> ComposeResult:
        yield Static("connecting…", id="status")
        yield Static("", id="banner")
        yield Input(placeholder="filter: words in name, kind, group, finding or image", id="filter")
        yield Input(placeholder=COMMAND_HINT, id="command")
        yield WorkloadTable(id="workloads")
        yield Static("", id="reason")
        yield KeyBar()

    def on_mount(self) -> None:
        for box in self.query(Input):
            box.display = False
            if self.app.static:
                box.cursor_blink = False
        self.query_one(WorkloadTable).focus()
        self.query_one("#banner", Static).display = False
        self.set_interval(1.0, self._tick)
        self.redraw()  # an inventory that arrived before the table was mounted

    def on_resize(self, _event: object) -> None:
        """80 columns first: drop columns by priority and use the short finding words."""
        self.table.set_columns(visible_columns(self.size.width))
        self.redraw()

    def _tick(self) -> None:
        """Once a second: the data's freshness (a hung server shows within seconds, an age keeps
        counting), and a running repair's elapsed time."""
        if self.app.running_repairs():
            self.redraw()  # the badge's elapsed time (only the changed cells are repainted)
        elif self.app.live_enabled:
            self.update_status()

    def repairs_changed(self) -> None:
        self.redraw()
        self.refresh_bindings()

    @property
    def table(self) -> WorkloadTable:
        return self.query_one(WorkloadTable)

    # -- data ----------------------------------------------------------------------------------------

    def inventory_changed(self, inventory: Inventory, *, live: bool) -> None:
        self.redraw()

    def connection_changed(self) -> None:
        self.update_status()

    def liveness_changed(self) -> None:
        self.update_status()

    def inventory_cleared(self) -> None:
        """Another context or namespace: no rows until it answers (never the old cluster's)."""
        if not self.query(WorkloadTable):
            return
        self.table.show([])
        self.update_status()
        self.update_reason()

    def redraw(self) -> None:
        if not self.query(WorkloadTable):
            return  # not composed yet (a first partial inventory can come that early): on_mount draws it
        inventory = self.app.inventory
        if inventory is None:
            self.update_status()
            return
        narrow = self.size.width < WIDE
        build = partial(
            build_lines,
            inventory,
            text_filter=self.text_filter,
            sort=self.sort,
            reverse=self.reverse,
            now=self.app.clock(),
            show_namespace=self.app.backend.all_namespaces,
            folded=frozenset(self.folded),
            short=narrow,
            repairs=badges_by_group(self.app.repairs, time.monotonic()),
            only=self.only,
        )
        lines = build(previous=self.table.by_key, room=self.findings_room if narrow else 0)
        started = time.perf_counter()
        # short words <-> long ones (a resize across WIDE): the same rows, other widths, so measure again
        refit = self._drawn_short is not None and self._drawn_short != narrow
        self._drawn_short = narrow
        self.table.show(lines, refit=refit)
        if narrow:  # every finding in its short form, or +N: the findings fit beside the other columns
            room = self.table.findings_room(self.size.width)
            if room != self.findings_room:
                self.findings_room = room
                self.table.show(build(previous=self.table.by_key, room=room), refit=True)
        self.app.timings.setdefault("first_table_s", time.perf_counter() - started)
        self.update_status()
        self.update_reason()
        self.bindings_changed()

    def update_status(self) -> None:
        backend = self.app.backend
        inv = self.app.inventory
        where = "all namespaces" if backend.all_namespaces else (backend.namespace or "…")
        now = time.monotonic()
        # context and liveness first: what an 80-column terminal must never cut off
        parts = [f"[b]{backend.context_name or '(in-cluster)'}[/]"]
        if self.app.live_enabled:
            parts.append(header(self.app.freshness(), now))
        parts.append(f"[b]ns[/] {where}")
        if backend.options.selector:
            parts.append(f"[b]selector[/] {escape(backend.options.selector)}")
        if inv is not None:
            # the workloads the filter matches, those in folded groups included (a header counts its own)
            shown = sum(ln.cells.members for ln in self.table.lines if isinstance(ln.cells, GroupCells))
            filtered = self.text_filter or self.only is not None
            parts.append(f"{shown}/{len(inv.rows)} workloads" if filtered else f"{len(inv.rows)} workloads")
        if self.only is not None:
            parts.append(f"{self.only.noun}s only")
        parts.append(f"sort {self.sort}{' ↑' if self.reverse else ''}")
        if self.text_filter:
            parts.append(f"filter “{escape(self.text_filter)}”")  # typed text is not markup
        if self.app.read_only:
            parts.insert(1, "[reverse] read-only [/]")
        running = repairs_header(self.app.repairs, now)
        if running:  # after context and liveness: an 80-column header keeps it in view
            parts.insert(2 if self.app.live_enabled else 1, f"[b reverse magenta]{escape(running)}[/]")
        status = " · ".join(parts)
        text = banner(self.app.freshness(), now) if self.app.live_enabled else ""
        if (status, text) == self._shown_status:
            return  # the tick's usual case: nothing to repaint
        self._shown_status = (status, text)
        self.query_one("#status", Static).update(status)
        box = self.query_one("#banner", Static)
        box.update(text)
        box.display = bool(text)

    def update_reason(self) -> None:
        """The selected row's findings with their reasons, under the table."""
        line = self.table.current
        text: Text | str = ""
        if line is not None and line.row is not None:
            # one line per finding, each cut at the width: a long first reason never pushes out the third
            text = Text(no_wrap=True, overflow="ellipsis")
            for f in (f for f in line.row.findings if f.reason):
                text.append("\n" if text.plain else "")
                text.append(f.code, style="bold")
                text.append(f": {f.reason}")
        elif line is not None and self.app.inventory is not None:
            group = self.app.inventory.groups.get(line.group)
            run = group.last_run if group else None
            if run is not None:
                text = f"[b]last run[/] {run.run_id}: {run.command} {run.state} by {run.actor or '?'}"
                text += f" ({run.finished or run.started})" + (f": {run.error}" if run.error else "")
        self.query_one("#reason", Static).update(text)

    @on(WorkloadTable.RowHighlighted)
    def _highlighted(self, _event: WorkloadTable.RowHighlighted) -> None:
        self.update_reason()
        self.bindings_changed()

    def bindings_changed(self) -> None:
        """Refresh the footer only when the offered keys change: rebuilding it costs a relayout."""
        if not self.query(WorkloadTable):
            return  # not composed yet, or being taken down (a worker's message can come that late)
        line = self.table.current
        offered = (line is not None and line.row is not None, self.app.read_only,
                   *(self.offers(a, s) for a in TITLES for s in ("selection", "group")))  # fmt: skip
        if offered != self._offered:
            self._offered = offered
            self.refresh_bindings()

    @on(WorkloadTable.RowSelected)
    def _selected(self, _event: WorkloadTable.RowSelected) -> None:
        self.action_details()  # Enter: a workload's detail, or the group's page

    # -- selection -------------------------------------------------------------------------------------

    def selection(self, scope: str) -> Selection | None:
        line = self.table.current
        inventory = self.app.inventory
        if line is None or inventory is None:
            return None
        if line.row is not None and scope == "selection":
            return workload_selection(line.row)
        return group_selection(inventory.group_rows(line.group))

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("details", "fold"):
            return self.table.current is not None
        if action in ("yaml", "logs"):
            line = self.table.current
            return line is not None and line.row is not None
        if action == "clear_filter":
            return bool(self.text_filter) or any(box.display for box in self.query(Input))
        if action == "repairs":
            return bool(self.app.repairs)
        return super().check_action(action, parameters)

    def palette_commands(self) -> list[PaletteEntry]:
        general: list[PaletteEntry] = [
            ("Switch namespace", "n: pick a namespace, or all of them", self.action_namespace),
            ("Switch context", "c: pick a kubeconfig context", self.action_context),
            ("Filter", "/: show only rows matching words", self.action_filter),
            ("Sort by next column", f"s: {', '.join(SORT_KEYS)}", self.action_sort),
            ("Reload", "ctrl+r: list everything again from the API", self.action_reload),
            ("Pods", ":pods: the pods of the namespace, and their logs", lambda: self.jump("pods")),
            ("Events", ":events: the namespace's Events, newest first", lambda: self.jump("events")),
            ("Only DeploymentConfigs", ":dc (:all: every kind again)", lambda: self.jump("dc")),
            ("Only Deployments", ":deploy (:all: every kind again)", lambda: self.jump("deploy")),
        ]
        return super().palette_commands() + general

    # -- keys --------------------------------------------------------------------------------------------

    def action_details(self) -> None:
        """Describe: a workload's detail page, or a group's page (journal, lock holder, members)."""
        line = self.table.current
        if line is None:
            return
        if line.row is not None:
            self.app.push_screen(DetailScreen(line.row))
        else:
            self.app.push_screen(GroupScreen(line.group))

    def action_yaml(self) -> None:
        line = self.table.current
        if line is not None and line.row is not None:
            self.app.push_screen(YamlScreen(line.row))

    def action_logs(self) -> None:
        """`l`: the newest pod's logs of the workload under the cursor, followed."""
        line = self.table.current
        if line is not None and line.row is not None:
            self.app.push_screen(LogsScreen(line.row))

    def why_unoffered(self, action: str, parameters: tuple[object, ...]) -> str:
        if action in ("yaml", "logs"):
            what = "YAML" if action == "yaml" else "logs"
            if self.table.current is None:
                return f"{what}: nothing selected"
            return f"{what}: the cursor is on a group; choose one of its workloads"
        if action == "details" and self.table.current is None:
            return "describe: nothing selected"
        return super().why_unoffered(action, parameters)

    def action_fold(self) -> None:
        """Fold (or unfold) the group of the cursor's row; the cursor lands on the group's row."""
        line = self.table.current
        if line is None:
            return
        self.folded ^= {line.group}
        self.redraw()

    def action_command(self) -> None:
        box = self.query_one("#command", Input)
        box.display = True
        box.value = ""
        box.focus()

    @on(Input.Submitted, "#command")
    def _command_done(self, event: Input.Submitted) -> None:
        box = self.query_one("#command", Input)
        box.display = False
        self.table.focus()
        self.jump(event.value)

    def jump(self, text: str) -> None:
        """`:ns NAME`, `:ns all` (or `:ns -A`), `:ns` (the picker), `:ctx NAME`, `:ctx` (the picker);
        as k9s: `:pods` (`:pods SELECTOR`: a group's), `:events`, `:dc` / `:deploy` (the rows of one kind),
        `:all` (every kind again)."""
        words = text.strip().lstrip(":").split()
        if not words:
            return
        verb, args = words[0].lower(), words[1:]
        only = _kind_named(verb)
        if only is not None or verb in ("all", "workloads", "wl"):
            self.only = only
            self.redraw()
        elif verb in ("pods", "pod", "po"):
            self.app.push_screen(PodsScreen(selector=" ".join(args)))
        elif verb in ("events", "event", "ev"):
            self.app.push_screen(EventsScreen())
        elif verb in ("ns", "namespace", "namespaces") and not args:
            self.action_namespace()
        elif verb in ("ns", "namespace", "namespaces"):
            name = args[0]
            if name in ("all", "-A", "*"):
                self.app.load(all_namespaces=True)
            else:
                self.app.load(namespace=name)
        elif verb in ("ctx", "context", "contexts") and not args:
            self.action_context()
        elif verb in ("ctx", "context", "contexts"):
            self.app.load(context=args[0])
        else:
            self.app.notify(f"unknown command “:{escape(verb)}”: use {COMMAND_HINT}", severity="warning")

    def action_filter(self) -> None:
        box = self.query_one("#filter", Input)
        box.display = True
        box.value = self.text_filter
        box.focus()

    @on(Input.Changed, "#filter")
    def _filter_changed(self, event: Input.Changed) -> None:
        self.text_filter = event.value.strip()
        self.redraw()

    @on(Input.Submitted, "#filter")
    def _filter_done(self, _event: Input.Submitted) -> None:
        self.table.focus()
        if not self.text_filter:
            self.query_one("#filter", Input).display = False

    def action_clear_filter(self) -> None:
        command = self.query_one("#command", Input)
        if command.display:
            command.display = False
            self.table.focus()
            return
        box = self.query_one("#filter", Input)
        box.value = ""
        box.display = False
        self.text_filter = ""
        self.table.focus()
        self.redraw()

    def action_sort(self) -> None:
        self.sort = SORT_KEYS[(SORT_KEYS.index(self.sort) + 1) % len(SORT_KEYS)]
        self.redraw()

    def action_reverse_sort(self) -> None:
        self.reverse = not self.reverse
        self.redraw()

    def action_repairs(self) -> None:
        """`b`: reopen the dialog of the repair running in the background (or the one that ended)."""
        if not self.app.reopen_repair():
            self.app.notify("no repair was started from here", severity="warning")

    def action_reload(self) -> None:
        self.app.refresh_now()
        self.app.notify("reloading", timeout=2)

    def action_namespace(self) -> None:
        def chosen(value: str | None) -> None:
            if value == ALL_NAMESPACES:
                self.app.load(all_namespaces=True)
            elif value:
                self.app.load(namespace=value)

        self.app.push_screen(NamespacePicker(), chosen)

    def action_context(self) -> None:
        def chosen(value: str | None) -> None:
            if value:
                self.app.load(context=value)

        self.app.push_screen(ContextPicker(), chosen)
