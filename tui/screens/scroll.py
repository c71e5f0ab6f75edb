"""A read-only page that scrolls: a title line, one body, the key bar; j/k/g/G and esc as everywhere.

The YAML, template diff and logs pages are this page with their own title and body. Each reads its
body in a thread worker (`load`, never on the UI thread) and shows it with `show`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from rich.console import RenderableType
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Static

from rollguard.tui.widgets.keybar import KeyBar

if TYPE_CHECKING:
    from rollguard.tui.app import RollguardApp

SCROLL_BINDINGS: list[BindingType] = [
    Binding("escape,backspace", "back", "Back"),
    Binding("down,j", "scroll('down')", "Scroll down", show=False),
    Binding("up,k", "scroll('up')", "Scroll up", show=False),
    Binding("home,g", "scroll('home')", "Top", show=False),
    Binding("end,G", "scroll('end')", "Bottom", show=False),
]


class ScrollPage(Screen[None]):
    """Subclasses give `heading()` and start their worker in `load()`; the body starts as "reading…"."""

    app: RollguardApp
    BINDINGS: ClassVar[list[BindingType]] = SCROLL_BINDINGS

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
        self.app.pop_screen()
