"""The ``prometheus`` check: a PromQL expression and a condition, evaluated every interval for a duration.

Each evaluation is an instant query (``GET /api/v1/query``) of the server (OpenShift's user workload
monitoring through Thanos Querier, or any Prometheus), with the bearer token when given. It fails when
any sample of the result breaks the condition (``below``, ``above``, ``equals``), when the result is
empty (unless ``empty: pass``), or when the server does not answer. The check fails at ``failures``
failed evaluations, passes once ``for`` has gone by without that (one evaluation when ``for`` is not
given), and fails when its timeout comes first. The evidence lists the values seen.
"""

from __future__ import annotations

import math
import time
from typing import Any

from rollguard.core.report import CheckResult
from rollguard.plan.checks import Check, PrometheusCheck, holds
from rollguard.plan.checks_read import QueryError, prometheus_query
from rollguard.run.checks import Context, one_line, result


def judge(spec: PrometheusCheck, data: dict[str, Any]) -> tuple[bool, str]:
    """One evaluation's verdict from the query's ``data`` (pure): (holds, the values as said)."""
    kind, found = data.get("resultType"), data.get("result")
    samples: list[tuple[str, float]] = []
    if kind == "scalar" and isinstance(found, list) and len(found) == 2:
        samples = [("scalar", _number(found[1]))]
    elif kind == "vector" and isinstance(found, list):
        for item in found:
            labels = item.get("metric") or {}
            name = "{" + ",".join(f'{k}="{v}"' for k, v in sorted(labels.items())) + "}"
            samples.append((name, _number((item.get("value") or [0, "NaN"])[1])))
    else:
        return False, f"a {kind} result, not a vector or scalar"
    if not samples:
        return spec.empty_passes, "empty result" + (" (empty: pass)" if spec.empty_passes else "")
    said = ", ".join(f"{v:g}" if name in ("{}", "scalar") else f"{name} {v:g}" for name, v in samples[:5])
    said += f" (+{len(samples) - 5} more)" if len(samples) > 5 else ""
    broken = [v for _, v in samples if math.isnan(v) or not holds(spec.op, v, spec.threshold)]
    return not broken, f"{said} {'' if not broken else 'not '}{spec.op} {spec.threshold:g}"


def _number(raw: object) -> float:
    try:
        return float(str(raw))
    except ValueError:
        return math.nan


def run(check: Check, spec: PrometheusCheck, ctx: Context) -> CheckResult:
    started = time.monotonic()
    deadline = started + check.timeout
    ends = started + spec.duration
    what = f"every {spec.interval}s for {spec.duration}s" if spec.duration else "once"
    ctx.say(
        f"verify: prometheus {spec.url}: {one_line(spec.query, 100)} {spec.op} {spec.threshold:g}, {what}"
    )
    evaluations = failures = 0
    seen: list[str] = []
    while True:
        evaluations += 1
        try:
            ok, said = judge(
                spec, prometheus_query(spec, timeout=min(15.0, max(1.0, deadline - time.monotonic())))
            )
        except (QueryError, OSError) as exc:
            ok, said = False, one_line(str(exc), 200)
        failures += not ok
        seen.append(f"{'ok' if ok else 'FAILED'}: {said}")
        if not ok:
            ctx.say(
                f"verify: prometheus {check.name}: evaluation {evaluations} failed ({failures}/{spec.failures}): {said}"
            )
        if failures >= spec.failures:
            break
        now = time.monotonic()
        if now >= ends:
            ctx.say(f"verify: prometheus {check.name} {evaluations - failures}/{evaluations} evaluations ok")
            return result(check, ok=True, started=started, evidence=_evidence(evaluations, failures, seen))
        wait = min(float(spec.interval), ends - now, deadline - now)
        if wait <= 0 or ctx.stop.wait(wait):
            break
    if failures >= spec.failures:
        why = f"{failures} failed evaluation(s) of {evaluations}"
    else:
        why = ctx.stop_reason() if ctx.stop.is_set() else f"timed out after {check.timeout}s"
    evidence = f"{why}; {_evidence(evaluations, failures, seen)}"
    ctx.say(f"verify: prometheus {check.name} failed: {why}: {seen[-1]}")
    return result(check, ok=False, started=started, evidence=evidence)


def _evidence(evaluations: int, failures: int, seen: list[str]) -> str:
    shown = seen if len(seen) <= 6 else [*seen[:2], f"... {len(seen) - 5} more ...", *seen[-3:]]
    return f"{evaluations - failures}/{evaluations} evaluations ok: " + "; ".join(shown)
