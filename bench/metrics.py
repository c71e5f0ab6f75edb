"""Measurement plumbing: run statistics, timed subprocesses, API server request counters, the machine."""

from __future__ import annotations

import datetime as dt
import json
import os
import platform
import re
import ssl
import statistics
import subprocess
import sys
import time
import urllib.request
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sandbox.cluster import ADMIN_TOKEN, Sandbox

_METRIC = re.compile(r"^apiserver_request_total\{(?P<labels>[^}]*)\}\s+(?P<value>\S+)")
_LABEL = re.compile(r'(\w+)="([^"]*)"')


@dataclass
class Stats:
    """Repeated measurements of one quantity: median and spread."""

    values: list[float] = field(default_factory=list)

    def add(self, value: float) -> None:
        self.values.append(value)

    @property
    def n(self) -> int:
        return len(self.values)

    @property
    def median(self) -> float:
        return statistics.median(self.values) if self.values else float("nan")

    @property
    def lo(self) -> float:
        return min(self.values) if self.values else float("nan")

    @property
    def hi(self) -> float:
        return max(self.values) if self.values else float("nan")

    def fmt(self, unit: str = "s", digits: int = 2) -> str:
        """``4.21 s (3.90-4.60, n=3)``; a single run shows no spread."""
        if not self.values:
            return "n/a"
        if self.n == 1:
            return f"{self.median:.{digits}f} {unit} (n=1)"
        return f"{self.median:.{digits}f} {unit} ({self.lo:.{digits}f}-{self.hi:.{digits}f}, n={self.n})"


@dataclass
class Proc:
    """A finished (or timed-out) subprocess and its wall time."""

    argv: list[str]
    code: int
    stdout: str
    stderr: str
    seconds: float
    timed_out: bool = False

    def json(self) -> Any:
        """The last line of stdout as JSON (what `bench.drive` prints), else None."""
        lines = [line for line in self.stdout.splitlines() if line.strip()]
        try:
            return json.loads(lines[-1]) if lines else None
        except ValueError:
            return None

    def tail(self, lines: int = 6) -> str:
        text = (self.stderr.strip() or self.stdout.strip()).splitlines()
        return " | ".join(text[-lines:])[:600]


def run(argv: list[str], *, timeout: float, env: dict[str, str] | None = None) -> Proc:
    """Run ``argv`` to its end, timing it; a timeout is a result, never an exception (slowness must not fail)."""
    t0 = time.perf_counter()
    try:
        done = subprocess.run(
            argv, capture_output=True, text=True, timeout=timeout, env={**os.environ, **(env or {})}
        )
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout.decode(errors="replace") if isinstance(exc.stdout, bytes) else exc.stdout or ""
        err = exc.stderr.decode(errors="replace") if isinstance(exc.stderr, bytes) else exc.stderr or ""
        return Proc(
            argv, -1, out, err + f"\n(timed out after {timeout:.0f}s)", time.perf_counter() - t0, True
        )
    return Proc(argv, done.returncode, done.stdout, done.stderr, time.perf_counter() - t0)


def bytecode_env(cache: Path) -> dict[str, str]:
    """Environment for a child that starts as an installed rollguard does: from compiled bytecode.

    ``pip install`` compiles every module of the wheel (and of its dependencies) at install time, so
    the image never compiles source at start-up. This tree's editable install under
    PYTHONDONTWRITEBYTECODE=1 (the agents' environment, and the image's at run time) has no bytecode
    for rollguard's own modules and would compile all of them at every start (~50 ms here). The
    bytecode goes to ``cache``, outside the tree; run the command once before timing it.
    """
    return {"PYTHONPYCACHEPREFIX": str(cache), "PYTHONDONTWRITEBYTECODE": ""}


def python_module(module: str, *args: str) -> list[str]:
    return [sys.executable, "-m", module, *args]


# -- the API server's own counters ------------------------------------------------------------------------


def scrape(sb: Sandbox) -> Counter[tuple[str, str]]:
    """``apiserver_request_total`` summed over codes and scopes, by (verb, resource)."""
    ctx = ssl.create_default_context(cafile=str(sb.ca))
    req = urllib.request.Request(f"{sb.server}/metrics", headers={"Authorization": f"Bearer {ADMIN_TOKEN}"})
    with urllib.request.urlopen(req, context=ctx, timeout=30) as resp:
        text = resp.read().decode()
    counts: Counter[tuple[str, str]] = Counter()
    for line in text.splitlines():
        m = _METRIC.match(line)
        if m:
            labels = dict(_LABEL.findall(m["labels"]))
            resource = labels.get("resource", "") + (
                f"/{labels['subresource']}" if labels.get("subresource") else ""
            )
            counts[(labels.get("verb", "?"), resource)] += int(float(m["value"]))
    return counts


def by_verb(before: Counter[tuple[str, str]], after: Counter[tuple[str, str]]) -> Counter[str]:
    """Requests the server counted between two scrapes, by verb (GET, LIST, WATCH, PUT, ...)."""
    delta: Counter[str] = Counter()
    for key, value in after.items():
        if value - before.get(key, 0) > 0:
            delta[key[0]] += value - before.get(key, 0)
    return delta


# -- the machine --------------------------------------------------------------------------------------------


def loadavg() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "n/a"


def machine() -> dict[str, str]:
    """What the numbers were measured on."""
    cpu = "n/a"
    mem = "n/a"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                mem = f"{int(line.split()[1]) / 1024 / 1024:.1f} GiB"
                break
    except OSError:
        pass
    return {
        "cores": str(os.cpu_count()),
        "cpu": cpu,
        "memory": mem,
        "python": platform.python_version(),
        "kernel": f"{platform.system()} {platform.release()}",
        "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
    }
