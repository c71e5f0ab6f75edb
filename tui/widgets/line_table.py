"""A row-cursor table that holds no per-row structures and draws only the lines in view.

Why not DataTable: it keeps, for every row, a dict of its cells, a RowKey, a Row, two location maps
and a list of line offsets, plus caches keyed on all of them; at 10,000 workloads (20,000 lines) that
was ~50 MiB of the TUI's peak. A `LineTable` asks its subclass for a row's cells only when the row is
drawn (`row_cells`), so what it holds is what the subclass holds (for the workloads table: one small
`Line` per row).

It draws exactly what a DataTable with ``cursor_type="row"``, a one-line header, no row labels, no
fixed rows or columns and no zebra stripes draws: the same component classes and CSS, the same cell
pipeline (padding 1 on each side, the row's style, the cursor's and the hover's, the cursor's
foreground over the cell's own), each row extended to the widget's width, the same keys (`NAV_BINDINGS`)
and cursor/page/scroll arithmetic, so the screens and their snapshots do not change. Column widths are
the subclass's to decide (`set_layout`): DataTable's are the widest cell seen, which needs every
row measured, and the subclass knows which rows changed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from rich.console import RenderableType
from rich.padding import Padding
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import events
from textual._segment_tools import line_crop
from textual.binding import BindingType
from textual.cache import LRUCache
from textual.geometry import Region, Size, Spacing
from textual.message import Message
from textual.renderables.styled import Styled
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.widget import PseudoClasses

from rollguard.tui.widgets.nav import NAV_BINDINGS

HEADER = 1  # the header's height: row ``i`` is line ``HEADER + i`` of the virtual canvas
PADDING = 1  # cells each side of each column (DataTable's cell_padding)


class RowMessage(Message):
    """A message about the table's cursor row: the table it came from and the row's index."""

    def __init__(self, table: LineTable, cursor_row: int) -> None:
        super().__init__()
        self.table = table
        self.cursor_row = cursor_row

    @property
    def control(self) -> LineTable:
        return self.table


class LineTable(ScrollView, can_focus=True, inherit_bindings=False):
    """A virtual row table: subclasses give `row_count`, `row_cells` and the columns (`set_layout`)."""

    ALLOW_SELECT = False
    BINDINGS: ClassVar[list[BindingType]] = NAV_BINDINGS
    # DataTable's names, so that a theme or a stylesheet reads the same
    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "datatable--cursor", "datatable--hover", "datatable--header", "datatable--header-cursor",
        "datatable--header-hover",
    }  # fmt: skip
    # DataTable's DEFAULT_CSS, less the parts for zebra stripes and fixed rows and columns
    DEFAULT_CSS = """
    LineTable {
        background: $surface;
        color: $foreground;
        height: auto;
        max-height: 100%;
        &:focus {
            background-tint: $foreground 5%;
            & > .datatable--cursor {
                background: $block-cursor-background;
                color: $block-cursor-foreground;
                text-style: $block-cursor-text-style;
            }
            & > .datatable--header {
                background-tint: $foreground 5%;
            }
        }
        & > .datatable--header {
            text-style: bold;
            background: $panel;
            color: $foreground;
        }
        &:ansi > .datatable--header {
            background: ansi_bright_blue;
            color: ansi_default;
        }
        & > .datatable--cursor {
            background: $block-cursor-blurred-background;
            color: $block-cursor-blurred-foreground;
            text-style: $block-cursor-blurred-text-style;
        }
        & > .datatable--header-cursor {
            background: $accent-darken-1;
            color: $foreground;
        }
        & > .datatable--header-hover {
            background: $accent 30%;
        }
        & > .datatable--hover {
            background: $block-hover-background;
        }
    }
    """

    class RowHighlighted(RowMessage):
        """The cursor moved to another row (DataTable.RowHighlighted's part the screens use)."""

    class RowSelected(RowMessage):
        """Enter, or a click on the cursor's row."""

    def __init__(self, *, name: str | None = None, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self._labels: list[Text] = []
        self._widths: list[int] = []  # content widths, padding excluded
        self._cursor = 0
        self._hover = 0
        self._show_hover = False  # the mouse's row shows only while the mouse is in use
        self._generation = 0  # bumped whenever what a line shows may have changed: the cache's key
        self._lines: LRUCache[tuple[object, ...], Strip] = LRUCache(1000)
        self._styles: dict[tuple[bool, ...], tuple[Style, Style]] = {}
        self._pseudo = PseudoClasses(False, False, False)

    # -- what the subclass gives --------------------------------------------------------------------

    @property
    def row_count(self) -> int:
        raise NotImplementedError

    def row_cells(self, index: int) -> Sequence[RenderableType]:
        """The renderables of row ``index``'s shown columns, made now (nothing is kept)."""
        raise NotImplementedError

    def set_layout(self, labels: Sequence[str], widths: Sequence[int]) -> None:
        """The shown columns' labels and content widths; every line is drawn again."""
        self._labels = [Text.from_markup(label) for label in labels]
        self._widths = list(widths)
        self.rows_changed()

    def rows_changed(self) -> None:
        """The rows (their number, order or cells) changed: size the canvas again, draw again."""
        self._generation += 1
        self._lines.clear()
        self.virtual_size = Size(self._table_width(), self.row_count + HEADER)
        if self._cursor >= self.row_count:  # DataTable clamps its cursor to the rows there are
            self._cursor = max(0, self.row_count - 1)
        self.refresh()

    # -- cursor ---------------------------------------------------------------------------------------

    @property
    def cursor_row(self) -> int:
        return self._cursor

    def move_cursor(self, *, row: int | None = None, animate: bool = False, scroll: bool = True) -> None:
        """DataTable.move_cursor for a row cursor: ``scroll`` scrolls to the cursor before the move;
        the move itself scrolls the new row into view whenever the row changes."""
        if scroll:
            self._scroll_cursor_into_view(animate=animate)
        if row is not None:
            self._set_cursor(row)

    def _set_cursor(self, row: int) -> None:
        row = max(0, min(row, self.row_count - 1))
        old, self._cursor = self._cursor, row
        if old != row:
            self._refresh_row(old)
            self._refresh_row(row)
            if row < self.row_count:
                self.post_message(self.RowHighlighted(self, row))
            self._scroll_cursor_into_view()

    def _scroll_cursor_into_view(self, animate: bool = False) -> None:
        if not 0 <= self._cursor < self.row_count:
            return
        width = max(self.size.width, self._table_width())
        region = Region(int(self.scroll_x), HEADER + self._cursor, width, 1)
        self.scroll_to_region(region, animate=animate, spacing=Spacing(HEADER, 0, 0, 0), force=True)

    def _refresh_row(self, index: int) -> None:
        if not 0 <= index < self.row_count:
            return
        region = Region(0, HEADER + index, max(self.size.width, self._table_width()), 1)
        if self.window_region.overlaps(region):
            self.refresh(region.translate(-self.scroll_offset))

    def _set_hover(self, active: bool) -> None:
        self._show_hover = active
        self._refresh_row(self._hover)

    # -- keys (DataTable's actions for a row cursor) ----------------------------------------------------

    def action_cursor_up(self) -> None:
        self._set_hover(False)
        self._set_cursor(self._cursor - 1)

    def action_cursor_down(self) -> None:
        self._set_hover(False)
        self._set_cursor(self._cursor + 1)

    def action_page_down(self) -> None:
        self._set_hover(False)
        height = self.scrollable_content_region.height - HEADER
        target = min(self._cursor + height, self.row_count - 1)
        self.scroll_relative(y=height, animate=False, force=True)
        self.move_cursor(row=target, scroll=False)

    def action_page_up(self) -> None:
        self._set_hover(False)
        height = self.scrollable_content_region.height - HEADER
        self.scroll_relative(y=-height, animate=False)
        self.move_cursor(row=max(self._cursor - height, 0), scroll=False)

    def action_scroll_top(self) -> None:
        self._set_hover(False)
        self._set_cursor(0)

    def action_scroll_bottom(self) -> None:
        self._set_hover(False)
        self._set_cursor(self.row_count - 1)

    def action_select_cursor(self) -> None:
        self._set_hover(False)
        if self.row_count:
            self.post_message(self.RowSelected(self, self._cursor))

    # -- mouse ---------------------------------------------------------------------------------------

    def _on_mouse_move(self, event: events.MouseMove) -> None:
        self._set_hover(True)
        meta = event.style.meta
        if not meta:
            self._set_hover(False)
            return
        if "row" in meta:
            old, self._hover = self._hover, meta["row"]
            self._refresh_row(old)
            self._refresh_row(self._hover)

    def _on_leave(self, _event: events.Leave) -> None:
        self._set_hover(False)

    async def _on_click(self, event: events.Click) -> None:
        self._set_hover(True)
        meta = event.style.meta
        if "row" not in meta or "column" not in meta or meta["row"] < 0:
            return  # the header: DataTable posts HeaderSelected, which nothing here reads
        again = meta["row"] == self._cursor
        self._set_cursor(meta["row"])
        if again:
            self.post_message(self.RowSelected(self, self._cursor))
        self._scroll_cursor_into_view(animate=True)
        event.stop()

    # -- drawing ---------------------------------------------------------------------------------------

    def _table_width(self) -> int:
        return sum(self._widths) + 2 * PADDING * len(self._widths)

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._lines.clear()
        self._styles.clear()
        self.refresh()

    def _on_resize(self, _event: events.Resize) -> None:
        self._lines.clear()

    def render_lines(self, crop: Region) -> list[Strip]:
        self._pseudo = self.get_pseudo_class_state()
        return super().render_lines(crop)

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        width = self.size.width
        if y >= HEADER:
            y += scroll_y
        return self._render_line(y - HEADER, scroll_x, scroll_x + width, self.rich_style)

    def _render_line(self, index: int, x1: int, x2: int, base_style: Style) -> Strip:
        """Line ``index`` (-1: the header) cropped to ``x1``..``x2``, as DataTable's `_render_line`."""
        width = self.size.width
        if index >= self.row_count:
            return Strip.blank(width, base_style)
        cursor, hover = index == self._cursor, index == self._hover
        key = (index, x1, x2, width, cursor, hover, self._show_hover, base_style, self._generation,
               self._pseudo)  # fmt: skip
        if (strip := self._lines.get(key)) is not None:
            return strip
        segments = line_crop(self._row_segments(index, base_style, cursor, hover), x1, x2, width)
        strip = Strip(segments).adjust_cell_length(width, base_style).simplify()
        self._lines[key] = strip
        return strip

    def _row_segments(self, index: int, base_style: Style, cursor: bool, hover: bool) -> list[Segment]:
        header = index < 0
        row_style = self.get_component_styles("datatable--header").rich_style if header else base_style
        cells: Sequence[RenderableType] = self._labels if header else self.row_cells(index)
        cursor = cursor and not header  # the cursor is on a row, never on the header
        console = self.app.console
        segments: list[Segment] = []
        for column, (cell, content_width) in enumerate(zip(cells, self._widths, strict=True)):
            width = content_width + 2 * PADDING
            component, post = self._cell_styles(header, hover, cursor, True, False)
            options = self.app.console_options.update_dimensions(width, 1).update(no_wrap=True)
            pre = row_style + Style.from_meta({"row": index, "column": column}) + component
            styled = Styled(Padding(cell, (0, PADDING)), pre_style=pre, post_style=post)
            segments.extend(console.render_lines(styled, options)[0])
        # the row's style (the cursor's, the hover's) out to the widget's right edge
        extend, _ = self._cell_styles(header, hover, cursor, False, False)
        extend = row_style + extend + Style.from_meta({"row": index, "column": 0, "out_of_bounds": True})
        segments.append(Segment(" " * max(0, self.size.width - self._table_width()), extend))
        return segments

    def _cell_styles(
        self, header: bool, hover: bool, cursor: bool, css_foreground: bool, css_background: bool
    ) -> tuple[Style, Style]:
        """DataTable's `_get_styles_to_render_cell` for a shown cursor: (component style, post style)."""
        key = (header, hover, cursor, css_foreground, css_background, self._show_hover)
        if (known := self._styles.get(key)) is not None:
            return known
        get = self.get_component_rich_style
        component = Style()
        if hover and self._show_hover:
            component += get("datatable--hover")
            if header:
                component += get("datatable--header-hover")
        if cursor:
            component += get("datatable--cursor")
            if header:
                component += get("datatable--header-cursor")
        post_foreground = Style.from_color(color=component.color) if css_foreground else Style.null()
        post_background = Style.from_color(bgcolor=component.bgcolor) if css_background else Style.null()
        self._styles[key] = known = (component, post_foreground + post_background)
        return known


__all__ = ["HEADER", "LineTable"]
