"""A fault-injecting HTTP proxy between rollguard and the sandbox API server, on loopback only.

rollguard gets a kubeconfig whose server is ``http://127.0.0.1:PORT`` (the proxy); the proxy forwards
every request, bearer token included, to the sandbox's https URL, checked against the sandbox CA.
On the way it can, per a seeded `FaultPlan`:

- answer a share of requests itself with 500, 503, 429 (+ Retry-After) or 409, without forwarding;
- drop the connection before forwarding (the server never saw it) or after (the server did the
  work, the client never hears of it: the case that makes blind retries of writes unsafe);
- cut watch streams after some events, optionally in the middle of a line;
- run a hook right after the k-th mutating request was answered by the server and before the
  answer is relayed (to SIGKILL or SIGTERM the client, or to play a human editing a workload), or
  right before a matching mutating request is forwarded (to stop the API server under it).

It counts requests by verb, classifies the mutating ones (SelfSubjectAccessReviews excepted: they
persist nothing) and records the resourceVersion each watch resumes from. It stops by itself after
``max_seconds`` or ``max_requests`` and is deterministic for a given seed and request order.

Run by hand: ``python -m tests.helpers.proxy --kubeconfig SRC --out KUBECONFIG [--seed N] [--rate 0.1]``.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import random
import socket
import ssl
import threading
import time
import urllib.parse
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import yaml

# Requests that are POSTs but persist nothing: permission checks.
NON_PERSISTING = (
    "selfsubjectaccessreviews",
    "selfsubjectrulesreviews",
    "subjectaccessreviews",
    "tokenreviews",
)
HOP_BY_HOP = {
    "connection",
    "keep-alive",
    "transfer-encoding",
    "content-length",
    "proxy-connection",
    "upgrade",
}
STATUS_FAULTS = ("500", "503", "429", "409")
FAULTS = (*STATUS_FAULTS, "drop_before", "drop_after")


@dataclass
class FaultPlan:
    """What to inject; every share is a probability per eligible request, drawn from one seeded RNG."""

    rates: dict[str, float] = field(default_factory=dict)  # fault name (FAULTS) -> share of requests
    verbs: frozenset[str] = frozenset()  # only these verbs (get, list, create, update, ...); empty: all
    resources: frozenset[str] = frozenset()  # only these resources (plurals); empty: all
    mutating_only: bool = False  # only requests that persist something (not permission checks)
    max_faults: int = 50  # bounded: after this many, the proxy only forwards
    retry_after: int = 1  # seconds, for 429
    watch_cut_after: tuple[int, int] = (0, 0)  # cut each watch after a random number of events in [a, b]
    watch_cut_partial: bool = True  # cut in the middle of an event line
    max_watch_cuts: int = 20
    skip_first: int = 0  # the first N eligible requests go through untouched (e.g. let preflight pass)


@dataclass
class Record:
    """One request as the proxy saw it."""

    seq: int
    method: str
    path: str
    query: dict[str, str]
    verb: str
    mutating: bool
    status: int = 0
    fault: str = ""
    resource: str = ""
    resumed_from: str = ""  # a watch's resourceVersion parameter
    last_rv: str = ""  # a watch's last relayed event resourceVersion
    events: int = 0  # a watch's relayed events
    cut: bool = False
    at: float = field(default_factory=time.monotonic)  # when the proxy received it (monotonic)
    answered: float = 0.0  # when the server's answer (its status line) came back (monotonic; 0: none)


MUTATING_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})


def classify(method: str, path: str, query: dict[str, str]) -> tuple[str, str, bool]:
    """(verb, resource plural, mutating) of an API request, like the API server's request info."""
    parts = [p for p in path.split("?")[0].split("/") if p]
    # /api/v1/namespaces/NS/pods/NAME, /apis/GROUP/VERSION/namespaces/NS/PLURAL/NAME[/SUB]
    rest = parts[2:] if parts[:1] == ["api"] else parts[3:] if parts[:1] == ["apis"] else parts
    if len(rest) >= 2 and rest[0] == "namespaces" and len(rest) > 2:
        rest = rest[2:]
    plural = rest[0] if rest else ""
    named = len(rest) >= 2
    verb = {
        "GET": "watch" if query.get("watch") in ("true", "1") else ("get" if named else "list"),
        "POST": "create",
        "PUT": "update",
        "PATCH": "patch",
        "DELETE": "delete" if named else "deletecollection",
    }.get(method, method.lower())
    mutating = method in MUTATING_METHODS and plural not in NON_PERSISTING
    # A server-side dry run (rollout's preflight sends every write so) persists nothing either.
    mutating = mutating and query.get("dryRun") != "All"
    return verb, plural, mutating


