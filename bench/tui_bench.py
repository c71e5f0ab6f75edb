"""TUI responsiveness with 300 workloads (fixture data in an in-memory API, headless Textual).

`python -m bench.tui_bench` prints: how long after the data arrives the first screen is shown, and
how long keypresses (cursor, sort, filter, detail) and a live refresh take to be processed and
painted. Nothing is asserted: the numbers go into the benchmark table.
"""

from __future__ import annotations

import asyncio
import copy
import statistics
import time
from typing import Any

WORKLOADS, NAMESPACES, SIZE = 300, 10, (160, 50)


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms"


def _summary(samples: list[float]) -> str:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return f"median {_ms(statistics.median(ordered))}, p95 {_ms(p95)}, max {_ms(ordered[-1])} (n={len(ordered)})"


async def _timed(pilot: Any, *keys: str) -> float:
    start = time.perf_counter()
    await pilot.press(*keys)
    await pilot.pause()  # one more turn of the loop: the repaint after the key's handling
    return time.perf_counter() - start


async def measure() -> dict[str, Any]:
    from tui.app import RollguardApp
    from tui.backend import Backend, Options
    from tui.fixtures import NOW, cluster_of, many
    from tui.widgets.workload_table import WorkloadTable

    objects = many(WORKLOADS, NAMESPACES)
    cluster = cluster_of(objects)
    backend = Backend(Options(all_namespaces=True), factory=lambda _k, _c: cluster, now=lambda: NOW)
    app = RollguardApp(backend, now=lambda: NOW, live=True, static=True)
    out: dict[str, Any] = {"workloads": WORKLOADS, "namespaces": NAMESPACES}
    async with app.run_test(size=SIZE) as pilot:
        while "first_shown" not in app.timings or not backend.live:
            await pilot.pause(0.01)
        table = app.screen.query_one(WorkloadTable)
        out["rows"] = len(table.lines)
        first_listed = backend.timings["listed"]  # (the live caches have listed again since; see below)
        out["first_screen_s"] = app.timings["first_shown"] - app.timings["first_arrived"]
        out["assess_s"] = backend.timings["assessed"] - first_listed if first_listed < app.timings["first_arrived"] else None
        out["down"] = [await _timed(pilot, "down") for _ in range(40)]
        out["page_down"] = [await _timed(pilot, "pagedown") for _ in range(5)]
        out["sort"] = [await _timed(pilot, "s") for _ in range(5)]
        await pilot.press("slash")
        out["filter_key"] = [await _timed(pilot, ch) for ch in "svc-00"]
        await pilot.press("escape")
        await pilot.press("home", "down")
        start = time.perf_counter()
        await pilot.press("enter")
        while getattr(app.screen, "detail", None) is None:
            await pilot.pause(0.005)
        out["detail_s"] = time.perf_counter() - start
        await pilot.press("escape")
        # live refresh: one object changes in the API -> watch event -> state model -> repaint
        changed = copy.deepcopy(next(o for o in objects if o["kind"] == "Deployment"))
        changed["spec"]["paused"] = True
        shown = app.timings.get("shown", 0.0)
        start = time.perf_counter()
        cluster.apply(changed)
        while app.timings.get("shown", 0.0) == shown:
            await pilot.pause(0.005)
        out["live_refresh_s"] = app.timings["shown"] - start
    cluster.close()
    return out


def main() -> dict[str, Any]:
    """Run the measurement and print it; returns the raw numbers."""
    result = asyncio.run(measure())
    print(f"tui: {result['workloads']} workloads in {result['namespaces']} namespaces ({result['rows']} table rows), "
          f"fixture data, terminal {SIZE[0]}x{SIZE[1]}")  # fmt: skip
    print(f"  first screen after the data arrived: {_ms(result['first_screen_s'])}"
          + (f" (state model {_ms(result['assess_s'])} before that)" if result.get("assess_s") else ""))  # fmt: skip
    print(f"  keypress down:      {_summary(result['down'])}")
    print(f"  keypress pagedown:  {_summary(result['page_down'])}")
    print(f"  sort (s):           {_summary(result['sort'])}")
    print(f"  filter keystroke:   {_summary(result['filter_key'])}")
    print(f"  open detail (enter): {_ms(result['detail_s'])}")
    print(f"  live refresh (watch event -> screen): {_ms(result['live_refresh_s'])}")
    return result


if __name__ == "__main__":
    main()
