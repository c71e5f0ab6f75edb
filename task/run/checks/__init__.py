"""The runners of the post-rollout checks, one module per kind (`http`, `job`, `prometheus`).

Each runner carries one parsed `rollguard.plan.checks.Check` out against the live system and returns its
`CheckResult` (``passed`` or ``failed``, the time it took, and the evidence: what it saw, in words a
reader of the report can act on). A runner never raises for what it checks (an answer 500, a Job that
failed, a query over its threshold, an API error while it watches): that is a ``failed`` result, which
fails the run; only `Superseded` (the run lost its group) goes through. Each one stops early, failed,
once ``stop`` is set (another check failed, or SIGTERM): `Context.stopped` says so.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from rollguard.cluster.api import Api
from rollguard.core.report import CheckOutcome, CheckResult
from rollguard.plan.checks import Check


@dataclass
class Context:
    """What a runner uses of its run: the (fenced) client, where, which run, how to speak, when to stop."""

    client: Api
    namespace: str
    run_id: str
    say: Callable[[str], None]
    stop: threading.Event = field(default_factory=threading.Event)
    stop_reason: Callable[[], str] = lambda: "stopped"


def result(check: Check, *, ok: bool, started: float, evidence: str) -> CheckResult:
    return CheckResult(
        name=check.name,
        kind=check.kind,
        outcome=CheckOutcome.PASSED if ok else CheckOutcome.FAILED,
        duration=round(time.monotonic() - started, 3),
        evidence=evidence,
    )


def one_line(text: str, limit: int = 300) -> str:
    """``text`` on one line (a body, a server's error) and at most ``limit`` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def run_check(check: Check, ctx: Context) -> CheckResult:
    """Carry ``check`` out (its kind's runner)."""
    from rollguard.run.checks import http, job, prometheus

    if check.http is not None:
        return http.run(check, check.http, ctx)
    if check.job is not None:
        return job.run(check, check.job, ctx)
    assert check.prometheus is not None
    return prometheus.run(check, check.prometheus, ctx)
