"""The post-rollout checks of ``--verify FILE``: parsed and validated, pure (no I/O, no cluster).

A run verifies its group after every workload rolled out and before it says ``succeeded``; a failed
check reverts the group like a failed rollout. This module only turns the file's text into typed
`Check` values or a `RefusedError` naming the check, the field and the fix (exit 2, nothing changed):
the runners are in `rollguard.run.checks`, the server-side validation (a Job's dry run, a PromQL the
server parses, permissions) in `rollguard.plan.checks_read`.

The file, with every field (the issue's interface; ``--bake`` is a flag, not a check)::

    checks:
      - name: health                  # a DNS label of at most 40 characters, unique in the file
        timeout: 60s                  # default 5m
        http:
          url: "http://api.shop.svc:8080/health"   # http or https, with a host
          status: [200]               # default [200]
          body: "ok|healthy"          # optional: a regular expression the body must match
          successes: 3                # consecutive successes needed (default 1)
          interval: 2s                # between requests (default 1s)
          ca: system                  # https: system (default), cluster (the pod's service CA), or a file
          follow_redirects: true      # default true; the redirects are said in the evidence
      - name: smoke
        timeout: 5m
        job: smoke-job.yaml           # a batch/v1 Job manifest, relative to the checks file
        keep: false                   # true: the Job is left in the namespace for debugging
      - name: error-ratio
        timeout: 5m
        prometheus:
          url: "https://thanos-querier.openshift-monitoring.svc:9091"
          query: 'sum(rate(http_requests_total{code=~"5.."}[1m])) / sum(rate(http_requests_total[1m]))'
          below: 0.01                 # exactly one of below, above, equals
          for: 2m                     # evaluated every interval for this long (default: once)
          interval: 30s               # default 30s
          failures: 1                 # failed evaluations that fail the check (default 1)
          empty: fail                 # an empty result: fail (default) or pass
          token: serviceaccount       # bearer token: serviceaccount, or a file; none by default
          ca: system                  # as for http

Why a parser of its own: a typo in a check must be refused before the group changes, not found after the
rollout when the check cannot run, so every field is known and checked here, and unknown ones refused.
"""

from __future__ import annotations

import copy
import enum
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any
from urllib.parse import urlsplit

import yaml

from rollguard.core.errors import RefusedError
from rollguard.core.structs import Obj
from rollguard.plan.inputs import parse_duration

NAME_MAX = 40  # the Job's name is NAME-<run id> (23 characters): a label value of at most 63
DEFAULT_TIMEOUT = 300
SERVICE_ACCOUNT = "serviceaccount"
_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
RUN_LABEL = "rollguard.io/run-id"  # on a job check's Job and its pods
CHECK_LABEL = "rollguard.io/check"
FIX = "see the README's 'Post-rollout checks' section for the file's format"


class CheckKind(enum.StrEnum):
    HTTP = "http"
    JOB = "job"
    PROMETHEUS = "prometheus"
    BAKE = "bake"  # --bake DURATION: not in the file, but reported among the checks


@dataclass(frozen=True)
class HttpCheck:
    url: str
    status: tuple[int, ...] = (200,)
    body: str | None = None  # a regular expression (re.search) the body must match
    successes: int = 1
    interval: float = 1.0
    ca: str = "system"  # system, cluster, or a CA bundle file
    follow_redirects: bool = True


@dataclass(frozen=True)
class JobCheck:
    path: str  # as given, for messages
    manifest: dict[str, Any]  # the Job as read (name and namespace are the run's)
    keep: bool = False


@dataclass(frozen=True)
class PrometheusCheck:
    url: str
    query: str
    op: str  # below, above, equals
    threshold: float
    duration: int = 0  # `for`: 0 evaluates once
    interval: int = 30
    failures: int = 1
    empty_passes: bool = False
    token: str = ""  # "", serviceaccount, or a file
    ca: str = "system"


