"""A live cache of one namespace's objects, fed by the watch API (one stream per resource).

Watch threads list once (paginated), then stream from the list's resourceVersion, resume from the last
seen version after a cut connection, and re-list on 410 Gone. Every change is announced on a queue so
the consumer wakes on events and deadlines, never on a polling interval.

``namespace=None`` watches the whole cluster (one stream per resource, not one per namespace); its
objects are then named ``namespace/name`` (`get`, the events). ``reduce``: each listed object and event is kept reduced
(`rollguard.cluster.reduce`), for read-only views such as the TUI that hold a whole cluster; ``intern``: and
its equal parts held once (`rollguard.cluster.reduce.Interner`: the revisions of one workload share most of
their templates). Such objects are shared: the consumer must not modify them. `Keeping` keeps what a read listed
cluster-wide so that caches started after it watch on from there (`NamespaceCache.seed`) instead of
listing everything again.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass

from rollguard.cluster.api import Api, Forwarding, Page
from rollguard.cluster.reduce import Interner, Reducer, reducer_for
from rollguard.core.errors import ApiError, Forbidden, Gone, NotFound
from rollguard.core.resources import Resource
from rollguard.core.structs import Obj
from rollguard.kinds import Owners

_WAKE = ("wake", "")


@dataclass(frozen=True)
class Listed:
    """One LIST as read: its items and the resourceVersion a watch goes on from (`NamespaceCache.seed`)."""

    items: list[Obj]
    resource_version: str


QUICK_WATCH = 1.0  # seconds: a watch that ends sooner without an event is resumed after a backoff
FAILING_LIST_TIMEOUT = (
    30.0  # seconds `start` waits for first lists that fail (a long timeout is for slow ones)
)


class NamespaceCache:
    """Objects of several resources in one namespace, kept current by watches."""

    def __init__(
        self,
        client: Api,
        namespace: str | None,
        resources: Iterable[Resource],
        *,
        reduce: bool = False,
        selectors: Mapping[Resource, str] | None = None,
        intern: Interner | None = None,
        watch_timeout: int = 240,
    ) -> None:
        self._client = client
        # seconds each watch lasts before the server ends it and it is resumed (an interactive reader
        # asks for short ones: a stream held by a hung server is then cut at its read timeout soon)
        self._watch_timeout = watch_timeout
        self._namespace = namespace
        self._reduce = reduce
        self._intern = intern
        self._stored = 0  # changes interned since the interner was last cleared
        self._selectors = dict(selectors or {})  # a label selector per resource (journals, leases)
        self._resources = list(resources)
        # By namespace ("" in a namespaced cache), then name: one namespace's objects are found directly,
        # and a cluster-wide cache holds no "namespace/name" string nor an index entry per object (a flat
        # dict beside sets of keys by namespace cost ~9 MiB more at 90,000 objects: the TUI with -A).
        self._objects: dict[Resource, dict[str, dict[str, Obj]]] = {r: {} for r in self._resources}
        self._owners: dict[Resource, Owners] = {}  # built on demand, dropped on every change
        self._changed: set[str] | None = None  # namespaces changed since `take_changed` (None: any)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._synced = {r: threading.Event() for r in self._resources}
        self.events: queue.Queue[tuple[str, str]] = queue.Queue()
        self.errors: list[ApiError] = []
        self._threads: list[threading.Thread] = []
        self._seeded: dict[Resource, str] = {}  # resource -> the version its seeded list was read at

    def seed(self, res: Resource, items: Iterable[Obj], resource_version: str) -> None:
        """Before `start`: the objects of one list of ``res`` read already (reduced and interned as this
        cache keeps them) at ``resource_version``; the watch goes on from there instead of listing again
        (an expired version, 410 Gone, makes it list after all)."""
        self._replace(res, items)
        self._seeded[res] = resource_version

    def start(self, *, timeout: float = 30.0) -> None:
        """Start the watches and return once each has its first list."""
        if self._resources and all(res in self._seeded for res in self._resources):
            self._changed = set()  # the consumer has seen the seeded objects: only changes are news
        for res in self._resources:
            thread = threading.Thread(target=self._run, args=(res,), name=f"watch-{res.plural}", daemon=True)
            thread.start()
            self._threads.append(thread)
        started = time.monotonic()
        deadline = started + timeout
        for res, synced in self._synced.items():
            # in steps, so that a cache stopped meanwhile (another context chosen) does not keep waiting
            while (
                not synced.wait(min(max(deadline - time.monotonic(), 0.1), 0.5)) and not self._stop.is_set()
            ):
                now = time.monotonic()
                failing = any(
                    not isinstance(e, NotFound | Forbidden) for e in self.errors
                )  # not: no such kind
                if now >= deadline or (failing and now >= started + FAILING_LIST_TIMEOUT):
                    if self.errors:
                        raise self.errors[-1]
                    raise TimeoutError(f"no initial list of {res.label} within {timeout:.0f}s")
            if self._stop.is_set():
                return

    def stop(self) -> None:
        """The watch threads end at their stream's next event or end; whoever owns the connection cuts
        the streams to end them now (`Client.cut_watches`: the TUI's `stop_live`)."""
        self._stop.set()
        self.events.put(_WAKE)

    def wake(self) -> None:
        """Wake a consumer blocked in `wait` (e.g. from a signal handler)."""
        self.events.put(_WAKE)

    def objects(self, res: Resource) -> list[Obj]:
        with self._lock:
            return [obj for names in self._objects[res].values() for obj in names.values()]

    def objects_in(self, res: Resource, namespaces: Iterable[str]) -> list[Obj]:
        """The objects of ``res`` in some namespaces."""
        with self._lock:
            by_ns = self._objects[res]
            if self._namespace is not None:
                return list(by_ns.get("", {}).values()) if self._namespace in set(namespaces) else []
            return [obj for ns in namespaces for obj in by_ns.get(ns, {}).values()]

    def namespaces(self) -> set[str]:
        """The namespaces this cache holds objects of."""
        with self._lock:
            held = {ns for by_ns in self._objects.values() for ns, names in by_ns.items() if names}
        if self._namespace is not None:
            return {self._namespace} if held else set()
        return held

    def take_changed(self) -> set[str] | None:
        """The namespaces whose objects changed since the last call; None when any may have (a list)."""
        with self._lock:
            changed, self._changed = self._changed, set()
        return changed

    def owners(self, res: Resource) -> Owners:
        """The objects of ``res`` grouped by owner, rebuilt only after a change."""
        with self._lock:
            index = self._owners.get(res)
            if index is None:
                index = self._owners[res] = Owners(
                    o for names in self._objects[res].values() for o in names.values()
                )
            return index

    def get(self, res: Resource, name: str) -> Obj | None:
        """The object named ``name`` (``namespace/name`` in a cluster-wide cache), if held."""
        ns, _, plain = name.rpartition("/") if self._namespace is None else ("", "", name)
        with self._lock:
            return self._objects[res].get(ns, {}).get(plain)

    def put(self, res: Resource, obj: Obj) -> None:
        """Record an object we just wrote, unless the cache already holds a newer version."""
        self._store(res, obj)

    def wait(self, timeout: float) -> bool:
        """Block until something changed or ``timeout`` passed; True when woken by a change."""
        try:
            self.events.get(timeout=max(timeout, 0.0))
        except queue.Empty:
            return False
        while not self.events.empty():  # coalesce a burst of events into one wake-up
            self.events.get_nowait()
        return True

    # -- internals -----------------------------------------------------------------------------------

    def _key(self, obj: Obj) -> str:
        meta = obj["metadata"]
        return (
            str(meta["name"])
            if self._namespace is not None
            else f"{meta.get('namespace', '')}/{meta['name']}"
        )

    def _count(self) -> int:
        return sum(len(names) for by_ns in self._objects.values() for names in by_ns.values())

    def _place(self, obj: Obj) -> tuple[str, str]:
        """Where ``obj`` is held: (its namespace, "" in a namespaced cache; its name), the object's own strings."""
        meta = obj["metadata"]
        return ("" if self._namespace is not None else str(meta.get("namespace", ""))), str(meta["name"])

    def _reducer(self, res: Resource) -> Reducer | None:
        reducer = reducer_for(res) if self._reduce else None
        intern = self._intern
        if intern is None or reducer is None:
            return reducer
        slim = reducer
        return lambda obj: intern.object(slim(obj))

    def _store(self, res: Resource, obj: Obj, *, deleted: bool = False) -> None:
        reducer = self._reducer(res)
        if reducer is not None:
            obj = reducer(obj)
        if self._intern is not None:
            self._stored += 1
            if self._stored > max(self._count(), 1000):
                self._intern.clear()  # most parts it remembers belong to objects replaced since
                self._stored = 0
        name = self._key(obj)
        ns, plain = self._place(obj)
        with self._lock:
            by_ns = self._objects[res]
            current = by_ns.get(ns, {}).get(plain)
            if current is not None and not deleted and _rv(current) > _rv(obj):
                return
            if deleted:
                names = by_ns.get(ns)
                if names is not None:
                    names.pop(plain, None)
                    if not names:
                        del by_ns[ns]
            else:
                by_ns.setdefault(ns, {})[plain] = obj
            self._owners.pop(res, None)
            if self._changed is not None:
                self._changed.add(str(obj.get("metadata", {}).get("namespace") or self._namespace or ""))
        self.events.put((res.plural, name))

    def _run(self, res: Resource) -> None:
        rv = self._seeded.pop(res, "")
        if rv:
            self._synced[res].set()
        backoff = 0.2
        while not self._stop.is_set():
            try:
                if not rv:
                    rv = self._relist(res)
                opened, quiet = time.monotonic(), True
                for event in self._client.watch(
                    res,
                    namespace=self._namespace,
                    resource_version=rv,
                    timeout_seconds=self._watch_timeout,
                    selector=self._selectors.get(res),
                ):
                    if self._stop.is_set():
                        return
                    obj = event["object"]
                    rv = obj.get("metadata", {}).get("resourceVersion", rv)
                    if event["type"] != "BOOKMARK":
                        self._store(res, obj, deleted=event["type"] == "DELETED")
                    quiet = False
                if quiet and time.monotonic() - opened < QUICK_WATCH:
                    # ended at once with nothing in it (a proxy closing streams, a server going away):
                    # asked again after a backoff, never in a loop that holds a core and the server
                    self._stop.wait(backoff)
                    backoff = min(backoff * 2, 5.0)
                else:
                    backoff = 0.2
            except Gone:
                rv = ""
            except (NotFound, Forbidden) as exc:
                # The kind does not exist here (no OpenShift) or we may not watch it: nothing to see.
                self.errors.append(exc)
                self._synced[res].set()
                return
            except ApiError as exc:
                self.errors.append(exc)
                self._stop.wait(backoff)
                backoff = min(backoff * 2, 5.0)

    def _relist(self, res: Resource) -> str:
        reducer = self._reducer(res)
        listing = self._client.list(
            res, namespace=self._namespace, selector=self._selectors.get(res), reduce=reducer
        )
        self._replace(res, listing.get("items", []))
        with self._lock:
            self._changed = None
        self._synced[res].set()
        self.events.put((res.plural, ""))
        return str(listing.get("metadata", {}).get("resourceVersion", ""))

    def _replace(self, res: Resource, items: Iterable[Obj]) -> None:
        by_ns: dict[str, dict[str, Obj]] = {}
        for obj in items:
            ns, name = self._place(obj)
            by_ns.setdefault(ns, {})[name] = obj
        with self._lock:
            self._objects[res] = by_ns
            self._owners.pop(res, None)


def _rv(obj: Obj) -> int:
    value = obj.get("metadata", {}).get("resourceVersion", "0")
    return int(value) if str(value).isdigit() else 0


class Keeping(Forwarding):
    """An `Api` for one read whose cluster-wide lists are kept (objects and resourceVersion, by resource)
    to `NamespaceCache.seed` the caches that follow it.

    Without this the TUI read the whole cluster twice before it was live: once namespace by namespace for
    the first screen (`rollguard.state.inventory`), then once more for the caches' first lists. `Keeping`
    stands between that read and the connection: it keeps what each cluster-wide list returned (reduced,
    then interned: `rollguard.cluster.reduce.Interner`) and the list's resourceVersion, the first page's (a
    paginated list is one snapshot at that version; a list whose continue token expired is not kept: it
    is no one snapshot, and the cache lists that resource again). The caches then start their
    watches from that version, as an informer's list-then-watch does, and a version the server no longer
    has (410 Gone) makes a cache list again itself. Reads only: a write through it is refused.
    """

    def __init__(self, inner: Api, intern: Interner) -> None:
        super().__init__(inner)
        self._intern = intern
        self.kept: dict[tuple[Resource, str | None], tuple[list[Obj], str]] = {}

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
        for page in self._inner.pages(res, selector=selector, reduce=lambda o: intern.object(slim(o))):
            rv = rv or page.resource_version
            whole = whole and not page.restarted
            items.extend(page.items)
            yield page
        if whole and rv:
            self.kept[(res, selector)] = (items, rv)

    def before_write(self) -> None:
        raise TypeError("a read does not write")
