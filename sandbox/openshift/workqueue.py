"""A keyed work queue with delayed adds and per-key backoff, drained by a pool of worker threads.

Semantics of client-go's workqueue: a key is queued at most once, and never handed to two workers at
the same time; a key added while it is being processed is processed again afterwards.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Hashable
from typing import Any

log = logging.getLogger(__name__)


class WorkQueue:
    """Deduplicating FIFO of keys plus a timer heap for `add_after`."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._cond = threading.Condition()
        self._queue: deque[Hashable] = deque()
        self._dirty: set[Hashable] = set()
        self._processing: set[Hashable] = set()
        self._timers: list[tuple[float, int, Hashable]] = []
        self._seq = itertools.count()
        self._failures: dict[Hashable, int] = {}
        self._shutdown = False

    def add(self, key: Hashable) -> None:
        with self._cond:
            self._add_locked(key)

    def _add_locked(self, key: Hashable) -> None:
        if self._shutdown or key in self._dirty:
            return
        self._dirty.add(key)
        if key not in self._processing:
            self._queue.append(key)
            self._cond.notify()

    def add_after(self, key: Hashable, delay: float) -> None:
        if delay <= 0:
            self.add(key)
            return
        with self._cond:
            heapq.heappush(self._timers, (time.monotonic() + delay, next(self._seq), key))
            self._cond.notify()

    def add_rate_limited(self, key: Hashable) -> None:
        """Requeue after a failure: 10 ms doubling per consecutive failure, at most 10 s (`backoff`)."""
        with self._cond:
            n = self._failures.get(key, 0)
            self._failures[key] = n + 1
        self.add_after(key, backoff(n))

    def forget(self, key: Hashable) -> None:
        with self._cond:
            self._failures.pop(key, None)

    def get(self) -> Hashable | None:
        """Block until a key is due; None once shut down."""
        with self._cond:
            while True:
                if self._shutdown:
                    return None
                now = time.monotonic()
                while self._timers and self._timers[0][0] <= now:
                    _, _, key = heapq.heappop(self._timers)
                    self._add_locked(key)
                if self._queue:
                    key = self._queue.popleft()
                    self._processing.add(key)
                    self._dirty.discard(key)
                    return key
                self._cond.wait(self._timers[0][0] - now if self._timers else None)

    def done(self, key: Hashable) -> None:
        with self._cond:
            self._processing.discard(key)
            if key in self._dirty:
                self._queue.append(key)
                self._cond.notify()

    def shutdown(self) -> None:
        with self._cond:
            self._shutdown = True
            self._cond.notify_all()

    def __len__(self) -> int:
        with self._cond:
            return len(self._queue)


BASE_DELAY, MAX_DELAY = 0.01, 10.0


def backoff(failures: int) -> float:
    """The delay after ``failures`` consecutive failures of one key, as client-go's
    ItemExponentialFailureRateLimiter.When (util/workqueue/default_rate_limiters.go): base * 2^failures,
    capped at the maximum, and capped *before* the power can overflow (there: past MaxInt64 ns; here a
    float overflow raised OverflowError in the worker after ~1000 failures of a key, e.g. a DC whose
    namespace is being deleted, and the worker thread died: every DC of the sandbox stopped rolling out)."""
    if failures >= 64:  # far past the cap: 0.01 s * 2^10 is already above it
        return MAX_DELAY
    return min(BASE_DELAY * 2**failures, MAX_DELAY)


def run_workers(queue: WorkQueue, sync: Callable[[Any], None], workers: int) -> list[threading.Thread]:
    """Start `workers` threads that call `sync(key)`; an exception requeues the key with backoff."""

    def loop() -> None:
        while (key := queue.get()) is not None:
            try:
                sync(key)
                queue.forget(key)
            except Exception as e:
                log.warning("%s %s: %s", queue.name, key, e, exc_info=not _expected(e))
                queue.add_rate_limited(key)
            finally:
                queue.done(key)

    threads = [threading.Thread(target=loop, name=f"{queue.name}-{i}", daemon=True) for i in range(workers)]
    for t in threads:
        t.start()
    return threads


def _expected(e: Exception) -> bool:
    """Errors worth one log line but no traceback: API answers such as conflicts."""
    from sandbox.openshift.kube import ApiError

    return isinstance(e, ApiError | Requeue)


class Requeue(Exception):
    """Raised by a sync to be retried with backoff, e.g. while waiting for another object."""