@dataclass(frozen=True)
class Check:
    name: str
    timeout: int
    http: HttpCheck | None = None
    job: JobCheck | None = None
    prometheus: PrometheusCheck | None = None

    @property
    def kind(self) -> CheckKind:
        if self.http is not None:
            return CheckKind.HTTP
        if self.job is not None:
            return CheckKind.JOB
        return CheckKind.PROMETHEUS

    @property
    def target(self) -> str:
        """What it checks, for progress lines: the URL, the Job file or the query."""
        if self.http is not None:
            return self.http.url
        if self.job is not None:
            return self.job.path
        assert self.prometheus is not None
        return self.prometheus.query


ReadFile = Callable[[str], str]  # a path relative to the checks file -> its text (OSError when unreadable)


def _refuse(where: str, problem: str, fix: str = FIX) -> RefusedError:
    return RefusedError(f"--verify {where}: {problem}", fix=fix)


def parse_checks(text: str, *, source: str, read: ReadFile) -> list[Check]:
    """The checks of a ``--verify`` file's text (``source`` names it in messages; ``read`` gives the
    text of a Job manifest named in it, relative to the file). Refused: anything malformed."""
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise _refuse(source, f"not valid YAML: {' '.join(str(exc).split())[:200]}") from exc
    if not isinstance(doc, dict) or set(doc) != {"checks"} or not isinstance(doc["checks"], list):
        raise _refuse(source, "expected a mapping with one key, 'checks', holding a list of checks")
    if not doc["checks"]:
        raise _refuse(source, "'checks' is empty", fix="list at least one check, or drop --verify")
    checks: list[Check] = []
    for i, raw in enumerate(doc["checks"]):
        check = _check(raw, where=f"{source}: check {i + 1}", read=read)
        if any(c.name == check.name for c in checks):
            raise _refuse(
                f"{source}: check {check.name!r}", "the name is used twice", "give each check its own name"
            )
        checks.append(check)
    return checks


_KINDS = ("http", "job", "prometheus")
_COMMON = {"name", "timeout", "keep"}


def _check(raw: object, *, where: str, read: ReadFile) -> Check:
    if not isinstance(raw, dict):
        raise _refuse(where, "a check is a mapping (name, timeout, and one of http, job, prometheus)")
    name = raw.get("name")
    if not isinstance(name, str) or not _NAME.match(name) or len(name) > NAME_MAX:
        raise _refuse(
            where,
            f"name {str(name)[:60]!r} is not a valid check name",
            f"use lowercase letters, digits and '-', at most {NAME_MAX} characters (it names the check's Job)",
        )
    where = f"{where.rsplit(': ', 1)[0]}: check {name!r}"
    kinds = [k for k in _KINDS if k in raw]
    if len(kinds) != 1:
        raise _refuse(where, f"needs exactly one of {', '.join(_KINDS)} (has {', '.join(kinds) or 'none'})")
    unknown = sorted(set(map(str, raw)) - _COMMON - set(_KINDS))
    if unknown:
        raise _refuse(where, f"unknown field(s) {', '.join(unknown)}")
    timeout = _duration(raw.get("timeout", DEFAULT_TIMEOUT), where=f"{where}: timeout")
    kind = kinds[0]
    if "keep" in raw and kind != "job":
        raise _refuse(where, "'keep' goes with a job check only")
    if kind == "http":
        return Check(name=name, timeout=timeout, http=_http(raw["http"], where=f"{where}: http"))
    if kind == "job":
        keep = raw.get("keep", False)
        if not isinstance(keep, bool):
            raise _refuse(where, "'keep' is true or false")
        return Check(
            name=name, timeout=timeout, job=_job(raw["job"], keep=keep, where=f"{where}: job", read=read)
        )
    prom = _prometheus(raw["prometheus"], where=f"{where}: prometheus")
    if prom.duration > timeout:
        raise _refuse(where, f"'for' ({prom.duration}s) is longer than the check's timeout ({timeout}s)",
                      "give the check a timeout at least as long as 'for'")  # fmt: skip
    return Check(name=name, timeout=timeout, prometheus=prom)


