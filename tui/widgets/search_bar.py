"""The `/` box of a scrolling page (logs, YAML, diff): a one-line Input, hidden until `/`.

Its page does the searching (`rollguard.tui.search`, pure); the box only holds the pattern. Kept apart
from the pages so that each page composes the same box, and styled here (no import of the app: a widget
never needs it).
"""

from __future__ import annotations

from textual.widgets import Input

SEARCH_ID = "search"


class SearchBar(Input):
    """``/PATTERN`` then Enter: the page jumps to the first match; esc closes the box."""

    DEFAULT_CSS = """
    SearchBar { dock: bottom; height: 1; border: none; padding: 0 1; margin-bottom: 1; }
    SearchBar:focus { border: none; }
    """

    def __init__(self) -> None:
        super().__init__(placeholder="/ search: text or regular expression, Enter, then n / N", id=SEARCH_ID)
        self.display = False
