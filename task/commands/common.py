"""Arguments and helpers shared by the subcommands."""

from __future__ import annotations

import argparse
import os
import queue
import signal
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pathlib import Path

    from rollguard.cluster.client import Client
    from rollguard.cluster.kubeconfig import Connection
    from rollguard.core.report import Report


NAMESPACE_HELP = (
    "namespace (default: the kubeconfig context's namespace; in a pod, the pod's; else 'default')"
)
NAMESPACE_RULE = (
    "Namespace: -n NS, else the current kubeconfig context's namespace, else (in a pod) the pod's "
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


LEASE_HELP = (
    "how long the group's Lease lasts without a renew (default 30s; 5s to 1h): renewed every third of it, "
    "failed renewals retried every second; a run that cannot prove its lease (its last good renew older "
    "than this less a fifth, e.g. after being frozen) stops writing and exits 3 'superseded'; a killed "
    "run's group is free again after this long"
)


def lease_arg(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--lease-duration", default="30s", metavar="DURATION", help=LEASE_HELP)


def lease_seconds(args: argparse.Namespace) -> int:
    """--lease-duration in seconds (RefusedError naming the range when out of it)."""
    from rollguard.cluster.lock import MAX_LEASE_SECONDS, MIN_LEASE_SECONDS
    from rollguard.core.errors import RefusedError
    from rollguard.plan.inputs import parse_duration

    seconds = parse_duration(args.lease_duration, flag="--lease-duration")
    if not MIN_LEASE_SECONDS <= seconds <= MAX_LEASE_SECONDS:
        raise RefusedError(
            f"--lease-duration {args.lease_duration[:40]!r} is out of range",
            fix=f"use a duration between {MIN_LEASE_SECONDS}s and {MAX_LEASE_SECONDS // 60}m",
        )
    return seconds


@dataclass
class Session:
    """A command's cluster and namespace, resolved once by kubectl's rules (`rollguard.cluster.kubeconfig`)."""

    connection: Connection
    namespace: str
    namespace_from: str
    _client: Client | None = None

    @property
    def client(self) -> Client:
        if self._client is None:
            from rollguard.cluster.client import Client

            self._client = Client.from_connection(self.connection)
        return self._client

    def heading(self, command: str) -> str:
        """The first line of a command's output: the namespace in use, and why that one."""
        return f"rollguard {command}: namespace {self.namespace} ({self.namespace_from}), {self.connection.describe}"


def session(args: argparse.Namespace) -> Session:
    """Resolve --kubeconfig/--context/-n (RefusedError naming the fix when unusable)."""
    from rollguard.cluster.kubeconfig import resolve
    from rollguard.plan.inputs import parse_namespace

    connection = resolve(kubeconfig=args.kubeconfig, context=args.context)
    given = getattr(args, "namespace", None)
    if isinstance(given, list):
        given = given[0] if given else None
    namespace, source = connection.namespace(parse_namespace(given) if given else None)
    return Session(connection=connection, namespace=parse_namespace(namespace), namespace_from=source)


def check_report_path(path: str | None, flag: str = "--report") -> None:
    """Refuse (exit 2, before any change) a report path that could not be written at the end.

    The path is judged as `rollguard.core.report.write_json` will write it: a symlink by its target, a
    character device or FIFO (``/dev/stdout``) in place, anything else as a file replaced atomically,
    which needs a directory the run can create files in (probed, so a read-only or immutable directory
    is refused even for root, whom permission bits do not stop).
    """
    if not path:
        return
    import stat
    from pathlib import Path

    from rollguard.core.errors import RefusedError

    given = Path(path).expanduser()
    target = Path(os.path.realpath(given))  # where a regular file is replaced: a symlink's target
    problem = ""
    try:
        mode = given.stat().st_mode  # through symlinks (/dev/stdout is one, to a pipe or a tty)
    except FileNotFoundError:
        mode = None
    except OSError as exc:
        problem = f"it cannot be examined ({exc.strerror})"
        mode = None
    if problem:
        pass
    elif mode is not None and stat.S_ISDIR(mode):
        problem = "it is a directory"
    elif mode is not None and (stat.S_ISCHR(mode) or stat.S_ISFIFO(mode)):
        problem = "" if os.access(given, os.W_OK) else "it is a device or FIFO that is not writable"
    elif mode is not None and not stat.S_ISREG(mode):
        problem = "it is neither a regular file, a character device nor a FIFO"
    else:
        problem = _creatable(target.parent)
    if problem:
        raise RefusedError(
            f"{flag} {path[:80]!r} cannot be written: {problem}",
            fix="pass a file path in a writable directory (or a writable device such as /dev/stdout)",
        )


def check_results_dir(path: str | None, flag: str = "--results-dir") -> None:
    """Refuse (exit 2, before any change) a results directory the run could not write at the end."""
    if not path:
        return
    from pathlib import Path

    from rollguard.core.errors import RefusedError

    target = Path(path).expanduser()
    problem = _creatable(target)
    if not problem:
        taken = [n for n in ("status", "summary") if (target / n).is_dir()]
        problem = f"it holds a directory named {taken[0]!r} where the result goes" if taken else ""
    if problem:
        raise RefusedError(
            f"{flag} {path[:80]!r} cannot be used: {problem}: the Tekton results could not be written",
            fix="pass a writable directory (in a Task, leave it out: /tekton/results is used)",
        )


def _creatable(directory: Path) -> str:
    """Why files cannot be created in ``directory`` (made as needed), or "" when they can.

    The nearest existing ancestor is probed with a real file (created, then removed): permission bits
    alone would pass a read-only filesystem, an immutable directory, or anything for root.
    """
    import tempfile

    existing = next((p for p in (directory, *directory.parents) if p.exists()), None)
    if existing is None or not existing.is_dir():
        return f"{str(existing or directory)[:80]!r} is not a directory"
    try:
        fd, probe = tempfile.mkstemp(dir=existing, prefix=".rollguard-probe-")
    except OSError as exc:
        return f"no file can be created in {str(existing)[:80]!r} ({exc.strerror or type(exc).__name__})"
    os.close(fd)
    os.unlink(probe)
    return ""


def write_or_warn(write: Callable[[], None], what: str) -> None:
    """Write a report or result at the end of a run; a failure is one line, not a traceback."""
    try:
        write()
    except OSError as exc:
        print(f"rollguard: could not write the {what}: {exc}", file=sys.stderr, flush=True)


def finish(outcome: Report, *, report: str | None, report_ok: bool, dry_run: bool) -> None:
    """The end every changing command shares: a refusal on stderr, else the summary line (a dry run
    has printed its own), then the report unless its path was refused in preflight."""
    from rollguard.core.report import write_report
    from rollguard.core.structs import ExitStatus

    if outcome.status is ExitStatus.REFUSED:
        print(f"rollguard: refused: {outcome.error}", file=sys.stderr)
    elif not dry_run:
        printer(outcome.summary())
    if report and report_ok:
        write_or_warn(lambda: write_report(outcome, report), "report")


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


SIGNAL_NAMES: dict[int, str] = {signal.SIGTERM: "SIGTERM", signal.SIGINT: "SIGINT (Ctrl-C)"}


def install_sigterm(
    cancel: threading.Event,
    wake: Callable[[], None] | None = None,
    abort: threading.Event | None = None,
    on_signal: Callable[[str], None] | None = None,
) -> None:
    """SIGTERM and SIGINT (Ctrl-C) alike. The first: stop and revert. The platform SIGKILLs at the end
    of its grace period, so the revert may wait only `term_grace()` seconds from then: at that point,
    or on a second SIGTERM or Ctrl-C, ``abort`` is set and the run ends with exit 3 and a journal saying
    what is left, instead of being killed without a report. ``on_signal`` hears the first signal's name.

    The handler itself only queues the signal: Python runs it in the main thread between any two
    bytecodes, possibly while that thread holds a lock (a queue's, an Event's, stderr's), and setting an
    Event, waking the cache or printing from there would take that lock again and hang the process for
    good. A relay thread does the work; `queue.SimpleQueue.put` is reentrant, so safe in a handler.
    """
    signals: queue.SimpleQueue[int] = queue.SimpleQueue()

    def stop_waiting(why: str) -> None:
        if abort is not None and not abort.is_set():
            print(f"rollguard: {why}: no longer waiting for the revert", file=sys.stderr, flush=True)
            abort.set()
            if wake is not None:
                wake()

    def first(signum: int) -> None:
        name = SIGNAL_NAMES.get(signum, f"signal {signum}")
        if on_signal is not None:
            on_signal(name)
        again = "Ctrl-C" if signum == signal.SIGINT else "SIGTERM"
        print(
            f"rollguard: {name} received: stopping and reverting the group (a second {again} stops the revert)",
            file=sys.stderr,
            flush=True,
        )
        cancel.set()
        if abort is not None:
            grace = term_grace()
            timer = threading.Timer(grace, stop_waiting, args=(f"the {grace}s grace after {name} is over",))
            timer.daemon = True
            timer.start()
        if wake is not None:
            wake()

    def relay() -> None:
        while True:
            signum = signals.get()
            if cancel.is_set():
                stop_waiting(f"second {SIGNAL_NAMES.get(signum, 'signal').split()[0]} received")
            else:
                first(signum)

    threading.Thread(target=relay, name="signal-relay", daemon=True).start()

    def handler(signum: int, frame: Any) -> None:
        signals.put(signum)

    for signum in SIGNAL_NAMES:
        signal.signal(signum, handler)


TERM_GRACE = 25  # under Tekton's default terminationGracePeriodSeconds (30) before SIGKILL


def term_grace() -> int:
    """Seconds a revert may take after SIGTERM: ROLLGUARD_TERM_GRACE (1 to 3600), else TERM_GRACE."""
    value = os.environ.get("ROLLGUARD_TERM_GRACE", "")
    return min(max(int(value), 1), 3600) if value.isdigit() else TERM_GRACE