def _fields(raw: object, allowed: set[str], required: set[str], *, where: str) -> dict[str, Any]:
    if not isinstance(raw, dict):
        raise _refuse(where, f"expected a mapping with {', '.join(sorted(required))}")
    unknown = sorted(set(map(str, raw)) - allowed)
    if unknown:
        raise _refuse(where, f"unknown field(s) {', '.join(unknown)} (known: {', '.join(sorted(allowed))})")
    missing = sorted(required - set(raw))
    if missing:
        raise _refuse(where, f"missing {', '.join(missing)}")
    return {str(k): v for k, v in raw.items()}


def _duration(value: object, *, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise _refuse(where, f"{value!r} is not a duration", "use a duration like 90s, 5m or 1h30m")
    try:
        return parse_duration(str(value), flag="duration")
    except RefusedError as exc:
        raise _refuse(where, exc.problem, exc.fix) from exc


def _count(value: object, *, where: str, low: int = 1, high: int = 1000) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise _refuse(where, f"{value!r} is not a whole number from {low} to {high}")
    return value


def check_url(url: object, *, where: str) -> str:
    """An http(s) URL with a host; refused otherwise (a URL without scheme most of all)."""
    if not isinstance(url, str) or not url.strip():
        raise _refuse(where, "url is empty", "give a full URL, e.g. http://api.shop.svc:8080/health")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https"):
        raise _refuse(
            where,
            f"url {url[:120]!r} has no http:// or https:// scheme",
            "write the scheme, e.g. http://api.shop.svc:8080/health",
        )
    try:
        port = parts.port
    except ValueError as exc:
        raise _refuse(where, f"url {url[:120]!r}: {exc}", "fix the port") from exc
    if not parts.hostname or (port is not None and not 0 < port < 65536):
        raise _refuse(where, f"url {url[:120]!r} has no host", "e.g. http://api.shop.svc:8080/health")
    if any(c.isspace() for c in url):
        raise _refuse(where, f"url {url[:120]!r} contains spaces", "percent-encode them (%20)")
    return url


def _ca(value: object, *, where: str) -> str:
    if not isinstance(value, str) or not value:
        raise _refuse(where, "ca is system, cluster, or the path of a CA bundle")
    return value


def _http(raw: object, *, where: str) -> HttpCheck:
    allowed = {"url", "status", "body", "successes", "interval", "ca", "follow_redirects"}
    f = _fields(raw, allowed, {"url"}, where=where)
    status = f.get("status", [200])
    if isinstance(status, int) and not isinstance(status, bool):
        status = [status]
    if (
        not isinstance(status, list)
        or not status
        or not all(isinstance(s, int) and not isinstance(s, bool) and 100 <= s <= 599 for s in status)
    ):
        raise _refuse(
            where, f"status {status!r} is not a list of HTTP status codes", "e.g. status: [200, 204]"
        )
    body = f.get("body")
    if body is not None:
        if not isinstance(body, str):
            raise _refuse(where, "body is a regular expression (a string)")
        try:
            re.compile(body)
        except re.error as exc:
            raise _refuse(where, f"body {body[:80]!r} is not a regular expression: {exc}") from exc
    redirects = f.get("follow_redirects", True)
    if not isinstance(redirects, bool):
        raise _refuse(where, "follow_redirects is true or false")
    return HttpCheck(
        url=check_url(f["url"], where=where),
        status=tuple(status),
        body=body,
        successes=_count(f.get("successes", 1), where=f"{where}: successes"),
        interval=float(_duration(f.get("interval", 1), where=f"{where}: interval")),
        ca=_ca(f.get("ca", "system"), where=where),
        follow_redirects=redirects,
    )


def _job(raw: object, *, keep: bool, where: str, read: ReadFile) -> JobCheck:
    if not isinstance(raw, str) or not raw.strip():
        raise _refuse(where, "job is the path of a Job manifest, relative to the checks file")
    try:
        text = read(raw)
    except OSError as exc:
        raise _refuse(where, f"cannot read {raw!r}: {exc.strerror or exc}", "check the path") from exc
    try:
        docs = [d for d in yaml.safe_load_all(text) if d is not None]
    except yaml.YAMLError as exc:
        raise _refuse(where, f"{raw!r} is not valid YAML: {' '.join(str(exc).split())[:200]}") from exc
    if len(docs) != 1 or not isinstance(docs[0], dict):
        raise _refuse(where, f"{raw!r} must hold exactly one Job manifest (has {len(docs)} documents)")
    manifest = docs[0]
    kind, api = manifest.get("kind"), manifest.get("apiVersion")
    if kind != "Job" or api != "batch/v1":
        raise _refuse(
            where,
            f"{raw!r} is a {api or '(no apiVersion)'} {kind or '(no kind)'}, not a batch/v1 Job",
            "give a Job manifest (apiVersion: batch/v1, kind: Job)",
        )
    spec = manifest.get("spec")
    if not isinstance(spec, dict) or not isinstance(spec.get("template"), dict):
        raise _refuse(where, f"{raw!r} has no spec.template", "a Job needs spec.template (its pod)")
    return JobCheck(path=str(PurePosixPath(raw)), manifest=manifest, keep=keep)


_OPS = ("below", "above", "equals")


def _prometheus(raw: object, *, where: str) -> PrometheusCheck:
    allowed = {"url", "query", *_OPS, "for", "interval", "failures", "empty", "token", "ca"}
    f = _fields(raw, allowed, {"url", "query"}, where=where)
    ops = [o for o in _OPS if o in f]
    if len(ops) != 1:
        raise _refuse(
            where, f"needs exactly one condition of {', '.join(_OPS)} (has {', '.join(ops) or 'none'})"
        )
    threshold = f[ops[0]]
    if isinstance(threshold, bool) or not isinstance(threshold, int | float):
        raise _refuse(where, f"{ops[0]} {threshold!r} is not a number")
    query = f["query"]
    if not isinstance(query, str) or not query.strip():
        raise _refuse(where, "query is empty", "give a PromQL expression")
    empty = f.get("empty", "fail")
    if empty not in ("fail", "pass"):
        raise _refuse(where, f"empty {empty!r} is fail or pass")
    token = f.get("token", "")
    if not isinstance(token, str):
        raise _refuse(where, f"token is {SERVICE_ACCOUNT!r} or the path of a file holding the token")
    return PrometheusCheck(
        url=check_url(f["url"], where=where),
        query=query,
        op=ops[0],
        threshold=float(threshold),
        duration=_duration(f["for"], where=f"{where}: for") if "for" in f else 0,
        interval=_duration(f.get("interval", 30), where=f"{where}: interval"),
        failures=_count(f.get("failures", 1), where=f"{where}: failures"),
        empty_passes=empty == "pass",
        token=token,
        ca=_ca(f.get("ca", "system"), where=where),
    )


def holds(op: str, value: float, threshold: float) -> bool:
    """The prometheus condition: ``value`` below, above or equal to ``threshold``."""
    if op == "below":
        return value < threshold
    if op == "above":
        return value > threshold
    return value == threshold


def job_name(check: str, run_id: str) -> str:
    """The Job's name: the check's, then the run id (at most 40 + 1 + 22 characters: a label value)."""
    return f"{check}-{run_id}".lower()


def job_body(manifest: Obj, *, name: str, namespace: str, run_id: str, check: str, timeout: int) -> Obj:
    """The manifest as the run creates it: its name and namespace, labelled with the run and the check
    (the pods too), nothing the server sets (status, uid, resourceVersion, generateName).

    A manifest without ``activeDeadlineSeconds`` gets the check's ``timeout`` as its deadline: the check
    fails then anyway, and a Job whose run was killed (so nobody deletes it) is ended by the Job
    controller instead of running on against the reverted group."""
    body = copy.deepcopy(manifest)
    body["spec"].setdefault("activeDeadlineSeconds", timeout)
    meta = body.get("metadata") or {}
    labels = {**(meta.get("labels") or {}), RUN_LABEL: run_id, CHECK_LABEL: check}
    kept = {k: v for k, v in meta.items() if k in ("annotations",)}
    body["metadata"] = {**kept, "name": name, "namespace": namespace, "labels": labels}
    body.pop("status", None)
    template = body["spec"]["template"]
    tmeta = template.setdefault("metadata", {}) or {}
    template["metadata"] = {
        **tmeta,
        "labels": {**(tmeta.get("labels") or {}), RUN_LABEL: run_id, CHECK_LABEL: check},
    }
    return body
