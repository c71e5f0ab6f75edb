"""An in-memory stand-in for `rollguard.cluster.client.Client`: the calls of `rollguard.cluster.client.Api`, answered from a dict.

Used for screen snapshots, the benchmark and tests that need fixed data; live tests use the sandbox.
Watches work (so live refresh can be tested), and SelfSubjectAccessReviews ask an ``allow`` callback
(a SelfSubjectRulesReview answers ``incomplete``, with no rules, so each permission is asked on its own).
Container logs are what a test wrote with `set_log` (a `follow` gets lines appended later with `add_log`
until `end_log`), refused as the kubelet refuses a log it has not (`NoLog`).
`make lint` type-checks this module strictly, so mypy proves that it satisfies `Api` (see the end).
"""

from __future__ import annotations

import copy
import queue
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

from rollguard.cluster.client import LogOptions, Page
from rollguard.core.errors import NoLog, NotFound, Unreachable
from rollguard.core.resources import PODS, Resource
from rollguard.core.selectors import matches

if TYPE_CHECKING:
    from rollguard.cluster.client import Api

Obj = dict[str, Any]
CUT: Obj = {"type": "CUT"}  # put on a watch's queue by `cut_watches`: the stream ends as cut
Allow = Callable[[str, str, str], bool]  # (verb, resource plural, namespace) -> allowed


def allow_all(verb: str, plural: str, namespace: str) -> bool:
    return True


def read_only(verb: str, plural: str, namespace: str) -> bool:
    return verb in ("get", "list", "watch")


