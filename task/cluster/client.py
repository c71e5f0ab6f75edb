"""The client: typed calls on `resources`, built into requests and sent by `rollguard.cluster.transport`.

`Client` is the `rollguard.cluster.api.Api` that speaks HTTP, raw JSON rather than the official client's
models, so that every kind, custom resources included, is handled alike. Each call builds its request
here (path, query, body) and `rollguard.cluster.transport.send` sends it, mapping errors to `rollguard.core.errors`
classes with the HTTP exception chained. Safe retries (overload, 5xx, dropped connections) happen
here, once; the run's fence (`guarded`) is asked before every mutating attempt.

Every LIST is paginated (``limit``/``continue``, pages of `Client.page_size` as client-go's pager) and
each page may be reduced item by item before the next page is fetched, so a cluster-wide read never
holds one huge response. A continue token that expired (410 Expired: etcd compacted the revision the
list started at) is handled as client-go's ``tools/pager`` does: a full list at the requested
resourceVersion replaces the pages read so far (`Page.restarted` tells a streaming consumer).

The contract (`Api`, `Page`, `LogOptions`, `Forwarding`) lives in `rollguard.cluster.api`: import it from
there (the names are still re-exported here for older callers).
"""

from __future__ import annotations

import contextlib
import copy
import json
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from rollguard.cluster import k8s
from rollguard.cluster.api import Api, Forwarding, LogOptions, Obj, Page, Reducer
from rollguard.cluster.pulse import HOLD_BACKOFF, Pulse
from rollguard.cluster.transport import Transport, cut_when, send, stream_lines
from rollguard.core.errors import (
    ApiError,
    BadRequest,
    Gone,
    NoLog,
    Unreachable,
    error_for_status,
    is_retryable,
)
from rollguard.core.resources import PODS, Resource

if TYPE_CHECKING:
    from rollguard.cluster.kubeconfig import Connection

__all__ = [
    "Api", "Client", "Forwarding", "LogOptions", "Obj", "Page", "Reducer", "guarded", "hold_through_outages",
    "pod_log_query",
]  # fmt: skip
PROBE_TIMEOUT = 5.0  # seconds the probe of a silent API server waits for an answer
REQUEST_TIMEOUT = 30.0  # seconds a request waits for its answer (an admission webhook may take 30)
# ... and a request sent again while the API server answers nothing: a server that is back answers
# at once, and a run whose time is up (its SIGTERM grace) is not kept waiting for long
HELD_TIMEOUT = 10.0

_RETRIES = 5
_POOL_SIZE = (
    64  # connections kept per host: a run's watches plus its writes (run.group_write.WRITERS) at once
)
_MERGE_PATCH = "application/merge-patch+json"
PAGE_SIZE = 500  # at most, client-go's pager default
# Pages are sized to about this much JSON from the size of the items seen so far (500 DeploymentConfigs
# of a real cluster are 4 MB of JSON and ten times that as Python objects while a page is reduced);
# the first page is small, so that the first objects arrive soon.
PAGE_BYTES = 1 << 20
FIRST_PAGE = 50
MUTATING = frozenset({"POST", "PUT", "PATCH", "DELETE"})


def guarded(api: Api, guard: Callable[[], None]) -> Api:
    """``api`` calling ``guard`` before every mutating request; ``guard`` raises to stop it being sent.

    The one place a run's fence (`rollguard.cluster.lock.GroupLock.prove`) sits: workload writes, journal
    writes, Events, ImageStream tags, claims and reverts all go through it. On a `Client` the guard
    runs before each attempt, so a retry after a transient error is fenced too.
    """
    if isinstance(api, Client):
        return api.guarded(guard)
    return _Guarded(api, guard)


def hold_through_outages(
    api: Api, *, stop: threading.Event, say: Callable[[str], None]
) -> Callable[[], None]:
    """From now on, requests of ``api`` that get no answer while the API server answers nothing at all
    are retried until it answers again or ``stop`` is set, and ``say`` hears of the silence
    (`rollguard.cluster.pulse`); once it answers again, the watches are re-established from their last
    resourceVersion (`Client.cut_watches`); ``stop`` set during an outage ends the requests in flight
    (`Client.cut_requests`) and sends no more. The function returned ends the hold. A test double holds
    nothing."""
    if isinstance(api, Client):
        api.pulse.hold(stop=stop, say=say, on_recovery=api.cut_watches, on_give_up=api.cut_requests)
        return api.pulse.release
    return lambda: None


