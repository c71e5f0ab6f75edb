"""Repairs started from the TUI, followed in the background (issue 19, point 5).

A confirmed repair belongs to the app, not to its dialog: the dialog can be sent to the background
(esc) and reopened (`b`), and the table stays usable while the repair's thread worker runs. What is
kept here is plain data (the plan, the start time, the progress lines, the result) so that a dialog
reopened later replays the same progress, and the badge on the group's row is a pure function of it.
Safety does not depend on this process: the repair holds the group's Lease and writes its journal at
every step, exactly as `rollguard resume|revert|redeploy` does.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

from rollguard.tui.views import PlanView, ResultView


@dataclass(eq=False)
class TrackedRepair:
    """One confirmed repair: its plan, the group it acts on, and what it printed so far."""

    plan: PlanView
    group: str  # the group key of the rows it acts on (its badge goes on that group's row)
    started: float = field(default_factory=time.monotonic)
    lines: list[str] = field(default_factory=list)
    result: ResultView | None = None
    cancel_event: threading.Event = field(default_factory=threading.Event)
    seen: bool = True  # False: it finished while its dialog was in the background

    @property
    def running(self) -> bool:
        return self.result is None

    @property
    def what(self) -> str:
        """``revert of group app=shop`` (the quit prompt and notifications name it so)."""
        return f"{self.plan.action} of {self.plan.target.label}"


def elapsed(seconds: float) -> str:
    """``0:07``, ``12:40``, ``1:02:03``: a running repair's age as a clock shows it."""
    whole = max(int(seconds), 0)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02}:{secs:02}" if hours else f"{minutes}:{secs:02}"


def badge(repair: TrackedRepair, now: float) -> str:
    """The group row's badge: ``⟳ revert 0:42`` while it runs."""
    return f"⟳ {repair.plan.action} {elapsed(now - repair.started)}"


def badges_by_group(repairs: list[TrackedRepair], now: float) -> dict[str, str]:
    """Group key -> badge, for the repairs still running (the newest wins on one group)."""
    return {r.group: badge(r, now) for r in repairs if r.running}


def header_text(repairs: list[TrackedRepair], now: float) -> str:
    """The header's note while repairs run in the background (empty when none runs)."""
    running = [r for r in repairs if r.running]
    if not running:
        return ""
    newest = running[-1]
    more = f" (+{len(running) - 1})" if len(running) > 1 else ""
    return f"{badge(newest, now)} {newest.plan.target.label}{more} · b"
