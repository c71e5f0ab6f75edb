"""Chaos fixtures: an admin client, a fault proxy per test, and the ledger that feeds RELIABILITY.md.

`make chaos` (-m chaos) runs every test here, the unmarked slice included; its session hook saves
the ledger to build/chaos/results-chaos.json and renders docs/RELIABILITY.md from it, so the figures
there are always the output of one run, never typed by hand. Other sessions (`make test`'s slice)
save build/chaos/results-slice.json for a look, and leave the document alone.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from task.client import Client
from tests.chaos import ledger
from tests.chaos.proxy import FaultProxy

AREAS = {
    "test_crash": "1. crash at every step (SIGKILL)",
    "test_sigterm": "2. SIGTERM",
    "test_api_faults": "3. API faults through the proxy",
    "test_concurrency": "4. concurrency",
    "test_hostile_input": "5. hostile input",
}
_STARTED = time.monotonic()
HERE = Path(__file__).resolve().parent
PARTS_ENV = "ROLLGUARD_CHAOS_LEDGER_PARTS"


@pytest.fixture
def client(sandbox) -> Client:
    return Client.connect(kubeconfig=str(sandbox.kubeconfig))


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


def pytest_configure(config: pytest.Config) -> None:
    # Under xdist each worker keeps its own ledger: the controller names a directory of its own for
    # the workers' parts (inherited through the environment when it spawns them) and merges them.
    if not hasattr(config, "workerinput"):
        os.environ[PARTS_ENV] = tempfile.mkdtemp(prefix="rollguard-chaos-ledger-")


def pytest_sessionfinish(session: pytest.Session) -> None:
    worker = getattr(session.config, "workerinput", {}).get("workerid")
    parts = Path(os.environ.get(PARTS_ENV, ""))
    if worker is not None:
        if ledger.ENTRIES and parts.is_dir():
            ledger.dump(ledger.ENTRIES, parts / f"{worker}.json")
        return
    entries = list(ledger.ENTRIES)
    if parts.is_dir():
        for part in sorted(parts.glob("*.json")):
            entries += ledger.load_entries(part)
        shutil.rmtree(parts, ignore_errors=True)
    if not entries:
        return
    chaos = (session.config.getoption("markexpr") or "").strip() == "chaos"
    ledger.save(entries, seconds=time.monotonic() - _STARTED, marker="chaos" if chaos else "slice")
    if chaos:
        from tests.chaos import report

        report.write()
