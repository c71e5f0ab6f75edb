"""What the two guarded group commands, `rollout` and `migrate`, share: options and the command's frame.

Both run a `rollguard.run.group.GroupRun` (`Rollout`, `Migrate`) with the same contract on the command line:
the Tekton-facing options (``--report``, ``--results-dir``, the lease, the cluster), the same fail-fast
options, and the same frame (`run_guarded`):

1. ``--report`` and ``--results-dir`` are checked first: a path that could not be written at the end is
   refused (exit 2) and not written to either.
2. The command's own arguments are checked and its inputs read (``check``): bad input is refused before
   the kubeconfig is even resolved.
3. The session (cluster and namespace, `rollguard.commands.common.session`) is resolved and named in the
   first line of output.
4. The command runs (``start``): its preview, or the guarded run with SIGTERM and Ctrl-C wired to stop
   and revert it (`execute`).
5. Whatever happened, one `Report`: a `RefusedError`, or an `ApiError` (only a preview's preflight reads
   get one through), is status ``refused``; then the summary line, the JSON report and the Tekton results.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

from rollguard.commands.common import (
    Session,
    check_report_path,
    check_results_dir,
    cluster_args,
    finish,
    install_sigterm,
    lease_arg,
    printer,
    session,
    write_or_warn,
)
from rollguard.core.errors import ApiError, RefusedError

if TYPE_CHECKING:  # imported when run: the CLI starts without the engine
    from rollguard.core.report import Report
    from rollguard.run.group import GroupRun

Checked = TypeVar("Checked")


def fail_fast_args(parser: argparse.ArgumentParser) -> None:
    """--no-fail-fast and --crash-restarts: when a run stops waiting on crash-looping new pods."""
    parser.add_argument(
        "--no-fail-fast",
        action="store_true",
        help="wait for the platform's deadline instead of failing on crash-looping new pods",
    )
    parser.add_argument(
        "--crash-restarts",
        type=int,
        default=2,
        metavar="N",
        help="fail fast once a new pod's container restarted N times (default 2)",
    )


def crash_restarts(args: argparse.Namespace) -> int:
    """--crash-restarts, refused out of its range."""
    if not 0 <= args.crash_restarts <= 1000:
        raise RefusedError(f"--crash-restarts {args.crash_restarts} is out of range", fix="use 0 to 1000")
    value: int = args.crash_restarts
    return value


def outcome_args(parser: argparse.ArgumentParser) -> None:
    """The lease, --report, --results-dir and the cluster: the options a pipeline step sets."""
    lease_arg(parser)
    parser.add_argument(
        "--report", metavar="FILE", help="write a JSON report to FILE (refused when unwritable)"
    )
    parser.add_argument(
        "--results-dir",
        metavar="DIR",
        help="write Tekton results status and summary here (default /tekton/results if present; "
        "refused when unwritable)",
    )
    cluster_args(parser)


def execute(job: GroupRun) -> Report:
    """Run ``job`` to its end, the first SIGTERM or Ctrl-C stopping and reverting it (a second one, or
    the grace running out, stops the revert: `rollguard.commands.common.install_sigterm`)."""
    install_sigterm(
        job.cancel, lambda: job.cache.wake() if job.cache else None, job.abort, on_signal=job.stopped_by
    )
    return job.execute()


def run_guarded(
    args: argparse.Namespace,
    *,
    command: str,
    previewing: bool,
    check: Callable[[], Checked],
    start: Callable[[Session, Checked], Report],
    heading: bool = True,
) -> int:
    """The frame of `rollout` and `migrate` (see the module docstring); the exit code.

    ``check`` checks the command's arguments and reads its inputs (before the session, so that bad
    input is refused without a cluster); ``start`` gets the session and what ``check`` returned, and runs
    the preview or the guarded run. ``heading`` false leaves out the first line (``migrate -o yaml`` to
    stdout prints the manifests alone).
    """
    from rollguard.core.report import default_results_dir, write_results

    report_ok = results_ok = False  # a refused --report or --results-dir is not written to either
    namespace, namespace_from = args.namespace or "", ""
    results = args.results_dir or default_results_dir()
    try:
        check_report_path(args.report)
        report_ok = True
        check_results_dir(results)
        results_ok = True
        checked = check()
        where = session(args)
        namespace, namespace_from = where.namespace, where.namespace_from
        if heading:
            printer(where.heading(command))
        outcome = start(where, checked)
    except ApiError as exc:  # only a preview gets here: its preflight reads failed, nothing was changed
        why = f"the API server refused or failed a read during preflight: {exc}"
        outcome = refused(command=command, namespace=namespace, selector=args.selector, error=why)
    except RefusedError as exc:
        outcome = refused(command=command, namespace=namespace, selector=args.selector, error=str(exc))
    outcome.namespace_from = namespace_from
    finish(outcome, report=args.report, report_ok=report_ok, dry_run=previewing)
    if results and results_ok:
        write_or_warn(lambda: write_results(outcome, results), "Tekton results")
    return outcome.exit_code


def refused(*, command: str, namespace: str, selector: str, error: str) -> Report:
    """The report of a command refused before any change (exit 2)."""
    from rollguard.core.report import Report
    from rollguard.core.structs import ExitStatus

    return Report(
        status=ExitStatus.REFUSED, command=command, namespace=namespace, selector=selector, error=error
    )
