"""The shape both preflights' reads share: facts added one step at a time, stopping at the first refusal.

`rollguard.plan.rollout_read.read_rollout` and `rollguard.plan.repair_read.read_repair` gather what the cluster holds
into a frozen read dataclass, step by step, and stop at the first fact that refuses the run (reading on
would ask for permissions or objects the refusal already rules out). `gather` is one such step: the read
with the new facts, checked by the caller's pure ``refusal``; `stops_at_refusal` makes a reader return
the read as it stood at that point. The decision itself stays in the pure modules (``decide_*``).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar

from rollguard.core.errors import RefusedError

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

R = TypeVar("R", bound="DataclassInstance")
P = ParamSpec("P")


class Stopped(Exception):  # control flow inside a reader, never seen outside it
    """A reader's step found a refusal: ``read`` is what was read so far."""

    def __init__(self, read: Any) -> None:
        super().__init__("preflight read stopped at a refusal")
        self.read = read


def gather(read: R, refusal: Callable[[R], RefusedError | None], **facts: Any) -> R:
    """``read`` with ``facts`` added; raises `Stopped` with it when ``refusal`` names a refusal."""
    read = dataclasses.replace(read, **facts)
    if refusal(read) is not None:
        raise Stopped(read)
    return read


def stops_at_refusal(reader: Callable[P, R]) -> Callable[P, R]:
    """A reader whose `gather` steps may stop: it then returns the read as it stood."""

    @functools.wraps(reader)
    def read(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return reader(*args, **kwargs)
        except Stopped as stop:
            result: R = stop.read
            return result

    return read
