"""List-then-watch caches of API objects (a minimal client-go informer).

Each informer keeps every object of one resource (optionally filtered by label selector) in memory,
resumes its watch from the last resourceVersion, re-lists when the server answers 410 Gone, and calls
its handler for every change. Controllers read the cache and write through it (`store`) so that their
next reconcile never acts on an object older than their own last write.

Write-through never swallows an event: the version a controller stored may hold changes it has not
handled (a merge patch absorbs others' edits; a re-read after a conflict brings someone's new spec), so
the watch event of that same version is still dispatched, as client-go dispatches every event. Only
events strictly older than the cached copy are dropped.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from sandbox.openshift.kube import JSON, ApiError, Kube

log = logging.getLogger(__name__)
Handler = Callable[[str, JSON], None]  # (event type, object)


def rv_int(obj: JSON) -> int:
    """An object's resourceVersion as a number (etcd revisions are; 0 when not numeric)."""
    try:
        return int(obj.get("metadata", {}).get("resourceVersion", "0"))
    except ValueError:
        return 0


def key_of(obj: JSON) -> tuple[str, str]:
    m = obj["metadata"]
    return m.get("namespace", ""), m["name"]


class Informer:
    """An in-memory, watch-fed copy of all objects at `path` (a cluster-wide list path)."""

    def __init__(
        self,
        kube: Kube,
        path: str,
        handler: Handler,
        label_selector: str | None = None,
        index: Callable[[JSON], str | None] | None = None,
    ) -> None:
        self.kube, self.path, self.handler, self.selector = kube, path, handler, label_selector
        self._index_fn = index
        self._objects: dict[tuple[str, str], JSON] = {}
        self._index: dict[tuple[str, str], set[str]] = {}  # (namespace, index value) -> names
        self._lock = threading.Lock()
        self.synced = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"informer {path}", daemon=True)

    # -- reading ---------------------------------------------------------------------------------------

    def get(self, namespace: str, name: str) -> JSON | None:
        with self._lock:
            return self._objects.get((namespace, name))

    def objects(self, namespace: str | None = None) -> list[JSON]:
        with self._lock:
            return [o for (ns, _), o in self._objects.items() if namespace is None or ns == namespace]

    def by_index(self, namespace: str, value: str) -> list[JSON]:
        with self._lock:
            names = self._index.get((namespace, value), ())
            return [self._objects[(namespace, n)] for n in names if (namespace, n) in self._objects]

    # -- writing ---------------------------------------------------------------------------------------

    def store(self, obj: JSON) -> bool:
        """Put `obj` in the cache if it is newer than the cached copy; False if it is strictly older.

        The same version as the cached one (a controller's own write coming back) is not stored again
        but counts as current: its event is still worth dispatching.
        """
        k = key_of(obj)
        with self._lock:
            old = self._objects.get(k)
            if old is not None and rv_int(old) >= rv_int(obj):
                return rv_int(old) == rv_int(obj)
            self._put(k, obj, old)
        return True

    def forget(self, obj: JSON) -> None:
        k = key_of(obj)
        with self._lock:
            old = self._objects.pop(k, None)
            if old is not None:
                self._unindex(k, old)

    def _put(self, k: tuple[str, str], obj: JSON, old: JSON | None) -> None:
        if old is not None:
            self._unindex(k, old)
        self._objects[k] = obj
        if self._index_fn and (v := self._index_fn(obj)) is not None:
            self._index.setdefault((k[0], v), set()).add(k[1])

    def _unindex(self, k: tuple[str, str], old: JSON) -> None:
        if self._index_fn and (v := self._index_fn(old)) is not None:
            names = self._index.get((k[0], v))
            if names:
                names.discard(k[1])
                if not names:
                    del self._index[(k[0], v)]

    # -- running ---------------------------------------------------------------------------------------

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    def _run(self) -> None:
        rv = ""
        backoff = 0.2
        while not self._stop.is_set():
            try:
                if not rv:
                    rv = self._relist()
                    self.synced.set()
                rv = self._watch(rv)
                backoff = 0.2
            except ApiError as e:
                if e.status == 410:
                    log.info("watch %s: resourceVersion too old, re-listing", self.path)
                    rv = ""
                    continue
                log.warning("watch %s: %s", self.path, e)
                time.sleep(backoff)
                backoff = min(backoff * 2, 5.0)
            except Exception as e:  # connection resets, timeouts: resume from the last resourceVersion
                if not self._stop.is_set():
                    log.debug("watch %s interrupted: %r", self.path, e)
                    time.sleep(backoff)
                    backoff = min(backoff * 2, 5.0)

    def _relist(self) -> str:
        items: list[JSON] = []
        cont = None
        while True:
            page = self.kube.get(self.path, labelSelector=self.selector, limit=500, **{"continue": cont})
            items.extend(page.get("items", []))
            cont = page.get("metadata", {}).get("continue")
            if not cont:
                break
        kind = page.get("kind", "").removesuffix("List")
        api_version = page.get("apiVersion")
        fresh = {}
        for obj in items:
            obj.setdefault("kind", kind)
            obj.setdefault("apiVersion", api_version)
            fresh[key_of(obj)] = obj
        with self._lock:
            gone = [o for k, o in self._objects.items() if k not in fresh]
            changed = []
            for k, obj in fresh.items():
                old = self._objects.get(k)
                if old is None or rv_int(old) < rv_int(obj):
                    self._put(k, obj, old)
                if old is None or rv_int(old) <= rv_int(obj):  # as client-go's Replace: all but older
                    changed.append(obj)
            for o in gone:
                self._objects.pop(key_of(o), None)
                self._unindex(key_of(o), o)
        for o in gone:
            self._dispatch("DELETED", o)
        for o in changed:
            self._dispatch("ADDED", o)
        return str(page.get("metadata", {}).get("resourceVersion", ""))

    def _watch(self, rv: str) -> str:
        for ev in self.kube.watch(self.path, rv, labelSelector=self.selector):
            if self._stop.is_set():
                break
            etype, obj = str(ev.get("type")), ev.get("object") or {}
            if etype == "ERROR":
                raise ApiError(int(obj.get("code", 500)), obj, "WATCH", self.path)
            new_rv = obj.get("metadata", {}).get("resourceVersion")
            if new_rv:
                rv = new_rv
            if etype == "BOOKMARK":
                continue
            if etype == "DELETED":
                self.forget(obj)
            elif not self.store(obj):
                continue  # a controller already wrote a newer version through, and reacts to its event
            self._dispatch(etype, obj)
        return rv

    def _dispatch(self, etype: str, obj: JSON) -> None:
        try:
            self.handler(etype, obj)
        except Exception:
            log.exception("handler for %s failed", self.path)


def noop(_etype: str, _obj: Any) -> None:
    """A handler that does nothing (for caches nobody reacts to)."""
