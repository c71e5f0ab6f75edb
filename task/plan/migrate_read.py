"""Preflight of `rollguard migrate`: read the cluster in one step, decide, then dry-run every create.

`read_migrate` is the only I/O of the planning (GET/LIST and access reviews, which persist nothing),
sent at once through the rollout's `rollguard.plan.prefetch.Prefetch` and consumed in a fixed order that
stops at the first refusal; `rollguard.plan.migrate_decide.decide_migrate` (pure) makes the plan or the
refusal. `plan_migrate` adds the server's verdict: each Deployment is created (or, for a killed
migration's, replaced) as a server-side dry run (``dryRun=All``, nothing stored), so a body the API
server or an admission webhook would reject refuses the run (exit 2) instead of failing it half way;
the answer is the Deployment as the server would store it, which ``--dry-run`` prints.
"""

from __future__ import annotations

import dataclasses
from concurrent.futures import ThreadPoolExecutor

from rollguard.cluster.access import ask
from rollguard.cluster.api import Api
from rollguard.cluster.journal import JournalStore
from rollguard.cluster.lock import GroupLock
from rollguard.core.errors import ApiError, Forbidden, NotFound, RefusedError
from rollguard.core.resources import HORIZONTAL_POD_AUTOSCALERS
from rollguard.core.structs import Obj
from rollguard.kinds.conversion import is_target, scaled_source
from rollguard.plan.gather import gather, stops_at_refusal
from rollguard.plan.migrate_decide import (
    MigratePlan,
    MigrateRead,
    MigrateRequest,
    decide_migrate,
    migrate_permissions,
    read_refusal,
)
from rollguard.plan.prefetch import Prefetch
from rollguard.plan.rollout_decide import WorkloadPlan


def read_migrate(
    client: Api, request: MigrateRequest, *, lock: GroupLock, journal_store: JournalStore
) -> MigrateRead:
    prefetch = Prefetch(
        client,
        namespace=request.namespace,
        selector=request.selector,
        promote_from=None,
        lock=lock,
        journal_store=journal_store,
    )
    try:
        return _read(client, request, lock=lock, prefetch=prefetch)
    finally:
        prefetch.close()


@stops_at_refusal
def _read(client: Api, request: MigrateRequest, *, lock: GroupLock, prefetch: Prefetch) -> MigrateRead:
    namespace = request.namespace
    read = MigrateRead(
        namespace=namespace,
        selector=request.selector,
        namespace_found=prefetch.namespace_found(),
        lease_name=lock.name,
        holder=lock.holder,
    )
    read = gather(read, read_refusal)
    listing = prefetch.listing()
    read = gather(read, read_refusal, group=listing)
    try:
        hpas = client.list(HORIZONTAL_POD_AUTOSCALERS, namespace=namespace).get("items", [])
    except NotFound:  # a cluster without the autoscaling API scales nothing
        hpas = []
    except Forbidden as exc:
        raise RefusedError(
            f"not allowed to list {HORIZONTAL_POD_AUTOSCALERS.label} in namespace {namespace!r} (an "
            "autoscaler that scales a DC must be moved to its Deployment)",
            fix="grant the Role verb 'list' on that resource (see tekton/rbac.yaml)",
        ) from exc
    names = {f.obj["metadata"]["name"] for f in listing.workloads}
    journal = prefetch.journal()
    earlier = (journal.migration.get("hpas") or {}) if journal is not None else {}
    retargeting = any(scaled_source(h, names) for h in hpas) or bool(earlier)
    needs = migrate_permissions(namespace, request.action, hpas=retargeting)
    read = gather(read, read_refusal, access=ask(client, needs, known=prefetch.rules()))
    read = gather(read, read_refusal, lease=prefetch.lease())
    deployments: dict[str, Obj] = {}
    for kind_read in prefetch.kinds():
        if is_target(kind_read.kind.kind) and kind_read.listed is not None:
            deployments = {d["metadata"]["name"]: d for d in kind_read.listed.items}
    group = dataclasses.replace(listing, workloads=prefetch.with_revisions(listing.workloads))
    return dataclasses.replace(
        read, group=group, hpas=hpas, deployments=deployments, journal=journal, listed=prefetch.listed()
    )


def dry_run(client: Api, plans: list[WorkloadPlan], *, namespace: str) -> dict[str, Obj | ApiError]:
    """Each Deployment's create (or replace, when taken over) as a server-side dry run, all at once."""

    def one(wp: WorkloadPlan) -> Obj | ApiError:
        assert wp.manifest is not None
        try:
            if wp.create:
                return client.create(wp.kind.resource, wp.manifest, namespace=namespace, dry_run=True)
            body = dict(wp.manifest, metadata={**wp.manifest["metadata"], **_version(wp.snapshot.raw)})
            return client.replace(wp.kind.resource, body, namespace=namespace, dry_run=True)
        except ApiError as exc:
            if not exc.status or exc.status >= 500 or exc.status == 429:
                raise  # the server failed, it did not judge: a preflight failure, as any read's
            return exc

    with ThreadPoolExecutor(max_workers=max(1, min(16, len(plans)))) as pool:
        answers = list(pool.map(one, plans))
    return {wp.key: a for wp, a in zip(plans, answers, strict=True)}


def _version(obj: Obj) -> Obj:
    return {"resourceVersion": obj["metadata"].get("resourceVersion", "")}


def plan_migrate(
    client: Api, request: MigrateRequest, *, lock: GroupLock, journal_store: JournalStore
) -> MigratePlan:
    """All read-only checks of a migration: read, decide, then every Deployment's write as a
    server-side dry run; returns the plan or raises RefusedError."""
    read = read_migrate(client, request, lock=lock, journal_store=journal_store)
    mplan = decide_migrate(read, request)
    if request.action.value != "migrate":
        return mplan
    answers = dry_run(client, mplan.deployments, namespace=request.namespace)
    for wp in mplan.deployments:
        answer = answers[wp.key]
        if isinstance(answer, ApiError):
            raise RefusedError(
                f"{wp.key}: the API server rejects the Deployment made from dc/{wp.snapshot.ref.name} "
                f"(dry run, nothing changed): {answer}",
                fix="fix what it names in the DeploymentConfig (or report the conversion), then migrate",
            ) from answer
        wp.server_view = answer
    return mplan
