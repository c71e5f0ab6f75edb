"""`python -m bench.tui_big --kubeconfig K`: `rollguard tui -A` on the big cluster, headless (bench.big).

Prints one JSON line: seconds from process start to the first screen with rows on it, to the whole
table (the read finished), to live watches; how long a change made through the API (one Deployment
paused, then one DeploymentConfig's image changed) takes to reach its row on screen; how long one
re-judgement of every namespace takes (the clock tick's, waited for); the process's peak RSS (taken
before what the backend holds is walked) and its API requests.
Nothing is asserted.
"""

from __future__ import annotations

import time

T0 = time.perf_counter()  # before the TUI's imports: they are part of its start

import argparse  # noqa: E402
import asyncio  # noqa: E402
import json  # noqa: E402
from collections import Counter  # noqa: E402
from typing import Any  # noqa: E402

from bench.counted import peak_rss_kib  # noqa: E402
from bench.pilot import until  # noqa: E402

SIZE = (160, 50)
BUDGET = float(
    __import__("os").environ.get("ROLLGUARD_TUI_BIG_BUDGET", "540")
)  # bench.big gives the process 600
CHANGED = ("big-001", "svc-001")  # a Deployment (odd index) of the big cluster
IMAGED = ("big-000", "svc-000")  # a DeploymentConfig (even index)


async def _until(pilot: Any, done: Any, what: str, timeout: float) -> None:
    await until(pilot, done, what, timeout=timeout, step=0.02)  # 20 ms: long waits, no CPU spent polling


async def measure(kubeconfig: str) -> dict[str, Any]:
    from rollguard.cluster.client import Client
    from rollguard.tui.app import RollguardApp
    from rollguard.tui.backend import Backend, Options

    clients: list[Client] = []

    def factory(path: str | None, context: str | None) -> Client:
        client = Client.connect(kubeconfig=path, context=context)
        clients.append(client)
        return client

    backend = Backend(Options(all_namespaces=True, kubeconfig=kubeconfig), factory=factory)
    app = RollguardApp(backend, live=True, static=True)
    out: dict[str, Any] = {}
    async with app.run_test(size=SIZE) as pilot:
        try:
            await _steps(pilot, app, backend, clients, out)
        except RuntimeError as exc:  # a step past its time: report what was measured, and why not the rest
            out["incomplete"] = str(exc)
        _summary(out, clients)
        # Last, once the peak is taken: the walk's set of a million ids costs ~50 MiB at 10,000 workloads
        # (it made the peak it was reported beside).
        out["held_mib"] = _held_mib(backend)
        print(json.dumps(out), flush=True)  # now: leaving the app waits for a read still under way
    _summary(out, clients)
    return out


def _summary(out: dict[str, Any], clients: list[Any]) -> None:
    total: Counter[str] = Counter()
    for c in clients:
        total.update(c.requests)
    out["requests"] = dict(total)
    out.setdefault("rss_mib", peak_rss_kib() / 1024)  # the first call's: before `_held_mib` walked


def _held_mib(backend: Any) -> float:
    """What the backend holds (caches, states, inventory; shared parts counted once), by getsizeof."""
    import sys

    from rollguard.tui.data import WATCHED

    seen: set[int] = set()
    total = 0
    stack: list[Any] = [[backend.held(res) for res in WATCHED], backend._states, backend.inventory]
    while stack:
        obj = stack.pop()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        total += sys.getsizeof(obj)
        if isinstance(obj, dict):
            stack.extend(obj.keys())
            stack.extend(obj.values())
        elif isinstance(obj, list | tuple | set | frozenset):
            stack.extend(obj)
        elif hasattr(obj, "__dict__"):
            stack.append(vars(obj))
        elif hasattr(obj, "__slots__"):
            stack.extend(getattr(obj, a) for a in obj.__slots__ if hasattr(obj, a))
    return total / 2**20


def _left() -> float:
    return max(BUDGET - (time.perf_counter() - T0), 1.0)


async def _steps(pilot: Any, app: Any, backend: Any, clients: list[Any], out: dict[str, Any]) -> None:
    from rollguard.core.resources import DEPLOYMENT_CONFIGS, DEPLOYMENTS

    await _until(
        pilot, lambda: "first_shown" in app.timings and bool(app.inventory and app.inventory.rows),
        "first screen", _left(),
    )  # fmt: skip
    out["first_screen_s"] = app.timings["first_shown"] - T0
    out["rss_first_mib"] = peak_rss_kib() / 1024
    out["rows_first"] = len(app.inventory.rows) if app.inventory else 0
    await _until(pilot, lambda: "listed" in backend.timings, "whole read", _left())
    listed = backend.timings["listed"]
    await _until(pilot, lambda: app.timings.get("shown", 0.0) > listed, "whole table", _left())
    out["all_rows_s"] = app.timings["shown"] - T0
    out["rss_table_mib"] = peak_rss_kib() / 1024  # the peak so far: the read, its partial tables, the table
    out["rows"] = len(app.inventory.rows) if app.inventory else 0
    await _until(pilot, lambda: backend.live, "live watches", _left())
    out["live_s"] = time.perf_counter() - T0
    out["rss_live_mib"] = peak_rss_kib() / 1024
    await pilot.pause(2.0)  # let the first cache rebuild land
    shown = app.timings.get("shown", 0.0)
    start = time.perf_counter()
    clients[0].patch(DEPLOYMENTS, CHANGED[1], {"spec": {"paused": True}}, namespace=CHANGED[0])
    await _until(
        pilot, lambda: app.timings.get("shown", 0.0) > max(shown, start), "live refresh", min(_left(), 120)
    )
    out["live_refresh_s"] = app.timings["shown"] - start
    clients[0].patch(DEPLOYMENTS, CHANGED[1], {"spec": {"paused": False}}, namespace=CHANGED[0])
    dc = clients[0].get(DEPLOYMENT_CONFIGS, IMAGED[1], namespace=IMAGED[0])
    container = dc["spec"]["template"]["spec"]["containers"][0]
    image = container["image"] = container["image"] + "-bench"
    start = time.perf_counter()
    clients[0].replace(DEPLOYMENT_CONFIGS, dc, namespace=IMAGED[0])

    def imaged() -> bool:
        rows = app.inventory.rows if app.inventory else ()
        return any(
            r.namespace == IMAGED[0] and r.name == IMAGED[1] and image in r.images.values() for r in rows
        )

    await _until(pilot, imaged, "image change on its row", min(_left(), 120))
    out["live_image_s"] = time.perf_counter() - start
    out["everything_s"] = backend.timings.get("everything_s")  # the read's assessing, until a tick's
    # The clock tick's re-judgement of every namespace (every max(5 s, 4 x the last one)): its time and
    # the peak with it, as a session left open reaches them.
    read_s = out["everything_s"]
    await _until(
        pilot,
        lambda: backend.timings.get("everything_s") != read_s,
        "a whole re-judgement",
        min(_left(), 180),
    )
    out["everything_s"] = backend.timings["everything_s"]
    await pilot.pause(1.0)  # its rows shown
    out["rss_rejudged_mib"] = peak_rss_kib() / 1024


def main() -> None:
    p = argparse.ArgumentParser(prog="python -m bench.tui_big")
    p.add_argument("--kubeconfig", required=True)
    args = p.parse_args()
    print(json.dumps(asyncio.run(measure(args.kubeconfig))))


if __name__ == "__main__":
    main()