class FaultProxy:
    """The proxy: `start()`, point a kubeconfig at `url`, inspect `records`, `stop()` (or use `with`)."""

    def __init__(
        self,
        upstream: str,
        ca: str | Path,
        *,
        seed: int = 0,
        plan: FaultPlan | None = None,
        max_seconds: float = 900.0,
        max_requests: int = 50_000,
    ) -> None:
        parsed = urllib.parse.urlsplit(upstream)
        if parsed.hostname not in ("127.0.0.1", "localhost", "::1"):
            raise ValueError(f"the chaos proxy only fronts a local sandbox, not {upstream}")
        self.upstream_host = parsed.hostname or "127.0.0.1"
        self.upstream_port = parsed.port or 443
        self.ssl = ssl.create_default_context(cafile=str(ca))
        self.plan = plan or FaultPlan()
        self.rng = random.Random(seed)
        self.seed = seed
        self.max_seconds = max_seconds
        self.max_requests = max_requests
        self.records: list[Record] = []
        self.faults: Counter[str] = Counter()
        self.hook_errors: list[str] = []
        self._lock = threading.Lock()
        self._eligible = 0
        self._mutations = 0
        self._hooks: dict[int, Callable[[Record], None]] = {}
        self._matchers: list[tuple[Callable[[Record], bool], Callable[[Record], None]]] = []
        self._before: list[tuple[Callable[[Record, bytes], bool], Callable[[Record], None]]] = []
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._timer: threading.Timer | None = None
        self._writes_in_flight = 0  # mutating requests forwarded and not yet answered by the server
        self._idle = threading.Condition(self._lock)
        self.stopped = threading.Event()

    # -- control -------------------------------------------------------------------------------------

    @property
    def url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def start(self) -> FaultProxy:
        proxy = self

        class Handler(_Handler):
            owner = proxy

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="fault-proxy", daemon=True)
        self._thread.start()
        self._timer = threading.Timer(self.max_seconds, self.stop)  # stops by itself
        self._timer.daemon = True
        self._timer.start()
        return self

    def stop(self) -> None:
        if self.stopped.is_set():
            return
        self.stopped.set()
        if self._timer is not None:
            self._timer.cancel()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    def __enter__(self) -> FaultProxy:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def reset(self, plan: FaultPlan | None = None, *, seed: int | None = None) -> None:
        """Forget the records and hooks; optionally a new plan and seed (a new case, same proxy)."""
        with self._lock:
            self.records.clear()
            self.faults.clear()
            self._hooks.clear()
            self._matchers.clear()
            self._before.clear()
            self._eligible = self._mutations = 0
            if plan is not None:
                self.plan = plan
            if seed is not None:
                self.seed = seed
                self.rng = random.Random(seed)

    def after_mutation(self, k: int, hook: Callable[[Record], None]) -> None:
        """Call ``hook`` once the server answered the k-th mutating request, before relaying it.

        The client then gets its answer only if it is still alive (a SIGKILL hook drops it).
        """
        with self._lock:
            self._hooks[k] = hook

    def after_mutation_matching(
        self, predicate: Callable[[Record], bool], hook: Callable[[Record], None]
    ) -> None:
        """Like `after_mutation`, on the first mutating request ``predicate`` accepts (order-proof
        where the client sends several writes at once)."""
        with self._lock:
            self._matchers.append((predicate, hook))

    def before_mutation_matching(
        self, predicate: Callable[[Record, bytes], bool], hook: Callable[[Record], None]
    ) -> None:
        """Call ``hook`` once, right before the first mutating request that ``predicate`` accepts (given
        the record and the request's body) is forwarded to the server."""
        with self._lock:
            self._before.append((predicate, hook))

    def wait_writes_landed(self, timeout: float = 30.0) -> None:
        """Block until every mutating request already forwarded has its answer from the server.

        A client that sends several writes at once and is killed after one of them leaves the others on
        their way: the server still applies them, after the kill. A test reading "what the killed run
        left" must read after they landed, not race them."""
        with self._idle:
            if not self._idle.wait_for(lambda: self._writes_in_flight == 0, timeout=timeout):
                raise AssertionError(
                    f"{self._writes_in_flight} write(s) still unanswered after {timeout:.0f}s"
                )

    def kubeconfig(self, source: str | Path, dest: str | Path) -> Path:
        """Write ``dest``: ``source``'s user (token) and namespace, with the proxy as the server."""
        config = yaml.safe_load(Path(source).read_text())
        context = next(c for c in config["contexts"] if c["name"] == config["current-context"])
        user = next(u for u in config["users"] if u["name"] == context["context"]["user"])
        out = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "proxy", "cluster": {"server": self.url}}],
            "users": [{"name": "u", "user": user["user"]}],
            "contexts": [
                {"name": "proxy", "context": {**context["context"], "cluster": "proxy", "user": "u"}}
            ],
            "current-context": "proxy",
        }
        path = Path(dest)
        path.write_text(yaml.safe_dump(out))
        return path

    # -- figures -------------------------------------------------------------------------------------

    def mutating(self) -> list[Record]:
        """Mutating requests that reached the server (answered by it, or dropped after forwarding)."""
        return [r for r in self.records if r.mutating and r.fault in ("", "drop_after", "cut")]

    def by_verb(self) -> Counter[str]:
        return Counter(r.verb for r in self.records)

    def watches(self, resource: str | None = None) -> list[Record]:
        return [r for r in self.records if r.verb == "watch" and (resource is None or r.resource == resource)]

    # -- decisions (called from handler threads) -----------------------------------------------------

    def _admit(self, method: str, path: str, query: dict[str, str]) -> tuple[Record, str]:
        verb, plural, mutating = classify(method, path, query)
        with self._lock:
            record = Record(
                seq=len(self.records) + 1,
                method=method,
                path=path,
                query=query,
                verb=verb,
                mutating=mutating,
                resource=plural,
                resumed_from=query.get("resourceVersion", "") if verb == "watch" else "",
            )
            self.records.append(record)
            if len(self.records) > self.max_requests:
                self.stopped.set()
            fault = ""
            plan = self.plan
            watch_ok = verb != "watch" or "watch" in plan.verbs  # watches get status faults only if asked
            if (
                watch_ok
                and (not plan.verbs or verb in plan.verbs)
                and (not plan.resources or plural in plan.resources)
                and (mutating or not plan.mutating_only)
            ):
                self._eligible += 1
                if self._eligible > plan.skip_first and sum(self.faults.values()) < plan.max_faults:
                    draw = self.rng.random()
                    for name in FAULTS:
                        share = plan.rates.get(name, 0.0)
                        if draw < share:
                            fault = name
                            break
                        draw -= share
            if fault:
                self.faults[fault] += 1
            record.fault = fault
        return record, fault

    def _watch_budget(self) -> int | None:
        """Events to relay before cutting this watch, or None to leave it alone."""
        low, high = self.plan.watch_cut_after
        with self._lock:
            if high <= 0 or self.faults["watch_cut"] >= self.plan.max_watch_cuts:
                return None
            if sum(self.faults.values()) >= self.plan.max_faults:
                return None
            return self.rng.randint(low, high)

    def _mutation_answered(self, record: Record) -> Callable[[Record], None] | None:
        with self._lock:
            self._mutations += 1
            hook = self._hooks.pop(self._mutations, None)
            if hook is None:
                for index, (predicate, candidate) in enumerate(self._matchers):
                    if predicate(record):
                        del self._matchers[index]
                        return candidate
            return hook

    def _mutation_forwarded(self, record: Record, body: bytes) -> Callable[[Record], None] | None:
        with self._lock:
            for index, (predicate, candidate) in enumerate(self._before):
                try:
                    matched = predicate(record, body)
                except Exception as exc:  # a test's predicate failing must show, not break the request
                    self.hook_errors.append(f"predicate before {record.method} {record.path}: {exc!r}")
                    matched = False
                if matched:
                    del self._before[index]
                    return candidate
            return None

    def _forwarding(self, delta: int) -> None:
        with self._idle:
            self._writes_in_flight += delta
            self._idle.notify_all()

    def _count_cut(self) -> None:
        with self._lock:
            self.faults["watch_cut"] += 1


