"""`=`: the live pod template against the group's verified one (journal) or the chosen revision.

A unified diff of the whole template's YAML with colours, read in a worker (one GET per object), so
"drifted" can be judged before reverting. The diff itself is computed in the pure `rollguard.tui.diff`.
"""

from __future__ import annotations

from rich.text import Text
from textual import work

from rollguard.tui.diff import TemplateDiff
from rollguard.tui.errors import describe_error
from rollguard.tui.screens.scroll import ScrollPage
from rollguard.tui.search import marked
from rollguard.tui.views import WorkloadRow

STYLES = {"add": "green", "remove": "red", "hunk": "cyan", "header": "bold", "": ""}


def diff_text(diff: TemplateDiff, *, pattern: str = "") -> Text:
    if diff.missing:
        return Text(f"nothing to compare the live template with: {diff.left}", style="yellow")
    if diff.same:
        return Text(f"no difference: the live template equals {diff.left}", style="green")
    text = Text(no_wrap=True, overflow="ellipsis")  # wrapping would strip the indentation YAML needs
    for line in diff.lines:
        text.append_text(marked(Text(line.text + "\n", style=STYLES[line.style]), pattern))
    return text


class DiffScreen(ScrollPage):
    """Read-only; j/k scroll like the YAML page."""

    def __init__(self, row: WorkloadRow, *, revision: int | None = None) -> None:
        super().__init__()
        self.row = row
        self.revision = revision
        self.diff: TemplateDiff | None = None

    def heading(self) -> Text:
        against = f"revision {self.revision}" if self.revision is not None else "verified template"
        return Text.assemble((self.row.ref, "bold"), f" in {self.row.namespace}  ·  live vs {against}")

    @work(thread=True, exclusive=True, group="diff", exit_on_error=False)
    def load(self) -> None:
        try:
            diff = self.app.backend.template_diff(self.row, revision=self.revision)
        except Exception as exc:
            self.app.call_from_thread(self._fail, describe_error(exc))
            return
        self.app.call_from_thread(self._show, diff)

    def _fail(self, why: str) -> None:
        self.show(Text(f"could not read {self.row.ref}: {why}", style="red"))

    def _show(self, diff: TemplateDiff) -> None:
        self.diff = diff
        self.show(diff_text(diff))

    def search_lines(self) -> list[str]:
        return [line.text for line in self.diff.lines] if self.diff is not None else []

    def highlight(self) -> None:
        if self.diff is not None:
            self.show(diff_text(self.diff, pattern=self.pattern))

    def scroll_to_line(self, index: int) -> None:
        self.query_one("#page-box").scroll_to(y=index, animate=False)  # not wrapped: one row a line
