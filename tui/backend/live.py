"""The read and the live caches: what the table shows, judged again as the cluster changes.

`Live` reads the namespaces in view once (`read`, streamed namespace by namespace), starts one watch cache
per namespace or one for the whole cluster (`start_live`, seeded from the read's lists with -A), waits for
changes (`wait`) and re-judges only the namespaces that changed (`cached`). The held states keep their
groups only (`_slim`: once a namespace's rows are made, its workloads' states are read by no one, and at
10,000 workloads their revisions and pods are most of the memory); `_full` judges one namespace again,
with them, for the screens that need them. These are
one module because they share the states, their rows (`_parts`) and the intern table and hand them to one
another in order. Pure judging is `rollguard.tui.data`'s; only the listing and watching is here.
"""

from __future__ import annotations

import dataclasses
import queue
import time
from collections.abc import Callable

from rollguard.cluster.cache import Keeping, NamespaceCache
from rollguard.core.resources import Resource
from rollguard.core.structs import Obj
from rollguard.kinds import KINDS
from rollguard.state import assessment, inventory
from rollguard.state.inventory import LISTS, WORKLOADS
from rollguard.tui import data
from rollguard.tui.backend.core import WATCH_TIMEOUT, Core, Superseded
from rollguard.tui.views import Inventory, WorkloadRow

PARTIAL_EVERY = 0.5  # seconds to the first partial inventory of a long first read (then doubling)
CLUSTER_LIST_TIMEOUT = 600.0  # seconds a cluster-wide cache may take for its first lists


