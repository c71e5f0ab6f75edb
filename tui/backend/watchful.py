"""Every request of the TUI noted in a `Pulse`, so that the header can say a hung server within seconds.

A hung API server (SIGSTOP, a frozen control plane, a black-holed load balancer) refuses nothing: the
connection opens and the answer never comes, so a TUI that judged the link only by failed requests said
`live` for as long as a request's timeout (issue 30). `Watchful` wraps the TUI's connection, whatever it
is (the real `Client` or a test double), and tells a `rollguard.cluster.pulse.Pulse` of its own when each
request goes out and whether it got an answer; the header reads `Pulse.silent_for` on its one-second
tick and says "no answer from the API server for 8s" while the request still waits.

Streams (watches, log follows) are long by design: only their opening is timed (until the first event
or line), and each event counts as an answer. An error status (403, 404, 409 ...) is an answer too;
only a transport failure (`Unreachable`) or a timeout is not.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import TypeVar

from rollguard.cluster.api import Api, Forwarding, LogOptions, Obj, Page, Reducer
from rollguard.cluster.pulse import Pulse
from rollguard.core.errors import ApiError, Unreachable
from rollguard.core.resources import Resource

T = TypeVar("T")


def is_answer(exc: BaseException) -> bool:
    """Whether a failed request still got an answer from the server (an error status)."""
    return isinstance(exc, ApiError) and not isinstance(exc, Unreachable)


class Watchful(Forwarding):
    """``inner`` with every request told to ``pulse`` (see the module)."""

    def __init__(self, inner: Api, pulse: Pulse) -> None:
        super().__init__(inner)
        self.pulse = pulse

    def _timed(self, call: Callable[[], T]) -> T:
        token = self.pulse.sent()
        try:
            result = call()
        except StopIteration:
            self.pulse.answered(token)  # the last page was answered already
            raise
        except BaseException as exc:
            (self.pulse.answered if is_answer(exc) else self.pulse.unanswered)(token)
            raise
        self.pulse.answered(token)
        return result

    def _stream(self, items: Iterator[T]) -> Iterator[T]:
        """A stream: timed until its first item, each item an answer."""
        while True:
            try:
                item = self._timed(lambda: next(items))
            except StopIteration:
                return
            yield item

    def get(self, res: Resource, name: str, *, namespace: str | None = None) -> Obj:
        return self._timed(lambda: self._inner.get(res, name, namespace=namespace))

    def openapi(self) -> Obj:
        return self._timed(self._inner.openapi)

    def list(
        self,
        res: Resource,
        *,
        namespace: str | None = None,
        selector: str | None = None,
        reduce: Reducer | None = None,
    ) -> Obj:
        return self._timed(
            lambda: self._inner.list(res, namespace=namespace, selector=selector, reduce=reduce)
        )

    def pages(
        self,
        res: Resource,
        *,
        namespace: str | None = None,
        selector: str | None = None,
        reduce: Reducer | None = None,
    ) -> Iterator[Page]:
        # each page is a request: timed from asking for it to having it
        return self._stream(self._inner.pages(res, namespace=namespace, selector=selector, reduce=reduce))

    def create(self, res: Resource, body: Obj, *, namespace: str | None = None, dry_run: bool = False) -> Obj:
        self.before_write()
        return self._timed(lambda: self._inner.create(res, body, namespace=namespace, dry_run=dry_run))

    def replace(
        self, res: Resource, body: Obj, *, namespace: str | None = None, dry_run: bool = False
    ) -> Obj:
        self.before_write()
        return self._timed(lambda: self._inner.replace(res, body, namespace=namespace, dry_run=dry_run))

    def patch(self, res: Resource, name: str, body: Obj, *, namespace: str | None = None) -> Obj:
        self.before_write()
        return self._timed(lambda: self._inner.patch(res, name, body, namespace=namespace))

    def delete(
        self,
        res: Resource,
        name: str,
        *,
        namespace: str | None = None,
        resource_version: str | None = None,
        propagation: str | None = None,
    ) -> Obj:
        self.before_write()
        return self._timed(
            lambda: self._inner.delete(
                res, name, namespace=namespace, resource_version=resource_version, propagation=propagation
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
        events = self._inner.watch(
            res,
            namespace=namespace,
            resource_version=resource_version,
            timeout_seconds=timeout_seconds,
            selector=selector,
        )
        for event in events:  # a quiet watch waits by design: not timed, its events are answers
            self.pulse.answered(self.pulse.sent())
            yield event

    def pod_log(
        self, pod: str, *, namespace: str, options: LogOptions, stop: threading.Event | None = None
    ) -> Iterator[str]:
        for line in self._inner.pod_log(pod, namespace=namespace, options=options, stop=stop):
            self.pulse.answered(self.pulse.sent())
            yield line
