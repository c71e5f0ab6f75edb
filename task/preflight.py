"""Preflight of a rollout: read the cluster in one step, then decide (exit 2 on any refusal, no change).

`read_rollout` is the only I/O of the planning: GET/LIST and SelfSubjectAccessReviews (which persist
nothing), gathered into a `RolloutRead`; it stops at the first fact that refuses the run.
`rollguard.rollout_decide.decide_rollout` (pure) turns it into the `Plan` the engine carries out, or the
`RefusedError` naming the problem and its fix. `plan_rollout` is the two in a row. The shared reads
(`namespace_exists`, `list_group`, `with_revisions`) serve the repair preflight too.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from rollguard.access import ask, check_access, rollout_permissions
from rollguard.client import Api
from rollguard.errors import Forbidden, NotFound
from rollguard.journal import JournalStore
from rollguard.kinds import KINDS, Owners
from rollguard.lock import GroupLock
from rollguard.resources import IMAGE_STREAMS, NAMESPACES
from rollguard.rollout_decide import (
    Found,
    GroupListing,
    Plan,
    Promotion,
    RolloutRead,
    WorkloadPlan,
    container_stream,
    decide_rollout,
    namespace_refusal,
    read_refusal,
)
from rollguard.structs import ImageTarget, Obj

__all__ = [
    "Found",
    "GroupListing",
    "Plan",
    "Promotion",
    "RolloutRead",
    "WorkloadPlan",
    "check_access",
    "check_namespace",
    "list_group",
    "namespace_exists",
    "plan_rollout",
    "read_rollout",
    "rollout_permissions",
    "with_revisions",
]


def namespace_exists(client: Api, namespace: str) -> bool:
    """False only on a 404: a user who may not read namespaces cluster-wide learns from later reads."""
    try:
        client.get(NAMESPACES, namespace)
    except NotFound:
        return False
    except Forbidden:
        pass
    return True


def check_namespace(client: Api, namespace: str) -> None:
    if not namespace_exists(client, namespace):
        raise namespace_refusal(namespace)


def list_group(client: Api, namespace: str, selector: str) -> GroupListing:
    """Every DC and Deployment in ``namespace`` matching ``selector`` (none of a kind the cluster lacks)."""
    found: list[Found] = []
    for kind in KINDS.values():
        try:
            items = client.list(kind.resource, namespace=namespace, selector=selector).get("items", [])
        except NotFound:
            continue
        except Forbidden as exc:
            return GroupListing(workloads=[], forbidden=(kind.resource, exc))
        found.extend(Found(kind, obj) for obj in items)
    return GroupListing(sorted(found, key=lambda f: (f.kind.kind, f.obj["metadata"]["name"])))


def with_revisions(client: Api, namespace: str, found: Sequence[Found]) -> list[Found]:
    """``found`` with each workload's revisions, from one LIST per kind."""
    owners: dict[str, Owners] = {}
    for f in found:
        if f.kind.kind not in owners:
            owners[f.kind.kind] = Owners(client.list(f.kind.revisions, namespace=namespace).get("items", []))
    return [
        dataclasses.replace(f, revisions=f.kind.owned(f.obj, owners[f.kind.kind].candidates(f.obj)))
        for f in found
    ]


def read_rollout(
    client: Api,
    *,
    namespace: str,
    selector: str,
    promote_from: str | None,
    tag: str | None,
    lock: GroupLock,
    journal_store: JournalStore,
) -> RolloutRead:
    """All a rollout's preflight reads, in one step; it stops at the first fact that refuses the run."""
    read = RolloutRead(
        namespace=namespace,
        selector=selector,
        namespace_found=namespace_exists(client, namespace),
        promote_from=promote_from,
        lease_name=lock.name,
        holder=lock.holder,
    )
    if read_refusal(read) is not None:
        return read
    listing = list_group(client, namespace, selector)
    read = dataclasses.replace(read, group=listing)
    if read_refusal(read) is not None:
        return read
    if promote_from:
        read = dataclasses.replace(read, promote_namespace_found=namespace_exists(client, promote_from))
        if read_refusal(read) is not None:
            return read
    kinds = {f.kind.kind for f in listing.workloads}
    read = dataclasses.replace(
        read, access=ask(client, rollout_permissions(namespace, kinds, promote_from=promote_from))
    )
    if read_refusal(read) is not None:
        return read
    read = dataclasses.replace(read, lease=lock.view())
    if read_refusal(read) is not None:
        return read
    group = dataclasses.replace(listing, workloads=with_revisions(client, namespace, listing.workloads))
    read = dataclasses.replace(read, journal=journal_store.load(), group=group)
    if promote_from and tag:
        streams: dict[str, Obj | None] = {}
        for f in group.workloads:
            for container in sorted(f.kind.snapshot(f.obj).images):
                stream = container_stream(f.kind, f.obj, container, namespace)
                if stream is not None and stream not in streams:
                    try:
                        streams[stream] = client.get(IMAGE_STREAMS, stream, namespace=promote_from)
                    except NotFound:
                        streams[stream] = None
        read = dataclasses.replace(read, source_streams=streams)
    return read


def plan_rollout(
    client: Api,
    *,
    namespace: str,
    selector: str,
    targets: list[ImageTarget],
    promote_from: str | None,
    tag: str | None,
    on_paused: str,
    lock: GroupLock,
    journal_store: JournalStore,
    allow_never_completed: bool = False,
) -> Plan:
    """All read-only checks of a rollout: read, then decide; returns the plan or raises RefusedError."""
    read = read_rollout(
        client,
        namespace=namespace,
        selector=selector,
        promote_from=promote_from,
        tag=tag,
        lock=lock,
        journal_store=journal_store,
    )
    return decide_rollout(
        read,
        targets=targets,
        promote_from=promote_from,
        tag=tag,
        on_paused=on_paused,
        allow_never_completed=allow_never_completed,
    )