class _Guarded(Forwarding):
    """`guarded` for any other `Api` (a test double): reads pass through, writes ask ``guard`` first."""

    def __init__(self, inner: Api, guard: Callable[[], None]) -> None:
        super().__init__(inner)
        self._guard = guard

    def before_write(self) -> None:
        self._guard()


class Client:
    """A connection to one cluster, counting requests by verb (for benchmarks and tests).

    ``page_size``: at most this many items per LIST page (fewer when that would be more than about
    ``page_bytes`` of JSON, `PAGE_BYTES` unless set); 0 reads each list in one request (tests compare both).
    A process that holds a whole cluster while it reads one (the TUI) asks for smaller pages: each page
    is decoded whole before it is reduced, so the pages in flight are what a read costs beyond what it keeps.
    """

    def __init__(self, api_client: Any, *, user_agent: str = "rollguard", page_size: int = PAGE_SIZE) -> None:
        self._api = api_client
        self._api.user_agent = user_agent
        self.page_size = page_size
        self.page_bytes = PAGE_BYTES
        # A request's timeout (seconds to read its answer) and attempts: the commands' defaults; an
        # interactive reader (the TUI) sets short ones on its copy (`with_timeouts`).
        self.timeout = REQUEST_TIMEOUT
        self.retries = _RETRIES
        # The first page of a list: small where a consumer shows objects as they arrive (status -A, the
        # TUI); a reader that needs every object before it decides (a rollout) asks for whole pages.
        self.first_page = FIRST_PAGE
        self.requests: Counter[str] = Counter()
        self._lock = threading.Lock()
        self._guard: Callable[[], None] | None = None
        self.pulse = Pulse()  # shared with the guarded copies: one connection
        self._watches: set[Any] = set()  # open watch streams (shared with the copies too)

    def guarded(self, guard: Callable[[], None]) -> Client:
        """This connection (same transport and counters) calling ``guard`` before every mutating attempt,
        each retry included (see `guarded`)."""
        other = copy.copy(self)
        other._guard = guard
        return other

    def with_timeouts(self, *, timeout: float, retries: int) -> Client:
        """This connection (same transport, counters and pulse) with another request timeout and attempts."""
        other = copy.copy(self)
        other.timeout, other.retries = timeout, max(retries, 1)
        # its own open watches: `cut_watches` on it ends the reader's streams, not those of a write on
        # the original (a repair's wait), nor does the original's cut end the reader's
        other._watches = set()
        return other

    # -- construction -------------------------------------------------------------------------------

    @classmethod
    def connect(cls, *, kubeconfig: str | None = None, context: str | None = None) -> Client:
        """Connect as kubectl would with these flags (`rollguard.cluster.kubeconfig`); RefusedError when unusable."""
        from rollguard.cluster.kubeconfig import resolve

        return cls.from_connection(resolve(kubeconfig=kubeconfig, context=context))

    @classmethod
    def from_connection(cls, connection: Connection) -> Client:
        """A client for a resolved kubeconfig context or the pod's ServiceAccount."""
        cfg = k8s.module("client.configuration").Configuration()
        # A run holds one connection per watched resource while its writers work in parallel; the
        # default pool (5 per core) would drop connections and pay a TLS handshake for each new one.
        cfg.connection_pool_maxsize = _POOL_SIZE
        connection.configure(cfg)
        return cls(Transport(cfg))

    # -- verbs ---------------------------------------------------------------------------------------

    def get(self, res: Resource, name: str, *, namespace: str | None = None) -> Obj:
        return self._call("GET", res.path(namespace=namespace, name=name), verb="get")

    def openapi(self) -> Obj:
        """The OpenAPI v2 document the API server publishes: every type's schema (what kubectl's
        client-side validation checks manifests against), a few MB read once by a run with -f."""
        return self._call("GET", "/openapi/v2", verb="get")

    def list(
        self,
        res: Resource,
        *,
        namespace: str | None = None,
        selector: str | None = None,
        reduce: Reducer | None = None,
    ) -> Obj:
        """Every object (``reduce``d, if given), read page by page: ``{"items", "metadata.resourceVersion"}``."""
        items: list[Obj] = []
        rv = ""
        for page in self.pages(res, namespace=namespace, selector=selector, reduce=reduce):
            if page.restarted:
                items = []
            items.extend(page.items)
            rv = page.resource_version if page.restarted or not rv else rv
        return {"items": items, "metadata": {"resourceVersion": rv}}

    def pages(
        self,
        res: Resource,
        *,
        namespace: str | None = None,
        selector: str | None = None,
        reduce: Reducer | None = None,
    ) -> Iterator[Page]:
        """The pages of one LIST, each reduced before the next is requested.

        The resourceVersion of a paginated list is the first page's: all pages are one consistent
        snapshot. On an expired continue token the full list (at the resourceVersion asked for, here
        the latest) comes as one page with ``restarted`` set, as in client-go's ``ListPager.List``.
        """
        base = [("labelSelector", selector)] if selector else []
        path = res.path(namespace=namespace)
        token = ""
        rv = ""
        limit = min(self.page_size, self.first_page)
        seen_items = seen_bytes = 0
        while True:
            query = [*base, ("limit", limit)] if self.page_size > 0 else list(base)
            if token:
                query.append(("continue", token))
            try:
                data, size = self._call_sized("GET", path, query=query, verb="list")
            except Gone:
                if not token:
                    raise  # an expired first page is not a pagination problem: the caller's to handle
                data = self._call("GET", path, query=base, verb="list")  # client-go: a full list
                full = Page(_reduced(data, reduce), _rv(data), restarted=True)
                del data  # the raw response is not kept while the consumer works on the page
                yield full
                return
            rv = rv or _rv(data)
            token = str((data.get("metadata") or {}).get("continue") or "")
            seen_items += len(data.get("items") or [])
            seen_bytes += size
            if seen_items:
                limit = max(1, min(self.page_size, self.page_bytes * seen_items // max(seen_bytes, 1)))
            page = Page(_reduced(data, reduce), rv)
            del data
            yield page
            if not token:
                return

    def create(self, res: Resource, body: Obj, *, namespace: str | None = None, dry_run: bool = False) -> Obj:
        """POST; with ``dry_run`` the server validates and admits it (``dryRun=All``) but stores nothing."""
        return self._call(
            "POST", res.path(namespace=namespace), body=body, verb="create", query=_dry_run(dry_run)
        )

    def replace(
        self, res: Resource, body: Obj, *, namespace: str | None = None, dry_run: bool = False
    ) -> Obj:
        """PUT; ``body.metadata.resourceVersion`` is the precondition (409 Conflict when stale).

        With ``dry_run`` (``dryRun=All``) validation and admission webhooks run but nothing is stored.
        """
        name = body["metadata"]["name"]
        return self._call(
            "PUT", res.path(namespace=namespace, name=name), body=body, verb="update", query=_dry_run(dry_run)
        )

    def patch(self, res: Resource, name: str, body: Obj, *, namespace: str | None = None) -> Obj:
        """JSON merge patch: idempotent, so safe to retry."""
        return self._call(
            "PATCH",
            res.path(namespace=namespace, name=name),
            body=body,
            verb="patch",
            content_type=_MERGE_PATCH,
        )

    def delete(
        self,
        res: Resource,
        name: str,
        *,
        namespace: str | None = None,
        resource_version: str | None = None,
        propagation: str | None = None,
    ) -> Obj:
        """DELETE, optionally only if the object is still at ``resource_version``; ``propagation``: the
        DeleteOptions' propagationPolicy (``Background`` for a batch/v1 Job, whose default orphans its pods)."""
        body: Obj | None = None
        if resource_version or propagation:
            body = {"apiVersion": "v1", "kind": "DeleteOptions"}
            if resource_version:
                body["preconditions"] = {"resourceVersion": resource_version}
            if propagation:
                body["propagationPolicy"] = propagation
        return self._call("DELETE", res.path(namespace=namespace, name=name), verb="delete", body=body)

    def watch(
        self,
        res: Resource,
        *,
        namespace: str | None,
        resource_version: str,
        timeout_seconds: int = 300,
        selector: str | None = None,
    ) -> Iterator[Obj]:
        """Yields watch events ``{"type", "object"}``; the stream ends at ``timeout_seconds``."""
        query: list[tuple[str, Any]] = [
            ("watch", "true"),
            ("resourceVersion", resource_version),
            ("timeoutSeconds", timeout_seconds),
            ("allowWatchBookmarks", "true"),
        ]
        if selector:
            query.append(("labelSelector", selector))
        resp = self._send(
            "GET",
            res.path(namespace=namespace),
            query=query,
            verb="watch",
            stream=True,
            timeout=timeout_seconds + 10,
        )
        with self._lock:
            self._watches.add(resp)
        try:
            for line in stream_lines(resp, keep_partial=False):  # a partial line is a cut event
                if line.strip():
                    event: Obj = json.loads(line)
                    if event.get("type") == "ERROR":
                        status = event.get("object", {})
                        code = int(status.get("code") or 500)
                        raise error_for_status(code)(
                            str(status.get("message", "watch error")),
                            status=code,
                            reason=str(status.get("reason", "")),
                        )
                    yield event
        except ApiError:
            raise
        except Exception as exc:  # urllib3 protocol errors when the stream is cut
            raise Unreachable(f"watch on {res.label} was cut: {exc}") from exc
        finally:
            with self._lock:
                self._watches.discard(resp)
            resp.release_conn()

    def cut_requests(self) -> None:
        """End every request in flight at once (each gets `Unreachable`): its socket is shut."""
        cut = getattr(self._api, "cut_connections", None)
        if cut is not None:
            cut()

    def cut_watches(self) -> None:
        """Cut every open watch stream, so that each is re-established from its last resourceVersion by
        its consumer (`rollguard.cluster.cache`). After an outage a stream may be dead without either
        end knowing (its peer gone with a failed-over load balancer): only its read timeout would end it."""
        with self._lock:
            open_now = list(self._watches)
        for resp in open_now:
            with contextlib.suppress(Exception):  # ended and released meanwhile
                resp.shutdown()

    def pod_log(
        self, pod: str, *, namespace: str, options: LogOptions, stop: threading.Event | None = None
    ) -> Iterator[str]:
        """Yields the lines of a container's log (`GET pods/P/log`, which the API server proxies to the
        node's kubelet); with ``follow`` the stream stays open until the container ends or it is cut.

        NoLog (a BadRequest) when the kubelet has no such log: ``previous`` with no terminated instance,
        a container still waiting to start (its image cannot be pulled), a container the pod has not.
        ``stop``: once set, the stream is cut and the lines end (a follow of a quiet container would
        otherwise hold its thread until the next line).
        """
        path = PODS.path(namespace=namespace, name=pod) + "/log"
        try:
            resp = self._send(
                "GET",
                path,
                query=pod_log_query(options),
                verb="log",
                stream=True,
                timeout=3600.0 if options.follow else 30.0,
            )
        except BadRequest as exc:
            which = "previous log" if options.previous else "log"
            said = str(exc).removeprefix(f"GET {path}: 400 ")  # the kubelet's (or API server's) sentence
            raise NoLog(
                f"no {which} of container {options.container} in pod {namespace}/{pod}: {said}",
                status=400,
                reason=exc.reason,
            ) from exc
        done = threading.Event()
        if stop is not None:
            threading.Thread(
                target=cut_when, args=(stop, done, resp), name="pod-log-stop", daemon=True
            ).start()
        try:
            for line in stream_lines(resp, keep_partial=True):  # a log's last line may have no newline
                if stop is not None and stop.is_set():
                    return
                yield line.decode("utf-8", "replace")
        except ApiError:
            raise
        except Exception as exc:  # urllib3 protocol errors when the stream is cut
            if stop is not None and stop.is_set():
                return  # cut on purpose
            raise Unreachable(f"log of pod {namespace}/{pod} was cut: {exc}") from exc
        finally:
            done.set()
            resp.release_conn()

    # -- plumbing ------------------------------------------------------------------------------------

    def _call(
        self,
        method: str,
        path: str,
        *,
        verb: str,
        query: Sequence[tuple[str, Any]] | None = None,
        body: Obj | None = None,
        content_type: str = "application/json",
    ) -> Obj:
        return self._call_sized(method, path, verb=verb, query=query, body=body, content_type=content_type)[0]

    def _call_sized(
        self,
        method: str,
        path: str,
        *,
        verb: str,
        query: Sequence[tuple[str, Any]] | None = None,
        body: Obj | None = None,
        content_type: str = "application/json",
    ) -> tuple[Obj, int]:
        """The decoded answer and its size in bytes (to size the next page by).

        Retryable errors get `retries` attempts (`_RETRIES` unless set); while a run holds through an
        outage (`Pulse.hold`),
        an attempt that got no answer while the API server answers nothing at all (`silent`) is not
        counted: the request is sent again, fenced again, until the server answers or the hold stops.
        """
        attempt = held = 0
        outage = False  # the last attempt got no answer, nor did the probe: the next waits less long
        while True:
            silent = self.pulse.given_up()
            if silent:
                raise Unreachable(
                    f"{method} {path}: not sent: no answer from the API server for {silent:.0f}s, "
                    "and the run may wait no longer"
                )
            if self._guard is not None and method in MUTATING:
                self._guard()  # before every attempt: a retry may come after the run lost its group
            try:
                resp = self._send(
                    method, path, query=query, body=body, verb=verb, content_type=content_type,
                    timeout=HELD_TIMEOUT if outage else self.timeout,
                )  # fmt: skip
                raw = resp.data or b"{}"
                data: Obj = json.loads(raw)
                return data, len(raw)
            except Unreachable:
                outage = self.silent()
                if outage:
                    self.pulse.stop.wait(HOLD_BACKOFF[min(held, len(HOLD_BACKOFF) - 1)])
                    held += 1
                    continue
                attempt += 1
                if attempt >= self.retries or (self.pulse.holding and self.pulse.stop.is_set()):
                    raise  # out of attempts, or the run may wait no longer (its SIGTERM grace is over)
                time.sleep(0.2 * 2 ** (attempt - 1))
            except ApiError as exc:
                attempt += 1
                if not is_retryable(exc) or attempt >= self.retries:
                    raise
                time.sleep(min(exc.retry_after or 0.2 * 2 ** (attempt - 1), 5.0))

    def silent(self) -> bool:
        """While a run holds: True when the API server answers nothing at all (a probe, `GET /version`,
        which any API server answers to anyone, gets no answer either), not merely this request."""
        pulse = self.pulse
        if not pulse.holding or pulse.stop.is_set():
            return False
        try:
            answer = self._send("GET", "/version", verb="probe", timeout=PROBE_TIMEOUT)
        except Unreachable:
            return not pulse.stop.is_set()
        except ApiError:
            return False  # an answer, whatever it says
        with contextlib.suppress(Exception):  # its body is of no interest, only that it came
            answer.read()
            answer.release_conn()
        return False

    def _send(
        self,
        method: str,
        path: str,
        *,
        verb: str,
        query: Sequence[tuple[str, Any]] | None = None,
        body: Obj | None = None,
        content_type: str = "application/json",
        stream: bool = False,
        timeout: float | None = None,
    ) -> Any:
        with self._lock:
            self.requests[verb] += 1
        return send(
            self._api,
            method,
            path,
            query=query,
            body=body,
            content_type=content_type,
            stream=stream,
            timeout=self.timeout if timeout is None else timeout,
            pulse=self.pulse,
        )


def _dry_run(dry_run: bool) -> list[tuple[str, Any]]:
    return [("dryRun", "All")] if dry_run else []


def _reduced(data: Obj, reduce: Reducer | None) -> list[Obj]:
    items: list[Obj] = data.get("items") or []
    return [reduce(o) for o in items] if reduce else items


def _rv(data: Obj) -> str:
    return str((data.get("metadata") or {}).get("resourceVersion") or "")


def pod_log_query(options: LogOptions) -> list[tuple[str, str]]:
    """The query of `GET pods/P/log`, request building kept apart from the transport."""
    query = [("container", options.container)]
    if options.follow:
        query.append(("follow", "true"))
    if options.previous:
        query.append(("previous", "true"))
    if options.tail_lines is not None:
        query.append(("tailLines", str(options.tail_lines)))
    if options.timestamps:
        query.append(("timestamps", "true"))
    return query
