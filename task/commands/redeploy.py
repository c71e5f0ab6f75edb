"""`rollguard redeploy`: a new rollout of the current template (like `kubectl rollout restart`)."""

from __future__ import annotations

from typing import Any

from rollguard.commands.repairing import add


def register(sub: Any) -> None:
    add(
        sub,
        "redeploy",
        help="roll out the current template anew (workloads or a group) and wait",
        description="Set the pod-template annotation rollguard.io/redeployed-at (a ConfigChange for DCs), "
        "resumed, and wait. Exit 0 done, 1 failed and reverted, 2 refused, 3 not restored.",
    )
