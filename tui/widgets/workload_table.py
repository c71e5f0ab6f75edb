"""The workloads table: rollout groups as header rows, their workloads below, findings as badges."""

from __future__ import annotations

import datetime as dt
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import overload

from rich.cells import cell_len
from rich.console import Console, RenderableType
from rich.text import Text
from textual.binding import Binding
from textual.render import measure

from rollguard.core.structs import KIND_NAMES
from rollguard.kinds import Kind, kind_of
from rollguard.tui.views import (
    UNGROUPED,
    Finding,
    GroupView,
    Inventory,
    WorkloadRow,
    age,
    group_order,
    images_text,
    matches,
    parse_time,
    sort_rows,
)
from rollguard.tui.widgets.badges import badges
from rollguard.tui.widgets.line_table import LineTable

COLUMNS = (("workload", "Workload"), ("findings", "Findings"), ("rev", "Rev"), ("ready", "Ready"),
           ("images", "Images"), ("age", "Age"))  # fmt: skip
IMAGES_WIDTH = 44
# Columns an 80-column terminal gives up first (by priority): the images, then the age.
DROP_ORDER = ("images", "age")
WIDE = 120  # from this width on every column and the long finding words fit


def visible_columns(width: int) -> tuple[str, ...]:
    """The columns shown at ``width`` terminal columns (pure)."""
    dropped = set(DROP_ORDER[: 0 if width >= WIDE else 1 if width >= 100 else 2])
    return tuple(key for key, _label in COLUMNS if key not in dropped)


class Cell:
    """One cell, made each time the table measures or draws it, from its line's inputs.

    The table draws only the lines in view and measures a line once (`Cells.widths`): at 10,000
    workloads (20,000 lines) holding the styled text of every cell cost ~50 MiB; a Cell holds two
    references, and exists only while it is drawn, measured or compared.
    """

    __slots__ = ("column", "made")

    def __init__(self, made: Cells, column: int) -> None:
        self.made = made
        self.column = column

    @property
    def value(self) -> Text | str:
        return self.made.cell(self.column)

    def __rich__(self) -> Text:
        # what DataTable's default_cell_formatter makes of a one-line cell: markup in a str is read
        value = self.value
        if isinstance(value, Text):
            return value
        text = Text.from_markup(value, end="")
        text.no_wrap = True
        return text

    def __str__(self) -> str:
        return str(self.value)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Cell) and self.value == other.value

    __hash__ = None  # type: ignore[assignment]  # equal by value, which is made on demand


class Cells(Sequence[Cell]):
    """A line's cells: one `Cell` per column of `COLUMNS`, made on demand from the line's inputs (the
    subclass's fields, equal when those are). Lines are these objects and little more: at 20,000 lines
    a tuple of six Cells each cost ~8 MiB."""

    __slots__ = ()
    widths_memo: bytes | tuple[int, ...] | None

    def cell(self, column: int) -> Text | str:
        raise NotImplementedError

    def __len__(self) -> int:
        return len(COLUMNS)

    @overload
    def __getitem__(self, index: int) -> Cell: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[Cell, ...]: ...

    def __getitem__(self, index: int | slice) -> Cell | tuple[Cell, ...]:
        if isinstance(index, slice):
            return tuple(Cell(self, c) for c in range(len(COLUMNS))[index])
        if not -len(COLUMNS) <= index < len(COLUMNS):
            raise IndexError(index)
        return Cell(self, index % len(COLUMNS))

    def __iter__(self) -> Iterator[Cell]:
        return (Cell(self, c) for c in range(len(COLUMNS)))

    def widths(self, console: Console) -> Sequence[int]:
        """Each column's content width (as DataTable measures a cell), measured once per line's inputs:
        a refresh that keeps a line's inputs (`build_lines`' ``previous``) measures nothing again."""
        if self.widths_memo is None:
            widths = [measure(console, cell, 1) for cell in self]
            # frozen for equality and hashing; the widths are a cache of what the inputs show (in bytes
            # when they fit: 39 bytes a line instead of a tuple's 88)
            object.__setattr__(self, "widths_memo", bytes(widths) if max(widths) < 256 else tuple(widths))
        assert self.widths_memo is not None
        return self.widths_memo


