"""The emulation's informer: which watch events reach the controllers (pure, with a scripted API).

A controller writes through the informer; the version it stored may carry changes it never handled
(someone's spec edit it read back after a conflict, or others' fields a merge patch absorbed). Its
watch event must still wake the controller, as client-go dispatches every event: a swallowed event left
a DC unreconciled until the 300 s resync (seen as a revert "waiting for the controller" in CI).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from sandbox.openshift.informer import Informer
from sandbox.openshift.kube import JSON


def dc(rv: int, *, generation: int = 1) -> JSON:
    return {
        "metadata": {"namespace": "ns", "name": "web", "resourceVersion": str(rv), "generation": generation}
    }


class ScriptedKube:
    """An empty list, then the given watch events, then the stream ends."""

    def __init__(self, events: list[JSON]) -> None:
        self.events = events

    def get(self, path: str, **query: Any) -> JSON:
        return {
            "kind": "DeploymentConfigList",
            "apiVersion": "v1",
            "items": [],
            "metadata": {"resourceVersion": "1"},
        }

    def watch(self, path: str, resource_version: str, **query: Any) -> Iterator[JSON]:
        yield from self.events


def run(events: list[JSON], *, written: JSON | None = None) -> list[tuple[str, int]]:
    seen: list[tuple[str, int]] = []
    informer = Informer(
        ScriptedKube(events), "/dcs", lambda t, o: seen.append((t, o["metadata"]["generation"]))
    )  # type: ignore[arg-type]
    informer._relist()
    if written is not None:
        informer.store(written)  # the controller's write-through, before the watch delivers that version
    informer._watch("1")
    return seen


def test_event_of_a_version_written_through_is_still_dispatched() -> None:
    # The controller re-read the DC after a conflict and stored version 7 (someone's new spec, generation 2).
    seen = run([{"type": "MODIFIED", "object": dc(7, generation=2)}], written=dc(7, generation=2))
    assert seen == [("MODIFIED", 2)]


def test_strictly_older_events_are_dropped() -> None:
    # Version 5 is older than the version 7 already stored: the controller reacts to 7's own event.
    events = [{"type": "MODIFIED", "object": dc(5)}, {"type": "MODIFIED", "object": dc(7, generation=2)}]
    assert run(events, written=dc(7, generation=2)) == [("MODIFIED", 2)]


def test_plain_watch_dispatches_every_change_in_order() -> None:
    events = [{"type": "ADDED", "object": dc(3)}, {"type": "MODIFIED", "object": dc(4, generation=2)}]
    assert run(events) == [("ADDED", 1), ("MODIFIED", 2)]
