"""The `rollguard` command line: parsing and dispatch only; each subcommand lives in rollguard.commands.

Exit codes: 0 all rolled out (drift-check: nothing found); 1 rollout failed and the group is back on
its previous state, verified (drift-check: findings); 2 refused before any change (bad input, missing
permission, lock held, unreachable cluster); 3 failed and could not restore (see the journal).
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from rollguard import __version__
from rollguard.errors import EXIT_REFUSED, RefusedError

# Subcommand modules under rollguard.commands, in help order. Each defines register(subparsers).
SUBCOMMANDS = ["rollout", "status", "resume", "revert", "redeploy", "drift_check", "tui"]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="rollguard",
        description="Guarded, all-or-nothing rollouts of DeploymentConfigs and Deployments.",
        epilog="exit codes: 0 ok; 1 failed and reverted (drift-check: findings); 2 refused, nothing changed; "
        "3 failed and not restored (see the journal)",
    )
    parser.add_argument("--version", action="version", version=f"rollguard {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in SUBCOMMANDS:
        importlib.import_module(f"rollguard.commands.{name}").register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    handler = getattr(args, "handler", None)
    if handler is None:
        parser.print_help()
        return EXIT_REFUSED
    try:
        code: int = handler(args)
        return code
    except RefusedError as exc:
        print(f"rollguard: refused: {exc}", file=sys.stderr)
        return EXIT_REFUSED
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
