"""The checks run together (`rollguard.run.verify.verify`), with stand-in runners: the first failure
stops the others and is the run's `CheckFailed`; a cancel stops them without one; a runner's exception
stops the others and goes through."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from rollguard.core.errors import CheckFailed
from rollguard.core.report import CheckOutcome, CheckResult
from rollguard.plan.checks import Check, HttpCheck
from rollguard.run import verify as verify_mod
from rollguard.run.checks import Context

CHECKS = [Check(name=n, timeout=60, http=HttpCheck(url=f"http://{n}/")) for n in ("fast-fail", "slow", "ok")]


def runner(check: Check, ctx: Context) -> CheckResult:
    """fast-fail fails at once; slow waits for a stop (then fails, as a cut runner does); ok passes."""
    if check.name == "fast-fail":
        return CheckResult(
            check.name, check.kind, CheckOutcome.FAILED, 0.1, "500 Internal Server Error\nmore"
        )
    if check.name == "slow":
        stopped = ctx.stop.wait(30)
        return CheckResult(check.name, check.kind, CheckOutcome.FAILED if stopped else CheckOutcome.PASSED, 1.0,
                           ctx.stop_reason() if stopped else "ok")  # fmt: skip
    return CheckResult(check.name, check.kind, CheckOutcome.PASSED, 0.1, "200 OK")


def context(lines: list[str]) -> Context:
    return Context(client=None, namespace="shop", run_id="r1", say=lines.append)  # type: ignore[arg-type]


def test_the_first_failure_stops_the_others_and_is_the_runs_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(verify_mod, "run_check", runner)
    results = verify_mod.not_run(CHECKS, bake=0)
    with pytest.raises(CheckFailed) as caught:
        verify_mod.verify(CHECKS, bake=None, ctx=context([]), cancel=threading.Event(), results=results)
    assert str(caught.value) == "check 'fast-fail' (http) failed: 500 Internal Server Error"
    assert caught.value.check == "fast-fail"
    assert [(r.name, r.outcome) for r in results] == [
        ("fast-fail", "failed"),
        ("slow", "stopped"),
        ("ok", "passed"),
    ]
    assert results[1].evidence == "stopped: check 'fast-fail' failed"


def test_a_cancel_stops_every_check_without_a_check_failure(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(verify_mod, "run_check", runner)
    checks = CHECKS[1:2]
    results = verify_mod.not_run(checks, bake=0)
    cancel = threading.Event()
    ctx = context([])
    ctx.stop_reason = lambda: "interrupted by SIGTERM"
    threading.Timer(0.3, cancel.set).start()
    verify_mod.verify(checks, bake=None, ctx=ctx, cancel=cancel, results=results)  # no CheckFailed
    assert [(r.name, r.outcome, r.evidence) for r in results] == [
        ("slow", "stopped", "interrupted by SIGTERM")
    ]


def test_a_runners_exception_stops_the_others_and_goes_through(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(check: Check, ctx: Context) -> Any:
        if check.name == "ok":
            raise RuntimeError("a bug")
        return runner(check, ctx)

    monkeypatch.setattr(verify_mod, "run_check", broken)
    checks = CHECKS[1:]
    results = verify_mod.not_run(checks, bake=0)
    with pytest.raises(RuntimeError, match="a bug"):
        verify_mod.verify(checks, bake=None, ctx=context([]), cancel=threading.Event(), results=results)
    assert (results[0].outcome, results[0].evidence) == ("stopped", "stopped")  # cut short, not waited out


def test_passing_checks_and_a_bake_say_so(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(verify_mod, "run_check", runner)
    lines: list[str] = []
    checks = CHECKS[2:]
    results = verify_mod.not_run(checks, bake=5)
    assert [(r.name, r.kind, r.outcome) for r in results] == [
        ("ok", "http", "not-run"),
        ("bake", "bake", "not-run"),
    ]

    def bake(ctx: Context) -> CheckResult:
        return CheckResult("bake", "bake", CheckOutcome.PASSED, 5.0, "5s: quiet")

    verify_mod.verify(checks, bake=bake, ctx=context(lines), cancel=threading.Event(), results=results)
    assert [(r.name, r.outcome) for r in results] == [("ok", "passed"), ("bake", "passed")]
    assert lines[-1].startswith("verify: 2 check(s) passed in ")
