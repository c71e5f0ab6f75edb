"""Arguments and helpers shared by the subcommands."""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
from collections.abc import Callable
from typing import Any


def cluster_args(parser: argparse.ArgumentParser) -> None:
    """--kubeconfig and --context, as every command takes them."""
    parser.add_argument(
        "--kubeconfig",
        metavar="FILE",
        help="kubeconfig file (default: KUBECONFIG; in a pod, the ServiceAccount)",
    )
    parser.add_argument("--context", metavar="NAME", help="kubeconfig context to use")


def connect(args: argparse.Namespace) -> Any:
    """A `rollguard.client.Client` for the command's --kubeconfig/--context (RefusedError when unusable)."""
    from rollguard.client import Client

    return Client.connect(kubeconfig=args.kubeconfig, context=args.context)


def check_report_path(path: str | None, flag: str = "--report") -> None:
    """Refuse (exit 2, before any change) a report path that could not be written at the end."""
    if not path:
        return
    from pathlib import Path

    from rollguard.errors import RefusedError

    target = Path(path).expanduser()
    existing = next((p for p in (target.parent, *target.parent.parents) if p.exists()), None)
    if (
        target.is_dir()
        or existing is None
        or not existing.is_dir()
        or not os.access(existing, os.W_OK | os.X_OK)
    ):
        raise RefusedError(
            f"{flag} {path[:80]!r} cannot be written", fix="pass a file path in a writable directory"
        )


def write_or_warn(write: Callable[[], None], what: str) -> None:
    """Write a report or result at the end of a run; a failure is one line, not a traceback."""
    try:
        write()
    except OSError as exc:
        print(f"rollguard: could not write the {what}: {exc}", file=sys.stderr, flush=True)


_PRINTING = threading.Lock()


def printer(line: str) -> None:
    """One progress line; whole lines only, as the run's threads report at once."""
    with _PRINTING:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


def install_sigterm(
    cancel: threading.Event,
    wake: Callable[[], None] | None = None,
    abort: threading.Event | None = None,
) -> None:
    """First SIGTERM: stop and revert. The platform SIGKILLs at the end of its grace period, so the
    revert may wait only `term_grace()` seconds from then: at that point, or on a second SIGTERM,
    ``abort`` is set and the run ends with exit 3 and a journal saying what is left, instead of
    being killed without a report.
    """

    def stop_waiting(why: str) -> None:
        if abort is not None and not abort.is_set():
            print(f"rollguard: {why}: no longer waiting for the revert", file=sys.stderr, flush=True)
            abort.set()
            if wake is not None:
                wake()

    def handler(signum: int, frame: Any) -> None:
        if cancel.is_set():
            stop_waiting("second SIGTERM received")
            return
        print("rollguard: SIGTERM received: stopping and reverting the group", file=sys.stderr, flush=True)
        cancel.set()
        if abort is not None:
            grace = term_grace()
            timer = threading.Timer(grace, stop_waiting, args=(f"the {grace}s SIGTERM grace is over",))
            timer.daemon = True
            timer.start()
        if wake is not None:
            wake()

    signal.signal(signal.SIGTERM, handler)


TERM_GRACE = 25  # under Tekton's default terminationGracePeriodSeconds (30) before SIGKILL


def term_grace() -> int:
    """Seconds a revert may take after SIGTERM: ROLLGUARD_TERM_GRACE (1 to 3600), else TERM_GRACE."""
    value = os.environ.get("ROLLGUARD_TERM_GRACE", "")
    return min(max(int(value), 1), 3600) if value.isdigit() else TERM_GRACE