class Live(Core):
    """The read, the live caches and the states judged from them."""

    def read(
        self,
        on_partial: Callable[[Inventory], None] | None = None,
        *,
        for_live: bool = False,
        stop: Callable[[], bool] | None = None,
    ) -> Inventory:
        """One read (first screen and reloads), namespace by namespace as `rollguard.state.inventory` streams
        it: paginated, reduced, narrowed by the selector.

        ``on_partial`` gets the inventory of the namespaces read so far after `PARTIAL_EVERY` seconds of a
        long read (the whole cluster), then after twice as long each time, so that the first screen does
        not wait for the last namespace and the table is rebuilt only a few times.
        ``stop``: asked between namespaces; True ends the read with `Superseded` (a newer load began).
        ``for_live``: `start_live` follows; with -A (no selector) the read's cluster-wide lists are kept
        for the caches to watch on from (`rollguard.cluster.cache.Keeping`): the cluster is not read twice.
        """
        scope = None if self.all_namespaces else [self.namespace or "default"]
        selector = self.options.selector or None
        self._problems = []
        objects: dict[Resource, list[Obj]] = {res: [] for res, _fixed, _filtered in LISTS.values()}
        states: dict[str, assessment.NamespaceState] = {}
        now = self.now()
        last, every = time.perf_counter(), PARTIAL_EVERY
        keeping = Keeping(self.api, self._intern) if for_live and scope is None and not selector else None
        self._seed, assessing = {}, 0.0
        # The caches will hold revisions and pods; until then `_full` finds them among what this read listed
        self._reading = objects if for_live else None
        for ns, lists in inventory.namespace_lists(
            keeping or self.api, scope, selector=selector, problems=self._problems
        ):
            if stop is not None and stop():
                raise Superseded
            for arg, items in lists.items():
                if arg in WORKLOADS and keeping is None:  # kept (detail), and shared with the caches' copies
                    items = lists[arg] = [self._intern.object(o) for o in items]
                objects[LISTS[arg][0]].extend(items)
            start = time.perf_counter()
            states[ns] = assessment.assess_namespace(ns, selector=selector, now=now, **lists)
            if for_live:
                states[ns] = _slim(states[ns], self._parts)
            assessing += time.perf_counter() - start
            if on_partial is not None and time.perf_counter() - last >= every:
                on_partial(data.inventory_of(states, reuse=self._parts))
                last, every = time.perf_counter(), every * 2  # each repaint of a growing table costs more
        self.timings["listed"] = time.perf_counter()
        self.timings["everything_s"] = assessing
        if keeping is not None:
            self._seed = {
                res: keeping.kept[(res, fixed)]
                for res, fixed, _f in LISTS.values()
                if (res, fixed) in keeping.kept
            }
            # Everything kept is interned: the table that found the shared parts (~8 MiB at 10,000
            # workloads) goes now, before the last inventory and the caches are built beside it.
            self._intern.clear()
        return self._done(objects, states, data.inventory_of(states, reuse=self._parts))

    def _build(self, objects: dict[Resource, list[Obj]]) -> Inventory:
        self.timings["listed"] = time.perf_counter()  # the data is here; the rest is ours
        inventory, states = data.build_inventory(
            objects, selector=self.options.selector, now=self.now(), reuse=self._parts
        )
        return self._done(objects, states, inventory)

    def _done(
        self,
        objects: dict[Resource, list[Obj]],
        states: dict[str, assessment.NamespaceState],
        inventory: Inventory,
    ) -> Inventory:
        if self._problems:
            inventory = dataclasses.replace(inventory, errors=tuple(dict.fromkeys(self._problems)))
        # Only the workloads are looked up again (detail); the read's revisions and pods are dropped here,
        # before the live caches list theirs, so the two copies are not held at once.
        if not self._incremental:
            self._objects = {k.resource: objects.get(k.resource, []) for k in KINDS.values()}
        if self._caches:  # the caches hold what revisions and pods are: `_full` judges them on demand
            for ns, ns_state in states.items():
                states[ns] = _slim(ns_state, self._parts)
        self._states, self.inventory = states, inventory
        self.timings["assessed"] = time.perf_counter()
        self.timings.setdefault("first_assess_s", self.timings["assessed"] - self.timings["listed"])
        return inventory

    def start_live(self) -> None:
        """Watch every namespace in view; returns once each cache has its first list."""
        self.stop_live()
        self._changes = queue.Queue()
        seed, self._seed = self._seed, {}
        # Every list kept from the read: the caches watch on from it and the read's states stay current
        # (only what changes from then on is assessed again). Otherwise the caches list it all again.
        seeded = self.all_namespaces and not self.options.selector and set(seed) == set(data.WATCHED)
        if not seed:
            self._intern.clear()  # what the table holds is the last read's, the caches list anew
        # The whole cluster: one watch per resource, not one per namespace and resource. Objects are kept
        # reduced (a read-only view) and journals and leases selected by label, as the first read did.
        scopes: list[str | None] = (
            [None] if self.all_namespaces and not self.options.selector else list(self.watched_namespaces())
        )
        selectors = {res: fixed for res, fixed, _filtered in LISTS.values() if fixed}
        for ns in scopes:
            cache = NamespaceCache(
                self.api,
                ns,
                data.WATCHED,
                reduce=True,
                selectors=selectors,
                intern=self._intern,
                watch_timeout=WATCH_TIMEOUT,
            )
            cache.events = self._changes  # one queue for all caches: one blocking wait covers them all
            for res, (items, rv) in seed.items() if ns is None else ():
                cache.seed(res, items, rv)
            # A cluster-wide list not seeded (no read before, or its continue token expired) takes minutes
            # on a big cluster: 30 s made the loader give up and read everything again, never live.
            cache.start(timeout=30.0 if ns is not None else CLUSTER_LIST_TIMEOUT)
            self._caches[ns or ""] = cache
        if seeded:
            self._objects, self._incremental = {}, True
        # The parts of what is held are shared now; the table that found them would cost a third as much
        # again (300,000 entries at 10,000 workloads). Changes from here on share among themselves.
        self._intern.clear()
        self._reading = None  # the caches serve `_full` now

    def poke(self) -> None:
        """Wake a `wait` now (a dialog closed: show what changed meanwhile)."""
        self._changes.put(("poke", ""))

    @property
    def live(self) -> bool:
        return bool(self._caches)

    def follow_new_namespaces(self) -> bool:
        """With -A and a selector the caches are per namespace: start one for each namespace that now
        holds workloads of the selector (a namespace created after start). True when one was added."""
        if not self.all_namespaces or not self._caches or "" in self._caches:
            return False  # one namespace, or one cluster-wide watch that sees new namespaces itself
        new = [ns for ns in self.watched_namespaces() if ns not in self._caches]
        selectors = {res: fixed for res, fixed, _filtered in LISTS.values() if fixed}
        for ns in new:
            cache = NamespaceCache(
                self.api,
                ns,
                data.WATCHED,
                reduce=True,
                selectors=selectors,
                intern=self._intern,
                watch_timeout=WATCH_TIMEOUT,
            )
            cache.events = self._changes
            cache.start()
            self._caches[ns] = cache
        return bool(new)

    def wait(self, timeout: float, *, settle: float = 0.1) -> bool:
        """Block until a watched object changed (True) or ``timeout`` passed.

        After the first change it waits ``settle`` seconds more, so a burst (a rollout touches the
        workload, its revisions and pods within milliseconds) costs one refresh.
        """
        try:
            self._changes.get(timeout=timeout)
        except queue.Empty:
            return False
        time.sleep(settle)
        while not self._changes.empty():
            self._changes.get_nowait()
        return True

    def cached(self, *, everything: bool = False) -> Inventory:
        """The inventory from the live caches (no API call).

        Only the namespaces whose objects changed since the last call are assessed again (a namespace's
        state depends on its own objects only), unless ``everything``: the same objects judged at a later
        now (time-based findings). Either way one namespace at a time, each state replaced as it is
        made, so that a whole cluster's states are not held twice. After a cache (re)listed, or before
        the states are the caches' own, everything is built from the caches at once.
        """
        caches = list(self._caches.values())
        changed: set[str] | None = set()
        for cache in caches:
            got = cache.take_changed()
            changed = None if got is None or changed is None else changed | got
        if changed is None or not self._incremental:
            objects: dict[Resource, list[Obj]] = {res: [] for res in data.WATCHED}
            for cache in caches:
                for res in data.WATCHED:
                    objects[res].extend(cache.objects(res))
            self._objects, self._incremental = {}, bool(caches)  # the caches hold the workloads now
            start = time.perf_counter()
            inventory = self._build(objects)
            self.timings["everything_s"] = time.perf_counter() - start
            return inventory
        self.timings["listed"] = time.perf_counter()
        states, now = self._states, self.now()
        todo = changed
        if everything:
            todo = set(states).union(*(cache.namespaces() for cache in caches))
        for ns in sorted(todo):
            objects = self._cached_in(ns)
            if any(objects.values()):  # the whole state made and cut one namespace at a time
                judged = data.assess(ns, objects, selector=self.options.selector, now=now)
                # its rows now, so that the state replaced is let go now (its part named it)
                states[ns] = _slim(judged, self._parts)
            else:
                states.pop(ns, None)
        if everything:
            self.timings["everything_s"] = time.perf_counter() - self.timings["listed"]
        return self._done({}, states, data.inventory_of(states, reuse=self._parts))

    def _cached_in(self, namespace: str) -> dict[Resource, list[Obj]]:
        caches = list(self._caches.values())
        return {res: [o for c in caches for o in c.objects_in(res, (namespace,))] for res in data.WATCHED}

    def _full(self, row: WorkloadRow) -> assessment.WorkloadState | None:
        """The state of a row's workload with its revisions and pods (detail, logs, diffs).

        While the caches serve (and during the read that seeds them), the held states leave those out (50,000 revisions and 30,000 pods at
        10,000 workloads, read by one screen of one workload): its namespace is judged again from the
        caches, now."""
        ns = row.namespace
        if self._caches:
            objects = self._cached_in(ns)
        elif self._reading is not None:  # a read for the caches, under way or just done
            objects = {
                res: [o for o in items if data.namespace_of(o) == ns] for res, items in self._reading.items()
            }
        else:
            return data.find_state(self._states, row)
        judged = data.assess(ns, objects, selector=self.options.selector, now=self.now())
        return data.find_state({ns: judged}, row)

    def held(self, res: Resource) -> list[Obj]:
        """What the live caches hold of ``res`` (reduced, parts shared): for tests and benchmarks."""
        return [obj for cache in list(self._caches.values()) for obj in cache.objects(res)]


def _slim(ns_state: assessment.NamespaceState, parts: dict[str, data.Part]) -> assessment.NamespaceState:
    """``ns_state`` without its workloads (their rows are made: ``parts`` holds them, made now if they
    were not yet), the same object when it has none; its part then names the state kept, so that
    `data.inventory_of` reuses the rows. What is kept is what the screens read of a held state: its
    groups (journals, leases); a workload's own state, with its revisions and pods, is `_full`'s."""
    if not ns_state.workloads:
        return ns_state
    ns = ns_state.namespace
    part = parts.get(ns)
    if part is None or part[0] is not ns_state:
        part = data.namespace_part(ns_state, part)
    slim = dataclasses.replace(ns_state, workloads=())
    parts[ns] = (slim, *part[1:])
    return slim
