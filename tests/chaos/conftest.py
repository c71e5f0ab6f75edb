"""Chaos fixtures: an admin client, a fault proxy per test, and the ledger that feeds RELIABILITY.md.

`make chaos` (-m chaos) runs every test here, the unmarked slice included; its session hook saves
the ledger to build/chaos/results-chaos.json and renders docs/RELIABILITY.md from it, so the figures
there are always the output of one run, never typed by hand. Other sessions (`make test`'s slice)
save build/chaos/results-slice.json for a look, and leave the document alone.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.chaos import ledger
from tests.helpers.proxy import FaultProxy

AREAS = {
    "test_crash": "1. crash at every step (SIGKILL)",
    "test_sigterm": "2. SIGTERM",
    "test_api_faults": "3. API faults through the proxy",
    "test_concurrency": "4. concurrency",
    "test_hostile_input": "5. hostile input",
    "test_integrity": "6. integrity: journal size, Ctrl-C, human edits, drift, report paths, deletion",
    "test_fencing": "7. fencing and overlapping groups",
    "test_outage": "8. API server outage (kube-apiserver stopped with SIGSTOP, then continued)",
}
_STARTED = time.monotonic()
HERE = Path(__file__).resolve().parent


@pytest.fixture
def proxy(sandbox, request: pytest.FixtureRequest) -> Iterator[FaultProxy]:
    """A fault proxy in front of the sandbox, faultless until a test gives it a plan; seeded per test."""
    seed = sum(map(ord, request.node.name))
    with FaultProxy(sandbox.server, sandbox.ca, seed=seed, max_seconds=900) as fp:
        yield fp


@pytest.fixture
def ledger_entry(request: pytest.FixtureRequest) -> Iterator[ledger.Entry]:
    module = request.node.module.__name__.rsplit(".", 1)[-1]
    entry = ledger.Entry(
        area=AREAS.get(module, module),
        test=request.node.name,
        marked_chaos=request.node.get_closest_marker("chaos") is not None,
    )
    started = time.monotonic()
    yield entry
    entry.seconds = round(time.monotonic() - started, 1)
    report = getattr(request.node, "rep_call", None)
    if report is not None and report.failed:
        entry.error = str(report.longrepr).strip().splitlines()[-1][:300] if report.longrepr else "failed"
    elif report is not None and report.skipped:
        return
    ledger.ENTRIES.append(entry)


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects by marker
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # `make chaos` (-m chaos) also runs this directory's unmarked slice, so that one session's
    # figures cover every chaos test (other sessions sharing build/chaos cannot mix in partial runs).
    if (config.getoption("markexpr") or "").strip() != "chaos":
        return
    for item in items:
        if item.path.is_relative_to(HERE):
            item.add_marker(pytest.mark.chaos)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):  # type: ignore[no-untyped-def]
    report = yield
    if report.when == "call":
        item.rep_call = report  # type: ignore[attr-defined]
    return report


def whole_chaos_run(config: pytest.Config) -> bool:
    """`make chaos`: ``-m chaos`` over the whole of tests/ and no ``-k``. Only such a run rewrites
    docs/RELIABILITY.md; a narrower one (one file, one test) keeps its results under build/chaos/."""
    if (config.getoption("markexpr") or "").strip() != "chaos" or config.getoption("keyword"):
        return False
    tests = ledger.ROOT / "tests"
    here = config.invocation_params.dir
    return all((here / arg.split("::")[0]).resolve() == tests for arg in config.args)


def pytest_sessionfinish(session: pytest.Session) -> None:
    chaos = whole_chaos_run(session.config)
    workerinput = getattr(session.config, "workerinput", None)
    if workerinput is None:  # a plain session
        _publish(list(ledger.ENTRIES), time.monotonic() - _STARTED, chaos=chaos)
        return
    # Under xdist the controller does not load this conftest (it collects nothing): each worker
    # leaves its part under the run's shared id, and the last one to finish merges them all.
    parts = ledger.RESULTS_DIR / f"parts-{workerinput['testrunuid']}"
    parts.mkdir(parents=True, exist_ok=True)
    ledger.dump(ledger.ENTRIES, time.monotonic() - _STARTED, parts / f"{workerinput['workerid']}.json")
    found = sorted(parts.glob("*.json"))
    if len(found) < int(workerinput["workercount"]):
        return
    entries: list[ledger.Entry] = []
    seconds = 0.0
    for part in found:
        more, took = ledger.load_part(part)
        entries += more
        seconds = max(seconds, took)
    shutil.rmtree(parts, ignore_errors=True)
    _publish(entries, seconds, chaos=chaos)


def _publish(entries: list[ledger.Entry], seconds: float, *, chaos: bool) -> None:
    if not entries:
        return
    ledger.save(entries, seconds=seconds, marker="chaos" if chaos else "slice")
    if chaos:
        from tests.chaos import report

        report.write()
