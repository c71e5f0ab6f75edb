"""Pickers for the namespace and the kubeconfig context (read in a worker, chosen from a list)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.widgets import Input, Label, OptionList
from textual.widgets.option_list import Option

from rollguard.tui.errors import describe_error
from rollguard.tui.screens.base import Dialog

if TYPE_CHECKING:
    from rollguard.tui.app import RollguardApp

ALL_NAMESPACES = "\x00all"


class Picker(Dialog):
    """A titled list; typing filters it (backspace takes back), Enter picks, Escape cancels."""

    app: RollguardApp
    BINDINGS = [
        Binding("escape", "cancel", "Cancel"),
        Binding("down", "move('cursor_down')", "Next", show=False),
        Binding("up", "move('cursor_up')", "Previous", show=False),
        Binding("pagedown", "move('page_down')", "Page down", show=False),
        Binding("pageup", "move('page_up')", "Page up", show=False),
    ]
    TITLE = ""

    def __init__(self) -> None:
        super().__init__()
        self.typed = ""
        self.options: list[tuple[str, str]] = []
        self.current: str | None = None

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog picker"):
            yield Label(self.TITLE, classes="dialog-title")
            yield Input(placeholder="type to filter, ↑↓ to choose, enter to pick", id="typed")
            yield OptionList(Option("loading…", disabled=True))

    def on_mount(self) -> None:
        typed = self.query_one("#typed", Input)
        typed.cursor_blink = not self.app.static
        typed.focus()
        self._load()

    @work(thread=True, exit_on_error=False)
    def _load(self) -> None:
        try:
            options, current = self.choices()
        except Exception as exc:  # unreadable kubeconfig, forbidden list: say so, keep the app
            self.app.call_from_thread(self.app.notify, describe_error(exc), severity="error")
            self.app.call_from_thread(self.dismiss, None)
            return
        self.app.call_from_thread(self._fill, options, current)

    def choices(self) -> tuple[list[tuple[str, str]], str | None]:
        raise NotImplementedError

    def _fill(self, options: list[tuple[str, str]], current: str | None) -> None:
        self.options, self.current = options, current
        self._show()

    def _show(self) -> None:
        box = self.query_one(OptionList)
        box.clear_options()
        shown = [(v, label) for v, label in self.options if self.typed.lower() in label.lower()]
        if not shown:
            box.add_option(
                Option("(nothing to choose from)" if not self.typed else "(no match)", disabled=True)
            )
            return
        box.add_options([Option(label, id=value) for value, label in shown])
        ids = [value for value, _label in shown]
        box.highlighted = ids.index(self.current) if self.current in ids and not self.typed else 0

    @on(Input.Changed, "#typed")
    def _typed(self, event: Input.Changed) -> None:
        self.typed = event.value.strip()
        self._show()

    @on(Input.Submitted, "#typed")
    def _submitted(self, _event: Input.Submitted) -> None:
        box = self.query_one(OptionList)
        if box.highlighted is not None:
            option = box.get_option_at_index(box.highlighted)
            if not option.disabled:
                self.dismiss(option.id)

    def action_move(self, how: str) -> None:
        getattr(self.query_one(OptionList), f"action_{how}")()

    @on(OptionList.OptionSelected)
    def _picked(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option.id)

    def action_cancel(self) -> None:
        self.dismiss(None)


class NamespacePicker(Picker):
    TITLE = "Switch namespace"

    def choices(self) -> tuple[list[tuple[str, str]], str | None]:
        backend = self.app.backend
        names = backend.namespaces()
        current = ALL_NAMESPACES if backend.all_namespaces else backend.namespace
        return [(ALL_NAMESPACES, "(all namespaces)"), *((n, n) for n in names)], current


class ContextPicker(Picker):
    TITLE = "Switch kubeconfig context"

    def choices(self) -> tuple[list[tuple[str, str]], str | None]:
        names, current = self.app.backend.contexts()
        return [(n, n) for n in names], current
