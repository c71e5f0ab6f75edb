"""Preflight of a rollout: read the cluster in one step, then decide (exit 2 on any refusal, no change).

`read_rollout` is the only I/O of the planning: GET/LIST and SelfSubjectAccessReviews (which persist
nothing), gathered into a `RolloutRead`; it stops at the first fact that refuses the run.
`rollguard.plan.rollout_decide.decide_rollout` (pure) turns it into the `Plan` the engine carries out, or the
`RefusedError` naming the problem and its fix. `plan_rollout` is the two in a row. The shared reads
(`list_group`, `with_revisions`, and `namespace_exists` from `rollguard.state.inventory`) serve the repair
preflight too.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

from rollguard.cluster.access import ask, check_access, rollout_permissions
from rollguard.cluster.api import Api
from rollguard.cluster.claims import Claims
from rollguard.cluster.journal import JournalStore
from rollguard.cluster.lock import GroupLock
from rollguard.core.errors import ApiError, Conflict, Forbidden, NotFound, RefusedError
from rollguard.core.resources import HORIZONTAL_POD_AUTOSCALERS, IMAGE_STREAMS
from rollguard.core.structs import Obj, WorkloadRef
from rollguard.kinds import KINDS, Owners
from rollguard.plan.gather import gather, stops_at_refusal
from rollguard.plan.manifest_decide import ManifestRead, hpa_targets, settle_dry_run
from rollguard.plan.manifests import ManifestSet
from rollguard.plan.prefetch import Prefetch
from rollguard.plan.rollout_decide import (
    Found,
    GroupListing,
    Plan,
    Promotion,
    RolloutRead,
    RolloutRequest,
    WorkloadPlan,
    container_stream,
    decide_rollout,
    read_refusal,
)
from rollguard.plan.schema import unknown_fields
from rollguard.state.inventory import check_namespace, namespace_exists

__all__ = [
    "Found",
    "GroupListing",
    "Plan",
    "Promotion",
    "RolloutRead",
    "RolloutRequest",
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
    client: Api, request: RolloutRequest, *, lock: GroupLock, journal_store: JournalStore
) -> RolloutRead:
    """All a rollout's preflight reads, sent at once (`Prefetch`) and consumed in a fixed order; it stops
    at the first fact that refuses the run."""
    named = {t.ref.kind for t in request.targets}
    if request.manifests is not None:
        named |= {ref.kind for ref in request.manifests.workloads}
    prefetch = Prefetch(
        client,
        namespace=request.namespace,
        selector=request.selector,
        promote_from=request.promote_from,
        lock=lock,
        journal_store=journal_store,
        expected=named,
    )
    try:
        return _read_rollout(client, request, lock=lock, prefetch=prefetch)
    finally:
        prefetch.close()


@stops_at_refusal
def _read_rollout(
    client: Api, request: RolloutRequest, *, lock: GroupLock, prefetch: Prefetch
) -> RolloutRead:
    namespace, manifests = request.namespace, request.manifests
    promote_from, tag = request.promote_from, request.tag
    start = RolloutRead(
        namespace=namespace,
        selector=request.selector,
        namespace_found=prefetch.namespace_found(),
        promote_from=promote_from,
        lease_name=lock.name,
        holder=lock.holder,
    )
    read = gather(start, read_refusal)
    listing = prefetch.listing()
    read = gather(read, read_refusal, group=listing)
    if manifests is not None:
        found = read_manifests(
            client,
            namespace,
            listing,
            manifests,
            request.skip_other_kinds,
            labels=prefetch.namespace_labels(),
        )
        read = gather(read, read_refusal, manifests=found)
    if promote_from:
        read = gather(read, read_refusal, promote_namespace_found=prefetch.promote_namespace_found())
    kinds = {f.kind.kind for f in listing.workloads}
    needs = rollout_permissions(
        namespace,
        kinds,
        promote_from=promote_from,
        manifests=manifests is not None,
        creates=frozenset(r.kind for r in read.manifests.absent) if read.manifests else frozenset(),
    )
    read = gather(read, read_refusal, access=ask(client, needs, known=prefetch.rules()))
    read = gather(read, read_refusal, lease=prefetch.lease())
    group = dataclasses.replace(listing, workloads=prefetch.with_revisions(listing.workloads))
    read = dataclasses.replace(read, journal=prefetch.journal(), group=group, listed=prefetch.listed())
    if promote_from and tag:
        wanted: list[str] = []
        for f in group.workloads:
            for container in sorted(f.kind.snapshot(f.obj).images):
                stream = container_stream(f.kind, f.obj, container, namespace)
                if stream is not None and stream not in wanted:
                    wanted.append(stream)
        read = dataclasses.replace(read, source_streams=read_streams(client, wanted, namespace=promote_from))
    return read


def read_streams(client: Api, names: list[str], *, namespace: str) -> dict[str, Obj | None]:
    """The ImageStreams ``names`` of ``namespace`` (None: absent), read at once."""

    def one(name: str) -> Obj | None:
        try:
            return client.get(IMAGE_STREAMS, name, namespace=namespace)
        except NotFound:
            return None

    with ThreadPoolExecutor(max_workers=max(1, min(DRY_RUNS, len(names)))) as pool:
        return dict(zip(names, pool.map(one, names), strict=True))


def read_manifests(
    client: Api,
    namespace: str,
    listing: GroupListing,
    manifests: ManifestSet,
    skip_other_kinds: bool,
    *,
    labels: dict[tuple[str, str], dict[str, str]] | None = None,
) -> ManifestRead:
    """What the cluster says about the workloads the manifests name: outside the group, absent, or
    scaled by a HorizontalPodAutoscaler. ``labels``: every workload of the namespace as listed already
    (kind, name -> labels); without it each workload outside the group is read on its own."""
    in_group = {f.ref for f in listing.workloads}
    outside: dict[WorkloadRef, dict[str, str]] = {}
    absent = set()
    for ref in manifests.workloads:
        if ref in in_group:
            continue
        if labels is not None:
            if (ref.kind, ref.name) in labels:
                outside[ref] = labels[(ref.kind, ref.name)]
            else:
                absent.add(ref)
            continue
        try:
            live = client.get(KINDS[ref.kind].resource, ref.name, namespace=namespace)
        except NotFound:
            absent.add(ref)
            continue
        outside[ref] = dict((live.get("metadata") or {}).get("labels") or {})
    try:
        hpas = client.list(HORIZONTAL_POD_AUTOSCALERS, namespace=namespace).get("items", [])
    except NotFound:  # a cluster without the autoscaling API scales nothing
        hpas = []
    except Forbidden as exc:
        raise RefusedError(
            f"not allowed to list {HORIZONTAL_POD_AUTOSCALERS.label} in namespace {namespace!r} (with -f, "
            "a workload an autoscaler scales keeps its live replicas)",
            fix="grant the Role verb 'list' on that resource (see tekton/rbac.yaml)",
        ) from exc
    return ManifestRead(
        manifests=manifests,
        skip_other_kinds=skip_other_kinds,
        outside=outside,
        absent=frozenset(absent),
        hpa_targets=hpa_targets(hpas),
        unknown=_unknown_fields(client, manifests),
    )


def _unknown_fields(client: Api, manifests: ManifestSet) -> dict[WorkloadRef, list[str]]:
    """Each manifest's fields its type does not have, by the schema the API server publishes
    (`rollguard.plan.schema`); none when the server publishes none we may read."""
    if not manifests.workloads:
        return {}
    try:
        definitions = client.openapi().get("definitions") or {}
    except (NotFound, Forbidden):  # no published schema: the server's dry run is all there is
        return {}
    found = {
        ref: unknown_fields(m.body, definitions, parts=KINDS[ref.kind].schema_parts)
        for ref, m in manifests.workloads.items()
    }
    return {ref: fields for ref, fields in found.items() if fields}


# As many tries as the run's own write of a workload (GroupRun.write): a workload rolling out has its
# status written by its controller all the time, and its conflicts must not refuse a run its write would
# go through (found by make chaos: three 409s in a row refused a run the conflicts plan must survive).
DRY_RUN_ATTEMPTS = 8


DRY_RUNS = 48  # dry-run writes in flight at once, as many as the run's own writes (run.group_write.WRITERS)


def dry_run(client: Api, plan: Plan) -> dict[str, Obj | ApiError]:
    """Every write the run will make, sent as a server-side dry run (``dryRun=All``, nothing stored),
    all at once: the server's answer (the object as it would be stored) or its refusal, per workload key.
    A server failure (5xx, 429, unreachable) is raised: a preflight failure, as any read's."""
    todo = [wp for wp in plan.workloads if wp.needs_change]
    with ThreadPoolExecutor(max_workers=max(1, min(DRY_RUNS, len(todo)))) as pool:
        futures = [pool.submit(_dry_run_one, client, wp, plan.namespace) for wp in todo]
    return {wp.key: future.result() for wp, future in zip(todo, futures, strict=True)}


