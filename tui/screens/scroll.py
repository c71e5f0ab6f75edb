"""A read-only page that scrolls: a title line, one body, the key bar; j/k/g/G and esc as everywhere.

The YAML, template diff and logs pages are this page with their own title and body. Each reads its
body in a thread worker (`load`, never on the UI thread) and shows it with `show`.

Search as in k9s and less (issue 30 point 6): `/` opens the search box (the keys typed right after it go
there: ``TYPING_KEYS``), Enter jumps to the first match, `n` the next, `N` the one before, wrapping
round the ends; the title says which match of how many. What matches is `rollguard.tui.search`'s (pure);
a page gives its lines (`search_lines`) and shows the matches (`highlight`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from rich.console import RenderableType
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Input, Static

from rollguard.tui.search import Matches, find, wrapped_offset
from rollguard.tui.widgets.keybar import KeyBar
from rollguard.tui.widgets.search_bar import SEARCH_ID, SearchBar

if TYPE_CHECKING:
    from rollguard.tui.app import RollguardApp

SCROLL_BINDINGS: list[BindingType] = [
    Binding("escape,backspace", "back", "Back"),
    Binding("down,j", "scroll('down')", "Scroll down", show=False),
    Binding("up,k", "scroll('up')", "Scroll up", show=False),
    Binding("home,g", "scroll('home')", "Top", show=False),
    Binding("end,G", "scroll('end')", "Bottom", show=False),
    Binding("slash", "search", "Search"),
    Binding("n", "search_step", "Next match", show=False),
    Binding("N", "search_step('back')", "Previous match", show=False),
]


class ScrollPage(Screen[None]):
    """Subclasses give `heading()` and start their worker in `load()`; the body starts as "reading…"."""

    app: RollguardApp
    BINDINGS: ClassVar[list[BindingType]] = SCROLL_BINDINGS
    TYPING_KEYS: ClassVar[dict[str, str]] = {"slash": SEARCH_ID}  # `rollguard.tui.keysink`
    pattern = ""  # the last search
    matches = Matches("")
    match_line: int | None = None  # the line of the match shown

    def heading(self) -> RenderableType:
        raise NotImplementedError

    def load(self) -> object:
        """Start reading the body (a `@work(thread=True)` method: it returns its Worker)."""
        raise NotImplementedError

    def body(self) -> Widget:
        """The scrolling part, id ``page-box``: one Static (id ``page``) unless a page appends lines."""
        return VerticalScroll(Static("reading…", id="page"), id="page-box")

    def compose(self) -> ComposeResult:
        yield Static(self.heading(), id="status")
        yield self.body()
        yield SearchBar()
        yield KeyBar()

    def on_mount(self) -> None:
        self.query_one("#page-box").focus()
        self.load()

    def show(self, body: RenderableType) -> None:
        self.query_one("#page", Static).update(body)

    def action_scroll(self, where: str) -> None:
        box = self.query_one("#page-box", Widget)
        {"down": box.scroll_down, "up": box.scroll_up, "home": box.scroll_home, "end": box.scroll_end}[where](
            animate=False
        )

    def action_back(self) -> None:
        bar = self.query_one(SearchBar)
        if bar.display:  # esc in the search box closes the box, not the page
            bar.display = False
            self.query_one("#page-box").focus()
            return
        self.app.pop_screen()

    # -- search ------------------------------------------------------------------------------------------

    def search_lines(self) -> list[str]:
        """The page's lines as shown (before wrapping), for the search."""
        return []

    def highlight(self) -> None:
        """Show the page again with the matches of `pattern` marked (a page that can: YAML, logs)."""

    def scroll_to_line(self, index: int) -> None:
        """Scroll so that line ``index`` is at the top (lines wrap at the page's width)."""
        box = self.query_one("#page-box", Widget)
        offset = wrapped_offset(self.search_lines(), index, box.scrollable_content_region.width)
        box.scroll_to(y=offset, animate=False)

    def show_heading(self) -> None:
        """The title, and where the search stands (``/pattern 2/5``)."""
        heading = self.heading()
        if self.pattern and isinstance(heading, str | Text):
            where = self.matches.position(self.match_line) if self.matches.lines else "no match"
            heading = Text.assemble(heading, "  ·  ", (f"/{self.pattern} {where}", "bold"))
        self.query_one("#status", Static).update(heading)

    def action_search(self) -> None:
        bar = self.query_one(SearchBar)
        bar.display = True
        bar.value = self.pattern
        bar.focus()

    @on(Input.Submitted, f"#{SEARCH_ID}")
    def _searched(self, event: Input.Submitted) -> None:
        event.stop()
        bar = self.query_one(SearchBar)
        bar.display = False
        self.query_one("#page-box").focus()
        self.pattern, self.match_line = event.value, None
        self.matches = find(self.search_lines(), self.pattern)
        self.highlight()
        if self.pattern:
            self._step(backwards=False)
        else:
            self.show_heading()

    def action_search_step(self, direction: str = "next") -> None:
        """`n` / `N`: the next match (the one before), wrapping round the ends as less does."""
        if not self.pattern:
            self.notify("no search yet: / then a pattern", timeout=3)
            return
        found = find(self.search_lines(), self.pattern)  # a followed log has grown since
        if found != self.matches:
            self.matches = found
            self.highlight()
        self._step(backwards=direction == "back")

    def _step(self, *, backwards: bool) -> None:
        line, wrapped = self.matches.step(self.match_line, backwards=backwards)
        if line is None:
            self.notify(f"pattern not found: {self.pattern}", severity="warning", timeout=3)
        else:
            self.match_line = line
            self.scroll_to_line(line)
            if wrapped:
                self.notify(
                    "search hit the "
                    + ("top, went on from the bottom" if backwards else "bottom, went on from the top"),
                    timeout=2,
                )
        self.show_heading()
