"""The `rollguard` command line. Parsing and wiring only: the work happens in the engine modules.

Exit codes: 0 all rolled out (or nothing found, for checks); 1 rollout failed and the group is back on
its previous state, verified (drift-check: findings); 2 refused before any change (bad input, missing
permission, lock held, unreachable cluster); 3 failed and could not restore.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from collections.abc import Callable, Sequence
from typing import Any

from task import __version__
from task.errors import EXIT_REFUSED, RefusedError

Handler = Callable[[argparse.Namespace], int]
COMMANDS: dict[str, Handler] = {}


def _cluster_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--kubeconfig",
        metavar="FILE",
        help="kubeconfig file (default: KUBECONFIG, in a pod the ServiceAccount)",
    )
    parser.add_argument("--context", metavar="NAME", help="kubeconfig context to use")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="rollguard",
        description="Guarded, all-or-nothing rollouts of DeploymentConfigs and Deployments.",
        epilog="exit codes: 0 ok; 1 failed and reverted (drift-check: findings); 2 refused, nothing changed; "
        "3 failed and not restored (see the journal)",
    )
    parser.add_argument("--version", action="version", version=f"rollguard {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = sub.add_parser("rollout", help="roll out every workload matching a selector, all-or-nothing")
    p.add_argument("-n", "--namespace", required=True, help="namespace of the rollout group")
    p.add_argument("-l", "--selector", required=True, help="label selector of the rollout group")
    p.add_argument(
        "--image",
        action="append",
        default=[],
        metavar="TARGET=REF",
        help="set an image: dc/NAME[/CONTAINER]=REF or deployment/NAME[/CONTAINER]=REF (repeatable)",
    )
    p.add_argument("--promote-from", metavar="NAMESPACE", help="copy TAG from this namespace's ImageStreams")
    p.add_argument("--tag", metavar="TAG", help="the tag to promote (with --promote-from)")
    p.add_argument(
        "--timeout", default="10m", metavar="DURATION", help="overall rollout timeout (default 10m)"
    )
    p.add_argument(
        "--on-paused",
        choices=("take-over", "refuse"),
        default="take-over",
        help="what to do with workloads found paused (default take-over)",
    )
    p.add_argument(
        "--no-fail-fast",
        action="store_true",
        help="wait for the platform's deadline instead of failing on crash-looping new pods",
    )
    p.add_argument(
        "--crash-restarts",
        type=int,
        default=2,
        metavar="N",
        help="fail fast once a new pod's container restarted N times (default 2)",
    )
    p.add_argument("--report", metavar="FILE", help="write a JSON report to FILE")
    p.add_argument(
        "--results-dir",
        metavar="DIR",
        help="write Tekton results status and summary here (default /tekton/results if present)",
    )
    _cluster_args(p)
    p.set_defaults(handler="rollout")
    return parser


def _connect(args: argparse.Namespace) -> Any:
    from task.client import Client

    return Client.connect(kubeconfig=args.kubeconfig, context=args.context)


def _install_sigterm(cancel: threading.Event, wake: Callable[[], None] | None = None) -> None:
    """First SIGTERM: stop and revert. The engine keeps reverting; SIGKILL is the platform's last word."""

    def handler(signum: int, frame: Any) -> None:
        print("rollguard: SIGTERM received: stopping and reverting the group", file=sys.stderr, flush=True)
        cancel.set()
        if wake is not None:
            wake()

    signal.signal(signal.SIGTERM, handler)


def cmd_rollout(args: argparse.Namespace) -> int:
    from task.engine import Rollout, RolloutRequest
    from task.inputs import parse_duration, parse_image_target, parse_namespace, parse_selector
    from task.report import Outcome, default_results_dir, write_report, write_results

    outcome: Outcome
    try:
        if bool(args.promote_from) != bool(args.tag):
            raise RefusedError("--promote-from and --tag go together", fix="pass both, or neither")
        if args.crash_restarts < 0 or args.crash_restarts > 1000:
            raise RefusedError(f"--crash-restarts {args.crash_restarts} is out of range", fix="use 0 to 1000")
        request = RolloutRequest(
            namespace=parse_namespace(args.namespace),
            selector=parse_selector(args.selector),
            targets=[parse_image_target(t) for t in args.image],
            promote_from=parse_namespace(args.promote_from) if args.promote_from else None,
            tag=args.tag,
            timeout=parse_duration(args.timeout),
            on_paused=args.on_paused,
            fail_fast=not args.no_fail_fast,
            crash_restarts=args.crash_restarts,
        )
        client = _connect(args)
        cancel = threading.Event()
        run = Rollout(client, request, out=lambda line: print(line, flush=True), cancel=cancel)
        _install_sigterm(cancel, lambda: run.cache.wake() if run.cache else None)
        outcome = run.execute()
    except RefusedError as exc:
        outcome = Outcome(
            status="refused",
            command="rollout",
            namespace=args.namespace,
            selector=args.selector,
            error=str(exc),
        )
    if outcome.status == "refused":
        print(f"rollguard: refused: {outcome.error}", file=sys.stderr)
    else:
        print(outcome.summary())
    if args.report:
        write_report(outcome, args.report)
    results = args.results_dir or default_results_dir()
    if results:
        write_results(outcome, results)
    return outcome.exit_code


COMMANDS["rollout"] = cmd_rollout


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "handler", None):
        parser.print_help()
        return EXIT_REFUSED
    try:
        return COMMANDS[args.handler](args)
    except RefusedError as exc:
        print(f"rollguard: refused: {exc}", file=sys.stderr)
        return EXIT_REFUSED
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
