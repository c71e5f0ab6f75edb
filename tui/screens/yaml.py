"""`y`: the selected workload as YAML, as the API holds it now (k9s' `y`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.syntax import Syntax
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Static

from rollguard.tui.errors import describe_error
from rollguard.tui.views import WorkloadRow
from rollguard.tui.widgets.keybar import KeyBar

if TYPE_CHECKING:
    from rollguard.tui.app import RollguardApp


class YamlScreen(Screen[None]):
    """Read-only: one GET in a worker, shown with syntax colours; j/k scroll."""

    app: RollguardApp
    BINDINGS = [
        Binding("escape,backspace", "back", "Back"),
        Binding("down,j", "scroll('down')", "Scroll down", show=False),
        Binding("up,k", "scroll('up')", "Scroll up", show=False),
        Binding("home,g", "scroll('home')", "Top", show=False),
        Binding("end,G", "scroll('end')", "Bottom", show=False),
    ]

    def __init__(self, row: WorkloadRow) -> None:
        super().__init__()
        self.row = row
        self.text = ""

    def compose(self) -> ComposeResult:
        yield Static(f"[b]{self.row.ref}[/] in {self.row.namespace}  ·  YAML", id="status")
        with VerticalScroll(id="yaml-box"):
            yield Static("reading…", id="yaml")
        yield KeyBar()

    def on_mount(self) -> None:
        self.query_one("#yaml-box").focus()
        self._load()

    @work(thread=True, exclusive=True, group="yaml", exit_on_error=False)
    def _load(self) -> None:
        try:
            text = self.app.backend.yaml(self.row)
        except Exception as exc:
            text = f"# could not read {self.row.ref}: {describe_error(exc)}"
        self.app.call_from_thread(self._show, text)

    def _show(self, text: str) -> None:
        self.text = text
        self.query_one("#yaml", Static).update(Syntax(text, "yaml", theme="ansi_dark", word_wrap=True))

    def action_scroll(self, where: str) -> None:
        box = self.query_one("#yaml-box", VerticalScroll)
        {"down": box.scroll_down, "up": box.scroll_up, "home": box.scroll_home, "end": box.scroll_end}[where](
            animate=False
        )

    def action_back(self) -> None:
        self.app.pop_screen()
