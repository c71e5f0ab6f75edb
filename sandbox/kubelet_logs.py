"""Container logs as the stand-in kubelet serves them: `GET /containerLogs/{namespace}/{pod}/{container}`.

The API server answers `GET pods/P/log` by proxying to that route on the pod's node (k8s
pkg/registry/core/pod/strategy.go `LogLocation`: the node's address of the first type in
`--kubelet-preferred-address-types`, the port in its `status.daemonEndpoints.kubeletEndpoint`, HTTPS with
the `--kubelet-client-certificate`). So, as a kubelet's (pkg/kubelet/server/server.go), this endpoint:
  - serves HTTPS with a cert the sandbox CA signed and answers only clients with a cert from that CA
    (401 otherwise);
  - reads the query as PodLogOptions: follow, previous, timestamps, tailLines, sinceSeconds, limitBytes
    (400 "Unable to decode query." when a number is not one, 422 "Invalid request." when negative);
  - 404 for a pod it does not run or a container not in its spec;
  - picks the container instance as pkg/kubelet/kubelet_pods.go `validateContainerLogStatus` does from
    the status it reports: `previous` the last terminated one (400 `previous terminated container "C" in
    pod "P" not found` when there is none), else the running one, else the last terminated one, else 400
    "... is waiting to start: ...";
  - writes the lines chunked; with `follow` the answer stays open and gets each new line while the
    instance runs, and ends when it exits.

What a container prints is a pure function of its image (`sandbox.registry` behaviour) and of the
instance's start and end, like its status (`sandbox.podstatus`): a start-up naming the image's version,
then a health-check line every `LINE_EVERY` s while it runs; a `-slow<N>` image warms up for N s first;
a `-crash` image prints a fatal error as it exits, so a crash loop's previous container tells why;
an `-exit<N>` image (a batch process) says it runs its tests, then PASS or FAIL as it exits.
A pod whose process is emulated elsewhere (a deployer pod) prints what that process wrote (`PodRun.output`)
in its first container, and nothing else.
"""

from __future__ import annotations

import ssl
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from sandbox import registry
from sandbox.podstatus import PodRun

LINE_EVERY = 2.0  # a running container answers a health check, and logs it, every 2 s
FOLLOW_POLL = 0.2  # how often a follow stream looks for the next line or the instance's end


@dataclass(frozen=True)
class Instance:
    """One run of a container: its tagged image, what that image does, when it started and ended."""

    image: str
    behaviour: registry.Behaviour
    start: float
    end: float | None  # None while it runs
    exit_code: int | None = None
    message: str = ""  # the termination message of an emulated process's exit
    output: tuple[tuple[float, str], ...] | None = None  # an emulated process's lines, as it wrote them


class LogError(Exception):
    """An answer other than the log: the HTTP status and the kubelet's text."""

    def __init__(self, status: int, text: str) -> None:
        super().__init__(text)
        self.status = status


def app_and_version(image: str) -> tuple[str, str]:
    """`registry.local/team/app:v2-crash` -> ("app", "v2-crash")."""
    try:
        repo, tag, digest = registry.split_ref(image)
    except ValueError:
        return image, "unknown"
    return repo.rsplit("/", 1)[-1], tag or (digest or "latest")[:19]


def lines(inst: Instance, until: float) -> list[tuple[float, str]]:
    """(time, text) of every line `inst` had printed by `until`, oldest first."""
    if inst.output is not None:
        return [(t, text) for t, text in inst.output if t <= until]
    app, version = app_and_version(inst.image)
    t0 = inst.start
    kind, *arg = inst.behaviour
    out = [
        (t0, f"INFO starting {app} {version} (image {inst.image})"),
        (t0 + 0.01, f"INFO loading configuration from /etc/{app}/config.yaml"),
    ]
    end = inst.end if inst.end is not None else float("inf")  # what comes after, it did not print
    if kind == "exit":  # a batch process (a Job's test image): it tests, says how it went, and exits
        out.append((t0 + 0.02, f"INFO {app} {version}: running 12 tests"))
        if inst.end is not None:
            code = inst.exit_code if inst.exit_code is not None else int(arg[0])
            verdict = (
                "PASS: 12 of 12 tests passed" if code == 0 else f"FAIL: 3 of 12 tests failed (exit {code})"
            )
            out.append((max(inst.end, t0 + 0.03), verdict))
    elif kind == "crash":
        out.append((t0 + 0.02, "INFO connecting to the database at db:5432"))
        if inst.end is not None:
            out.append((
                max(inst.end, t0 + 0.03),
                f"FATAL {app} {version}: cannot start: dial tcp 10.0.0.12:5432: connect: connection refused",
            ))  # fmt: skip
    else:
        ready_at = t0 + 0.02
        if kind == "slow":
            warm = int(arg[0])
            out += [(t0 + 0.02 + i, f"INFO warming cache: {i}/{warm} segments loaded") for i in range(warm)]
            ready_at = t0 + warm
        out.append((ready_at, "INFO listening on :8080"))
        out.append((ready_at + 0.001, f"INFO {app} {version} ready"))
        t, n = ready_at + LINE_EVERY, 0
        while t <= min(until, end):
            n += 1
            out.append((t, f'INFO 10.128.0.1 "GET /healthz HTTP/1.1" 200 2 {0.3 + n % 7 / 10:.1f}ms'))
            t += LINE_EVERY
        if inst.end is not None:
            code = inst.exit_code if inst.exit_code is not None else 0
            last = max(inst.end, out[-1][0] + 0.001)
            said = (
                f"FATAL {app} {version}: out of memory (heap limit reached)"
                if kind == "dies" and code
                else ""
            )
            out.append((last, inst.message or said or f"INFO {app} {version} shutting down (exit {code})"))
    return [(t, text) for t, text in out if t <= until]


