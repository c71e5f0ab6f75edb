"""When the API server last answered, and how long the oldest request still waiting has waited.

A hung API server (SIGSTOP, a frozen control plane, a black-holed load balancer) refuses nothing: the
connection opens and the answer never comes, so a TUI that judged the link only by failed requests said
`live` for as long as a request's timeout (issue 30). `Watchful` wraps the TUI's connection and notes in
a `Pulse` each request's start and end; the header reads the pulse on its clock tick and says "no
answer from the API server for 8s" within a few seconds of a hang, whatever the request is doing.

Streams (watches, log follows) are long by design: they are not counted as waiting; their events count
as answers. An error status (403, 404, 409 ...) is an answer too; only a transport failure is not.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable, Iterator
from typing import TypeVar

from rollguard.client import Api, Forwarding, LogOptions, Obj, Page, Reducer
from rollguard.errors import ApiError, Unreachable
from rollguard.resources import Resource

T = TypeVar("T")


class Pulse:
    """Thread-safe: requests under way (by start time) and the time of the last answer (monotonic)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._ids = itertools.count()
        self._waiting: dict[int, float] = {}
        self.last_answer: float | None = None

    def begin(self) -> int:
        with self._lock:
            token = next(self._ids)
            self._waiting[token] = self._clock()
            return token

    def end(self, token: int, *, answered: bool) -> None:
        with self._lock:
            self._waiting.pop(token, None)
            if answered:
                self.last_answer = self._clock()

    def answered(self) -> None:
        with self._lock:
            self.last_answer = self._clock()

    def waiting_since(self) -> float | None:
        """The start of the oldest request without an answer yet (None: none is waiting)."""
        with self._lock:
            return min(self._waiting.values(), default=None)

    def forget(self) -> None:
        """A new connection: the old one's requests and answers say nothing about it."""
        with self._lock:
            self._waiting.clear()
            self.last_answer = None


def _is_answer(exc: BaseException) -> bool:
    return isinstance(exc, ApiError) and not isinstance(exc, Unreachable)


class Watchful(Forwarding):
    """``inner`` with every request noted in ``pulse`` (see the module)."""

    def __init__(self, inner: Api, pulse: Pulse) -> None:
        super().__init__(inner)
        self.pulse = pulse

    def _timed(self, call: Callable[[], T]) -> T:
        token = self.pulse.begin()
        answered = False
        try:
            result = call()
            answered = True
            return result
        except BaseException as exc:
            answered = _is_answer(exc)
            raise
        finally:
            self.pulse.end(token, answered=answered)

    def get(self, res: Resource, name: str, *, namespace: str | None = None) -> Obj:
        return self._timed(lambda: super(Watchful, self).get(res, name, namespace=namespace))

    def list(
        self,
        res: Resource,
        *,
        namespace: str | None = None,
        selector: str | None = None,
        reduce: Reducer | None = None,
    ) -> Obj:
        return self._timed(
            lambda: super(Watchful, self).list(res, namespace=namespace, selector=selector, reduce=reduce)
        )

    def pages(
        self,
        res: Resource,
        *,
        namespace: str | None = None,
        selector: str | None = None,
        reduce: Reducer | None = None,
    ) -> Iterator[Page]:
        pages = super().pages(res, namespace=namespace, selector=selector, reduce=reduce)
        while True:  # each page is a request: timed from asking for it to having it
            try:
                page = self._timed(lambda: next(pages))
            except StopIteration:
                return
            yield page

    def create(self, res: Resource, body: Obj, *, namespace: str | None = None, dry_run: bool = False) -> Obj:
        return self._timed(
            lambda: super(Watchful, self).create(res, body, namespace=namespace, dry_run=dry_run)
        )

    def replace(
        self, res: Resource, body: Obj, *, namespace: str | None = None, dry_run: bool = False
    ) -> Obj:
        return self._timed(
            lambda: super(Watchful, self).replace(res, body, namespace=namespace, dry_run=dry_run)
        )

    def patch(self, res: Resource, name: str, body: Obj, *, namespace: str | None = None) -> Obj:
        return self._timed(lambda: super(Watchful, self).patch(res, name, body, namespace=namespace))

    def delete(
        self, res: Resource, name: str, *, namespace: str | None = None, resource_version: str | None = None
    ) -> Obj:
        return self._timed(
            lambda: super(Watchful, self).delete(
                res, name, namespace=namespace, resource_version=resource_version
            )
        )

    def watch(
        self,
        res: Resource,
        *,
        namespace: str | None,
        resource_version: str,
        timeout_seconds: int = 300,
        selector: str | None = None,
    ) -> Iterator[Obj]:
        for event in super().watch(
            res,
            namespace=namespace,
            resource_version=resource_version,
            timeout_seconds=timeout_seconds,
            selector=selector,
        ):
            self.pulse.answered()
            yield event

    def pod_log(
        self, pod: str, *, namespace: str, options: LogOptions, stop: threading.Event | None = None
    ) -> Iterator[str]:
        for line in super().pod_log(pod, namespace=namespace, options=options, stop=stop):
            self.pulse.answered()
            yield line