def _dry_run_one(client: Api, wp: WorkloadPlan, namespace: str) -> Obj | ApiError:
    body = wp.write_body(wp.snapshot.raw, images=wp.preview_images())
    for attempt in range(DRY_RUN_ATTEMPTS):
        try:
            if wp.create:
                return client.create(wp.kind.resource, body, namespace=namespace, dry_run=True)
            return client.replace(wp.kind.resource, body, namespace=namespace, dry_run=True)
        except Conflict as exc:
            # A workload still rolling out has its status written by its controller all the time:
            # a conflict with an unchanged spec is not a change the run would overwrite.
            fresh = None if wp.create or attempt == DRY_RUN_ATTEMPTS - 1 else _fresh(client, wp, namespace)
            if fresh is None or fresh.get("spec") != wp.snapshot.raw.get("spec"):
                return exc
            body["metadata"]["resourceVersion"] = fresh["metadata"]["resourceVersion"]
        except ApiError as exc:
            if not exc.status or exc.status >= 500 or exc.status == 429:
                raise  # the server failed, it did not judge: a preflight failure, as any read's
            return exc
    raise AssertionError("unreachable")  # pragma: no cover: the last attempt's conflict is returned


def _fresh(client: Api, wp: WorkloadPlan, namespace: str) -> Obj | None:
    try:
        return client.get(wp.kind.resource, wp.snapshot.ref.name, namespace=namespace)
    except NotFound:
        return None


def plan_rollout(
    client: Api,
    request: RolloutRequest,
    *,
    lock: GroupLock,
    journal_store: JournalStore,
    claims: Claims | None = None,
) -> Plan:
    """All read-only checks of a rollout: read, decide, then every write as a server-side dry run;
    returns the plan or raises RefusedError.

    ``claims``: when the dry run met a conflict, a workload claimed by a live run of another group
    refuses the run naming that run (`rollguard.cluster.claims`): a writer that made the dry run conflict had
    claimed the workload before writing it."""
    read = read_rollout(client, request, lock=lock, journal_store=journal_store)
    plan = decide_rollout(read, request)
    plan.listed = read.listed  # the run's live cache watches on from what preflight listed
    answers = dry_run(client, plan)
    if any(isinstance(answer, Conflict) for answer in answers.values()):
        lock.check()  # a workload changed under the dry run: most often a run that took the group meanwhile
        if claims is not None:  # ... or a run of an overlapping group that claimed it
            claims.check([wp.snapshot.ref for wp in plan.workloads])
    settle_dry_run(plan.workloads, answers)
    return plan
