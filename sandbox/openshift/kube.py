"""A small JSON client for the Kubernetes API: plain dicts in and out, and watch streams.

The `kubernetes` package only reads the kubeconfig (host, CA, token or client certificate); requests go
through one urllib3 pool shared by all threads. Plain dicts keep every field a client wrote (no model
round trip) and cost far less CPU than the generated models, which matters with hundreds of objects.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlencode

import urllib3
from kubernetes import client, config

JSON = dict[str, Any]
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_PATCH = "application/strategic-merge-patch+json"


class ApiError(Exception):
    """A non-2xx answer of the API server."""

    def __init__(self, status: int, body: JSON | None, method: str, path: str) -> None:
        self.status = status
        self.body = body or {}
        self.reason = self.body.get("reason", "")
        super().__init__(f"{method} {path}: {status} {self.body.get('message', '')}".strip())


class Kube:
    """Thread-safe raw JSON access to one API server."""

    def __init__(self, kubeconfig: str, pool_size: int = 48) -> None:
        cfg = client.Configuration()
        config.load_kube_config(config_file=kubeconfig, client_configuration=cfg)
        self.host = str(cfg.host).rstrip("/")
        self.headers = {"Accept": "application/json", "User-Agent": "rollguard-openshift-emulation"}
        token = cfg.api_key.get("authorization") or cfg.api_key.get("BearerToken")
        if token:
            self.headers["Authorization"] = token if token.startswith("Bearer ") else f"Bearer {token}"
        keepalive = [
            *urllib3.connection.HTTPConnection.default_socket_options,
            (socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1),
        ]
        self.pool = urllib3.PoolManager(
            num_pools=4,
            maxsize=pool_size,
            block=False,
            cert_reqs="CERT_REQUIRED" if cfg.verify_ssl else "CERT_NONE",
            ca_certs=cfg.ssl_ca_cert,
            cert_file=cfg.cert_file,
            key_file=cfg.key_file,
            socket_options=keepalive,
        )
        self.requests = 0  # count and total seconds of requests, for the periodic stats line
        self.request_seconds = 0.0
        self._stats_lock = threading.Lock()

    def url(self, path: str, query: dict[str, Any] | None = None) -> str:
        q = {k: v for k, v in (query or {}).items() if v is not None}
        return self.host + path + (("?" + urlencode(q)) if q else "")

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        query: dict[str, Any] | None = None,
        content_type: str = "application/json",
        timeout: float = 30.0,
    ) -> JSON:
        """One request; raise ApiError on a non-2xx answer, return the decoded body."""
        headers = dict(self.headers)
        data = None
        if body is not None:
            headers["Content-Type"] = content_type
            data = json.dumps(body).encode()
        t0 = time.monotonic()
        try:
            resp = self.pool.request(
                method,
                self.url(path, query),
                body=data,
                headers=headers,
                timeout=urllib3.Timeout(connect=10.0, read=timeout),
                retries=False,
            )
        finally:
            with self._stats_lock:
                self.requests += 1
                self.request_seconds += time.monotonic() - t0
        payload = json.loads(resp.data) if resp.data else {}
        if not 200 <= resp.status < 300:
            raise ApiError(resp.status, payload if isinstance(payload, dict) else None, method, path)
        return payload

    def get(self, path: str, **query: Any) -> JSON:
        return self.request("GET", path, query=query)

    def watch(
        self, path: str, resource_version: str, timeout_seconds: int = 290, **query: Any
    ) -> Iterator[JSON]:
        """Yield watch events ({type, object}) from `resource_version` until the server ends the stream."""
        q = {
            **query,
            "watch": "true",
            "resourceVersion": resource_version,
            "allowWatchBookmarks": "true",
            "timeoutSeconds": timeout_seconds,
        }
        resp = self.pool.request(
            "GET",
            self.url(path, q),
            headers=self.headers,
            preload_content=False,
            retries=False,
            timeout=urllib3.Timeout(connect=10.0, read=timeout_seconds + 30),
        )
        try:
            if resp.status != 200:
                body = resp.read()
                raise ApiError(resp.status, json.loads(body) if body else None, "WATCH", path)
            buf = b""
            for chunk in resp.stream(65536, decode_content=True):
                buf += chunk
                while b"\n" in buf:
                    line, buf = buf.split(b"\n", 1)
                    if line.strip():
                        yield json.loads(line)
        finally:
            resp.release_conn()
