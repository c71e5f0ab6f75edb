"""The first read of `rollguard tui -A` kept as the live caches' first lists (watch from there).

Without this the TUI read the whole cluster twice before it was live: once namespace by namespace for
the first screen (`rollguard.inventory`), then once more for the caches' first lists. `Keeping`
stands between that read and the connection: it keeps what each cluster-wide list returned (reduced,
then interned: `rollguard.reduce.Interner`) and the list's resourceVersion, the first page's (a
paginated list is one snapshot at that version; a list whose continue token expired is not kept: it
is no one snapshot, and the cache lists that resource again). The caches then start their
watches from that version, as an informer's list-then-watch does, and a version the server no longer
has (410 Gone) makes a cache list again itself. Reads only: a write through it is refused.
"""

from __future__ import annotations

from collections.abc import Iterator

from rollguard.client import Api, Page
from rollguard.reduce import Interner, Reducer
from rollguard.resources import Resource
from rollguard.structs import Obj


class Keeping:
    """An `Api` for one read: cluster-wide lists are kept, objects and resourceVersion, by resource."""

    def __init__(self, inner: Api, intern: Interner) -> None:
        self._inner = inner
        self._intern = intern
        self.kept: dict[tuple[Resource, str | None], tuple[list[Obj], str]] = {}

    def get(self, res: Resource, name: str, *, namespace: str | None = None) -> Obj:
        return self._inner.get(res, name, namespace=namespace)

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
        if namespace is not None or reduce is None:
            yield from self._inner.pages(res, namespace=namespace, selector=selector, reduce=reduce)
            return
        slim, intern = reduce, self._intern
        items: list[Obj] = []
        rv, whole = "", True
        for page in self._inner.pages(res, selector=selector, reduce=lambda o: intern(slim(o))):
            rv = rv or page.resource_version
            whole = whole and not page.restarted
            items.extend(page.items)
            yield page
        if whole and rv:
            self.kept[(res, selector)] = (items, rv)

    def create(self, res: Resource, body: Obj, *, namespace: str | None = None, dry_run: bool = False) -> Obj:
        raise TypeError("a read does not write")

    def replace(
        self, res: Resource, body: Obj, *, namespace: str | None = None, dry_run: bool = False
    ) -> Obj:
        raise TypeError("a read does not write")

    def patch(self, res: Resource, name: str, body: Obj, *, namespace: str | None = None) -> Obj:
        raise TypeError("a read does not write")

    def delete(
        self, res: Resource, name: str, *, namespace: str | None = None, resource_version: str | None = None
    ) -> Obj:
        raise TypeError("a read does not write")

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


def _check(keeping: Keeping) -> Api:
    return keeping  # mypy proves that Keeping satisfies Api
