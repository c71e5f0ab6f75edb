"""Whether the API server answers: the pulse of one connection, and a run's hold through an outage.

Control-plane upgrades and load-balancer failovers leave the API server unreachable or unresponsive
for tens of seconds. A run that has started changing its group must not give up on such an outage
(its rollout goes on without it, and a run that stops half-way leaves the group to the next one):
it *holds*. Every request that gets no answer (refused, reset, timed out) is retried for as long as
the API server answers nothing at all, which a probe (`GET /version`, answered by any API server to
anyone) tells apart from a request that fails on its own while the server answers others (those keep
their few retries). A hold ends when the server answers again, or when the run may wait no longer
(``stop``: its SIGTERM grace is over). Writes stay fenced meanwhile: once the API answers, the run's
lock proves it still holds the group (`rollguard.cluster.lock.GroupLock.prove`) before any write,
or the run stops as superseded.

`Pulse` keeps when the server last answered and what waits for an answer; its monitor says, while a
run holds, "no answer from the API server for 10s, retrying" (then at 20 s, 40 s, ...) and when the
server answers again. The monitor sleeps until the next such moment or a change: it never polls.
It is shared by a `Client` and its guarded copies (one connection, one pulse).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

FIRST_REPORT = 10.0  # seconds without an answer before a holding run says so
HOLD_BACKOFF = (0.5, 1.0, 2.0)
ANSWERS_AGAIN = (
    "the API server answers again"  # seconds between the attempts of a request held through an outage
)


class Pulse:
    """When the API server last answered, and which requests wait for an answer since."""

    def __init__(self, *, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._cond = threading.Condition()
        self._pending: dict[int, float] = {}  # request -> when it was sent
        self._tokens = 0
        self._answered_at = clock()
        self._failed_since: float | None = None  # the first request since the last answer that got none
        self._reported = 0.0  # the silence said last (0: none said)
        self._began = 0.0  # when the silence said began
        self._said_at = 0.0  # when it was said
        self._closed = False
        self.holding = False  # retry unanswered requests while the server answers nothing
        self.stop = threading.Event()  # set: hold no longer (the run may wait no longer)

    # -- what the transport tells it ------------------------------------------------------------------

    def sent(self) -> int:
        """A request goes out; its token for `answered` or `unanswered`."""
        with self._cond:
            self._tokens += 1
            idle = not self._pending and self._failed_since is None
            self._pending[self._tokens] = self._clock()
            if idle:
                self._cond.notify_all()  # a silence may begin: the monitor times it
            return self._tokens

    def answered(self, token: int) -> None:
        """The server answered (any HTTP status: it is there)."""
        with self._cond:
            self._pending.pop(token, None)
            self._answered_at = self._clock()
            self._failed_since = None
            if self._reported:
                self._cond.notify_all()  # the monitor says it answers again

    def unanswered(self, token: int) -> None:
        """The request ended without an answer (refused, reset, timed out)."""
        with self._cond:
            started = self._pending.pop(token, self._clock())
            if self._failed_since is None or started < self._failed_since:
                self._failed_since = started
            self._cond.notify_all()

    # -- what it tells ----------------------------------------------------------------------------------

    def silent_for(self) -> float:
        """Seconds a request has waited for an answer since the server last gave one (0: none waits).
        `given_up` asks it, and the TUI's header (`rollguard.tui.backend.watchful`); the monitor reads
        `_silence` itself, under its own lock."""
        with self._cond:
            return self._silence(self._clock())

    def _silence(self, now: float) -> float:
        waiting = list(self._pending.values())
        if self._failed_since is not None:
            waiting.append(self._failed_since)
        if not waiting:
            return 0.0
        return max(now - max(min(waiting), self._answered_at), 0.0)

    def given_up(self) -> float:
        """While a run holds but may wait no longer (``stop``): the seconds the server has not answered,
        when that is an outage (at least `FIRST_REPORT`); else 0. A request is then not even sent: it
        would only wait out its timeout, past the time the run has left (its SIGTERM grace)."""
        if not self.holding or not self.stop.is_set():
            return 0.0
        silent = self.silent_for()
        return silent if silent >= FIRST_REPORT else 0.0

    # -- a run's hold -----------------------------------------------------------------------------------

    def hold(
        self,
        *,
        stop: threading.Event,
        say: Callable[[str], None],
        on_recovery: Callable[[], None] = lambda: None,
        on_give_up: Callable[[], None] = lambda: None,
    ) -> None:
        """From now on retry what gets no answer while the server answers nothing, until ``stop``; say
        so while it lasts (a monitor thread, ended by `release`), and call ``on_recovery`` once it
        answers again after a silence said. ``on_give_up``: called when ``stop`` is set during an
        outage, to end the requests still waiting (they would wait out their timeouts)."""
        self.stop = stop
        self.holding = True
        threading.Thread(target=self._monitor, args=(say, on_recovery), name="api-pulse", daemon=True).start()
        threading.Thread(
            target=self._give_up_when_stopped, args=(stop, on_give_up), name="api-give-up", daemon=True
        ).start()

    def _give_up_when_stopped(self, stop: threading.Event, on_give_up: Callable[[], None]) -> None:
        stop.wait()  # a run that ends without being stopped leaves this daemon thread waiting
        if self.holding and self.given_up():
            on_give_up()

    def release(self) -> None:
        """End the hold and its monitor."""
        with self._cond:
            self.holding = False
            self._closed = True
            self._cond.notify_all()

    def _monitor(self, say: Callable[[str], None], on_recovery: Callable[[], None]) -> None:
        while True:
            line = self._next_line()
            if not line:
                return
            say(line)  # outside the lock: a slow reader of the output must not stall the requests
            if line.startswith(ANSWERS_AGAIN):
                on_recovery()

    def _next_line(self) -> str:
        """Wait for the next thing to say ("" once released)."""
        with self._cond:
            while not self._closed:
                silent = self._silence(self._clock())
                if self._reported and self._answered_at > self._said_at:  # answered since the last report
                    self._reported = 0.0
                    return f"{ANSWERS_AGAIN} after {self._answered_at - self._began:.0f}s without an answer"
                due = next_report(self._reported)
                if silent >= due:
                    self._said_at = self._clock()
                    self._reported, self._began = silent, self._said_at - silent
                    return f"no answer from the API server for {silent:.0f}s, retrying"
                self._cond.wait(None if silent == 0 else due - silent)
            return ""


def next_report(reported: float) -> float:
    """The silence to report next after one of ``reported`` seconds (0: none yet): 10 s, then doubling."""
    return FIRST_REPORT if not reported else max(FIRST_REPORT, reported * 2)
