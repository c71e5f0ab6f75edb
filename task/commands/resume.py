"""`rollguard resume`: resume paused workloads and wait until what piled up has rolled out."""

from __future__ import annotations

from typing import Any

from rollguard.commands.repairing import add


def register(sub: Any) -> None:
    add(
        sub,
        "resume",
        help="resume paused workloads (or a group) and wait for the result",
        description="Resume each workload (an idempotent patch of spec.paused) and wait until its pending "
        "changes have rolled out. Exit 0 done, 1 failed and reverted, 2 refused, 3 not restored.",
    )
