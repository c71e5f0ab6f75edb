"""Preflight of the repair commands: read the cluster in one step, then decide (exit 2 on any refusal).

`read_repair` is the only I/O of a repair's planning (GET/LIST and SelfSubjectAccessReviews, nothing
persisted) and returns a `RepairRead`, stopping at the first fact that refuses the repair;
`rollguard.plan.repair_decide.decide_repair` (pure) turns it into the `RepairPlan` of what `resume`, `revert`
or `redeploy` would change, or the `RefusedError` naming the problem and its fix. `plan_repair` is the
three steps in a row (check the arguments, read, decide).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Iterable, Sequence

from rollguard.cluster.access import ask, rollout_permissions
from rollguard.cluster.api import Api
from rollguard.cluster.journal import JOURNAL_LABEL, Journal
from rollguard.cluster.lock import LeaseView, read_lease
from rollguard.cluster.streams import read_streams
from rollguard.core.errors import Forbidden, NotFound
from rollguard.core.resources import CONFIG_MAPS, LEASES
from rollguard.core.structs import Obj, VerifiedState, WorkloadRef
from rollguard.kinds import Kind, kind_of, triggers
from rollguard.kinds.triggers import StreamKey, Streams
from rollguard.plan.gather import gather, stops_at_refusal
from rollguard.plan.repair_decide import (
    decide_repair,
    lock_names,
    parse_targets,
    permissions,
    read_refusal,
    repair_request,
    revert_target,
    the_group,
)
from rollguard.plan.repair_types import ACTIONS, Change, RepairPlan, RepairRead, RepairRequest
from rollguard.plan.rollout_read import Found, list_group, namespace_exists, with_revisions
from rollguard.plan.tags import as_restored
from rollguard.state.assessment import read_groups

__all__ = [
    "ACTIONS",
    "Change",
    "RepairPlan",
    "RepairRead",
    "RepairRequest",
    "decide_repair",
    "parse_targets",
    "permissions",
    "plan_repair",
    "read_repair",
    "repair_request",
    "revert_target",
]


def _stream_keys(kind: Kind, obj: Obj, states: Iterable[VerifiedState], namespace: str) -> set[StreamKey]:
    keys = triggers.watched_streams(kind.image_triggers(obj), namespace=namespace)
    for state in states:
        body = kind.with_state(obj, state)
        keys |= triggers.watched_streams(kind.image_triggers(body), namespace=namespace)
    return keys


@stops_at_refusal
def read_repair(client: Api, request: RepairRequest, *, now: dt.datetime | None = None) -> RepairRead:
    """All a repair's preflight reads, in one step; it stops at the first fact that refuses the repair."""
    namespace = request.namespace
    start = RepairRead(
        request=request,
        now=now or dt.datetime.now(dt.UTC),
        namespace_found=namespace_exists(client, namespace),
    )
    read = gather(start, read_refusal)
    if request.selector is not None:
        read = gather(read, read_refusal, listing=list_group(client, namespace, request.selector))
    listed = read.listing.workloads if read.listing else []
    kinds = {r.kind for r in request.refs} | {f.kind.kind for f in listed}
    read = gather(
        read, read_refusal, access=ask(client, rollout_permissions(namespace, kinds, promote_from=None))
    )
    try:  # after the access reviews: they name a missing permission better than a 403 here would
        configmaps = client.list(CONFIG_MAPS, namespace=namespace, selector=f"{JOURNAL_LABEL}=true")
        leases = client.list(LEASES, namespace=namespace)
    except Forbidden as exc:
        return dataclasses.replace(read, groups_forbidden=exc)
    groups = read_groups(namespace, configmaps.get("items", []), leases.get("items", []), now=read.now)
    read = dataclasses.replace(read, groups=groups, lease_objects=tuple(leases.get("items", [])))
    found = list(listed)
    if request.selector is None:
        for ref in request.refs:
            kind = kind_of(ref)
            try:
                found.append(Found(kind, client.get(kind.resource, ref.name, namespace=namespace)))
            except NotFound:
                return dataclasses.replace(read, missing=ref)
    read = gather(read, read_refusal, found=found)
    group, selector = the_group(read)
    if request.selector is None and group is not None:
        read = gather(read, read_refusal, members=list_group(client, namespace, selector))
    read = gather(read, read_refusal, leases=_lease_views(client, lock_names(read), namespace=namespace))
    found = with_revisions(client, namespace, found)
    streams = _read_streams(client, found, journal=group.journal if group else None, request=request)
    return dataclasses.replace(read, found=found, streams=streams)


def _lease_views(client: Api, names: list[str], *, namespace: str) -> dict[str, LeaseView | None]:
    """The leases that matter to the repair, by name (None: no such Lease)."""
    views: dict[str, LeaseView | None] = {}
    for name in names:
        if name not in views:
            try:
                views[name] = read_lease(client.get(LEASES, name, namespace=namespace))
            except NotFound:
                views[name] = None
    return views


def _read_streams(
    client: Api, found: list[Found], *, journal: Journal | None, request: RepairRequest
) -> Streams:
    """The ImageStreams the workloads' automatic triggers follow in the states the repair may write
    (the journal's verified state; for a revert, every revision's too), with the tags an unfinished
    promotion moved as a revert will have put them back."""
    namespace = request.namespace
    keys: set[StreamKey] = set()
    for f in found:
        entry = journal.workloads.get(f.ref.key) if journal else None
        states = [entry.verified] if entry else []
        if request.action == "revert":
            states += [s for s in (f.kind.revision_state(r) for r in f.revisions) if s is not None]
        keys |= _stream_keys(f.kind, f.obj, states, namespace)
    streams = read_streams(client, keys)
    if request.action == "revert" and journal is not None and journal.tags:
        # the revert puts back the tags an unfinished promotion moved before it writes the workloads:
        # judge the restored triggers against the tags as they will be
        found_streams = dict(streams.found)
        for key, previous in journal.tags.items():
            name, _, tag = key.rpartition(":")
            if (namespace, name) in found_streams:
                found_streams[(namespace, name)] = as_restored(
                    found_streams[(namespace, name)], tag, previous
                )
        streams = dataclasses.replace(streams, found=found_streams)
    return streams


def plan_repair(
    client: Api,
    *,
    action: str,
    namespace: str,
    targets: Sequence[str | WorkloadRef] = (),
    selector: str | None = None,
    to_revision: int | None = None,
    allow_failed: bool = False,
) -> RepairPlan:
    """All read-only checks of a repair: read, then decide; the plan of what it changes, or RefusedError."""
    request = repair_request(
        action=action,
        namespace=namespace,
        targets=targets,
        selector=selector,
        to_revision=to_revision,
        allow_failed=allow_failed,
    )
    return decide_repair(read_repair(client, request))
