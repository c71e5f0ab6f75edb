"""Why a rollout's pods cannot be created, when only an Event says so (one read, at the verdict).

A DC's deployer pod that the API refuses (a ResourceQuota exhausted, a LimitRange or admission webhook)
leaves its RC New; the deployer controller records the refusal nowhere but in a ``FailedCreate``
Event on the DC (openshift-controller-manager pkg/apps/deployer/deployer_controller.go: "Error creating
deployer pod: ...") until ``timeoutSeconds`` after the RC's creation. When the wait judged such a
workload hopeless (`Progress.blocked_evidence`), the first error should name the quota: this reads the
namespace's Events once and adds the newest such message. Reading Events is optional: without the
permission (or on any API error) the verdict stays as it was, with a hint where to look.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from rollguard.cluster.api import Api
from rollguard.core.errors import ApiError
from rollguard.core.resources import EVENTS
from rollguard.core.structs import Obj, RolloutPhase
from rollguard.run.wait import Watched

REASON = "FailedCreate"


def newest_refusal(events: Iterable[Obj], *, kind: str, name: str) -> str:
    """The message of the newest Warning FailedCreate Event about ``kind/name`` ("" if none) (pure)."""
    best: tuple[str, str] | None = None
    for e in events:
        involved = e.get("involvedObject") or {}
        if involved.get("kind") != kind or involved.get("name") != name or e.get("reason") != REASON:
            continue
        when = str(e.get("lastTimestamp") or e.get("eventTime") or e.get("firstTimestamp") or "")
        if best is None or when >= best[0]:
            best = (when, str(e.get("message") or ""))
    return best[1] if best else ""


def add_evidence(client: Api, namespace: str, items: Iterable[Watched]) -> None:
    """Complete the failed verdicts whose refusal only an Event records, in place (one LIST at most)."""
    wanting = [
        i
        for i in items
        if i.verdict is not None
        and i.verdict.phase is RolloutPhase.FAILED
        and i.verdict.blocked_evidence is not None
    ]
    if not wanting:
        return
    try:
        events = client.list(EVENTS, namespace=namespace).get("items", [])
    except ApiError as exc:
        for item in wanting:
            assert item.verdict is not None and item.verdict.blocked_evidence is not None
            kind, name = item.verdict.blocked_evidence
            hint = (
                f"; its Events say why (could not read them: {exc}; try `oc describe {kind.lower()}/{name}`)"
            )
            message = (
                item.verdict.message + hint + (f"; {item.verdict.holding}" if item.verdict.holding else "")
            )
            item.verdict = replace(item.verdict, message=message, blocked_evidence=None)
        return
    for item in wanting:
        assert item.verdict is not None and item.verdict.blocked_evidence is not None
        kind, name = item.verdict.blocked_evidence
        why = newest_refusal(events, kind=kind, name=name)
        message = f"{item.verdict.message}: {why}" if why else item.verdict.message
        if item.verdict.holding:
            message += f"; {item.verdict.holding}"
        item.verdict = replace(item.verdict, message=message, blocked_evidence=None)