@dataclass(frozen=True, slots=True)
class GroupCells(Cells):
    """What a group header's cells are made of (small values only: a kept line keeps these alive)."""

    selector: str
    namespace: str
    show_namespace: bool
    members: int  # (not `count`: a Sequence's method)
    folded: bool
    short: bool
    repair: str
    no_journal: bool
    codes: tuple[str, ...]  # the members' findings, healthy left out when there are others
    journal: str
    when: str  # the last run's age
    room: int  # columns the findings may take (0: no limit); the rest are counted as +N
    widths_memo: bytes | tuple[int, ...] | None = field(default=None, compare=False, repr=False)

    def cell(self, column: int) -> Text | str:
        if column == 0:
            return group_label(
                self.selector, self.namespace, self.show_namespace, self.members, folded=self.folded,
                short=self.short, repair=self.repair, no_journal=self.no_journal,
            )  # fmt: skip
        if column == 1:
            return badges((Finding(c) for c in self.codes), short=self.short, room=self.room)
        if column == 4:
            return Text(self.journal, style="italic")
        return self.when if column == 5 else ""


@dataclass(frozen=True, slots=True)
class RowCells(Cells):
    """What a workload line's cells are made of."""

    kind: str
    name: str
    codes: tuple[str, ...]
    revision: int
    ready: int
    desired: int
    images: Mapping[str, str]  # the row's own mapping (its text is made when drawn: nothing more held)
    age: str
    short: bool
    room: int  # as GroupCells.room
    widths_memo: bytes | tuple[int, ...] | None = field(default=None, compare=False, repr=False)

    def cell(self, column: int) -> Text | str:
        if column == 0:
            name = Text("  ")
            names = KIND_NAMES.get(self.kind)
            name.append(f"{names.short if names else self.kind}/", style="dim")
            name.append(self.name)
            return name
        if column == 1:
            return badges((Finding(c) for c in self.codes), short=self.short, room=self.room)
        if column == 3:
            return Text(
                f"{self.ready}/{self.desired}", style="" if self.ready >= self.desired else "bold red"
            )
        if column == 4:
            return _truncate(images_text(self.images), IMAGES_WIDTH)
        return str(self.revision) if column == 2 else self.age


@dataclass(frozen=True, slots=True)
class Line:
    """One table line: a group header or a workload, with its cells."""

    key: str
    cells: GroupCells | RowCells  # what they are made of: `build_lines` keeps them while these stay equal
    group: str  # group key
    row: WorkloadRow | None = None  # None for a group header

    @property
    def made(self) -> GroupCells | RowCells:
        return self.cells


