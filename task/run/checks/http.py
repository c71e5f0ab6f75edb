"""The ``http`` check: N consecutive answers with an expected status (and body) within the timeout.

Each request is a GET of the URL (a Service's cluster DNS name, a Route's host: from a Tekton step it
runs inside the cluster), every ``interval``; a success is an answer whose status is one of ``status``
and whose body matches ``body`` (when given); any other answer, a refused connection or a request that
timed out resets the count. The check passes at ``successes`` in a row and fails when its timeout comes
first, its evidence saying the best run it had, the last failure, and every redirect it followed.

TLS: ``ca: system`` (the system's CA store), ``cluster`` (the pod's service CA, which signs OpenShift's
service certificates, else its ServiceAccount's cluster CA), or a CA bundle file.
"""

from __future__ import annotations

import re
import ssl
import time
import urllib.error
import urllib.request
from typing import Any

from rollguard.core.report import CheckResult
from rollguard.plan.checks import Check, HttpCheck
from rollguard.plan.checks_read import tls_context
from rollguard.run.checks import Context, one_line, result

REQUEST_TIMEOUT = 10.0  # one request's own limit (and never past the check's deadline)
BODY_LIMIT = 64 * 1024  # read at most this much of a body to match it


class _Redirects(urllib.request.HTTPRedirectHandler):
    """Follows redirects (or not) and remembers each one, for the evidence."""

    def __init__(self, *, follow: bool) -> None:
        self.follow = follow
        self.seen: list[str] = []

    def redirect_request(
        self, req: urllib.request.Request, fp: Any, code: int, msg: str, headers: Any, newurl: str
    ) -> urllib.request.Request | None:
        if not self.follow:
            return None  # the 3xx itself is the answer
        self.seen.append(f"{code} -> {newurl}")
        return super().redirect_request(req, fp, code, msg, headers, newurl)


def probe(spec: HttpCheck, *, timeout: float) -> tuple[bool, str]:
    """One GET: (success, what it got: status, reason, redirects, or the failure)."""
    redirects = _Redirects(follow=spec.follow_redirects)
    handlers: list[Any] = [redirects]
    if spec.url.startswith("https:"):
        handlers.append(urllib.request.HTTPSHandler(context=tls_context(spec.ca)))
    opener = urllib.request.build_opener(*handlers)
    request = urllib.request.Request(spec.url, headers={"User-Agent": "rollguard-verify"})
    try:
        with opener.open(request, timeout=timeout) as resp:
            status, reason, body = resp.status, resp.reason, resp.read(BODY_LIMIT)
    except urllib.error.HTTPError as exc:  # an answer all the same (4xx, 5xx, an unfollowed 3xx)
        status, reason = exc.code, exc.reason
        try:
            body = exc.read(BODY_LIMIT)
        except OSError:
            body = b""
    except (urllib.error.URLError, OSError, ValueError) as exc:
        why = getattr(exc, "reason", exc)
        if isinstance(why, TimeoutError | ssl.SSLError) or isinstance(exc, TimeoutError):
            why = f"{type(why).__name__}: {why}"
        return False, one_line(f"no answer: {why}")
    text = body.decode("utf-8", "replace")
    said = f"{status} {reason}"
    if redirects.seen:
        said += f" (redirected: {', '.join(redirects.seen)})"
    if status not in spec.status:
        return False, f"{said}, expected {'/'.join(map(str, spec.status))}; body {one_line(text, 120)!r}"
    if spec.body is not None and not re.search(spec.body, text):
        return False, f"{said}, body does not match {spec.body!r}: {one_line(text, 120)!r}"
    return True, said


def run(check: Check, spec: HttpCheck, ctx: Context) -> CheckResult:
    started = time.monotonic()
    deadline = started + check.timeout
    want = f"{spec.successes} consecutive answer(s) {'/'.join(map(str, spec.status))}"
    ctx.say(f"verify: http {spec.url}: waiting for {want} (timeout {check.timeout}s)")
    streak = best = attempts = 0
    last_failure = ""
    last_ok = ""
    while True:
        attempts += 1
        ok, said = probe(spec, timeout=max(0.5, min(REQUEST_TIMEOUT, deadline - time.monotonic())))
        if ok:
            streak += 1
            best = max(best, streak)
            last_ok = said
            if streak >= spec.successes:
                ctx.say(f"verify: http {spec.url} {streak}/{spec.successes} ok")
                evidence = f"{streak}/{spec.successes} consecutive: {said}"
                if last_failure:
                    evidence += f"; earlier failure: {last_failure}"
                return result(check, ok=True, started=started, evidence=evidence)
        else:
            if streak or not last_failure:
                ctx.say(f"verify: http {spec.url} {0}/{spec.successes}: {said}")
            streak, last_failure = 0, said
        wait = min(spec.interval, deadline - time.monotonic())
        if wait <= 0 or ctx.stop.wait(wait) or time.monotonic() >= deadline:
            break
    why = ctx.stop_reason() if ctx.stop.is_set() else f"timed out after {check.timeout}s"
    evidence = f"{why}: {best}/{spec.successes} consecutive at best in {attempts} request(s)"
    evidence += f"; last: {last_failure or last_ok}"
    ctx.say(f"verify: http {spec.url} failed: {evidence}")
    return result(check, ok=False, started=started, evidence=evidence)
