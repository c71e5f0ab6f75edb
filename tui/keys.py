"""The app's own key bindings, apart from the app so that the help screen lists them without importing it.

Each screen keeps its bindings on its class (`BINDINGS`); the help screen reads them all from there.
"""

from __future__ import annotations

from textual.binding import Binding, BindingType

APP_BINDINGS: list[BindingType] = [
    Binding("q", "quit", "Quit"),
    # as in k9s (Textual's own ctrl+c only says "press ctrl+q"); asks only while a repair runs
    Binding("ctrl+c", "quit", "Quit", show=False, priority=True),
    Binding("question_mark", "help", "Help"),
    Binding("ctrl+p", "command_palette", "Command palette: every action by name", show=False),
]
