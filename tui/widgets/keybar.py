"""A one-line footer of the keys that apply now: a single Static, cheap to update on every cursor move.

Textual's Footer recomposes a widget per key whenever bindings change, which costs a relayout; the
workloads table changes the offered keys at most rows, so this bar just re-renders one line of text.
"""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.widgets import Static

KEY_STYLE = "bold #ffa62b"


class KeyBar(Static):
    """Keys of the screen's active bindings (shown and enabled), in binding order."""

    DEFAULT_CSS = """
    KeyBar { dock: bottom; height: 1; background: $panel; color: $text; }
    """

    def on_mount(self) -> None:
        self.screen.bindings_updated_signal.subscribe(self, self._bindings_changed)
        self.call_after_refresh(self.show_keys)

    def on_unmount(self) -> None:
        self.screen.bindings_updated_signal.unsubscribe(self)

    def _bindings_changed(self, screen: Any) -> None:
        if screen is self.screen:
            self.call_after_refresh(self.show_keys)

    def show_keys(self) -> None:
        if not self.is_attached or not self.is_mounted:
            return  # its screen was closed before this callback ran
        text = Text(no_wrap=True, overflow="ellipsis")
        shown: set[str] = set()
        bindings = list(self.screen.active_bindings.values())
        # help and quit first: at 80 columns the end of the bar is cut, and `?` must stay in view
        bindings.sort(key=lambda a: a.binding.action not in ("help", "quit"))
        for active in bindings:
            binding = active.binding
            if not binding.show or not active.enabled or binding.action in shown:
                continue
            shown.add(binding.action)
            text.append(f" {self.app.get_key_display(binding)} ", style=KEY_STYLE)
            text.append(f"{binding.description} ")
        text.append(" ^p ", style=KEY_STYLE)
        text.append("commands")
        self.update(text)