# -- which instance (validateContainerLogStatus) ---------------------------------------------------------


def _parse(stamp: str) -> float:
    return datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC).timestamp()


def pick(run: PodRun, container: str, *, previous: bool, now: float, registry_dir: Path) -> Instance:
    """The instance whose log `GET /containerLogs` returns, chosen from the pod's status at `now` as the
    kubelet's `validateContainerLogStatus` chooses; LogError(400) when there is none to show."""
    status, _next = run.status(now)
    statuses = [*(status.get("containerStatuses") or []), *(status.get("initContainerStatuses") or [])]
    st = next((s for s in statuses if s["name"] == container), None)
    spec = next((c for c in [*run.containers, *run.init_containers] if c.name == container), None)
    if st is None or spec is None:
        raise LogError(400, f'container "{container}" in pod "{run.name}" is not available')
    state, last = st.get("state") or {}, (st.get("lastState") or {}).get("terminated")
    tagged = registry.resolve(registry_dir, spec.image) or spec.image
    output = run.output if run.containers and spec is run.containers[0] else None

    def ended(t: dict[str, Any]) -> Instance:
        message = str(t.get("message") or "")
        return Instance(tagged, spec.behaviour, _parse(t["startedAt"]), _parse(t["finishedAt"]),
                        int(t.get("exitCode", 0)), message, output)  # fmt: skip

    if previous:
        if not last or not last.get("containerID"):
            raise LogError(400, f'previous terminated container "{container}" in pod "{run.name}" not found')
        return ended(last)
    if "running" in state:
        return Instance(tagged, spec.behaviour, _parse(state["running"]["startedAt"]), None, output=output)
    if "terminated" in state:
        return ended(state["terminated"])
    if last and last.get("containerID"):
        return ended(last)
    reason = (state.get("waiting") or {}).get("reason", "")
    why = {"ErrImagePull": "image can't be pulled", "ImagePullBackOff": "trying and failing to pull image"}
    raise LogError(
        400, f'container "{container}" in pod "{run.name}" is waiting to start: {why.get(reason, reason)}'
    )


# -- the query (PodLogOptions) and the answer ---------------------------------------------------------------


@dataclass(frozen=True)
class LogOptions:
    follow: bool = False
    previous: bool = False
    timestamps: bool = False
    tail_lines: int | None = None
    since_seconds: int | None = None
    limit_bytes: int | None = None


def parse_options(query: str) -> LogOptions:
    """PodLogOptions from a query string, refused as the kubelet refuses it."""
    q = {k: v[-1] for k, v in parse_qs(query).items()}
    if "tail" in q:  # the kubelet's backwards compatible spelling of tailLines
        q["tailLines"] = q.pop("tail")
        if q["tailLines"] == "all":
            del q["tailLines"]
    numbers: dict[str, int | None] = {}
    for key in ("tailLines", "sinceSeconds", "limitBytes"):
        try:
            numbers[key] = int(q[key]) if key in q else None
        except ValueError:
            raise LogError(400, '{"message": "Unable to decode query."}') from None
    if any(n is not None and n < (1 if k != "tailLines" else 0) for k, n in numbers.items()):
        raise LogError(422, '{"message": "Invalid request."}')
    return LogOptions(
        follow=q.get("follow") == "true", previous=q.get("previous") == "true",
        timestamps=q.get("timestamps") == "true", tail_lines=numbers["tailLines"],
        since_seconds=numbers["sinceSeconds"], limit_bytes=numbers["limitBytes"],
    )  # fmt: skip


