"""`:events` (k9s' jump): the namespace's Events, newest first: when last seen, type, reason, the object
involved, the message and how many times it was seen.

Read-only. One list of the namespace's Events per look (`Backend.events`, in a thread worker with the
client's short timeout), again every `REFRESH` seconds while the page is open and on ctrl+r. Listing
Events needs the `list` verb on ``events``: without it the page says so and what to grant.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import DataTable, Static

from rollguard.core.errors import Forbidden
from rollguard.tui.errors import describe_error
from rollguard.tui.views import EventView, age
from rollguard.tui.widgets.keybar import KeyBar
from rollguard.tui.widgets.nav import NavTable

if TYPE_CHECKING:
    from rollguard.tui.app import RollguardApp

COLUMNS = ("Last seen", "Type", "Reason", "Object", "Message", "Count")
REFRESH = 5.0  # seconds between reads while the page is open (Events are not watched)


class EventsScreen(Screen[None]):
    """Events, newest first; j/k/g/G move, ctrl+r reads again, esc back."""

    app: RollguardApp
    BINDINGS = [
        Binding("escape,backspace", "back", "Back"),
        Binding("ctrl+r", "reload", "Reload"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.events: list[EventView] = []
        self.error = ""
        self.loaded = False

    def compose(self) -> ComposeResult:
        yield Static(self.heading(), id="status")
        yield NavTable(id="events", cursor_type="row")
        yield KeyBar()

    def heading(self) -> Text:
        backend = self.app.backend
        where = "all namespaces" if backend.all_namespaces else (backend.namespace or "default")
        text = Text.assemble(("events", "bold"), f" in {where}, newest first")
        text.append(f"  ·  {len(self.events)} events" if self.loaded else "  ·  reading…")
        if self.error:
            text.append(f"  ·  {self.error}", style="bold red")
        return text

    def on_mount(self) -> None:
        table = self.query_one("#events", DataTable)
        table.add_columns(*(("Namespace",) if self.app.backend.all_namespaces else ()), *COLUMNS)
        table.focus()
        self.load()
        if not self.app.static:
            self.set_interval(REFRESH, self.load)

    @work(thread=True, exclusive=True, group="events", exit_on_error=False)
    def load(self) -> None:
        try:
            events, error = self.app.backend.events(), ""
        except Forbidden:
            events = None
            where = self.app.backend.namespace or "default"
            error = f"not allowed to list events in {where}: grant the Role verb 'list' on events"
        except Exception as exc:
            events, error = None, f"could not read the events: {describe_error(exc)}"
        self.app.call_from_thread(self._show, events, error)

    def _show(self, events: list[EventView] | None, error: str) -> None:
        if not self.is_attached:
            return  # closed meanwhile
        self.error, self.loaded = error, True
        if events is not None:
            self.events = events
            table = self.query_one("#events", DataTable)
            keep = table.cursor_row
            table.clear()
            now = self.app.clock()
            for ev in events:
                kind = Text(ev.type, style="bold yellow" if ev.type == "Warning" else "")
                cells = (age(ev.last_seen, now), kind, ev.reason, ev.involved, ev.message, str(ev.count))
                table.add_row(*((ev.namespace,) if self.app.backend.all_namespaces else ()), *cells)
            if events:
                table.move_cursor(row=min(keep, len(events) - 1))
        self.query_one("#status", Static).update(self.heading())

    def action_reload(self) -> None:
        self.load()

    def action_back(self) -> None:
        self.app.pop_screen()
