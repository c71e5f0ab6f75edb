"""The backend's state and its connection: the kubeconfig, the `Api` it makes, namespaces, one list.

`Core` holds every attribute of the TUI's `rollguard.tui.backend.Backend` (one object: the read, the live
caches, the detail and the permission checks share them), so that the modules beside this one each add
one concern's methods on top of it and never import one another's state. Reading the kubeconfig and
making the connection are here because `connect` is the first call the app makes and everything else
goes through `api`. Every method may block on the network: callers are thread workers.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass

from rollguard.cluster.api import Api
from rollguard.cluster.cache import NamespaceCache
from rollguard.cluster.client import Client
from rollguard.cluster.kubeconfig import contexts, resolve
from rollguard.cluster.pulse import Pulse
from rollguard.cluster.reduce import Interner
from rollguard.core.allocator import fix_mmap_threshold
from rollguard.core.errors import Forbidden, NotFound, RefusedError
from rollguard.core.resources import NAMESPACES, Resource
from rollguard.core.structs import Obj
from rollguard.kinds import KINDS
from rollguard.state import assessment
from rollguard.tui import data
from rollguard.tui.backend.watchful import Watchful
from rollguard.tui.views import Inventory

# JSON per LIST page (`Client.page_bytes`; the commands' is 1 MiB): the read decodes a page of each of
# seven lists side by side, ~10x its JSON as Python objects until reduced, on top of the whole cluster the
# TUI keeps. At 10,000 workloads 256 KiB pages cut the peak RSS by ~12 MiB for 4x the list requests
# (~1,800, as fast on the benchmark's cluster).
PAGE_BYTES = 256 << 10
PROBE_SELECTOR = "rollguard.io/liveness-probe=none"  # matches no namespace: the smallest answer there is
# The TUI's own requests (reads, watches, plans): a short timeout and few attempts, so that a hung API
# server is known and said within seconds, not after the commands' 30 s x 5 attempts. A repair the user
# confirmed keeps the commands' patience (`writer`): it must not give up on a slow write half-way.
REQUEST_TIMEOUT = 8.0
REQUEST_ATTEMPTS = 2
WATCH_TIMEOUT = 60  # seconds per watch request (its read timeout is 10 s more)
ClientFactory = Callable[[str | None, str | None], Api]  # (kubeconfig, context) -> a cluster connection


class Superseded(Exception):
    """A newer load began: the step of the loader left behind is not taken (see `rollguard.tui.dataloop`)."""


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
    """The namespace by kubectl's rule (`rollguard.cluster.kubeconfig`): the context's, the pod's, else default."""
    try:
        return resolve(kubeconfig=kubeconfig, context=context).namespace(None)[0]
    except RefusedError:  # connect() has already said what is wrong with the kubeconfig
        return "default"


class Core:
    """The state the whole backend shares (connection, caches, states, reviews), and the connection."""

    def __init__(
        self,
        options: Options,
        *,
        factory: ClientFactory = default_factory,
        now: Callable[[], dt.datetime] = lambda: dt.datetime.now(dt.UTC),
    ) -> None:
        self.options = options
        self._factory = factory
        # A read of the whole cluster decodes ~1 MiB pages in list threads: glibc must hand their buffers
        # back instead of keeping them in the threads' heaps (`rollguard.core.allocator`, ~20 MiB at 10,000 workloads)
        fix_mmap_threshold()
        self.client: Api | None = None  # the reader: short timeouts, every request noted in `pulse`
        self.writer: Api | None = None  # the same connection with the commands' timeouts, for repairs
        self.pulse = Pulse()  # when the server last answered the reader, what waits (`Watchful`)
        self._cut_watches: Callable[[], None] | None = None  # ends the reader's open watches
        # One loader at a time changes what is held (namespace, caches, states): the app's loader and
        # reload take it for each step, so a loader left behind by a switch never undoes the new one's.
        self.lock = threading.RLock()
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
        self._states: dict[str, assessment.NamespaceState] = {}
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
        api = self.writer = self._factory(self.options.kubeconfig, self.context)
        if isinstance(api, Client):
            api.page_bytes = PAGE_BYTES
            api = api.with_timeouts(timeout=REQUEST_TIMEOUT, retries=REQUEST_ATTEMPTS)
        self._cut_watches = getattr(api, "cut_watches", None)  # the reader's streams (the caches')
        self.pulse = Pulse()  # a new connection: the old one's silences say nothing about it
        self.client = Watchful(api, self.pulse)
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

    def stop_live(self) -> None:
        """Stop the live caches (`rollguard.tui.backend.live` starts them; `connect` stops them first) and
        end their watch threads now: the connection's open watches are cut (every watch of the TUI's
        connection is a cache's; log follows are not watches). A thread left waiting on a quiet stream
        would outlive its cache by a watch's length, and its app (issue 30's hang of the TUI tests)."""
        caches = list(self._caches.values())
        for cache in caches:
            cache.stop()
        self._caches.clear()
        self._incremental = False
        if caches and self._cut_watches is not None:
            self._cut_watches()

    def probe(self) -> None:
        """One cheap request (a namespace list matching no label): returns when the server answers,
        raises the transport's error (`Unreachable`, a 5xx) when it does not. A refusal is an answer."""
        with contextlib.suppress(Forbidden, NotFound):
            self.api.list(NAMESPACES, selector=PROBE_SELECTOR)

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
        for kind in KINDS.values():
            found |= {
                o["metadata"].get("namespace", "")
                for o in self._list(kind.resource, None, self.options.selector or None)
            }
        return sorted(found)