class FakeCluster:
    """Objects by (plural, namespace, name); resourceVersions from one counter, like etcd's."""

    def __init__(
        self, objects: Iterable[Obj] = (), *, allow: Allow = allow_all, latency: float = 0.0
    ) -> None:
        self.allow = allow
        self.latency = latency  # seconds per list, like a round trip to a real API server
        self.requests: Counter[str] = Counter()
        self._objects: dict[tuple[str, str, str], Obj] = {}
        self._rv = 100
        self._lock = threading.Lock()
        self._watchers: list[tuple[str, str | None, queue.Queue[Obj | None]]] = []
        self._closed = threading.Event()
        self.down = threading.Event()  # set: the API server is gone (every call fails as unreachable)
        # cleared: the API server is hung (SIGSTOP): a request waits for `thaw`, or fails after
        # `hang_timeout` seconds as the client's read timeout would; open watches send nothing
        self._thawed = True
        self._hang = threading.Condition()
        self.hang_timeout = 8.0
        # (namespace, pod, container, previous) -> [lines, still running]
        self._logs: dict[tuple[str, str, str, bool], tuple[list[str], bool]] = {}
        self._log_cv = threading.Condition()
        self.log_streams = 0  # log requests being answered now (a follow stays open until cut)
        for obj in objects:
            self._put(_plural(obj), obj)

    # -- helpers ----------------------------------------------------------------------------------------

    def _put(self, plural: str, obj: Obj) -> Obj:
        with self._lock:
            self._rv += 1
            obj = copy.deepcopy(obj)
            meta = obj.setdefault("metadata", {})
            meta["resourceVersion"] = str(self._rv)
            key = (plural, meta.get("namespace", ""), meta["name"])
            existed = key in self._objects
            self._objects[key] = obj
            watchers = list(self._watchers)
        event = {"type": "MODIFIED" if existed else "ADDED", "object": copy.deepcopy(obj)}
        for w_plural, w_ns, q in watchers:
            if w_plural == plural and w_ns in (None, meta.get("namespace", "")):
                q.put(event)
        return copy.deepcopy(obj)

    def apply(self, obj: Obj) -> Obj:
        """Create or replace an object (test helper), notifying watches."""
        return self._put(_plural(obj), obj)

    def stop_server(self) -> None:
        """The API server stops: open watches break, every request fails until `start_server`."""
        self.down.set()

    def start_server(self) -> None:
        self.down.clear()

    def freeze(self) -> None:
        """The API server hangs (as under SIGSTOP): nothing is refused, nothing is answered."""
        with self._hang:
            self._thawed = False

    def thaw(self) -> None:
        with self._hang:
            self._thawed = True
            self._hang.notify_all()

    def _reachable(self) -> None:
        """Every request's first step: refused once closed or stopped; while frozen, it waits for `thaw`
        (or `close`: a test that ends never leaves a request waiting), at most `hang_timeout` seconds."""
        if not self._thawed:
            with self._hang:
                answered = self._hang.wait_for(
                    lambda: self._thawed or self._closed.is_set(), timeout=self.hang_timeout
                )
            if not answered:
                raise Unreachable(
                    f"read timed out after {self.hang_timeout:.0f}s (the fake API server hangs)"
                )
        if self._closed.is_set():
            # closed: every caller left behind (a watch thread of a cache nobody stopped) fails, as
            # against a server that is gone, and so backs off instead of asking again at once
            raise Unreachable("connection refused (the fake API server is closed)")
        if self.down.is_set():
            raise Unreachable("connection refused (the fake API server is stopped)")

    def set_log(
        self, namespace: str, pod: str, container: str, lines: Iterable[str], *, previous: bool = False,
        running: bool = False,
    ) -> None:  # fmt: skip
        """What the container printed (``previous``: its last terminated instance); ``running``: a follow
        stays open for `add_log` lines until `end_log`."""
        with self._log_cv:
            self._logs[(namespace, pod, container, previous)] = (list(lines), running)
            self._log_cv.notify_all()

    def add_log(self, namespace: str, pod: str, container: str, line: str) -> None:
        with self._log_cv:
            self._logs[(namespace, pod, container, False)][0].append(line)
            self._log_cv.notify_all()

    def end_log(self, namespace: str, pod: str, container: str) -> None:
        with self._log_cv:
            lines, _running = self._logs[(namespace, pod, container, False)]
            self._logs[(namespace, pod, container, False)] = (lines, False)
            self._log_cv.notify_all()

    def close(self) -> None:
        """End every watch and log follow and release every request waiting on a freeze (the test is
        over); every request after it is refused."""
        self._closed.set()
        with self._hang:
            self._hang.notify_all()
        with self._log_cv:
            self._log_cv.notify_all()
        for _p, _ns, q in list(self._watchers):
            q.put(None)

    def cut_watches(self) -> None:
        """Cut every open watch (each ends with `Unreachable`), as `Client.cut_watches` does."""
        for _p, _ns, q in list(self._watchers):
            q.put(CUT)

    # -- the Client interface -----------------------------------------------------------------------

    def list(
        self,
        res: Resource,
        *,
        namespace: str | None = None,
        selector: str | None = None,
        reduce: Callable[[Obj], Obj] | None = None,
    ) -> Obj:
        self.requests["list"] += 1
        self._reachable()
        time.sleep(self.latency)
        with self._lock:
            items = [
                copy.deepcopy(o)
                for (plural, ns, _name), o in sorted(self._objects.items())
                if plural == res.plural and (namespace is None or ns == namespace)
                and (not selector or matches(selector, o.get("metadata", {}).get("labels") or {}))
            ]  # fmt: skip
            rv = str(self._rv)
        return {"items": [reduce(o) for o in items] if reduce else items, "metadata": {"resourceVersion": rv}}

    def pages(
        self,
        res: Resource,
        *,
        namespace: str | None = None,
        selector: str | None = None,
        reduce: Callable[[Obj], Obj] | None = None,
    ) -> Iterator[Page]:
        """One page holding the whole list, in etcd's key order (``namespace/name``) as the API server's."""
        data = self.list(res, namespace=namespace, selector=selector, reduce=reduce)
        items = sorted(
            data["items"], key=lambda o: f"{o['metadata'].get('namespace', '')}/{o['metadata']['name']}"
        )
        yield Page(items, data["metadata"]["resourceVersion"])

    def openapi(self) -> Obj:
        """No published schema: manifests are not checked against one."""
        return {"definitions": {}}

    def get(self, res: Resource, name: str, *, namespace: str | None = None) -> Obj:
        self.requests["get"] += 1
        self._reachable()
        with self._lock:
            obj = self._objects.get((res.plural, namespace or "", name))
        if obj is None:
            raise NotFound(f"GET {res.path(namespace=namespace, name=name)}: 404 not found", status=404)
        return copy.deepcopy(obj)

    def create(self, res: Resource, body: Obj, *, namespace: str | None = None, dry_run: bool = False) -> Obj:
        self.requests["create"] += 1
        if dry_run:
            return copy.deepcopy(body)
        if res.plural == "selfsubjectaccessreviews":
            attrs = body["spec"]["resourceAttributes"]
            allowed = self.allow(attrs["verb"], attrs["resource"], attrs.get("namespace", ""))
            return {**body, "status": {"allowed": allowed}}
        if res.plural == "selfsubjectrulesreviews":
            # ``allow`` is a verdict per request, not a list of rules: answer as an authorizer that
            # cannot list its rules (a webhook) does, so that every need is asked on its own.
            return {**body, "status": {"resourceRules": [], "nonResourceRules": [], "incomplete": True}}
        body = copy.deepcopy(body)
        body.setdefault("metadata", {}).setdefault("namespace", namespace or "")
        return self._put(res.plural, body)

    def replace(
        self, res: Resource, body: Obj, *, namespace: str | None = None, dry_run: bool = False
    ) -> Obj:
        self.requests["update"] += 1
        if dry_run:
            return copy.deepcopy(body)
        return self._put(res.plural, body)

    def patch(self, res: Resource, name: str, body: Obj, *, namespace: str | None = None) -> Obj:
        self.requests["patch"] += 1
        current = self.get(res, name, namespace=namespace)
        return self._put(res.plural, _merge(current, body))

    def delete(
        self,
        res: Resource,
        name: str,
        *,
        namespace: str | None = None,
        resource_version: str | None = None,
        propagation: str | None = None,
    ) -> Obj:
        self.requests["delete"] += 1
        with self._lock:
            obj = self._objects.pop((res.plural, namespace or "", name), None)
        if obj is None:
            raise NotFound(f"DELETE {name}: 404", status=404)
        return obj

    def watch(
        self,
        res: Resource,
        *,
        namespace: str | None,
        resource_version: str,
        timeout_seconds: int = 300,
        selector: str | None = None,
    ) -> Iterator[Obj]:
        self.requests["watch"] += 1
        self._reachable()
        q: queue.Queue[Obj | None] = queue.Queue()
        entry = (res.plural, namespace, q)
        self._watchers.append(entry)
        deadline = time.monotonic() + timeout_seconds
        try:
            while not self._closed.is_set() and time.monotonic() < deadline:
                self._reachable()
                try:
                    event = q.get(timeout=0.2)
                except queue.Empty:
                    continue
                if event is None:
                    return
                if event is CUT:
                    raise Unreachable(f"watch on {res.label} was cut")
                yield event
        finally:
            self._watchers.remove(entry)

    def pod_log(
        self, pod: str, *, namespace: str, options: LogOptions, stop: threading.Event | None = None
    ) -> Iterator[str]:
        self.requests["log"] += 1
        self._reachable()
        with self._log_cv:
            self.log_streams += 1
        try:
            yield from self._pod_log(pod, namespace=namespace, options=options, stop=stop)
        finally:
            with self._log_cv:
                self.log_streams -= 1

    def _pod_log(
        self, pod: str, *, namespace: str, options: LogOptions, stop: threading.Event | None
    ) -> Iterator[str]:
        self.get(PODS, pod, namespace=namespace)
        self.requests["get"] -= 1  # not a request of its own: the API server's lookup
        container, previous, follow, tail_lines = (
            options.container,
            options.previous,
            options.follow,
            options.tail_lines,
        )
        key = (namespace, pod, container, previous)
        with self._log_cv:
            if key not in self._logs:
                sentence = (f'previous terminated container "{container}" in pod "{pod}" not found' if previous
                            else f'container "{container}" in pod "{pod}" is waiting to start: ContainerCreating')  # fmt: skip
                which = "previous log" if previous else "log"
                raise NoLog(
                    f"no {which} of container {container} in pod {namespace}/{pod}: {sentence}", status=400
                )
            lines, _running = self._logs[key]
            sent = max(0, len(lines) - tail_lines) if tail_lines is not None else 0
        while True:
            with self._log_cv:
                lines, running = self._logs[key]
                fresh, sent = lines[sent:], len(lines)
                if not fresh and follow and running and not self._closed.is_set():
                    if stop is not None and stop.is_set():
                        return
                    self._log_cv.wait(0.1)
                    continue
            if options.timestamps:  # as the kubelet prefixes them (RFC 3339 with nanoseconds); a fixed clock
                first = sent - len(fresh)  # the line's index in the log: its second past a fixed minute
                yield from (
                    f"2024-05-01T10:{(first + i) // 60 % 60:02d}:{(first + i) % 60:02d}.000000000Z {line}"
                    for i, line in enumerate(fresh)
                )
            else:
                yield from fresh
            if not fresh and (not follow or not running or self._closed.is_set()):
                return


def _plural(obj: Obj) -> str:
    kind = obj.get("kind", "")
    special = {"DeploymentConfig": "deploymentconfigs", "ReplicationController": "replicationcontrollers",
               "ReplicaSet": "replicasets", "ConfigMap": "configmaps"}  # fmt: skip
    return special.get(kind) or kind.lower() + "s"


def _merge(base: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = dict(base) if isinstance(base, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = _merge(out.get(key), value)
    return out


def as_api(cluster: FakeCluster) -> Api:
    """The fake where an `Api` is wanted; its annotation makes mypy check every method's signature."""
    return cluster