def render(line: tuple[float, str], *, timestamps: bool) -> bytes:
    t, text = line
    if not timestamps:
        return (text + "\n").encode()
    stamp = datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%S.%f") + "000Z"  # RFC3339Nano
    return f"{stamp} {text}\n".encode()


def first_lines(inst: Instance, opts: LogOptions, now: float) -> list[tuple[float, str]]:
    """What is in the log at `now`, after sinceSeconds and tailLines."""
    out = lines(inst, now)
    if opts.since_seconds is not None:
        out = [ln for ln in out if ln[0] >= now - opts.since_seconds]
    if opts.tail_lines is not None:
        out = out[len(out) - opts.tail_lines :] if opts.tail_lines else []
    return out


# -- the HTTPS endpoint --------------------------------------------------------------------------------------

FindRun = Callable[[str, str], PodRun | None]


def serve(*, find: FindRun, registry_dir: Path, pki: Path, host: str = "127.0.0.1") -> ThreadingHTTPServer:
    """Listen on a free port of `host` (the port is `server.server_address[1]`), serving in a thread."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(pki / "kubelet.crt", pki / "kubelet.key")
    ctx.load_verify_locations(pki / "ca.crt")
    ctx.verify_mode = ssl.CERT_OPTIONAL  # without a cert: 401 below, as the kubelet answers anonymous

    class Handler(_Handler):
        pass

    Handler.find, Handler.registry_dir = staticmethod(find), registry_dir
    server = ThreadingHTTPServer((host, 0), Handler)
    server.daemon_threads = True
    server.socket = ctx.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, name="kubelet-server", daemon=True).start()
    return server


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # a followed log's lines go out as written, not after a delayed ACK
    find: FindRun
    registry_dir: Path

    def log_message(self, format: str, *args: Any) -> None:
        pass  # one line per request would drown the kubelet's log

    def do_GET(self) -> None:
        try:
            if not self.connection.getpeercert():  # type: ignore[attr-defined]
                raise LogError(401, "Unauthorized")
            url = urlsplit(self.path)
            parts = [unquote(p) for p in url.path.split("/")]
            if len(parts) != 5 or parts[1] != "containerLogs" or not all(parts[2:]):
                raise LogError(404, "404 page not found")
            namespace, pod, container = parts[2:]
            opts = parse_options(url.query)
            run = self.find(namespace, pod)
            if run is None:
                raise LogError(404, f'pod "{pod}" does not exist')
            if container not in [c.name for c in [*run.containers, *run.init_containers]]:
                raise LogError(404, f'container "{container}" not found in pod "{pod}"')
            inst = pick(
                run, container, previous=opts.previous, now=time.time(), registry_dir=self.registry_dir
            )
        except LogError as e:
            body = str(e).encode()
            self.send_response(e.status)
            self.send_header("Content-Type", "text/plain; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        try:
            self._stream(run, container, inst, opts)
            self.wfile.write(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError):
            self.close_connection = True  # the client went away: a follow that was stopped

    def _stream(self, run: PodRun, container: str, inst: Instance, opts: LogOptions) -> None:
        budget = opts.limit_bytes
        now = time.time()
        sent_until, sent = now, len(lines(inst, now))
        pending = first_lines(inst, opts, now)
        while True:
            for line in pending:
                data = render(line, timestamps=opts.timestamps)
                if budget is not None:
                    data, budget = data[:budget], budget - len(data)
                if data:
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
                    self.wfile.flush()
                if budget is not None and budget <= 0:
                    return
            if not opts.follow or inst.end is not None:
                return
            time.sleep(FOLLOW_POLL)
            now = time.time()
            current = self.find(run.namespace, run.name)
            if current is not None and current.uid == run.uid:
                try:
                    fresh = pick(current, container, previous=False, now=now, registry_dir=self.registry_dir)
                except LogError:
                    fresh = None
                if fresh is not None and fresh.start == inst.start:
                    inst = fresh  # what an emulated process printed since; or it exited: its last lines
                if fresh is not None and fresh.start == inst.start and fresh.end is None:
                    pending = unsent(inst, now, since=sent_until, sent=sent)
                    sent_until, sent = now, sent + len(pending)
                    continue
            inst = Instance(
                inst.image,
                inst.behaviour,
                inst.start,
                inst.end or now,
                inst.exit_code,
                inst.message,
                inst.output,
            )
            pending = unsent(inst, float("inf"), since=sent_until, sent=sent)


def unsent(inst: Instance, now: float, *, since: float, sent: int) -> list[tuple[float, str]]:
    """The lines a follow has not sent yet: printed after `since` (up to `now`), or, for an emulated
    process, after the first `sent` (its lines reach the kubelet later than their time says)."""
    if inst.output is not None:
        return list(inst.output[sent:])
    return [ln for ln in lines(inst, now) if since < ln[0] <= now]
