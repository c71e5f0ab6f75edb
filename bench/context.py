"""What every case shares: the sandbox, a scratch directory, the time budget, and the runners."""

from __future__ import annotations

import itertools
import json
import re
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.counted import last_write, phases, renewals
from bench.metrics import Proc, by_verb, bytecode_env, python_module, run, scrape
from sandbox.cluster import Sandbox

REPO = "registry.local/bench/app"
_ENGINE_CLOCK = re.compile(r"^\[\s*([\d.]+)s\]")
# A watch is counted by the API server when it closes; the process has exited, give the server a moment.
SETTLE = 0.5


@dataclass
class CliRun:
    """One `rollguard` process: wall time, exit, report, and its API requests (own and server-wide)."""

    proc: Proc
    report: dict[str, Any]
    own: Counter[str]
    server: Counter[str]
    last_write: float | None = None  # from its first request until its last workload write was answered
    renewals: int = 0  # of its requests, the renews of its Lease (one per third of the lease: time, not size)
    phases: dict[str, float] = field(default_factory=dict)  # until its last workload write (counted.phases)

    @property
    def seconds(self) -> float:
        return self.proc.seconds

    @property
    def engine_seconds(self) -> float | None:
        """The run's own clock (from its progress lines): the wall time less process start-up."""
        stamps = [float(m[1]) for line in self.proc.stdout.splitlines() if (m := _ENGINE_CLOCK.match(line))]
        return max(stamps) if stamps else None

    @property
    def applied_seconds(self) -> float | None:
        """When, on the run's own clock, the last workload's change was written (its "changed" line)."""
        stamps = [
            float(m[1])
            for line in self.proc.stdout.splitlines()
            if (m := _ENGINE_CLOCK.match(line)) and ": changed " in line
        ]
        return max(stamps) if stamps else None

    @property
    def status(self) -> str:
        return str(self.report.get("status") or f"exit {self.proc.code}")


@dataclass
class Ctx:
    sb: Sandbox
    tmp: Path
    started: float
    budget: float  # seconds for the whole benchmark; optional repetitions are dropped past it
    log: Callable[[str], None]
    quick: bool = False  # smoke run: one repetition of everything
    _serial: Any = field(default_factory=lambda: itertools.count(1))
    notes: list[str] = field(default_factory=list)

    @property
    def kubeconfig(self) -> str:
        return str(self.sb.kubeconfig)

    def image(self, behaviour: str = "-slow3") -> str:
        """A tag never used before in this sandbox (each rollout needs a change), with a behaviour."""
        return f"{REPO}:r{next(self._serial)}{behaviour}"

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def over_budget(self, share: float = 1.0) -> bool:
        return self.elapsed() > self.budget * share

    def reps(self, wanted: int, share: float) -> Iterator[int]:
        """``wanted`` repetitions, or fewer (at least one) once past ``share`` of the time budget."""
        for i in range(1 if self.quick else wanted):
            if i and self.over_budget(share):
                self.log(f"time budget: {i} of {wanted} repetitions")
                return
            yield i

    def drive(self, *args: str, timeout: float = 600) -> Proc:
        return run(python_module("bench.drive", *args, "--kubeconfig", self.kubeconfig), timeout=timeout)

    def drive_counted(self, *args: str, timeout: float = 600) -> tuple[Proc, Counter[str]]:
        """A `bench.drive` step between two scrapes of the server's counters."""
        before = scrape(self.sb)
        proc = self.drive(*args, timeout=timeout)
        time.sleep(SETTLE)
        return proc, by_verb(before, scrape(self.sb))

    def rollguard(self, args: Sequence[str], *, timeout: float = 600, report: bool = True) -> CliRun:
        """`rollguard ARGS` through `bench.counted`, between two scrapes of the server's counters."""
        n = next(self._serial)
        counts, report_file = self.tmp / f"counts-{n}.json", self.tmp / f"report-{n}.json"
        argv = [*args, "--kubeconfig", self.kubeconfig]
        if report:
            argv += ["--report", str(report_file)]
        before = scrape(self.sb)
        # from compiled bytecode, as an installed rollguard starts (see bytecode_env)
        env = bytecode_env(self.tmp / "pycache")
        proc = run(python_module("bench.counted", str(counts), *argv), timeout=timeout, env=env)
        time.sleep(SETTLE)
        after = scrape(self.sb)
        own: Counter[str] = Counter()
        data: dict[str, Any] = {}
        try:
            own.update(json.loads(counts.read_text()))
            data = json.loads(report_file.read_text()) if report else {}
        except (OSError, ValueError):
            pass
        return CliRun(
            proc, data, own, by_verb(before, after), last_write(str(counts)), renewals(str(counts)),
            phases(str(counts)),
        )  # fmt: skip


def say(line: str) -> None:
    print(f"bench: {line}", file=sys.stderr, flush=True)
