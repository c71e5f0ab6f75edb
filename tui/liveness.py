"""How live the picture on screen is: the header's first words and the banner when it is not live (pure).

A repair tool must never let an engineer act on a stale picture: the app's loader probes the API server
every few seconds while it follows the watches; a failed probe (or read) turns the state to
`reconnecting`, and after a few failed attempts to `disconnected`, with the age of the last answer. The
loader retries with a capped exponential backoff and, once the server answers, lists everything again
(the watches restart from a fresh list) before it says `live`.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

BACKOFF = (0.5, 1.0, 2.0, 4.0, 8.0)  # seconds between reconnect attempts; the last one repeats
DISCONNECTED_AFTER = 3  # failed attempts in a row before `reconnecting` becomes `disconnected`


class Link(enum.StrEnum):
    CONNECTING = "connecting"  # the first read (or the first after a context switch) is under way
    LIVE = "live"  # the watches follow the cluster and the last probe was answered
    RECONNECTING = "reconnecting"  # the server stopped answering a moment ago; retrying
    DISCONNECTED = "disconnected"  # still no answer after several attempts; retrying more slowly


def backoff(attempt: int) -> float:
    """Seconds to wait before reconnect attempt ``attempt`` (1-based)."""
    return BACKOFF[min(max(attempt, 1), len(BACKOFF)) - 1]


def link_after(failures: int) -> Link:
    return Link.RECONNECTING if failures < DISCONNECTED_AFTER else Link.DISCONNECTED


@dataclass(frozen=True)
class Liveness:
    """The link's state; ``contact`` is the monotonic time of the last answer from the server."""

    link: Link = Link.CONNECTING
    contact: float | None = None
    error: str = ""
    attempt: int = 0

    @property
    def live(self) -> bool:
        return self.link is Link.LIVE


def ago(seconds: float) -> str:
    seconds = max(int(seconds), 0)
    if seconds < 120:
        return f"{seconds}s"
    if seconds < 7200:
        return f"{seconds // 60}m"
    return f"{seconds // 3600}h"


def header(state: Liveness, now: float) -> str:
    """`live`, `connecting…`, `reconnecting…` or `disconnected · updated 12s ago` (Rich markup)."""
    if state.link is Link.LIVE:
        return "[bold green]live[/]"
    if state.link is Link.CONNECTING:
        return "[bold yellow]connecting…[/]"
    updated = f" · updated {ago(now - state.contact)} ago" if state.contact is not None else " · no data yet"
    if state.link is Link.RECONNECTING:
        return f"[bold yellow]reconnecting[/]{updated}"
    return f"[bold red]disconnected[/]{updated}"


def banner(state: Liveness, now: float) -> str:
    """One line for the banner over the table; empty while live."""
    if state.link in (Link.LIVE, Link.CONNECTING):
        return ""
    shown = (
        f"what you see is {ago(now - state.contact)} old and may be wrong"
        if state.contact is not None
        else "nothing has been read yet"
    )
    cause = f": {state.error}" if state.error else ""
    return (
        f"{'Reconnecting' if state.link is Link.RECONNECTING else 'Disconnected'}{cause}. {shown}; retrying."
    )
