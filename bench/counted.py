"""`python -m bench.counted OUT.json ARGS...`: run `rollguard ARGS...` in this process, then write the
requests its clients sent, by verb, to OUT.json.

The API server's counters cannot tell clients apart (the sandbox's controllers and kubelet react to a
rollout with many requests of their own), so rollguard's own share is counted here, on the client side,
from `rollguard.cluster.client.Client.requests`. The command runs exactly as `rollguard ARGS...` would.

OUT.json.times gets when (``time.monotonic``, the system's CLOCK_MONOTONIC, the same clock in the parent
process) the first request was handed to the transport, when the last write of a workload (a PUT or POST
of a DeploymentConfig or Deployment, not a dry run) was answered, when the first was sent and when the
last dry run of one was answered (`phases`), and how long the process then waited for response headers
in all: a parent that reads its own clock before starting this process can tell the
start-up (until the first request) from the server's answers and what follows (`split`).
"""

from __future__ import annotations

import json
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass
from typing import Any


def main(argv: list[str]) -> int:
    out, args = argv[0], argv[1:]
    from rollguard.cluster import client

    clients: list[Any] = []
    original = client.Client.__init__
    times: dict[str, float] = {"waited_s": 0.0}
    lock = threading.Lock()

    def init(self: Any, *a: Any, **kw: Any) -> None:
        original(self, *a, **kw)
        clients.append(self)
        send = (
            self._api.call_api
        )  # the official transport's side of Client (see rollguard.cluster.client.Transport)

        def timed(*args: Any, **kwargs: Any) -> Any:
            t = time.monotonic()
            times.setdefault("first_request", t)
            try:
                return send(*args, **kwargs)
            finally:
                answered = time.monotonic()
                with lock:
                    times["waited_s"] += answered - t
                    times["last_answer"] = max(times.get("last_answer", 0.0), answered)
                    if workload_write(args, kwargs):
                        times["last_workload_write"] = max(times.get("last_workload_write", 0.0), answered)
                        times["first_workload_write"] = min(times.get("first_workload_write", t), t)
                    elif workload_write(args, kwargs, dry_run=True):
                        times["last_dry_run"] = max(times.get("last_dry_run", 0.0), answered)
                        times["first_dry_run"] = min(times.get("first_dry_run", t), t)
                    if lease_renewal(args):
                        times["lease_renewals"] = times.get("lease_renewals", 0) + 1

        self._api.call_api = timed

    client.Client.__init__ = init  # type: ignore[method-assign]
    from rollguard.cli import run as cli_run

    code = 70
    try:
        cli_run(args)  # as the console script: it ends in sys.exit with the command's code
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 0 if exc.code is None else 1
    finally:
        total: Counter[str] = Counter()
        for c in clients:
            total.update(c.requests)
        with open(out, "w") as f:
            json.dump(dict(total), f)
        with open(out + ".rss", "w") as f:
            f.write(str(peak_rss_kib()))
        with open(out + ".times", "w") as f:
            json.dump({**times, "done": time.monotonic()}, f)
    return code


def workload_write(args: tuple[Any, ...], kwargs: dict[str, Any], *, dry_run: bool = False) -> bool:
    """Is this request (``call_api``'s arguments) a write of a workload (``dry_run``: a server-side dry
    run of one, as the preflight sends), not the other?"""
    path = args[0] if args else kwargs.get("path", "")  # Transport.call_api(path, method, ...)
    method = args[1] if len(args) > 1 else kwargs.get("method", "")
    if method not in ("PUT", "POST") or not any(
        f"/{r}" in str(path) for r in ("deploymentconfigs", "deployments")
    ):
        return False
    return dry_run == any(key == "dryRun" for key, _value in kwargs.get("query_params") or [])


def lease_renewal(args: tuple[Any, ...]) -> bool:
    """Is this request a PUT of a Lease other than the claim register (the lock's renew, or its take-over)?"""
    path = str(args[0]) if args else ""
    method = args[1] if len(args) > 1 else ""
    return method == "PUT" and "/leases/" in path and not path.endswith("/rollguard-claims")


def renewals(out: str) -> int:
    """How many of the run's requests renewed its Lease (they come with time, one per third of the lease)."""
    try:
        with open(out + ".times") as f:
            return int(json.load(f).get("lease_renewals", 0))
    except (OSError, ValueError):
        return 0


def last_write(out: str) -> float | None:
    """Seconds from the run's first request until its last workload write was answered (None: none)."""
    try:
        with open(out + ".times") as f:
            times = json.load(f)
    except (OSError, ValueError):
        return None
    if "first_request" not in times or "last_workload_write" not in times:
        return None
    return float(times["last_workload_write"] - times["first_request"])


# The parts of the time until the last workload write was answered (`phases`), in order.
PHASES = ("reads", "dry_runs", "hold", "writes")


def phases(out: str) -> dict[str, float]:
    """Where the time from the run's first request until its last workload write was answered went:
    ``reads`` until the first dry run was sent (the preflight's reads, all sent at once, and the
    decision), ``dry_runs`` until the last dry run was answered (every write sent as a server-side dry
    run, all at once), ``hold`` until the first workload write was sent (lock, claims, journal, the
    watches started), ``writes`` until the last one was answered (all sent at once). Empty when the run
    wrote no workload or sent no dry run."""
    try:
        with open(out + ".times") as f:
            times = json.load(f)
    except (OSError, ValueError):
        return {}
    needed = ("first_request", "first_dry_run", "last_dry_run", "first_workload_write", "last_workload_write")
    if not all(k in times for k in needed):
        return {}
    return {
        "reads": times["first_dry_run"] - times["first_request"],
        "dry_runs": times["last_dry_run"] - times["first_dry_run"],
        "hold": times["first_workload_write"] - times["last_dry_run"],
        "writes": times["last_workload_write"] - times["first_workload_write"],
    }


def requests_span(out: str) -> float | None:
    """Seconds from the run's first request until its last answer came (requests in parallel counted
    once, unlike ``Split.waited_s``); None when it sent none."""
    try:
        with open(out + ".times") as f:
            times = json.load(f)
    except (OSError, ValueError):
        return None
    if "first_request" not in times or "last_answer" not in times:
        return None
    return float(times["last_answer"] - times["first_request"])


@dataclass(frozen=True)
class Split:
    """One process's wall time, from the parent's clock reading before the spawn."""

    startup_s: float  # until the first request went to the transport (interpreter, imports, kubeconfig)
    waited_s: float  # waiting for response headers, all requests (the server's share, and the network's)
    rest_s: float  # everything else: reading bodies, assessing, printing, exiting


def split(out: str, started: float, ended: float) -> Split | None:
    """`Split` of the run that wrote ``out`` (None when it sent no request or wrote no times)."""
    try:
        with open(out + ".times") as f:
            times = json.load(f)
    except (OSError, ValueError):
        return None
    if "first_request" not in times:
        return None
    startup = times["first_request"] - started
    return Split(startup, times["waited_s"], max(0.0, ended - started - startup - times["waited_s"]))


def peak_rss_kib() -> int:
    """This process image's peak RSS (VmHWM): unlike ru_maxrss, not inherited from the parent at exec."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
