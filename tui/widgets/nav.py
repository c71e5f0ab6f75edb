"""Table keys as a k9s user expects them: j/k, g/G, home/end move the cursor (DataTable's own home/end
scroll sideways, which a row table never needs).

The bindings are the help screen's source for these keys, so they are listed here once.
"""

from __future__ import annotations

from typing import Any, ClassVar

from textual.binding import Binding, BindingType
from textual.widgets import DataTable

NAV_BINDINGS: list[BindingType] = [
    Binding("up,k", "cursor_up", "Up", show=False),
    Binding("down,j", "cursor_down", "Down", show=False),
    Binding("pageup", "page_up", "Page up", show=False),
    Binding("pagedown", "page_down", "Page down", show=False),
    Binding("home,g", "scroll_top", "First row", show=False),
    Binding("end,G", "scroll_bottom", "Last row", show=False),
]


class NavTable(DataTable[Any], inherit_bindings=False):
    """A row-cursor DataTable with the vi/k9s movement keys (and no sideways scrolling keys)."""

    BINDINGS: ClassVar[list[BindingType]] = NAV_BINDINGS
