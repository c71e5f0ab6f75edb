"""What rollguard asks of a cluster: the `Api` protocol, and the plain data it speaks in.

`Api` is the contract the engine, the inventory, the repairs and the TUI are written against: the ten
calls below (`pod_log` for the TUI's logs), answering plain dicts and raising `rollguard.core.errors`
classes. `rollguard.cluster.client.Client` is the one that speaks HTTP; a test double (tests/helpers/fakecluster.py)
may answer the same calls from memory. mypy checks that both fit. `Forwarding` is an `Api` wrapping
another (the fence of a run, the live cache's counting reads), so a wrapper is written once.

Kept apart from the client, so that code written against the contract does not depend on the
transport, and a double needs nothing of it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol

from rollguard.core.resources import Resource

Obj = dict[str, Any]
Reducer = Callable[[Obj], Obj]


@dataclass(frozen=True)
class Page:
    """One page of a LIST: its (possibly reduced) items and the list's resourceVersion.

    ``restarted``: the continue token expired and this page is a full list that replaces every page
    before it (client-go's pager falls back the same way).
    """

    items: list[Obj]
    resource_version: str
    restarted: bool = False


class Api(Protocol):
    """What rollguard asks of a cluster; errors are `rollguard.core.errors` classes (NotFound, Conflict, ...)."""

    def get(self, res: Resource, name: str, *, namespace: str | None = None) -> Obj: ...

    def openapi(self) -> Obj:
        """The OpenAPI v2 document the API server publishes (``/openapi/v2``): every type's schema."""
        ...

    def list(
        self,
        res: Resource,
        *,
        namespace: str | None = None,
        selector: str | None = None,
        reduce: Reducer | None = None,
    ) -> Obj: ...

    def pages(
        self,
        res: Resource,
        *,
        namespace: str | None = None,
        selector: str | None = None,
        reduce: Reducer | None = None,
    ) -> Iterator[Page]: ...

    def create(
        self, res: Resource, body: Obj, *, namespace: str | None = None, dry_run: bool = False
    ) -> Obj: ...

    def replace(
        self, res: Resource, body: Obj, *, namespace: str | None = None, dry_run: bool = False
    ) -> Obj: ...

    def patch(self, res: Resource, name: str, body: Obj, *, namespace: str | None = None) -> Obj: ...

    def delete(
        self,
        res: Resource,
        name: str,
        *,
        namespace: str | None = None,
        resource_version: str | None = None,
        propagation: str | None = None,
    ) -> Obj: ...

    def watch(
        self,
        res: Resource,
        *,
        namespace: str | None,
        resource_version: str,
        timeout_seconds: int = 300,
        selector: str | None = None,
    ) -> Iterator[Obj]: ...

    def pod_log(
        self, pod: str, *, namespace: str, options: LogOptions, stop: threading.Event | None = None
    ) -> Iterator[str]: ...


class Forwarding:
    """An `Api` sending every request to ``inner``, each write after `before_write` (which may raise)."""

    def __init__(self, inner: Api) -> None:
        self._inner = inner

    def before_write(self) -> None:
        """Called before each create, replace, patch and delete; raising stops it being sent."""

    def get(self, res: Resource, name: str, *, namespace: str | None = None) -> Obj:
        return self._inner.get(res, name, namespace=namespace)

    def openapi(self) -> Obj:
        return self._inner.openapi()

    def list(
        self,
        res: Resource,
        *,
        namespace: str | None = None,
        selector: str | None = None,
        reduce: Reducer | None = None,
    ) -> Obj:
        return self._inner.list(res, namespace=namespace, selector=selector, reduce=reduce)

    def pages(
        self,
        res: Resource,
        *,
        namespace: str | None = None,
        selector: str | None = None,
        reduce: Reducer | None = None,
    ) -> Iterator[Page]:
        return self._inner.pages(res, namespace=namespace, selector=selector, reduce=reduce)

    def create(self, res: Resource, body: Obj, *, namespace: str | None = None, dry_run: bool = False) -> Obj:
        self.before_write()
        return self._inner.create(res, body, namespace=namespace, dry_run=dry_run)

    def replace(
        self, res: Resource, body: Obj, *, namespace: str | None = None, dry_run: bool = False
    ) -> Obj:
        self.before_write()
        return self._inner.replace(res, body, namespace=namespace, dry_run=dry_run)

    def patch(self, res: Resource, name: str, body: Obj, *, namespace: str | None = None) -> Obj:
        self.before_write()
        return self._inner.patch(res, name, body, namespace=namespace)

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
        return self._inner.delete(
            res, name, namespace=namespace, resource_version=resource_version, propagation=propagation
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
        return self._inner.watch(
            res,
            namespace=namespace,
            resource_version=resource_version,
            timeout_seconds=timeout_seconds,
            selector=selector,
        )

    def pod_log(
        self, pod: str, *, namespace: str, options: LogOptions, stop: threading.Event | None = None
    ) -> Iterator[str]:
        return self._inner.pod_log(pod, namespace=namespace, options=options, stop=stop)


def _forwarding_is_an_api(forwarding: Forwarding) -> Api:
    """Never called: mypy, checking this return, proves that `Forwarding` is an `Api`."""
    return forwarding


@dataclass(frozen=True)
class LogOptions:
    """Which log of a pod to read (PodLogOptions): its container's, the last terminated instance's with
    ``previous``, kept open for new lines with ``follow``, from the last ``tail_lines`` lines, each line
    prefixed with the time the kubelet received it (RFC 3339, nanoseconds) with ``timestamps``."""

    container: str
    follow: bool = False
    previous: bool = False
    tail_lines: int | None = None
    timestamps: bool = False
