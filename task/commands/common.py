"""Arguments and helpers shared by the subcommands."""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rollguard.client import Client
    from rollguard.kubeconfig import Connection


NAMESPACE_HELP = (
    "namespace (default: the kubeconfig context's namespace; in a pod, the pod's; else 'default')"
)
NAMESPACE_RULE = (
    "namespace: -n NS, else the current kubeconfig context's namespace, else (in a pod) the pod's "
    "namespace, else 'default', as kubectl; the first line of output names the one in use"
)


def cluster_args(parser: argparse.ArgumentParser) -> None:
    """--kubeconfig and --context, as every command takes them."""
    parser.add_argument(
        "--kubeconfig",
        metavar="FILE",
        help="kubeconfig file (default: the KUBECONFIG list merged as kubectl does, else ~/.kube/config; "
        "without one, in a pod, the ServiceAccount)",
    )
    parser.add_argument("--context", metavar="NAME", help="kubeconfig context to use")


def namespace_arg(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-n", "--namespace", help=NAMESPACE_HELP)


@dataclass
class Session:
    """A command's cluster and namespace, resolved once by kubectl's rules (`rollguard.kubeconfig`)."""

    connection: Connection
    namespace: str
    namespace_from: str
    _client: Client | None = None

    @property
    def client(self) -> Client:
        if self._client is None:
            from rollguard.client import Client

            self._client = Client.from_connection(self.connection)
        return self._client

    def heading(self, command: str) -> str:
        """The first line of a command's output: the namespace in use, and why that one."""
        return f"rollguard {command}: namespace {self.namespace} ({self.namespace_from}), {self.connection.describe}"


def session(args: argparse.Namespace) -> Session:
    """Resolve --kubeconfig/--context/-n (RefusedError naming the fix when unusable)."""
    from rollguard.inputs import parse_namespace
    from rollguard.kubeconfig import resolve

    connection = resolve(kubeconfig=args.kubeconfig, context=args.context)
    given = getattr(args, "namespace", None)
    if isinstance(given, list):
        given = given[0] if given else None
    namespace, source = connection.namespace(parse_namespace(given) if given else None)
    return Session(connection=connection, namespace=parse_namespace(namespace), namespace_from=source)


def connect(args: argparse.Namespace) -> Client:
    """A `rollguard.client.Client` for the command's --kubeconfig/--context (RefusedError when unusable)."""
    return session(args).client


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


def check_results_dir(path: str | None, flag: str = "--results-dir") -> None:
    """Refuse (exit 2, before any change) a results directory the run could not write at the end."""
    if not path:
        return
    from pathlib import Path

    from rollguard.errors import RefusedError

    target = Path(path).expanduser()
    existing = next((p for p in (target, *target.parents) if p.exists()), None)
    problem = ""
    if existing is None or not existing.is_dir():
        problem = "is not a directory" if existing == target else f"is under {str(existing)[:80]!r}, not a directory"
    elif not os.access(existing, os.W_OK | os.X_OK):
        problem = "is not writable" if existing == target else f"cannot be created in {str(existing)[:80]!r}"
    else:
        taken = [n for n in ("status", "summary") if (target / n).is_dir()]
        problem = f"holds a directory named {taken[0]!r} where the result goes" if taken else ""
    if problem:
        raise RefusedError(
            f"{flag} {path[:80]!r} {problem}: the Tekton results could not be written",
            fix="pass a writable directory (in a Task, leave it out: /tekton/results is used)",
        )


def write_or_warn(write: Callable[[], None], what: str) -> None:
    """Write a report or result at the end of a run; a failure is one line, not a traceback."""
    try:
        write()
    except OSError as exc:
        print(f"rollguard: could not write the {what}: {exc}", file=sys.stderr, flush=True)


_PRINTING = threading.Lock()


def printer(line: str) -> None:
    """One progress line; whole lines only, as the run's threads report at once.

    A reader that went away (``rollguard rollout | head -1``) must not stop a run half-way: the rest
    of the output is dropped and the run goes on to its true end and exit code.
    """
    with _PRINTING:
        try:
            sys.stdout.write(line + "\n")
            sys.stdout.flush()
        except BrokenPipeError:
            silence_stdout()


def silence_stdout() -> None:
    """Send the rest of stdout to /dev/null (Python's advice for EPIPE: no second error at exit)."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


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
