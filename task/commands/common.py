"""Arguments and helpers shared by the subcommands."""

from __future__ import annotations

import argparse
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
    """A `task.client.Client` for the command's --kubeconfig/--context (RefusedError when unusable)."""
    from task.client import Client

    return Client.connect(kubeconfig=args.kubeconfig, context=args.context)


def printer(line: str) -> None:
    print(line, flush=True)


def install_sigterm(cancel: threading.Event, wake: Callable[[], None] | None = None) -> None:
    """First SIGTERM: stop and revert. The engine keeps reverting; SIGKILL is the platform's last word."""

    def handler(signum: int, frame: Any) -> None:
        print("rollguard: SIGTERM received: stopping and reverting the group", file=sys.stderr, flush=True)
        cancel.set()
        if wake is not None:
            wake()

    signal.signal(signal.SIGTERM, handler)
