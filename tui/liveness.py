"""How live the picture on screen is: the header's first words and the banner when it is not live (pure).

A repair tool must never let an engineer act on a stale picture: the app's loader probes the API server
every few seconds while it follows the watches; a failed probe (or read) turns the state to
`reconnecting`, and after a few failed attempts to `disconnected`, with the data's age (`stale 12s`).
The loader retries with a capped exponential backoff and, once the server answers, lists everything
again (the watches restart from a fresh list) before it says `live`.

A hung server fails nothing until a request times out, so `Freshness` also has how long a request has
waited without an answer (`rollguard.tui.backend.watchful`): past `HANG_AFTER` seconds the header says "no
answer from the API server for 8s" whatever the link's state. While a dialog is open the table is not
refreshed: `paused`, never `live`.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

BACKOFF = (0.5, 1.0, 2.0, 4.0, 8.0)  # seconds between reconnect attempts; the last one repeats
DISCONNECTED_AFTER = 3  # failed attempts in a row before `reconnecting` becomes `disconnected`
HANG_AFTER = 3.0  # seconds a request may wait for its answer before the header says so


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


@dataclass(frozen=True)
class Freshness:
    """What the header judges: the link, how long a request has waited for an answer since the server
    last gave one (`rollguard.cluster.pulse.Pulse.silent_for`), and since when a dialog holds the table
    (monotonic)."""

    liveness: Liveness
    silent: float = 0.0
    paused_since: float | None = None

    def hung_for(self, now: float) -> float:
        """The silence, once past `HANG_AFTER` seconds (else 0)."""
        return self.silent if self.silent >= HANG_AFTER else 0.0


def _stale(state: Liveness, now: float) -> str:
    return f" · stale {ago(now - state.contact)}" if state.contact is not None else " · no data yet"


def header(fresh: Freshness | Liveness, now: float) -> str:
    """`live`, `paused`, `connecting…`, `no answer from the API server for 8s`, `reconnecting · stale 12s`
    or `disconnected · stale 40s` (Rich markup)."""
    if isinstance(fresh, Liveness):
        fresh = Freshness(fresh)
    state = fresh.liveness
    hung = fresh.hung_for(now)
    # a hang is said while nothing has failed yet (the link still looks live); once requests failed,
    # the link's state says it, with the data's age
    if hung and state.link in (Link.LIVE, Link.CONNECTING):
        return f"[bold red]no answer from the API server for {ago(hung)}[/]"
    if state.link is Link.LIVE and fresh.paused_since is not None:
        paused = now - fresh.paused_since
        return "[bold yellow]paused[/]" + (f" · stale {ago(paused)}" if paused >= 1 else "")
    if state.link is Link.LIVE:
        return "[bold green]live[/]"
    if state.link is Link.CONNECTING:
        return "[bold yellow]connecting…[/]"
    if state.link is Link.RECONNECTING:
        return f"[bold yellow]reconnecting[/]{_stale(state, now)}"
    return f"[bold red]disconnected[/]{_stale(state, now)}"


def banner(fresh: Freshness | Liveness, now: float) -> str:
    """One line for the banner over the table; empty while live (or paused, or connecting)."""
    if isinstance(fresh, Liveness):
        fresh = Freshness(fresh)
    state = fresh.liveness
    shown = (
        f"what you see is {ago(now - state.contact)} old and may be wrong"
        if state.contact is not None
        else "nothing has been read yet"
    )
    hung = fresh.hung_for(now)
    if hung and state.link is Link.LIVE:  # failures once requests failed: the link's state says it
        return f"No answer from the API server for {ago(hung)}: {shown}; waiting, then reconnecting."
    if state.link in (Link.LIVE, Link.CONNECTING):
        return ""
    cause = f": {state.error}" if state.error else ""
    return (
        f"{'Reconnecting' if state.link is Link.RECONNECTING else 'Disconnected'}{cause}. {shown}; retrying."
    )
