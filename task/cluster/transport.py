"""The HTTP transport under `rollguard.cluster.client.Client`: a request out, its answer or a `rollguard.core.errors`.

The official `kubernetes` package's transport and auth (`Transport`), without its ApiClient. The
request itself (path, query, body) is built by `Client`; here it is only sent, and the answer is left
undecoded, so that a watch or a log can be streamed as it arrives (`stream_lines`).

The contract of `send`: an HTTP error status becomes its `rollguard.core.errors` class (the server's own
message and reason, ``Retry-After`` kept for the retry in `Client`), anything else that stops the
request (refused, reset, timed out, TLS) becomes `Unreachable`; the cause is always chained. Nothing
is retried here: which requests are safe to retry is the client's decision. Every request has a
timeout (to connect, and to wait for the next bytes of an answer), and a `Pulse`, when given, hears
whether each one was answered.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import weakref
from collections.abc import Iterator, Sequence
from typing import Any

from rollguard.cluster import k8s
from rollguard.cluster.pulse import Pulse
from rollguard.core.errors import ApiError, Unreachable, error_for_status

Obj = dict[str, Any]
CONNECT_TIMEOUT = 5.0  # seconds to connect (TLS handshake included)


class Transport:
    """The official client's transport without its ApiClient: ``rest.RESTClientObject`` and the auth of a
    ``Configuration`` (token refresh hooks included), behind ApiClient's ``call_api`` as Client uses it.

    ApiClient would add model (de)serialization, which raw JSON does not need, and importing it imports
    every generated model (`rollguard.cluster.k8s`).
    """

    def __init__(self, configuration: Any) -> None:
        # urllib3 retries a failed connection or read 3 times by itself: each timeout counted four
        # times over (a request to an API server that does not answer waited 4 x 30 s per attempt),
        # and a write resent behind the client's back. Which requests to retry is the client's decision.
        configuration.retries = 0
        self.configuration = configuration
        self.rest_client = k8s.module("client.rest").RESTClientObject(configuration)
        self.user_agent = "rollguard"
        # Every connection this transport opens, so that `cut_connections` can end the requests that
        # wait on them (urllib3 has no handle on a request in flight).
        self._connections: weakref.WeakSet[Any] = weakref.WeakSet()  # those the pool dropped go by themselves
        self._track_lock = threading.Lock()
        manager = self.rest_client.pool_manager
        manager.pool_classes_by_scheme = {
            scheme: _tracked(pool, self._track) for scheme, pool in manager.pool_classes_by_scheme.items()
        }

    def _track(self, connection: Any) -> None:
        with self._track_lock:
            self._connections.add(connection)

    def cut_connections(self) -> None:
        """Shut the socket of every connection, in use or idle: a request waiting on one ends at once
        (`Unreachable`) instead of at its timeout. For a run whose time is up while the API server does
        not answer (`rollguard.cluster.pulse`)."""
        with self._track_lock:
            connections = list(self._connections)
        for connection in connections:
            sock = getattr(connection, "sock", None)
            if sock is not None:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)

    def call_api(
        self,
        path: str,
        method: str,
        *,
        query_params: list[tuple[str, Any]],
        header_params: dict[str, str],
        body: Obj | None,
        auth_settings: list[str],
        _preload_content: bool,
        _return_http_data_only: bool,
        _request_timeout: Any,
    ) -> Any:
        headers = {**header_params, "User-Agent": self.user_agent}
        if "BearerToken" in auth_settings:
            token = self.configuration.get_api_key_with_prefix("authorization")
            if token:
                headers["authorization"] = token
        return self.rest_client.request(
            method,
            self.configuration.host + path,
            query_params=query_params,
            headers=headers,
            body=body,
            _preload_content=_preload_content,
            _request_timeout=_request_timeout,
        )


def _tracked(pool_class: Any, track: Any) -> Any:
    """``pool_class`` (a urllib3 connection pool class) whose connections call ``track`` as they connect."""
    base: Any = pool_class.ConnectionCls

    def connect(self: Any) -> None:
        track(self)
        base.connect(self)

    connection_class = type(f"Tracked{base.__name__}", (base,), {"connect": connect})
    return type(f"Tracked{pool_class.__name__}", (pool_class,), {"ConnectionCls": connection_class})


def send(
    api: Any,
    method: str,
    path: str,
    *,
    query: Sequence[tuple[str, Any]] | None = None,
    body: Obj | None = None,
    content_type: str = "application/json",
    stream: bool = False,
    timeout: float = 30.0,
    pulse: Pulse | None = None,
) -> Any:
    """One request through ``api`` (a `Transport`, or anything with its ``call_api``); the raw answer.

    ``timeout``: how long to wait for the answer, and for each next part of a stream's (with 5 s to
    connect). Always a (connect, read) pair: the official client applies a single number only when it
    is an ``int`` and silently sends a ``float`` (a log follow's 3600.0) with no timeout at all.
    ``pulse``: told whether the server answered (any HTTP status) or not.
    """
    ApiException = k8s.module("client.exceptions").ApiException

    headers = {"Accept": "application/json", "Content-Type": content_type}
    token = pulse.sent() if pulse is not None else 0
    try:
        answer = api.call_api(
            path,
            method,
            query_params=list(query or []),
            header_params=headers,
            body=body,
            auth_settings=["BearerToken"],
            _preload_content=False,
            _return_http_data_only=True,
            _request_timeout=(CONNECT_TIMEOUT, float(timeout)),
        )
    except ApiException as exc:
        if pulse is not None:
            (pulse.answered if exc.status else pulse.unanswered)(token)  # status 0: TLS failed, no answer
        raise api_error(exc, method, path) from exc
    except Exception as exc:  # urllib3: refused, reset, timed out, TLS
        if pulse is not None:
            pulse.unanswered(token)
        reason = why_unanswered(exc, read_timeout=float(timeout))
        raise Unreachable(f"{method} {path}: cannot reach the API server ({reason})") from exc
    if pulse is not None:
        pulse.answered(token)
    return answer


def api_error(exc: Any, method: str, path: str) -> ApiError:
    """The `rollguard.core.errors` class of an ``ApiException``, with the server's message and reason."""
    status = int(exc.status or 0)
    message, reason = exc.reason or "", ""
    try:
        payload = json.loads(exc.body or b"{}")
        message = payload.get("message") or message
        reason = payload.get("reason") or ""
    except (ValueError, TypeError):
        pass
    retry_after = 0.0
    headers = exc.headers or {}
    if headers.get("Retry-After", "").isdigit():
        retry_after = float(headers["Retry-After"])
    cls = error_for_status(status) if status else Unreachable
    return cls(f"{method} {path}: {status} {message}", status=status, reason=reason, retry_after=retry_after)


def stream_lines(resp: Any, *, keep_partial: bool) -> Iterator[bytes]:
    """The lines of a streamed answer as they arrive, without their newline; with ``keep_partial`` also
    a last line that ends without one."""
    buf = b""
    for chunk in resp.stream(4096, decode_content=True):
        buf += chunk
        while b"\n" in buf:
            line, buf = buf.split(b"\n", 1)
            yield line
    if keep_partial and buf:
        yield buf


def cut_when(stop: threading.Event, done: threading.Event, resp: Any) -> None:
    """Shut ``resp``'s socket once ``stop`` is set, so that a read blocked on it returns at once."""
    while not done.is_set():
        if stop.wait(0.25):
            with contextlib.suppress(RuntimeError, OSError):  # the stream ended and was released meanwhile
                resp.shutdown()
            return


def why_unanswered(exc: BaseException, *, read_timeout: float) -> str:
    """Why a request got no answer, in the words an operator uses: urllib3 says a read timeout as
    "HTTPSConnectionPool(host=..., port=...): Max retries exceeded with url: ... (Caused by
    ReadTimeoutError(...))", which the TUI's banner and a refused dry run used to print whole."""
    cause = getattr(exc, "reason", None) or exc  # MaxRetryError wraps what really happened
    name = type(cause).__name__
    if name == "ConnectTimeoutError":
        return f"no connection within {CONNECT_TIMEOUT:g}s"
    if name == "ReadTimeoutError" or isinstance(cause, TimeoutError):
        return f"no answer within {read_timeout:g}s"
    text = str(cause)
    if "refused" in text.lower():
        return "connection refused"
    if name == "NameResolutionError" or "resolve" in text.lower():
        return "its host name does not resolve"
    if name == "SSLError" or "certificate" in text.lower():
        inner = cause.args[0] if cause.args and isinstance(cause.args[0], BaseException) else cause
        return f"TLS failed: {_short(str(inner))}"
    if name == "ProtocolError" or isinstance(cause, ConnectionError):
        return "the connection was dropped"
    return _short(text)


def _short(text: str) -> str:
    return text if len(text) < 160 else text[:157] + "..."
