"""The TUI's one door to the cluster: connects, reads, watches, checks permissions and acts.

Every call the TUI makes on a cluster (through an `rollguard.client.Api`: the real `Client`, or a test
double) and every read of the kubeconfig is here, so that the rest of the TUI is pure or Textual.
Every method may block on the network: the app and its screens call them from thread workers only.
Views are built by `rollguard.tui.data` (pure) from what this module read.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import queue
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from rollguard import inventory, state
from rollguard.access import check_access
from rollguard.client import Api, Client, LogOptions
from rollguard.errors import EXIT_REFUSED, Forbidden, NoLog, NotFound, RefusedError
from rollguard.inventory import LISTS, WORKLOADS
from rollguard.kinds import kind_of
from rollguard.kubeconfig import contexts, resolve
from rollguard.reduce import Interner
from rollguard.repair import Repair
from rollguard.repair_plan import ACTIONS, plan_repair
from rollguard.resources import DEPLOYMENT_CONFIGS, DEPLOYMENTS, EVENTS, NAMESPACES, PODS, Resource
from rollguard.structs import Obj, Status
from rollguard.tui import data, logs
from rollguard.tui.diff import TemplateDiff, template_diff
from rollguard.tui.views import (
    DetailView,
    Inventory,
    PlanView,
    ResultView,
    Target,
    WorkloadRow,
    command_line,
)
from rollguard.watcher import Keeping, NamespaceCache

PROBE_SELECTOR = "rollguard.io/liveness-probe=none"  # matches no namespace: the smallest answer there is
PARTIAL_EVERY = 0.5  # seconds to the first partial inventory of a long first read (then doubling)
ClientFactory = Callable[[str | None, str | None], Api]  # (kubeconfig, context) -> a cluster connection
Printer = Callable[[str], None]
CLUSTER_LIST_TIMEOUT = 600.0  # seconds a cluster-wide cache may take for its first lists
ACTION_TIMEOUT = 600  # seconds a repair started from the TUI may watch its rollouts


@dataclass(frozen=True)
class Options:
    """What `rollguard tui` was asked for."""

    namespace: str | None = None
    all_namespaces: bool = False
    selector: str = ""
    context: str | None = None
    kubeconfig: str | None = None
    read_only: bool = False


def default_factory(kubeconfig: str | None, context: str | None) -> Api:
    return Client.connect(kubeconfig=kubeconfig, context=context)


def kubeconfig_contexts(kubeconfig: str | None) -> tuple[list[str], str | None]:
    """Context names of the (merged) kubeconfig and its current one ([] inside a pod without one)."""
    return contexts(kubeconfig)


def default_namespace(kubeconfig: str | None, context: str | None) -> str:
    """The namespace by kubectl's rule (`rollguard.kubeconfig`): the context's, the pod's, else default."""
    try:
        return resolve(kubeconfig=kubeconfig, context=context).namespace(None)[0]
    except RefusedError:  # connect() has already said what is wrong with the kubeconfig
        return "default"


