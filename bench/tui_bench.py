"""TUI responsiveness with 300 workloads (fixture data in an in-memory API, headless Textual).

`python -m bench.tui_bench` prints how long after the data arrives the first screen is shown, and
how long keypresses (cursor, sort, filter) take from the key to the frame that answers it, plus
opening a detail and a live refresh. `main()` returns the raw numbers (seconds): first_screen_s,
down (key -> frame), ... Nothing is asserted: the numbers go into the benchmark table.
"""

from __future__ import annotations

import asyncio
import copy
import statistics
import time
from typing import Any

from bench.pilot import until

WORKLOADS, NAMESPACES, SIZE = 300, 10, (160, 50)
LIST_LATENCY = 0.05  # per LIST call, so the data arrives after the app has started, as over a network


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms"


def _summary(samples: list[float]) -> str:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return (
        f"median {_ms(statistics.median(ordered))}, p95 {_ms(p95)}, max {_ms(ordered[-1])} (n={len(ordered)})"
    )


CPU: list[float] = []
PAINTS: list[float] = []  # when the app wrote a frame to the (headless) terminal
WALL: list[float] = []  # per key: until the test harness saw the app idle again (Pilot's waits included)


def _watch_paints(app: Any) -> None:
    """Timestamp every frame the app writes, to time a key up to its frame (not the harness's waits)."""
    display = app._display

    def spy(screen: Any, renderable: Any) -> None:
        if renderable is not None:
            PAINTS.append(time.perf_counter())
        display(screen, renderable)

    app._display = spy


async def _timed(pilot: Any, *keys: str) -> float:
    start, cpu = time.perf_counter(), time.process_time()
    try:
        await asyncio.wait_for(pilot.press(*keys), 30)
        await asyncio.wait_for(pilot.pause(), 30)  # one more turn of the loop: the repaint after the key
    except TimeoutError:
        raise RuntimeError(f"keys {keys} not processed within 30 s") from None
    CPU.append(time.process_time() - cpu)
    WALL.append(time.perf_counter() - start)
    painted = [t for t in PAINTS if t > start]
    # the key's answer: its first frame (a key that changes nothing on screen counts its handling)
    return (painted[0] if painted else time.perf_counter()) - start


async def _until(pilot: Any, done: Any, what: str) -> None:
    await until(pilot, done, what, timeout=30.0, step=0.005)  # 5 ms: the detail's wait is its measure


async def measure() -> dict[str, Any]:
    from rollguard.tui.app import RollguardApp
    from rollguard.tui.backend import Backend, Options
    from rollguard.tui.widgets.workload_table import WorkloadTable
    from tests.helpers.tui_objects import NOW, cluster_of, many

    objects = many(WORKLOADS, NAMESPACES)
    cluster = cluster_of(objects, latency=LIST_LATENCY)
    backend = Backend(Options(all_namespaces=True), factory=lambda _k, _c: cluster, now=lambda: NOW)
    app = RollguardApp(backend, now=lambda: NOW, live=True, static=True)
    out: dict[str, Any] = {"workloads": WORKLOADS, "namespaces": NAMESPACES}
    async with app.run_test(size=SIZE) as pilot:
        _watch_paints(app)
        await _until(pilot, lambda: "first_shown" in app.timings and backend.live, "the first screen")
        table = app.screen.query_one(WorkloadTable)
        out["rows"] = len(table.lines)
        out["first_screen_s"] = app.timings["first_shown"] - app.timings["first_arrived"]
        out["first_assess_s"] = backend.timings["first_assess_s"]
        out["first_table_s"] = app.timings["first_table_s"]
        CPU.clear()
        WALL.clear()
        out["down"] = [await _timed(pilot, "down") for _ in range(40)]
        out["down_cpu"] = list(CPU)
        out["down_harness"] = list(WALL)
        out["page_down"] = [await _timed(pilot, "pagedown") for _ in range(5)]
        out["sort"] = [await _timed(pilot, "s") for _ in range(5)]
        await pilot.press("slash")
        out["filter_key"] = [await _timed(pilot, key) for key in ("t", "e", "a", "m", "space", "0", "3")]
        await _timed(pilot, "escape")
        table.move_cursor(row=next(i for i, ln in enumerate(table.lines) if ln.row is not None))
        await pilot.pause()
        start = time.perf_counter()
        await pilot.press("enter")
        await _until(pilot, lambda: getattr(app.screen, "detail", None) is not None, "the detail screen")
        out["detail_s"] = time.perf_counter() - start
        await _timed(pilot, "escape")
        # live refresh: one object changes in the API -> watch event -> state model -> repaint
        changed = copy.deepcopy(next(o for o in objects if o["kind"] == "Deployment"))
        changed["spec"]["paused"] = True
        shown = app.timings.get("shown", 0.0)
        start = time.perf_counter()
        cluster.apply(changed)
        await _until(pilot, lambda: app.timings.get("shown", 0.0) != shown, "the live refresh")
        out["live_refresh_s"] = app.timings["shown"] - start
    cluster.close()
    return out


def main() -> dict[str, Any]:
    """Run the measurement and print it; returns the raw numbers."""
    result = asyncio.run(measure())
    print(f"tui: {result['workloads']} workloads in {result['namespaces']} namespaces ({result['rows']} table rows), "
          f"fixture data, terminal {SIZE[0]}x{SIZE[1]}")  # fmt: skip
    print(
        f"  first screen after the data arrived: {_ms(result['first_screen_s'])} (state model "
        f"{_ms(result['first_assess_s'])}, table rows {_ms(result['first_table_s'])}, then layout and paint)"
    )
    print(f"  keypress down (key -> its frame): {_summary(result['down'])}")
    print(f"    same, until Pilot saw the app idle: {_summary(result['down_harness'])}")
    print(f"    same, CPU of the whole process: {_summary(result['down_cpu'])}")
    print(f"  keypress pagedown:  {_summary(result['page_down'])}")
    print(f"  sort (s):           {_summary(result['sort'])}")
    print(f"  filter keystroke:   {_summary(result['filter_key'])}")
    print(f"  open detail (enter): {_ms(result['detail_s'])}")
    print(f"  live refresh (watch event -> screen): {_ms(result['live_refresh_s'])}")
    return result


if __name__ == "__main__":
    main()
