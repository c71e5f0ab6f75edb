"""`y`: the selected workload as YAML, as the API holds it now (k9s' `y`); `/` searches it, n / N."""

from __future__ import annotations

from rich.syntax import Syntax
from rich.text import Text
from textual import work

from rollguard.tui.errors import describe_error
from rollguard.tui.screens.scroll import ScrollPage
from rollguard.tui.search import MATCH_STYLE, spans
from rollguard.tui.views import WorkloadRow


class YamlScreen(ScrollPage):
    """Read-only: one GET in a worker, shown with syntax colours; j/k scroll."""

    def __init__(self, row: WorkloadRow) -> None:
        super().__init__()
        self.row = row
        self.text = ""

    def heading(self) -> Text:
        return Text.assemble((self.row.ref, "bold"), f" in {self.row.namespace}  ·  YAML")

    @work(thread=True, exclusive=True, group="yaml", exit_on_error=False)
    def load(self) -> None:
        try:
            text = self.app.backend.yaml(self.row)
        except Exception as exc:
            text = f"# could not read {self.row.ref}: {describe_error(exc)}"
        self.app.call_from_thread(self._show, text)

    def _show(self, text: str) -> None:
        self.text = text
        self.highlight()

    def search_lines(self) -> list[str]:
        return self.text.splitlines()

    def highlight(self) -> None:
        """The YAML with its colours, and the matches of the search marked over them."""
        syntax = Syntax(self.text, "yaml", theme="ansi_dark", word_wrap=True)
        if self.pattern:
            for number, line in enumerate(self.search_lines(), start=1):
                for start, end in spans(line, self.pattern):
                    syntax.stylize_range(MATCH_STYLE, (number, start), (number, end))
        self.show(syntax)
