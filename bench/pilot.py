"""What the TUI benchmarks (`bench.tui_bench`, `bench.tui_big`) share: waiting on a headless app.

`until` polls a condition while the app runs (its thread workers and watches never complete, so there
is nothing else to wait on). ``step`` is the polling interval: short where a wait is itself measured
(a detail screen opening, the 300-workload table's refresh), longer on the 10,000-workload cluster,
whose waits are long and whose process must not spend its CPU on polling. A wait past ``timeout`` raises
`RuntimeError`, which `bench.tui_big` turns into "not measured further" in its result.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any


async def until(pilot: Any, done: Callable[[], object], what: str, *, timeout: float, step: float) -> None:
    """Return once ``done()`` is true; `RuntimeError` naming ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not done():
        if time.monotonic() > deadline:
            raise RuntimeError(f"no {what} within {timeout:.0f} s")
        await pilot.pause(step)
