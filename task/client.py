"""Transport: sends requests built from `resources` to the API server, returns plain dicts.

Built on the official client's ApiClient (auth, TLS, in-cluster config) but speaking raw JSON, so
that every kind, custom resources included, is handled alike. Errors become `rollguard.errors` classes
with the HTTP exception chained. Safe retries (overload, 5xx, dropped connections) happen here, once.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from typing import Any

from rollguard.errors import ApiError, RefusedError, Unreachable, error_for_status, is_retryable
from rollguard.resources import Resource

Obj = dict[str, Any]

_RETRIES = 5
_POOL_SIZE = 32
_MERGE_PATCH = "application/merge-patch+json"


class Client:
    """A connection to one cluster, counting requests by verb (for benchmarks and tests)."""

    def __init__(self, api_client: Any, *, user_agent: str = "rollguard") -> None:
        self._api = api_client
        self._api.user_agent = user_agent
        self.requests: Counter[str] = Counter()
        self._lock = threading.Lock()

    # -- construction -------------------------------------------------------------------------------

    @classmethod
    def connect(cls, *, kubeconfig: str | None = None, context: str | None = None) -> Client:
        """In-cluster config inside a pod (unless a kubeconfig is given), else the kubeconfig."""
        from kubernetes import client as k8s_client
        from kubernetes import config as k8s_config

        cfg = k8s_client.Configuration()
        # A run holds one connection per watched resource while its writers work in parallel; the
        # default pool (5 per core) would drop connections and pay a TLS handshake for each new one.
        cfg.connection_pool_maxsize = _POOL_SIZE
        in_pod = os.path.exists("/var/run/secrets/kubernetes.io/serviceaccount/token")
        if kubeconfig is None and context is None and in_pod and os.environ.get("KUBERNETES_SERVICE_HOST"):
            k8s_config.load_incluster_config(client_configuration=cfg)
            return cls(k8s_client.ApiClient(cfg))
        path = kubeconfig or os.environ.get("KUBECONFIG", "").split(os.pathsep)[0] or "~/.kube/config"
        path = os.path.expanduser(path)
        if not os.path.isfile(path):
            raise RefusedError(
                f"kubeconfig {path!r} does not exist",
                fix="pass --kubeconfig FILE or set KUBECONFIG (in a pod, the ServiceAccount is used)",
            )
        try:
            k8s_config.load_kube_config(config_file=path, context=context, client_configuration=cfg)
        except Exception as exc:  # the loader raises ConfigException, yaml and key errors alike
            raise RefusedError(
                f"cannot use kubeconfig {path!r}"
                + (f" with context {context!r}" if context else "")
                + f": {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}",
                fix="check the file and the --context name (kubectl config get-contexts)",
            ) from exc
        return cls(k8s_client.ApiClient(cfg))

    # -- verbs ---------------------------------------------------------------------------------------

    def get(self, res: Resource, name: str, *, namespace: str | None = None) -> Obj:
        return self._call("GET", res.path(namespace=namespace, name=name), verb="get")

    def list(self, res: Resource, *, namespace: str | None = None, selector: str | None = None) -> Obj:
        query = [("labelSelector", selector)] if selector else []
        return self._call("GET", res.path(namespace=namespace), query=query, verb="list")

    def create(self, res: Resource, body: Obj, *, namespace: str | None = None) -> Obj:
        return self._call("POST", res.path(namespace=namespace), body=body, verb="create")

    def replace(self, res: Resource, body: Obj, *, namespace: str | None = None) -> Obj:
        """PUT; ``body.metadata.resourceVersion`` is the precondition (409 Conflict when stale)."""
        name = body["metadata"]["name"]
        return self._call("PUT", res.path(namespace=namespace, name=name), body=body, verb="update")

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
        self, res: Resource, name: str, *, namespace: str | None = None, resource_version: str | None = None
    ) -> Obj:
        """DELETE, optionally only if the object is still at ``resource_version``."""
        body = None
        if resource_version:
            body = {
                "apiVersion": "v1",
                "kind": "DeleteOptions",
                "preconditions": {"resourceVersion": resource_version},
            }
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
        try:
            buf = b""
            for chunk in resp.stream(4096, decode_content=True):
                buf += chunk
                while b"\n" in buf:
                    line, buf = buf.split(b"\n", 1)
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
        for attempt in range(_RETRIES):
            try:
                resp = self._send(method, path, query=query, body=body, verb=verb, content_type=content_type)
                data: Obj = json.loads(resp.data or b"{}")
                return data
            except ApiError as exc:
                if not is_retryable(exc) or attempt == _RETRIES - 1:
                    raise
                time.sleep(min(exc.retry_after or 0.2 * 2**attempt, 5.0))
        raise AssertionError("unreachable")  # pragma: no cover

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
        timeout: float = 30.0,
    ) -> Any:
        from kubernetes.client.exceptions import ApiException

        with self._lock:
            self.requests[verb] += 1
        headers = {"Accept": "application/json", "Content-Type": content_type}
        try:
            return self._api.call_api(
                path,
                method,
                query_params=list(query or []),
                header_params=headers,
                body=body,
                auth_settings=["BearerToken"],
                _preload_content=False,
                _return_http_data_only=True,
                _request_timeout=timeout if stream else (5.0, timeout),
            )
        except ApiException as exc:
            raise _api_error(exc, method, path) from exc
        except Exception as exc:  # urllib3: refused, reset, timed out, TLS
            raise Unreachable(f"{method} {path}: cannot reach the API server ({_short(exc)})") from exc


def _api_error(exc: Any, method: str, path: str) -> ApiError:
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


def _short(exc: BaseException) -> str:
    text = str(exc)
    return text if len(text) < 160 else text[:157] + "..."
