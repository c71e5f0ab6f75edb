"""`=`: the live pod template against the group's verified one (journal) or the chosen revision.

A unified diff of the whole template's YAML with colours, read in a worker (one GET per object), so
"drifted" can be judged before reverting. The diff itself is computed in the pure `rollguard.tui.diff`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Static

from rollguard.tui.diff import TemplateDiff
from rollguard.tui.errors import describe_error
from rollguard.tui.views import WorkloadRow
from rollguard.tui.widgets.keybar import KeyBar

if TYPE_CHECKING:
    from rollguard.tui.app import RollguardApp

STYLES = {"add": "green", "remove": "red", "hunk": "cyan", "header": "bold", "": ""}


def diff_text(diff: TemplateDiff) -> Text:
    if diff.missing:
        return Text(f"nothing to compare the live template with: {diff.left}", style="yellow")
    if diff.same:
        return Text(f"no difference: the live template equals {diff.left}", style="green")
    text = Text(no_wrap=True, overflow="ellipsis")  # wrapping would strip the indentation YAML needs
    for line in diff.lines:
        text.append(line.text + "\n", style=STYLES[line.style])
    return text


class DiffScreen(Screen[None]):
    """Read-only; j/k scroll like the YAML page."""

    app: RollguardApp
    BINDINGS = [
        Binding("escape,backspace", "back", "Back"),
        Binding("down,j", "scroll('down')", "Scroll down", show=False),
        Binding("up,k", "scroll('up')", "Scroll up", show=False),
        Binding("home,g", "scroll('home')", "Top", show=False),
        Binding("end,G", "scroll('end')", "Bottom", show=False),
    ]

    def __init__(self, row: WorkloadRow, *, revision: int | None = None) -> None:
        super().__init__()
        self.row = row
        self.revision = revision
        self.diff: TemplateDiff | None = None

    def compose(self) -> ComposeResult:
        against = f"revision {self.revision}" if self.revision is not None else "verified template"
        yield Static(
            Text.assemble((self.row.ref, "bold"), f" in {self.row.namespace}  ·  live vs {against}"),
            id="status",
        )
        with VerticalScroll(id="diff-box"):
            yield Static("reading…", id="diff")
        yield KeyBar()

    def on_mount(self) -> None:
        self.query_one("#diff-box").focus()
        self._load()

    @work(thread=True, exclusive=True, group="diff", exit_on_error=False)
    def _load(self) -> None:
        try:
            diff = self.app.backend.template_diff(self.row, revision=self.revision)
        except Exception as exc:
            self.app.call_from_thread(self._fail, describe_error(exc))
            return
        self.app.call_from_thread(self._show, diff)

    def _fail(self, why: str) -> None:
        self.query_one("#diff", Static).update(Text(f"could not read {self.row.ref}: {why}", style="red"))

    def _show(self, diff: TemplateDiff) -> None:
        self.diff = diff
        self.query_one("#diff", Static).update(diff_text(diff))

    def action_scroll(self, where: str) -> None:
        box = self.query_one("#diff-box", VerticalScroll)
        {"down": box.scroll_down, "up": box.scroll_up, "home": box.scroll_home, "end": box.scroll_end}[where](
            animate=False
        )

    def action_back(self) -> None:
        self.app.pop_screen()
