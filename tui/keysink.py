"""Keys typed right after a key that opens a text box go into that box, never to what was focused before.

Textual moves the focus later than the key that asked for it is handled (`Widget.focus` is a
`call_later`): the keys of a burst (typing fast, a paste without bracketed paste, a slow SSH link) that
follow `/` were handed to the table, not the filter, and "/ready" opened Redeploy on the cursor's
workload (issue 30). `SinkingApp` (the App's base) sees every key before it is forwarded: after a key a
screen lists in its ``TYPING_KEYS`` (key -> the id of the `Input` it focuses: `/` the filter, `:` the
command line, `n` the namespace picker's box), the following keys and pastes are held in order until that
box has the focus, then handed to it. If the box never gets the focus (the key was refused), the held
keys are dropped after `SINK_TIMEOUT` seconds: dropping typing is safe, acting on it is not.

Keys that arrive once the app is quitting (`q` then more keys in one burst) are dropped too: they are
for nothing, and a screen they would open on a closing app ended it with a traceback (a paste holding
`q` then `c` opened the context picker after the exit had begun).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from textual import events
from textual.app import App
from textual.timer import Timer
from textual.widgets import Input, TextArea

SINK_TIMEOUT = 2.0  # seconds the held keys wait for their box to be focused
SINK_POLL = 0.01  # seconds between checks for the focus (it moves within a frame or two)


@dataclass
class Sink:
    """Keys held for the `Input` whose id is ``target``, since ``opened`` (monotonic)."""

    target: str
    opened: float
    held: list[events.Event] = field(default_factory=list)


def typing_target(screen: Any, key: str, focused: Any) -> str:
    """The id of the box ``key`` opens on ``screen`` ("" for none): never while a text box has focus
    (a `/` typed into the filter is a character, not a command)."""
    if isinstance(focused, Input | TextArea):
        return ""
    keys: dict[str, str] = getattr(screen, "TYPING_KEYS", {})
    return keys.get(key, "")


class SinkingApp(App[int]):
    """An App that holds the keys after a `TYPING_KEYS` key until its box is focused."""

    _sink: Sink | None = None
    _sink_timer: Timer | None = None

    async def on_event(self, event: events.Event) -> None:
        if isinstance(event, events.Key | events.Paste) and self._exit:
            return  # quitting: the rest of the burst is for nothing
        if isinstance(event, events.Key | events.Paste) and not event.is_forwarded:
            sink = self._sink
            if sink is not None and not self._sink_ready(sink):
                sink.held.append(event)
                return
            if sink is not None:
                self._release(sink)
            if isinstance(event, events.Key):
                target = typing_target(self.screen, event.key, self.focused)
                if target:
                    self._sink = Sink(target, time.monotonic())
                    if self._sink_timer is None:
                        self._sink_timer = self.set_interval(SINK_POLL, self._sink_poll)
        await super().on_event(event)

    def _sink_ready(self, sink: Sink) -> bool:
        focused = self.focused
        return isinstance(focused, Input) and focused.id == sink.target and focused.display

    def _sink_poll(self) -> None:
        sink = self._sink
        if sink is None:
            self._stop_polling()
        elif self._sink_ready(sink):
            self._release(sink)
        elif time.monotonic() - sink.opened > SINK_TIMEOUT:
            self._sink = None  # the box never opened: the keys typed for it are not for anything else
            self._stop_polling()

    def _release(self, sink: Sink) -> None:
        """Hand the held keys to the focused box, in order (before any key that comes after them)."""
        self._sink = None
        self._stop_polling()
        focused = self.focused
        for held in sink.held:
            if focused is not None:
                focused._forward_event(held)

    def _stop_polling(self) -> None:
        if self._sink_timer is not None:
            self._sink_timer.stop()
            self._sink_timer = None