class _Handler(BaseHTTPRequestHandler):
    owner: FaultProxy
    protocol_version = "HTTP/1.1"  # keep-alive, as the client expects

    def log_message(self, format: str, *args: Any) -> None:  # quiet: the records are the log
        return

    def _any(self) -> None:
        # counted from the request line on, so that `wait_writes_landed` also waits for a write whose
        # body is still being read when its client dies
        mutating = self.command in MUTATING_METHODS
        if mutating:
            self.owner._forwarding(+1)
        try:
            self._relay()
        finally:
            if mutating:
                self.owner._forwarding(-1)

    def _relay(self) -> None:
        proxy = self.owner
        if proxy.stopped.is_set():
            self._drop()
            return
        split = urllib.parse.urlsplit(self.path)
        query = dict(urllib.parse.parse_qsl(split.query, keep_blank_values=True))
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        record, fault = proxy._admit(self.command, split.path, query)
        if fault in STATUS_FAULTS:
            self._answer(record, int(fault))
            return
        if fault == "drop_before":
            self._drop()
            return
        headers = {
            k: v for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP and k.lower() != "host"
        }
        headers["Host"] = f"{proxy.upstream_host}:{proxy.upstream_port}"
        if body:
            headers["Content-Length"] = str(len(body))
        if record.mutating:
            before = proxy._mutation_forwarded(record, body)
            if before is not None:
                try:
                    before(record)
                except Exception as exc:  # a test's hook failing must show
                    proxy.hook_errors.append(f"hook before {record.method} {record.path}: {exc!r}")
        conn = http.client.HTTPSConnection(
            proxy.upstream_host, proxy.upstream_port, context=proxy.ssl, timeout=330
        )
        try:
            conn.request(self.command, self.path, body=body or None, headers=headers)
            resp = conn.getresponse()
            record.status, record.answered = resp.status, time.monotonic()
            if record.verb == "watch" and resp.status == 200:
                self._stream(record, resp)
                return
            data = resp.read()
            if record.mutating:
                hook = proxy._mutation_answered(record)
                if hook is not None:
                    try:
                        hook(record)
                    except Exception as exc:  # a test's hook failing must show, not just drop a reply
                        proxy.hook_errors.append(f"hook after {record.method} {record.path}: {exc!r}")
            if fault == "drop_after":  # the server did it; the client never hears
                self._drop()
                return
            self.send_response(resp.status)
            for k, v in resp.getheaders():
                if k.lower() not in HOP_BY_HOP:
                    self.send_header(k, v)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            self.wfile.flush()
        except OSError:
            self._drop()
        finally:
            conn.close()

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _any

    def _answer(self, record: Record, status: int) -> None:
        reasons = {500: "InternalError", 503: "ServiceUnavailable", 429: "TooManyRequests", 409: "Conflict"}
        payload = json.dumps(
            {
                "kind": "Status",
                "apiVersion": "v1",
                "status": "Failure",
                "message": f"injected by the chaos proxy ({status})",
                "reason": reasons[status],
                "code": status,
            }
        ).encode()
        record.status = status
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        if status == 429:
            self.send_header("Retry-After", str(self.owner.plan.retry_after))
        self.end_headers()
        self.wfile.write(payload)
        self.wfile.flush()

    def _stream(self, record: Record, resp: http.client.HTTPResponse) -> None:
        """Relay a watch line by line (chunked), cutting it per the plan."""
        budget = self.owner._watch_budget()
        self.send_response(resp.status)
        for k, v in resp.getheaders():
            if k.lower() not in HOP_BY_HOP:
                self.send_header(k, v)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        try:
            while not self.owner.stopped.is_set():
                line = resp.readline()
                if not line:
                    break
                if budget is not None and record.events >= budget:
                    if self.owner.plan.watch_cut_partial and len(line) > 2:
                        self._chunk(line[: len(line) // 2])
                    record.cut = True
                    self.owner._count_cut()
                    self._drop()
                    return
                try:
                    rv = json.loads(line)["object"]["metadata"]["resourceVersion"]
                    record.last_rv = str(rv)
                except (ValueError, KeyError, TypeError):
                    pass
                record.events += 1
                self._chunk(line)
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except OSError:
            self._drop()

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def _drop(self) -> None:
        self.close_connection = True
        with contextlib.suppress(OSError):
            self.connection.shutdown(socket.SHUT_RDWR)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tests.helpers.proxy", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--kubeconfig", required=True, help="the sandbox kubeconfig to front")
    parser.add_argument("--ca", help="CA of the API server (default: next to the kubeconfig, pki/ca.crt)")
    parser.add_argument("--out", required=True, help="write the proxied kubeconfig here")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--rate", type=float, default=0.05, help="share of requests per fault kind")
    parser.add_argument("--seconds", type=float, default=600, help="stop after this long")
    args = parser.parse_args(argv)
    config = yaml.safe_load(Path(args.kubeconfig).read_text())
    server = config["clusters"][0]["cluster"]["server"]
    ca = args.ca or str(Path(args.kubeconfig).parent / "pki" / "ca.crt")
    plan = FaultPlan(rates={f: args.rate for f in FAULTS}, watch_cut_after=(1, 20))
    with FaultProxy(server, ca, seed=args.seed, plan=plan, max_seconds=args.seconds) as proxy:
        proxy.kubeconfig(args.kubeconfig, args.out)
        print(f"proxy on {proxy.url}, kubeconfig {args.out}; stops in {args.seconds:.0f}s", flush=True)
        while not proxy.stopped.wait(1.0):
            pass
        print(json.dumps({"requests": dict(proxy.by_verb()), "faults": dict(proxy.faults)}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