class Backend:
    """One cluster connection, the namespaces in view, and their live caches."""

    def __init__(
        self,
        options: Options,
        *,
        factory: ClientFactory = default_factory,
        now: Callable[[], dt.datetime] = lambda: dt.datetime.now(dt.UTC),
    ) -> None:
        self.options = options
        self._factory = factory
        self.client: Api | None = None
        self.context = options.context
        self.context_name = options.context  # for display: the kubeconfig's current one when not given
        self.namespace = options.namespace
        self.all_namespaces = options.all_namespaces
        self.now = now
        self._caches: dict[str, NamespaceCache] = {}
        self._changes: queue.Queue[tuple[str, str]] = queue.Queue()
        self._access: dict[tuple[str, str, str], bool] = {}
        self.by_kind: dict[tuple[str, str], frozenset[str]] = {}  # (namespace, kind) -> actions allowed
        self._objects: dict[Resource, list[Obj]] = {}  # the last read's workloads, until the caches serve
        # One table of shared parts for the read and the live caches: the caches' first lists then hold
        # the very objects the read kept, and a workload's revisions share their templates.
        self._intern = Interner()
        self._incremental = False  # the states are the caches' own: refresh only what changed
        self._seed: dict[Resource, tuple[list[Obj], str]] = {}  # the read's lists, for start_live
        self._problems: list[str] = []
        self.timings: dict[str, float] = {}
        self._states: dict[str, state.NamespaceState] = {}
        self._parts: dict[str, data.Part] = {}  # the rows and group views each namespace's state made
        # A read for the live caches: what it listed so far, by resource, until the caches serve (`_full`)
        self._reading: dict[Resource, list[Obj]] | None = None
        self.inventory: Inventory | None = None

    @property
    def api(self) -> Api:
        """The connection; `connect` makes it (the app connects before anything else)."""
        if self.client is None:
            raise RuntimeError("the TUI's backend is used before connect()")
        return self.client

    # -- connection ---------------------------------------------------------------------------------

    def connect(self, context: str | None = None) -> None:
        """(Re)connect, optionally to another kubeconfig context; stops the live caches."""
        self.stop_live()
        if context is not None:
            self.context = context
        self.client = self._factory(self.options.kubeconfig, self.context)
        self._access.clear()
        self.by_kind.clear()
        self._parts = {}
        if self.context is None:  # show which context "the current one" is
            self.context_name = kubeconfig_contexts(self.options.kubeconfig)[1]
        else:
            self.context_name = self.context
        if not self.all_namespaces and not self.namespace:
            self.namespace = default_namespace(self.options.kubeconfig, self.context)

    def contexts(self) -> tuple[list[str], str | None]:
        names, current = kubeconfig_contexts(self.options.kubeconfig)
        return names, self.context or current

    def namespaces(self) -> list[str]:
        """Namespaces the user may list; when that is forbidden, just the current one."""
        try:
            items = self.api.list(NAMESPACES).get("items", [])
        except Forbidden:
            return [self.namespace] if self.namespace else []
        return sorted(n["metadata"]["name"] for n in items)

    # -- reading ------------------------------------------------------------------------------------

    def _list(self, res: Resource, namespace: str | None, selector: str | None = None) -> list[Obj]:
        try:
            return list(self.api.list(res, namespace=namespace, selector=selector).get("items", []))
        except NotFound:
            return []  # not OpenShift: no DCs
        except Forbidden:
            where = f"in {namespace}" if namespace else "cluster-wide"
            self._problems.append(f"not allowed to list {res.label} {where}: findings may be incomplete")
            return []

    def watched_namespaces(self) -> list[str]:
        if not self.all_namespaces:
            return [self.namespace or "default"]
        found: set[str] = set()
        for res in (DEPLOYMENT_CONFIGS, DEPLOYMENTS):
            found |= {
                o["metadata"].get("namespace", "")
                for o in self._list(res, None, self.options.selector or None)
            }
        return sorted(found)

    def read(
        self, on_partial: Callable[[Inventory], None] | None = None, *, for_live: bool = False
    ) -> Inventory:
        """One read (first screen and reloads), namespace by namespace as `rollguard.inventory` streams
        it: paginated, reduced, narrowed by the selector.

        ``on_partial`` gets the inventory of the namespaces read so far after `PARTIAL_EVERY` seconds of a
        long read (the whole cluster), then after twice as long each time, so that the first screen does
        not wait for the last namespace and the table is rebuilt only a few times.
        ``for_live``: `start_live` follows; with -A (no selector) the read's cluster-wide lists are kept
        for the caches to watch on from (`rollguard.watcher.Keeping`): the cluster is not read twice.
        """
        scope = None if self.all_namespaces else [self.namespace or "default"]
        selector = self.options.selector or None
        self._problems = []
        objects: dict[Resource, list[Obj]] = {res: [] for res, _fixed, _filtered in LISTS.values()}
        states: dict[str, state.NamespaceState] = {}
        now = self.now()
        last, every = time.perf_counter(), PARTIAL_EVERY
        keeping = Keeping(self.api, self._intern) if for_live and scope is None and not selector else None
        self._seed, assessing = {}, 0.0
        # The caches will hold revisions and pods; until then `_full` finds them among what this read listed
        self._reading = objects if for_live else None
        for ns, lists in inventory.namespace_lists(
            keeping or self.api, scope, selector=selector, problems=self._problems
        ):
            for arg, items in lists.items():
                if arg in WORKLOADS and keeping is None:  # kept (detail), and shared with the caches' copies
                    items = lists[arg] = [self._intern.object(o) for o in items]
                objects[LISTS[arg][0]].extend(items)
            start = time.perf_counter()
            states[ns] = state.assess_namespace(ns, selector=selector, now=now, **lists)
            if for_live:
                states[ns] = _without_revisions(states[ns], self._parts)
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
        states: dict[str, state.NamespaceState],
        inventory: Inventory,
    ) -> Inventory:
        if self._problems:
            inventory = dataclasses.replace(inventory, errors=tuple(dict.fromkeys(self._problems)))
        # Only the workloads are looked up again (detail); the read's revisions and pods are dropped here,
        # before the live caches list theirs, so the two copies are not held at once.
        if not self._incremental:
            self._objects = {res: objects.get(res, []) for res in (DEPLOYMENT_CONFIGS, DEPLOYMENTS)}
        if self._caches:  # the caches hold what revisions and pods are: `_full` judges them on demand
            for ns, ns_state in states.items():
                states[ns] = _without_revisions(ns_state, self._parts)
        self._states, self.inventory = states, inventory
        self.timings["assessed"] = time.perf_counter()
        self.timings.setdefault("first_assess_s", self.timings["assessed"] - self.timings["listed"])
        return inventory

    # -- live ----------------------------------------------------------------------------------------

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
                self.api, ns, data.WATCHED, reduce=True, selectors=selectors, intern=self._intern
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

    def stop_live(self) -> None:
        for cache in self._caches.values():
            cache.stop()
        self._caches.clear()
        self._incremental = False

    def poke(self) -> None:
        """Wake a `wait` now (a dialog closed: show what changed meanwhile)."""
        self._changes.put(("poke", ""))

    @property
    def live(self) -> bool:
        return bool(self._caches)

    def probe(self) -> None:
        """One cheap request (a namespace list matching no label): returns when the server answers,
        raises the transport's error (`Unreachable`, a 5xx) when it does not. A refusal is an answer."""
        with contextlib.suppress(Forbidden, NotFound):
            self.api.list(NAMESPACES, selector=PROBE_SELECTOR)

    def follow_new_namespaces(self) -> bool:
        """With -A and a selector the caches are per namespace: start one for each namespace that now
        holds workloads of the selector (a namespace created after start). True when one was added."""
        if not self.all_namespaces or not self._caches or "" in self._caches:
            return False  # one namespace, or one cluster-wide watch that sees new namespaces itself
        new = [ns for ns in self.watched_namespaces() if ns not in self._caches]
        selectors = {res: fixed for res, fixed, _filtered in LISTS.values() if fixed}
        for ns in new:
            cache = NamespaceCache(
                self.api, ns, data.WATCHED, reduce=True, selectors=selectors, intern=self._intern
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
                states[ns] = _without_revisions(judged, self._parts)
                # its rows now, so that the state replaced is let go now (its part named it)
                self._parts[ns] = data.namespace_part(states[ns], self._parts.get(ns))
            else:
                states.pop(ns, None)
        if everything:
            self.timings["everything_s"] = time.perf_counter() - self.timings["listed"]
        return self._done({}, states, data.inventory_of(states, reuse=self._parts))

    def _cached_in(self, namespace: str) -> dict[Resource, list[Obj]]:
        caches = list(self._caches.values())
        return {res: [o for c in caches for o in c.objects_in(res, (namespace,))] for res in data.WATCHED}

    def _full(self, row: WorkloadRow) -> state.WorkloadState | None:
        """The state of a row's workload with its revisions and pods (detail, logs, diffs).

        While the caches serve (and during the read that seeds them), the held states leave those out (50,000 revisions and 30,000 pods at
        10,000 workloads, read by one screen of one workload): its namespace is judged again from the
        caches, now."""
        ns = row.namespace
        if self._caches:
            objects = self._cached_in(ns)
        elif self._reading is not None:  # a read for the caches, under way or just done
            objects = {res: [o for o in items if data.namespace_of(o) == ns] for res, items in self._reading.items()}
        else:
            return data.find_state(self._states, row)
        judged = data.assess(ns, objects, selector=self.options.selector, now=self.now())
        return data.find_state({ns: judged}, row)

    def held(self, res: Resource) -> list[Obj]:
        """What the live caches hold of ``res`` (reduced, parts shared): for tests and benchmarks."""
        return [obj for cache in list(self._caches.values()) for obj in cache.objects(res)]

    def _workload(self, row: WorkloadRow) -> Obj | None:
        """The reduced workload of a row: from the live caches, else from the last read."""
        res = kind_of(row.kind).resource
        for ns, cache in list(self._caches.items()):
            if ns in ("", row.namespace):
                obj = cache.get(res, row.name if ns else f"{row.namespace}/{row.name}")
                if obj is not None:
                    return obj
        return data.workload_object(self._objects, row)

    def detail(self, row: WorkloadRow) -> DetailView:
        """The detail of one row, from the last read plus the namespace's events (one list call)."""
        ws = self._full(row)
        obj = self._workload(row)
        names = data.involved_names(ws, row)
        events = [
            e
            for e in self._list(EVENTS, row.namespace)
            if (e.get("involvedObject") or {}).get("name") in names
        ]
        group = self.inventory.groups.get(row.group_key) if self.inventory else None
        ns_state = self._states.get(row.namespace)
        home = next((g for g in ns_state.groups if ws and g.name == ws.group), None) if ns_state else None
        return data.build_detail(row, ws, obj, events, group, home.journal if home else None)

    def log_pods(
        self, row: WorkloadRow, *, revision: int | None = None, ws: state.WorkloadState | None = None
    ) -> list[str]:
        """The pods `l` may show the logs of: those of revision ``revision``, else of the newest revision
        that has pods (from the last read, or ``ws``; `rollguard.tui.logs` GETs them to find the newest)."""
        ws = ws or self._full(row)
        if ws is None:
            return []
        names = [r.name for r in ws.revisions if revision is None or r.number == revision]
        for rev in names:  # newest revision first
            pods = [p.name for p in ws.pods if p.revision == rev]
            if pods:
                return pods
        return []

    def deployer_pod(
        self, row: WorkloadRow, *, revision: int | None = None, ws: state.WorkloadState | None = None
    ) -> str | None:
        """The pod `l` shows when revision ``revision`` (else the newest) has no pods: the one the kind says
        tells how its rollout went (a DC's deployer pod), read from the live revision as `oc logs dc/NAME`
        reads it; None when the revision has pods, or the kind runs no such pod."""
        ws = ws or self._full(row)
        rev = (
            next((r for r in ws.revisions if revision is None or r.number == revision), None) if ws else None
        )
        if ws is None or rev is None or any(p.revision == rev.name for p in ws.pods):
            return None
        kind = kind_of(row.kind)
        try:
            return kind.deployer_pod(self.api.get(kind.revisions, rev.name, namespace=row.namespace))
        except NotFound:
            return None

    def follow_logs(
        self, row: WorkloadRow, *, revision: int | None, pod: str | None = None, container: str | None = None,
        stop: threading.Event, tail: int = logs.TAIL,
    ) -> Iterator[logs.LogEvent]:  # fmt: skip
        """The logs page's content for pod ``pod``, else the newest pod of ``row`` (or of its revision
        ``revision``), as it comes: the previous container's log when there is one, then the current one
        followed; a restart adds the log of the container that ended. ``container``: that one, else the
        one `logs.container_to_show` picks; a revision without pods: its `deployer_pod`'s log. Ends soon
        after ``stop`` is set."""
        found = []
        ws = None if pod else self._full(row)
        deployer = None if pod else self.deployer_pod(row, revision=revision, ws=ws)
        one = pod or deployer
        names = [one] if one else self.log_pods(row, revision=revision, ws=ws)
        for name in names[: logs.MAX_PODS]:
            with contextlib.suppress(NotFound):  # deleted since the read the row was made from
                found.append(self.api.get(PODS, name, namespace=row.namespace))
        newest = logs.newest_pod(found)
        if newest is None:
            yield logs.Note(logs.nothing_to_show(pod=pod, deployer=deployer), warning=True)
            return
        name, container, ns = newest["metadata"]["name"], logs.container_to_show(newest, container), row.namespace
        yield from logs.opening(newest, container, len(found), deployer=deployer is not None)
        inst = logs.instance_of(newest, container)
        if inst.previous:
            yield logs.Heading(f"previous container (restart {inst.restarts}): {inst.previous}")
            yield from self._log(name, ns, container, previous=True, tail=tail, stop=stop)
        noted = False
        while not stop.is_set():
            yield logs.Heading(f"current container: {inst.detail}")
            if logs.crash_looping(inst):  # the kubelet would serve the previous container's log again
                if not noted:
                    yield logs.Note("it has not started again yet: the log above is its last run")
                    noted = True
            else:
                yield from self._log(name, ns, container, previous=False, tail=tail, stop=stop, follow=True)
            seen = inst
            while not stop.wait(logs.POLL):  # the log ended, or the container waits: look for a restart
                try:
                    inst = logs.instance_of(self.api.get(PODS, name, namespace=ns), container)
                except NotFound:
                    yield logs.Note(f"pod {name} was deleted", warning=True)
                    return
                if logs.restarted(seen, inst):
                    break
            else:
                return
            if inst.restarts != seen.restarts and inst.previous:
                yield logs.Heading(
                    f"restarted (restart {inst.restarts}): the container before {inst.previous}"
                )
                yield from self._log(name, ns, container, previous=True, tail=tail, stop=stop)

    def _log(
        self, pod: str, namespace: str, container: str, *, previous: bool, tail: int, stop: threading.Event,
        follow: bool = False,
    ) -> Iterator[logs.LogEvent]:  # fmt: skip
        try:
            options = LogOptions(container, follow=follow, previous=previous, tail_lines=tail)
            for text in self.api.pod_log(pod, namespace=namespace, options=options, stop=stop):
                yield logs.Line(text)
        except NoLog as exc:
            yield logs.Note(str(exc), warning=True)

    def yaml(self, row: WorkloadRow) -> str:
        """The workload as the API holds it now (one GET: the cache keeps reduced objects only)."""
        res = kind_of(row.kind).resource
        return data.as_yaml(self.api.get(res, row.name, namespace=row.namespace))

    def template_diff(self, row: WorkloadRow, *, revision: int | None = None) -> TemplateDiff:
        """The live template (one GET) against revision `revision` or, without one, the journal's verified one."""
        kind = kind_of(row.kind)
        live = self.api.get(kind.resource, row.name, namespace=row.namespace)
        after = (live.get("spec") or {}).get("template")
        ws = self._full(row)
        if revision is not None:
            names = [r.name for r in (ws.revisions if ws else ()) if r.number == revision]
            rev = self.api.get(kind.revisions, names[0], namespace=row.namespace) if names else {}
            before = kind.revision_template(rev) if rev else None
            left = f"revision {revision}" if names else f"revision {revision} (not found)"
        else:
            before, left = None, "no verified template (rollguard has not run on this group)"
            groups = self._states[row.namespace].groups if row.namespace in self._states else ()
            for group in groups:
                if ws is not None and group.name == ws.group:
                    for entry in group.journal.workloads.values():
                        if entry.kind == row.kind and entry.name == row.name:
                            before, left = entry.verified.template, f"verified by run {group.run_id}"
        return template_diff(before=before, after=after, left=left, right="live")

    # -- permissions and actions ---------------------------------------------------------------------

    def _may(self, verb: str, res: Resource, namespace: str) -> bool:
        """One SelfSubjectAccessReview, remembered per connection; an unanswerable one counts as no."""
        key = (verb, res.label, namespace)
        if key not in self._access:
            try:
                check_access(self.api, [(verb, res, namespace)])
                self._access[key] = True
            except RefusedError:
                self._access[key] = False
        return self._access[key]

    def permissions(self, namespace: str, kinds: Iterable[str]) -> frozenset[str]:
        """The actions the user may perform on workloads of all ``kinds`` in ``namespace``.

        Reviewed per kind and verb (patch deployments is not update deploymentconfigs): each kind's
        answer is kept in `by_kind`, so that a user who may patch Deployments only gets actions on them.
        """
        if self.options.read_only:
            return frozenset()
        per_kind = []
        for kind in sorted(set(kinds)):
            allowed = frozenset(
                action
                for action in ACTIONS
                if all(self._may(verb, res, ns) for verb, res, ns in data.needs(action, namespace, {kind}))
            )
            self.by_kind[(namespace, kind)] = allowed
            per_kind.append(allowed)
        return frozenset.intersection(*per_kind) if per_kind else frozenset()

    def why_not(self, action: str, namespace: str, kinds: Iterable[str]) -> str:
        """What the user lacks for ``action`` (from the reviews already answered; no API call)."""
        return data.missing_text(data.needs(action, namespace, set(kinds)), self._access)

    def allowed(self, inventory: Inventory) -> dict[str, frozenset[str]]:
        """`permissions` for every namespace in view, a few namespaces at a time."""
        kinds: dict[str, set[str]] = {}
        for row in inventory.rows:
            kinds.setdefault(row.namespace, set()).add(row.kind)
        if self.options.read_only:
            return {ns: frozenset() for ns in kinds}
        with ThreadPoolExecutor(max_workers=4) as pool:
            return dict(pool.map(lambda item: (item[0], self.permissions(*item)), kinds.items()))

    def plan(self, action: str, target: Target) -> PlanView:
        """The repair's preflight and plan (read-only), as the confirmation dialog shows it."""
        command = command_line(action, target, context=self.context, kubeconfig=self.options.kubeconfig)
        try:
            plan = plan_repair(
                self.api,
                action=action,
                namespace=target.namespace,
                targets=target.refs,
                selector=target.selector or None,
                to_revision=target.to_revision,
            )
        except RefusedError as exc:
            return PlanView(action, target, (), command, refusal=str(exc))
        return data.plan_view(action, target, plan, command)

    def execute(self, plan: PlanView, out: Printer, cancel: threading.Event) -> ResultView:
        """Carry out the plan the user confirmed (the very one shown: a workload changed by someone else
        since is not overwritten), reporting progress lines to ``out``."""
        if self.options.read_only:
            return ResultView(Status.REFUSED, EXIT_REFUSED, "read-only mode: no action is performed")
        if plan.handle is None or plan.refusal:
            return ResultView(Status.REFUSED, EXIT_REFUSED, plan.refusal or "nothing to do")
        repair = Repair(self.api, plan.handle, timeout=ACTION_TIMEOUT, out=out, cancel=cancel)
        return data.result_view(repair.execute())


def _without_revisions(ns_state: state.NamespaceState, parts: dict[str, data.Part]) -> state.NamespaceState:
    """``ns_state`` without its workloads' revisions and pods (the rows never show them), the same object
    when it has none; its part in ``parts`` then names the state kept, so that its rows are reused."""
    if not any(ws.revisions or ws.pods for ws in ns_state.workloads):
        return ns_state
    slim = dataclasses.replace(
        ns_state,
        workloads=tuple(dataclasses.replace(ws, revisions=(), pods=()) for ws in ns_state.workloads),
    )
    part = parts.get(ns_state.namespace)
    if part is not None and part[0] is ns_state:
        parts[ns_state.namespace] = (slim, *part[1:])
    return slim
