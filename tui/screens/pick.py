"""Pickers for the namespace and the kubeconfig context (read in a worker, chosen from a list)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.widgets import Label, OptionList
from textual.widgets.option_list import Option

from rollguard.tui.errors import describe_error
from rollguard.tui.screens.base import Dialog

if TYPE_CHECKING:
    from rollguard.tui.app import RollguardApp

ALL_NAMESPACES = "\x00all"


class Picker(Dialog):
    """A titled list; Enter picks, Escape cancels."""

    app: RollguardApp
    BINDINGS = [Binding("escape", "cancel", "Cancel")]
    TITLE = ""

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog picker"):
            yield Label(self.TITLE, classes="dialog-title")
            yield OptionList(Option("loading…", disabled=True))

    def on_mount(self) -> None:
        self.query_one(OptionList).focus()
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
        box = self.query_one(OptionList)
        box.clear_options()
        if not options:
            box.add_option(Option("(nothing to choose from)", disabled=True))
            return
        box.add_options([Option(label, id=value) for value, label in options])
        ids = [value for value, _label in options]
        if current in ids:
            box.highlighted = ids.index(current)

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
