"""The preflight of ``--verify``: what the checks need of the cluster and of their servers, asked before
the group changes (exit 2 and nothing changed when something is wrong).

- permissions (`check_permissions`): a job check creates, watches and deletes Jobs and reads its pods'
  logs; an http or prometheus check needs nothing of the API server;
- every Job manifest is sent as a server-side dry run (``dryRun=All``, nothing stored), so what the API
  server or an admission webhook refuses is refused now, in the server's words;
- every PromQL query is sent to its server once (an instant query, read-only), so one that does not
  parse is refused with the server's own error, and an unreachable server or a rejected token too;
- a ``ca`` file (or the pod's, for ``ca: cluster``) and a ``token`` file must be readable.

Also the small HTTP client the prometheus check uses (`prometheus_query`), and the TLS context of ``ca``:
here, in the plan layer, so that the preflight and the runner (`rollguard.run.checks`) share them.
"""

from __future__ import annotations

import json
import ssl
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

from rollguard.cluster.access import Need, ask, first_gap
from rollguard.cluster.api import Api
from rollguard.core.errors import ApiError, RefusedError
from rollguard.core.resources import JOBS, POD_LOGS, PODS
from rollguard.plan.checks import SERVICE_ACCOUNT, Check, PrometheusCheck, job_body, job_name

SERVICE_ACCOUNT_DIR = Path("/var/run/secrets/kubernetes.io/serviceaccount")
QUERY_TIMEOUT = 15.0


def check_needs(namespace: str, checks: list[Check]) -> list[Need]:
    """What the checks need of the API server: only job checks need anything (the rest talk HTTP)."""
    if not any(c.job is not None for c in checks):
        return []
    needs: list[Need] = [(v, JOBS, namespace) for v in ("create", "get", "watch", "delete")]
    needs += [("list", PODS, namespace), ("get", POD_LOGS, namespace)]
    return needs


def cluster_ca() -> Path:
    """The CA of ``ca: cluster``: the pod's service CA (OpenShift), else its ServiceAccount's cluster CA."""
    service = SERVICE_ACCOUNT_DIR / "service-ca.crt"
    return service if service.exists() else SERVICE_ACCOUNT_DIR / "ca.crt"


def ca_file(ca: str) -> Path | None:
    """The CA bundle file of ``ca`` (None: the system's store)."""
    if ca == "system":
        return None
    return cluster_ca() if ca == "cluster" else Path(ca)


def tls_context(ca: str) -> ssl.SSLContext:
    """The TLS context of ``ca``: system, cluster, or a CA bundle file."""
    path = ca_file(ca)
    return ssl.create_default_context(cafile=str(path) if path is not None else None)


def token_of(spec: PrometheusCheck) -> str:
    """The bearer token (read at each use: a projected token rotates), '' for none."""
    if not spec.token:
        return ""
    path = SERVICE_ACCOUNT_DIR / "token" if spec.token == SERVICE_ACCOUNT else Path(spec.token)
    return path.read_text().strip()


class QueryError(Exception):
    """The server's refusal of a query (``bad``: it did not parse or is invalid, the server's words)."""

    def __init__(self, message: str, *, bad: bool = False) -> None:
        super().__init__(message)
        self.bad = bad


def prometheus_query(spec: PrometheusCheck, *, timeout: float = QUERY_TIMEOUT) -> dict[str, Any]:
    """An instant query (``GET /api/v1/query``): the answer's ``data`` (resultType and result)."""
    url = spec.url.rstrip("/") + "/api/v1/query?" + urllib.parse.urlencode({"query": spec.query})
    headers = {"Accept": "application/json", "User-Agent": "rollguard-verify"}
    token = token_of(spec)
    if token:
        headers["Authorization"] = f"Bearer {token}"
    handlers: list[Any] = []
    if url.startswith("https:"):
        handlers.append(urllib.request.HTTPSHandler(context=tls_context(spec.ca)))
    opener = urllib.request.build_opener(*handlers)
    try:
        with opener.open(urllib.request.Request(url, headers=headers), timeout=timeout) as resp:
            answer = json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        try:
            body = json.loads(exc.read() or b"{}")
        except ValueError:
            body = {}
        said = body.get("error") or exc.reason
        raise QueryError(
            f"{exc.code} {said}", bad=exc.code in (400, 422) and bool(body.get("error"))
        ) from exc
    except (urllib.error.URLError, OSError, ValueError) as exc:
        raise QueryError(f"no answer from {spec.url}: {getattr(exc, 'reason', exc)}") from exc
    if answer.get("status") != "success":
        raise QueryError(str(answer.get("error") or answer), bad=answer.get("errorType") == "bad_data")
    data: dict[str, Any] = answer.get("data") or {}
    return data


def check_files(checks: list[Check]) -> None:
    """Every CA and token file the checks name is readable (else refused, naming the check)."""
    for check in checks:
        spec = check.http or check.prometheus
        if spec is None:
            continue
        path = ca_file(spec.ca)
        files = [("ca", path)] if path is not None else []
        if check.prometheus is not None and check.prometheus.token:
            token = check.prometheus.token
            files.append(
                ("token", SERVICE_ACCOUNT_DIR / "token" if token == SERVICE_ACCOUNT else Path(token))
            )
        for what, file in files:
            try:
                file.read_bytes()
            except OSError as exc:
                raise RefusedError(
                    f"--verify: check {check.name!r}: cannot read its {what} file {str(file)!r}: "
                    f"{exc.strerror or exc}",
                    fix="give a readable file (ca: system uses the system's CA store)",
                ) from exc


def check_queries(checks: list[Check]) -> None:
    """Each PromQL query asked once of its server: refused when it does not parse (the server's error),
    or when the server cannot be asked at all (unreachable, token refused)."""
    for check in checks:
        if check.prometheus is None:
            continue
        try:
            prometheus_query(check.prometheus)
        except QueryError as exc:
            problem = "the query does not parse" if exc.bad else "the server could not be asked"
            raise RefusedError(
                f"--verify: check {check.name!r}: {problem}: {exc}",
                fix="fix the query (the server's error above)" if exc.bad else "check url, token and ca",
            ) from exc


def dry_run_jobs(client: Api, namespace: str, checks: list[Check], *, run_id: str) -> None:
    """Every Job manifest sent as a server-side dry run: refused in the server's words."""
    for check in checks:
        if check.job is None:
            continue
        name = job_name(check.name, run_id)
        body = job_body(
            check.job.manifest,
            name=name,
            namespace=namespace,
            run_id=run_id,
            check=check.name,
            timeout=check.timeout,
        )
        try:
            client.create(JOBS, body, namespace=namespace, dry_run=True)
        except ApiError as exc:
            if not exc.status or exc.status >= 500 or exc.status == 429:
                raise  # the server failed, it did not judge: a preflight failure, as any read's
            raise RefusedError(
                f"--verify: check {check.name!r}: the API server refuses its Job ({check.job.path}): {exc}",
                fix="fix the Job manifest",
            ) from exc


def check_permissions(client: Api, namespace: str, checks: list[Check]) -> None:
    refusal = first_gap(ask(client, check_needs(namespace, checks)))
    if refusal is not None:
        raise RefusedError(f"--verify: {refusal.problem}", fix=refusal.fix)


def preflight_checks(client: Api, namespace: str, checks: list[Check], *, run_id: str) -> None:
    """All of the checks' preflight, cheapest first; raises RefusedError (exit 2, nothing changed)."""
    if not checks:
        return
    check_files(checks)
    check_permissions(client, namespace, checks)
    dry_run_jobs(client, namespace, checks, run_id=run_id)
    check_queries(checks)
