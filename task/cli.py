"""The `rollguard` command line: parsing and dispatch only; each subcommand lives in rollguard.commands.

Exit codes (the README's table; `rollguard --help` says the same):
- 0: every workload rolled out and verified (`succeeded`), or a `--dry-run` whose preflight passed
  (`dry-run`); drift-check: nothing selected by --fail-on found.
- 1: the run failed and the group is back on its previous state, verified (`reverted`); drift-check:
  findings.
- 2: refused before any change (`refused`): bad input, missing permission, lock held, unreachable cluster.
- 3: the group is not what the journal verified (`inconsistent`: a revert not verified, a workload left
  on someone else's edit, a final journal write that failed), or the run lost its group's lock and stopped
  writing (`superseded`); the journal says what is left.
- 141 (128 + SIGPIPE): `status`'s reader went away early, as for any Unix tool (commands whose exit
  code carries a verdict print through `commands.common.printer`, which drops the output instead).

`run` is the `rollguard` console script (and `python -m rollguard.cli`): `main` as a whole process, with
the cyclic garbage collector kept out of the start-up and the exit (see `run`).
"""

from __future__ import annotations

import argparse
import gc
import importlib
import signal
import sys
import threading
from collections.abc import Sequence
from typing import NoReturn

from rollguard import __version__
from rollguard.commands.common import silence_stdout
from rollguard.core.errors import EXIT_REFUSED, RefusedError

EXIT_BROKEN_PIPE = 128 + signal.SIGPIPE

# Subcommand modules under rollguard.commands, in help order. Each defines register(subparsers) and
# registers the command named like the module, "_" written "-".
SUBCOMMANDS = ["rollout", "migrate", "status", "resume", "revert", "redeploy", "drift_check", "tui"]


def command_module(arg: str | None) -> str | None:
    """The module of the subcommand ``arg`` names, if it names one."""
    return {module.replace("_", "-"): module for module in SUBCOMMANDS}.get(arg or "")


def build_parser(*, only: str | None = None) -> argparse.ArgumentParser:
    """The whole parser, or (``only``: a module of SUBCOMMANDS) one with that subcommand alone.

    A command line that starts with a subcommand's name is parsed by the parser of that subcommand
    alone, the same as the whole one would: the other subcommands' modules (and what their options'
    help texts import, such as drift-check's finding names from rollguard.state.assessment) stay unimported.
    """
    parser = argparse.ArgumentParser(
        prog="rollguard",
        description="Guarded, all-or-nothing rollouts of DeploymentConfigs and Deployments.",
        epilog="exit codes: 0 succeeded (or dry-run: preflight passed; drift-check: nothing found); "
        "1 failed, the group reverted and verified (drift-check: findings); 2 refused, nothing changed; "
        "3 inconsistent (the group is not what the journal verified: a revert not verified, someone "
        "else's edit left in place, a failed final journal write) or superseded (lost the group's lock); "
        "141 status's reader closed the pipe early. "
        "namespace of every command: -n, else the kubeconfig context's, else (in a pod) the pod's, else "
        "'default'; KUBECONFIG lists are merged as kubectl merges them",
    )
    parser.add_argument("--version", action="version", version=f"rollguard {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in SUBCOMMANDS if only is None else [only]:
        importlib.import_module(f"rollguard.commands.{name}").register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(only=command_module(argv[0] if argv else None))
    args = parser.parse_args(argv)
    handler = getattr(args, "handler", None)
    if handler is None:
        parser.print_help()
        return EXIT_REFUSED
    try:
        code: int = handler(args)
        sys.stdout.flush()  # here, not at exit, where a closed pipe would print a warning
        return code
    except RefusedError as exc:
        print(f"rollguard: refused: {exc}", file=sys.stderr)
        return EXIT_REFUSED
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # The reader closed the pipe early (`rollguard status | head`): end quietly, with the status
        # of a process ended by SIGPIPE, as a shell reports for `cat` or `yes` (128 + 13).
        silence_stdout()
        return EXIT_BROKEN_PIPE


# The collector is off for at most this long after the process starts (`run`).
START_UP_SECONDS = 1.0


def run(argv: Sequence[str] | None = None) -> NoReturn:
    """The `rollguard` console script (pyproject's ``[project.scripts]``): `main`, then exit with its code.

    Why not `main` alone: a command is a short process whose start-up is mostly imports (those of a
    `status` are some 60 ms), and CPython's cyclic collector, run every 700 new objects, walks the
    growing heap of modules, classes and functions again and again meanwhile, although none of it is
    ever garbage: ~10 ms of CPU for nothing. At exit it walks the whole heap once more before the
    process ends (~15 ms). So the collector is off during start-up; it comes back on (`_collect_again`)
    after `START_UP_SECONDS`, with everything alive by then frozen (never scanned again, as modules
    live until exit anyway), so that a long run (a rollout's watch, the TUI) collects as usual; and the
    final walk is skipped (`gc.freeze` before exit). Nothing else changes: atexit handlers run, worker
    threads are joined and stdout is flushed as on any exit. Tests call `main` and keep the collector.
    """
    gc.disable()
    timer = threading.Timer(START_UP_SECONDS, _collect_again)
    timer.daemon = True
    timer.start()
    try:
        code: int | str | None = main(argv)
    except SystemExit as exc:  # --help, --version and usage errors end in argparse's sys.exit
        code = exc.code
    gc.freeze()  # no collection of the whole heap on the way out: the process's memory goes with it
    sys.exit(code)


def _collect_again() -> None:
    """Start-up is over: what it built stays (frozen, not scanned again); the collector runs as usual."""
    gc.freeze()
    gc.enable()


if __name__ == "__main__":
    run()
