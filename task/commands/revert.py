"""`rollguard revert`: return workloads to their last verified state (or a given revision)."""

from __future__ import annotations

from typing import Any

from rollguard.commands.repairing import add


def register(sub: Any) -> None:
    p = add(
        sub,
        "revert",
        help="return workloads (or a group) to their last verified state, resumed",
        description="Default target: the journal's last verified state, else the previous complete "
        "revision (a paused workload: the revision it runs). A DC's triggers come back as they were. "
        "--to-revision N of a revision that failed or was cancelled is refused unless --allow-failed. "
        "Exit 0 done, 1 failed and reverted, 2 refused, 3 not restored.",
    )
    p.add_argument("--to-revision", type=int, metavar="N", help="revert one workload to its revision N")
    p.add_argument(
        "--allow-failed",
        action="store_true",
        help="accept a --to-revision whose rollout failed or was cancelled (refused by default: exit 2)",
    )
