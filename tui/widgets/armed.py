"""A Confirm button that no burst of typing can press.

A single workload's repair is confirmed by moving the focus to Confirm (tab) and pressing Enter there, at
least `ARM_SECONDS` after the button got the focus: Enter is judged by the time the key was read (the
event's time), so a tab and an Enter in one burst (a paste, keys queued behind a slow screen) never
press it, however late the app handles them; a click counts once the button has been offered that long.
No printable key presses it (`y` is YAML in k9s, and a word typed into the wrong place holds many).
"""

from __future__ import annotations

import math
import time

from textual import events
from textual.message import Message
from textual.widgets import Button

ARM_SECONDS = 0.8


class ArmedButton(Button, inherit_bindings=False):
    """A `Button` pressed by Enter only once armed (see the module); `NotYet` when pressed too soon.

    It has no key binding: the app runs bindings along the focus chain of the moment it handles a key,
    so a `Button`'s Enter binding pressed it for an Enter typed while Cancel still had the focus. Only
    an Enter delivered to this button itself, and read after it was armed, presses it."""

    BINDINGS = []

    class NotYet(Message):
        """Enter (or a click) came before the button was armed: nothing was pressed."""

    arm_seconds = ARM_SECONDS

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.focused_at = math.inf
        self.offered_at = math.inf

    def offer(self) -> None:
        """Enable it: from now (plus the arming delay) a click presses it."""
        self.disabled = False
        self.offered_at = time.monotonic()

    def armed_for_key(self, at: float) -> bool:
        return at >= max(self.focused_at, self.offered_at) + self.arm_seconds

    @property
    def armed(self) -> bool:
        """Whether an Enter read now would press it (tests wait on this)."""
        return self.has_focus and self.armed_for_key(time.monotonic())

    def on_focus(self, _event: events.Focus) -> None:
        self.focused_at = time.monotonic()

    def on_blur(self, _event: events.Blur) -> None:
        self.focused_at = math.inf

    async def _on_key(self, event: events.Key) -> None:
        if event.key == "enter":
            event.stop()
            event.prevent_default()
            if not self.disabled and self.armed_for_key(event.time):
                self.press()
            else:
                self.post_message(self.NotYet())
            return
        await super()._on_key(event)

    async def _on_click(self, event: events.Click) -> None:
        if time.monotonic() < self.offered_at + self.arm_seconds:
            event.stop()
            self.post_message(self.NotYet())
            return
        await super()._on_click(event)
