"""Verifying a group after it rolled out: the ``--verify`` checks and the ``--bake`` window, at once.

`verify` is called by the run (`rollguard.run.rollout.Rollout.verify`) once every workload rolled out and
was judged complete, after the journal says ``verifying`` (a run killed now is finished by the next run
or a repair as one killed mid-watch: its entries still hold the last *verified* state, so a revert goes
back to it). Every check runs in a thread of its own, with the bake beside them; the first failure stops
the others (``stopped``) and becomes the run's first error, `CheckFailed`, naming the check and the
first line of its evidence: the run then reverts the whole group as for any failure. A cancel (SIGTERM,
Ctrl-C) stops them all the same, and the run reverts.

The results come back in the file's order, the bake last, for the report's ``checks`` section.
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait

from rollguard.core.errors import CheckFailed
from rollguard.core.report import CheckOutcome, CheckResult
from rollguard.plan.checks import Check, CheckKind
from rollguard.run.checks import Context, run_check

POLL = 0.2  # how often the waiting thread looks at the run's cancel

Runner = Callable[[Context], CheckResult]


def not_run(checks: list[Check], *, bake: int) -> list[CheckResult]:
    """The report's checks before (or without) verifying: each one ``not-run``."""
    results = [CheckResult(name=c.name, kind=c.kind) for c in checks]
    if bake:
        results.append(CheckResult(name="bake", kind=CheckKind.BAKE))
    return results


def validated(checks: list[Check], *, bake: int) -> list[CheckResult]:
    """``--dry-run``: every check parsed and checked against its server, none run."""
    said = "valid; not run (--dry-run)"
    results = [
        CheckResult(name=c.name, kind=c.kind, outcome=CheckOutcome.VALIDATED, evidence=said) for c in checks
    ]
    if bake:
        evidence = f"a bake window of {bake}s; not run (--dry-run)"
        results.append(
            CheckResult(name="bake", kind=CheckKind.BAKE, outcome=CheckOutcome.VALIDATED, evidence=evidence)
        )
    return results


def verify(
    checks: list[Check],
    *,
    bake: Runner | None,
    ctx: Context,
    cancel: threading.Event,
    results: list[CheckResult],
) -> None:
    """Run every check (and the bake) at once; fill ``results`` (in order); raise `CheckFailed` on the
    first failure (the others are stopped)."""
    runners: list[tuple[int, Runner]] = [
        (i, functools.partial(run_check, check)) for i, check in enumerate(checks)
    ]
    if bake is not None:
        runners.append((len(checks), bake))
    first: list[CheckResult] = []
    lock = threading.Lock()

    def one(index: int, runner: Runner) -> CheckResult:
        res = runner(ctx)
        with lock:
            if res.outcome is CheckOutcome.FAILED:
                if ctx.stop.is_set() and not first:  # cut short by a cancel, not failed on its own
                    res.outcome = CheckOutcome.STOPPED
                elif not first:
                    first.append(res)
                    ctx.stop_reason = lambda: f"stopped: check {res.name!r} failed"
                    ctx.stop.set()
                else:
                    res.outcome = CheckOutcome.STOPPED
        results[index] = res
        return res

    started = time.monotonic()
    with ThreadPoolExecutor(max_workers=len(runners), thread_name_prefix="verify") as pool:
        futures: set[Future[CheckResult]] = {pool.submit(one, i, r) for i, r in runners}
        try:
            while futures:
                done, futures = wait(futures, timeout=POLL, return_when=FIRST_COMPLETED)
                for f in done:
                    f.result()  # a runner's bug (or Superseded) goes through here
                if cancel.is_set() and not ctx.stop.is_set():
                    ctx.stop.set()
        except BaseException:
            ctx.stop.set()  # the others stop at once: leaving the pool waits for them
            raise
    if first:
        res = first[0]
        headline = res.evidence.splitlines()[0] if res.evidence else "failed"
        raise CheckFailed(f"check {res.name!r} ({res.kind}) failed: {headline}", check=res.name)
    if not cancel.is_set():
        ctx.say(f"verify: {len(runners)} check(s) passed in {time.monotonic() - started:.1f}s")