def _truncate(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def group_label(
    selector: str,
    namespace: str,
    show_ns: bool,
    count: int,
    *,
    folded: bool = False,
    short: bool = False,
    repair: str = "",
    no_journal: bool = False,
) -> Text:
    label = Text("▸ " if folded else "▾ ", style="bold")
    label.append(selector or "(no rollout group)", style="bold")
    label.append(f" ({count})", style="dim")
    if repair:  # a repair from this TUI runs on the group: always in view, in the first column
        label.append(f" {repair}", style="bold reverse magenta")
    if show_ns:
        label.append(f"  {namespace}", style="dim")
    if no_journal and selector and not short:
        label.append("  (no journal)", style="dim italic")
    return label


def journal_text(group: GroupView | None) -> str:
    if group is None or group.last_run is None:
        return ""
    run = group.last_run
    who = f" by {run.actor}" if run.actor else ""
    text = f"last run: {run.command or 'run'} {run.state}{who}"
    if group.lock_holder:
        text = f"running now: {group.lock_holder}"
    return _truncate(text, IMAGES_WIDTH)


def build_lines(
    inventory: Inventory,
    *,
    text_filter: str,
    sort: str,
    reverse: bool,
    now: dt.datetime,
    show_namespace: bool,
    folded: frozenset[str] = frozenset(),
    short: bool = False,
    repairs: Mapping[str, str] | None = None,
    previous: Mapping[str, Line] | None = None,
    room: int = 0,
    only: Kind | None = None,
) -> list[Line]:
    """The table's content, in order (pure: tested without a screen); a folded group shows its header only.

    ``previous`` (the lines on screen, by key): a line whose cells would come out of the same inputs
    keeps its cells, the very objects the table already holds. At 10,000 workloads a refresh then
    builds only the lines that changed, instead of 20,000 lines of styled text (a second copy of
    everything on screen, and about a second of the UI thread's time). ``only``: the rows of that kind
    alone (`:dc`, `:deploy`)."""
    rows = [
        r
        for r in inventory.rows
        if (not text_filter or matches(r, text_filter)) and (only is None or kind_of(r.kind) is only)
    ]
    lines: list[Line] = []
    by_group: dict[str, list[WorkloadRow]] = {}
    before = previous or {}
    for row in rows:
        by_group.setdefault(row.group_key, []).append(row)
    for key in group_order(inventory, rows, sort):
        members = sort_rows(by_group[key], sort, reverse=reverse)
        group = inventory.groups.get(key)
        first = members[0]
        union = {f.code: f for r in members for f in r.findings}
        if len(union) > 1:
            union.pop("healthy", None)
        last = group.last_run if group else None
        when = parse_time(last.finished or last.started) if last else None
        made = GroupCells(
            selector=first.group, namespace=first.namespace, show_namespace=show_namespace, members=len(members),
            folded=key in folded, short=short, repair=(repairs or {}).get(key, ""),
            no_journal=group is not None and not group.journal, codes=_codes(tuple(union)), journal=journal_text(group),
            when=sys.intern(age(when, now)) if when else "", room=room,
        )  # fmt: skip
        lines.append(_reuse(before.get(key), made, None) or Line(key=key, group=key, cells=made))
        for row in members if key not in folded else ():
            cells = RowCells(
                kind=row.kind, name=row.name, codes=_codes(tuple(f.code for f in row.findings)), revision=row.revision,
                ready=row.ready, desired=row.desired, images=row.images,
                age=sys.intern(age(row.created, now)), short=short, room=room,
            )  # fmt: skip
            line = _reuse(before.get(row.key), cells, row)
            lines.append(line or Line(key=row.key, group=key, row=row, cells=cells))
    return lines


_CODES: dict[tuple[str, ...], tuple[str, ...]] = {}


def _codes(codes: tuple[str, ...]) -> tuple[str, ...]:
    """One tuple per combination of finding codes (a few in any cluster) instead of one per line."""
    if len(_CODES) > 1000:  # codes come from a fixed list; a bound all the same
        _CODES.clear()
    return _CODES.setdefault(codes, codes)


def _reuse(line: Line | None, made: GroupCells | RowCells, row: WorkloadRow | None) -> Line | None:
    """``line`` with ``row`` (the current one) if its cells were made of the same inputs, else None."""
    if line is None or line.made != made:
        return None
    return Line(key=line.key, cells=line.cells, group=line.group, row=row)


class WorkloadTable(LineTable):
    """The workloads table: keeps its cursor on the same workload (or group) across refreshes.

    It holds the `Line`s and nothing per row besides (`LineTable` draws the lines in view from them).
    Column widths follow DataTable's, which this table replaced without a visible change: the widest
    cell seen since the columns were last set (a refresh with other lines only widens a column; one of
    the same lines in the same order, cells changed in place, leaves the widths as they are).
    """

    DEFAULT_CSS = """
    WorkloadTable { height: 1fr; }
    """
    # Enter opens a workload's detail or a group's page, so the footer says so
    BINDINGS = [Binding("enter", "select_cursor", "Open")]

    def __init__(self, *, name: str | None = None, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self.lines: list[Line] = []
        self._by_key: dict[str, Line] = {}
        self.columns_shown: tuple[str, ...] = tuple(key for key, _label in COLUMNS)
        self._shown = tuple(range(len(COLUMNS)))  # indexes in COLUMNS of the shown columns
        self._width = {c: cell_len(label) for c, (_key, label) in enumerate(COLUMNS)}  # by index in COLUMNS

    def on_mount(self) -> None:
        self._layout()

    def _layout(self) -> None:
        self.set_layout([COLUMNS[c][1] for c in self._shown], [self._width[c] for c in self._shown])

    def _widest(self, column: int) -> int:
        """Column ``column``'s widest cell on the lines, its label included."""
        console = self.app.console
        return max([cell_len(COLUMNS[column][1]), *(ln.cells.widths(console)[column] for ln in self.lines)])

    def set_columns(self, keys: tuple[str, ...]) -> None:
        """Show only ``keys`` (in `COLUMNS` order), each as wide as its widest cell."""
        if keys == self.columns_shown:
            return
        self.columns_shown = keys
        self._shown = tuple(c for c, (key, _label) in enumerate(COLUMNS) if key in keys)
        self._width = {c: self._widest(c) for c in range(len(COLUMNS))}
        self._layout()

    @property
    def row_count(self) -> int:
        return len(self.lines)

    def row_cells(self, index: int) -> Sequence[RenderableType]:
        return self.get_row_at(index)

    def get_row_at(self, index: int) -> list[Cell]:
        """The shown cells of line ``index`` (as DataTable.get_row_at)."""
        cells = self.lines[index].cells
        return [cells[c] for c in self._shown]

    @property
    def by_key(self) -> Mapping[str, Line]:
        """The lines shown, by key (`build_lines`'s ``previous``)."""
        return self._by_key

    @property
    def current(self) -> Line | None:
        if not self.lines or not 0 <= self.cursor_row < len(self.lines):
            return None
        return self.lines[self.cursor_row]

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "select_cursor":
            return self.current is not None
        return True

    def findings_room(self, width: int) -> int:
        """The columns the findings may take in a ``width``-column terminal beside the other shown
        columns (each with its padding of 2), at least a badge and a `+N`."""
        others = sum(self._width[c] + 2 for c in self._shown if COLUMNS[c][0] != "findings")
        return max(width - others - 2 - 2, 12)  # its own padding, and the vertical scrollbar

    def show(self, lines: Sequence[Line], *, refit: bool = False) -> None:
        """Replace the content; the cursor stays on its row's key (or its position if it went away).

        ``refit``: measure every column again (the findings were fitted into less room)."""
        old, current = self.lines, self.current
        new_keys = [ln.key for ln in lines]
        self.lines = list(lines)
        self._by_key = {ln.key: ln for ln in lines}
        console = self.app.console
        if refit:
            self._width = {c: self._widest(c) for c in range(len(COLUMNS))}
            self._layout()
            return
        if [ln.key for ln in old] == new_keys:
            # Same rows in the same order: cursor, scroll and column widths untouched (DataTable's
            # update_cell: a cell that grew is cut at its column's width until the rows change).
            self.rows_changed()
            return
        for ln in lines:
            widths = ln.cells.widths(console)
            for c in self._width:
                self._width[c] = max(self._width[c], widths[c])
        index, scroll_y = self.cursor_row, self.scroll_y
        self._layout()
        if current is not None and current.key in self._by_key:
            index = new_keys.index(current.key)
        elif current is not None and current.row is not None and current.group in self._by_key:
            index = new_keys.index(current.group)  # the workload went away: stay in its group
        index = max(0, min(index, len(lines) - 1))
        self.move_cursor(row=index, scroll=False)
        self.call_after_refresh(self._restore_scroll, scroll_y)

    def _restore_scroll(self, scroll_y: float) -> None:
        # after the refresh the canvas has its new height; the cursor may have moved meanwhile
        self.scroll_to(y=scroll_y, animate=False, immediate=True)
        self.move_cursor(row=self.cursor_row, scroll=True)


__all__ = ["UNGROUPED", "Line", "WorkloadTable", "build_lines"]
