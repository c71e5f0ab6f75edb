"""The decisions of `rollguard migrate`'s preflight (pure, no I/O): what was read in, a plan or a refusal out.

`rollguard.plan.migrate_read.read_migrate` gathers the group, the namespace's Deployments and
HorizontalPodAutoscalers, the access answers, the lease and the journal into a `MigrateRead`;
`decide_migrate` turns it into the `MigratePlan` that `rollguard.run.migrate.Migrate` carries out, or the
`RefusedError` naming the problem and what to run first (exit 2, nothing changed):

- a DC paused, mid-rollout, failed or that never completed (the Deployment would copy a template that
  never ran, and a failed migration would have nothing verified to return to);
- a conversion refusal (`rollguard.kinds.conversion.convert`: Custom strategy, hooks, ``spec.test`` ...);
- a Deployment of the DC's name that is not this migration's (no ``rollguard.io/migrated-from``
  annotation naming the DC, or one from an earlier, finished run);
- a group already migrated (its DCs kept at 0: ``--finish`` or ``--revert``), or with another command's
  run left unfinished (``rollguard revert -l`` first).

A migration killed mid-way (its journal open, command ``migrate``) is finished by the next run: the DCs'
replicas and the HPAs' targets before it come from the journal, and the Deployments it created are
taken over (written, and deleted should this run fail too). ``--finish`` and ``--revert`` act on a
finished-but-kept migration only. Tested from tests/cases/migrate/decide.yaml (tests/unit/test_migrate_decide.py).
"""

from __future__ import annotations

import copy
import enum
from dataclasses import dataclass, field

from rollguard.cluster.access import Answer, Need, first_gap
from rollguard.cluster.cache import Listed
from rollguard.cluster.journal import Journal
from rollguard.cluster.lock import LEASE_SECONDS, LeaseView, held
from rollguard.core.errors import RefusedError
from rollguard.core.resources import (
    CONFIG_MAPS,
    DEPLOYMENT_CONFIGS,
    DEPLOYMENTS,
    EVENTS,
    HORIZONTAL_POD_AUTOSCALERS,
    LEASES,
    PODS,
    REPLICA_SETS,
    REPLICATION_CONTROLLERS,
    Resource,
)
from rollguard.core.structs import Obj, RolloutPhase, VerifiedState
from rollguard.kinds import KINDS, Kind
from rollguard.kinds.conversion import (
    MIGRATED_FROM,
    SOURCE_KIND,
    TARGET_KIND,
    Conversion,
    convert,
    is_source,
    is_target,
    made_from,
    scaled_source,
    target_scale_ref,
)
from rollguard.plan.members import never_completed
from rollguard.plan.rollout_decide import (
    Found,
    GroupListing,
    Plan,
    WorkloadPlan,
    listing_refusal,
    namespace_refusal,
)


class MigrateAction(enum.StrEnum):
    """What `rollguard migrate` is asked to do."""

    MIGRATE = "migrate"  # DCs -> Deployments, the DCs kept at 0
    FINISH = "finish"  # --finish: delete the kept DCs (and their RCs), close the migration
    REVERT = "revert"  # --revert: the kept DCs back up and serving, the Deployments deleted


class MigrationState(enum.StrEnum):
    """The journal's ``migration.state``."""

    MIGRATING = "migrating"  # a migrate run is under way (or was killed): the next run finishes it
    KEPT = "kept"  # migrated; the DCs are at 0, kept for the way back
    FINISHED = "finished"  # --finish: the DCs are deleted
    REVERTED = "reverted"  # --revert (or a failed run): the DCs serve again, the Deployments are gone

    @classmethod
    def of(cls, journal: Journal | None) -> MigrationState | None:
        if journal is None or not journal.migration:
            return None
        try:
            return cls(str(journal.migration.get("state", "")))
        except ValueError:
            return None


@dataclass
class MigrateRequest:
    """`rollguard migrate`'s arguments, checked by the CLI."""

    namespace: str
    selector: str
    action: MigrateAction = MigrateAction.MIGRATE
    timeout: int = 600
    pre_hook_as_init_container: bool = False
    fail_fast: bool = True
    crash_restarts: int = 2
    lease_seconds: int = LEASE_SECONDS


@dataclass(frozen=True)
class MigrateRead:
    """Everything the preflight decides on, as read (None: not read yet)."""

    namespace: str
    selector: str
    namespace_found: bool = True
    group: GroupListing | None = None
    deployments: dict[str, Obj] = field(default_factory=dict)  # every Deployment of the namespace, by name
    hpas: list[Obj] = field(default_factory=list)
    access: list[Answer] | None = None
    lease_name: str = ""
    holder: str = ""
    lease: LeaseView | None = None
    journal: Journal | None = None
    listed: dict[Resource, Listed] = field(default_factory=dict)


@dataclass(frozen=True)
class Retarget:
    """An HPA that scales a DC of the group: its ``scaleTargetRef`` before, and pointing at the Deployment."""

    name: str
    before: Obj
    after: Obj


@dataclass
class MigratePlan:
    """What the run does: ``plan.workloads`` holds the DCs, then the Deployments (created or, for a
    killed migration, taken over; deleted by a revert)."""

    plan: Plan
    action: MigrateAction
    replicas: dict[str, int]  # DC name -> its replicas before the migration
    retargets: list[Retarget] = field(default_factory=list)
    conversions: dict[str, Conversion] = field(default_factory=dict)
    resumed: bool = False  # finishes a killed migration (its journal carried forward)
    left_alone: list[str] = field(default_factory=list)  # Deployments of the group that are not ours

    @property
    def dcs(self) -> list[WorkloadPlan]:
        return [w for w in self.plan.workloads if is_source(w.snapshot.ref.kind)]

    @property
    def deployments(self) -> list[WorkloadPlan]:
        return [w for w in self.plan.workloads if is_target(w.snapshot.ref.kind)]


def migrate_permissions(namespace: str, action: MigrateAction, *, hpas: bool) -> list[Need]:
    """What the run needs, as (verb, resource, namespace): DCs read, scaled (update) and, to finish,
    deleted; Deployments created, updated and deleted (the revert); HPAs patched when one is retargeted."""
    needs: list[Need] = [(v, DEPLOYMENT_CONFIGS, namespace) for v in ("get", "list", "watch", "update")]
    needs += [(v, DEPLOYMENTS, namespace) for v in ("get", "list", "watch", "create", "update", "delete")]
    needs += [
        (v, r, namespace) for r in (REPLICATION_CONTROLLERS, REPLICA_SETS, PODS) for v in ("list", "watch")
    ]
    needs += [(v, CONFIG_MAPS, namespace) for v in ("get", "create", "update")]
    needs += [(v, LEASES, namespace) for v in ("get", "create", "update", "delete")]
    needs += [("create", EVENTS, namespace), ("list", HORIZONTAL_POD_AUTOSCALERS, namespace)]
    if hpas:
        needs += [(v, HORIZONTAL_POD_AUTOSCALERS, namespace) for v in ("get", "patch")]
    if action is MigrateAction.FINISH:
        needs += [("delete", DEPLOYMENT_CONFIGS, namespace), ("delete", REPLICATION_CONTROLLERS, namespace)]
    return needs


def read_refusal(read: MigrateRead) -> RefusedError | None:
    """The first fact of ``read`` that refuses the run (in the order the facts are read), or None."""
    if not read.namespace_found:
        return namespace_refusal(read.namespace)
    if read.group is not None:
        refusal = listing_refusal(read.group, namespace=read.namespace, selector=read.selector)
        if refusal is not None:
            return refusal
    if read.access is not None and (gap := first_gap(read.access)) is not None:
        return gap
    return held(read.lease, lease=read.lease_name, holder=read.holder)


def retargets(hpas: list[Obj], names: set[str], *, earlier: dict[str, Obj]) -> list[Retarget]:
    """Every HPA that scales a DC of ``names`` (or did before a killed migration moved it: ``earlier``)."""
    out = []
    for hpa in sorted(hpas, key=lambda h: h["metadata"]["name"]):
        name = hpa["metadata"]["name"]
        before = earlier.get(name)
        if before is None:
            if scaled_source(hpa, names) is None:
                continue
            before = copy.deepcopy(hpa["spec"]["scaleTargetRef"])
        after = target_scale_ref(str(before["name"]))
        out.append(Retarget(name=name, before=before, after=after))
    return out


def dc_refusal(
    kind: Kind, obj: Obj, revisions: list[Obj], *, verified_by_journal: bool
) -> RefusedError | None:
    """Why a DC cannot be migrated as it stands (paused, rolling out, failed, never completed), naming
    what to run first; None when it runs its template complete."""
    key = kind.ref(obj).key
    if (obj.get("spec") or {}).get("paused"):
        return RefusedError(
            f"{key} is paused: its template may hold changes that never rolled out",
            fix=f"resume it first (rollguard resume {key}) and let it roll out, then migrate",
        )
    progress = kind.progress(obj, revisions)
    if progress.phase is RolloutPhase.FAILED:
        return RefusedError(
            f"{key}: its latest rollout failed ({progress.message}); the Deployment would copy a template "
            "that never ran",
            fix=f"return it to its last good revision first (rollguard revert {key}) or roll out a fixed image",
        )
    if progress.phase is not RolloutPhase.COMPLETE:
        if not verified_by_journal and never_completed(kind, obj, revisions):
            return RefusedError(
                f"{key} never completed a rollout: a failed migration would have nothing verified to return to",
                fix=f"get it to roll out once (oc rollout status {key}), or leave it out of the selector",
            )
        return RefusedError(
            f"{key} is rolling out ({progress.message})",
            fix=f"wait for it to finish (oc rollout status {key}) and migrate then",
        )
    return None


def _journal_refusal(journal: Journal | None, request: MigrateRequest) -> RefusedError | None:
    state = MigrationState.of(journal)
    sel = request.selector
    if request.action is not MigrateAction.MIGRATE:
        unfinished = journal is not None and not journal.final and journal.command == "migrate"
        if request.action is MigrateAction.REVERT and state is MigrationState.MIGRATING and unfinished:
            return None  # a killed migration: --revert (and `rollguard revert -l`) put it back
        if state is not MigrationState.KEPT:
            flag = f"--{request.action}"
            return RefusedError(
                f"{flag}: the group {sel!r} has no finished migration with its DeploymentConfigs kept"
                + (f" (its migration is {state})" if state is not None else ""),
                fix=f"migrate it first (rollguard migrate -l {sel!r}); {flag} acts on what that run kept",
            )
        if journal is not None and not journal.final and journal.command != "migrate":
            return RefusedError(
                f"a {journal.command} run of the group {sel!r} was left unfinished (journal state {journal.state})",
                fix=f"finish it first (rollguard revert -l {sel!r})",
            )
        return None
    if state is MigrationState.KEPT:
        return RefusedError(
            f"the group {sel!r} is migrated already: its DeploymentConfigs are kept at 0 replicas",
            fix=f"rollguard migrate -l {sel!r} --finish deletes them, --revert goes back to them",
        )
    if journal is not None and not journal.final and journal.command != "migrate":
        return RefusedError(
            f"a {journal.command} run of the group {sel!r} was left unfinished (journal state {journal.state})",
            fix=f"finish it first (rollguard revert -l {sel!r}, or run it again), then migrate",
        )
    return None


def decide_migrate(read: MigrateRead, request: MigrateRequest) -> MigratePlan:
    """The plan of ``request`` from what was read (pure); raises RefusedError naming the problem and fix."""
    refusal = read_refusal(read) or _journal_refusal(read.journal, request)
    if refusal is not None:
        raise refusal
    journal = read.journal
    if request.action is not MigrateAction.MIGRATE:
        return _decide_kept(read, request)
    resumed = journal is not None and not journal.final and journal.command == "migrate"
    earlier: Obj = journal.migration if resumed and journal is not None else {}
    before: dict[str, int] = {k: int(v) for k, v in (earlier.get("replicas") or {}).items()}
    found = read.group.workloads if read.group else []
    dcs = [f for f in found if is_source(f.kind.kind)]
    if not dcs:
        raise RefusedError(
            f"selector {request.selector!r} matches no DeploymentConfig in namespace {request.namespace!r}: "
            "nothing to migrate",
            fix="check the labels (oc get dc -n NS --show-labels)",
        )
    dc_names = {f.obj["metadata"]["name"] for f in dcs}
    mine = {KINDS[TARGET_KIND].ref({"metadata": {"name": n}}).key for n in dc_names}
    dc_plans: list[WorkloadPlan] = []
    deploy_plans: list[WorkloadPlan] = []
    conversions: dict[str, Conversion] = {}
    replicas: dict[str, int] = {}
    for f in dcs:
        name = f.obj["metadata"]["name"]
        replicas[name] = before.get(name, f.kind.snapshot(f.obj).replicas)
        dc_plan, conversions[name] = _plan_dc(
            f, request=request, journal=journal if resumed else None, replicas=replicas[name]
        )
        dc_plans.append(dc_plan)
        deploy_plans.append(
            _plan_deployment(name, conversions[name], read=read, request=request, resumed=resumed)
        )
    left_alone = sorted(f.ref.key for f in found if is_target(f.kind.kind) and f.ref.key not in mine)
    plan = Plan(
        namespace=request.namespace,
        selector=request.selector,
        workloads=[*dc_plans, *deploy_plans],
        journal=journal,
        carried_forward=resumed,
        listed=dict(read.listed),
    )
    return MigratePlan(
        plan=plan,
        action=request.action,
        replicas=replicas,
        retargets=retargets(read.hpas, dc_names, earlier=dict(earlier.get("hpas") or {})),
        conversions=conversions,
        resumed=resumed,
        left_alone=left_alone,
    )


def _plan_dc(
    f: Found, *, request: MigrateRequest, journal: Journal | None, replicas: int
) -> tuple[WorkloadPlan, Conversion]:
    """One DC's part of the migration: refused when it cannot migrate (`dc_refusal`, a conversion's
    refusals), else its plan (scaled back to ``replicas`` on revert: the count a resumed migration's
    journal recorded, else the DC's own) and its conversion, made from its verified template (``journal``:
    the resumed migration's, whose verified state wins)."""
    snapshot = f.kind.snapshot(f.obj)
    in_journal = journal is not None and snapshot.ref.key in journal.workloads
    refusal = dc_refusal(f.kind, f.obj, f.revisions, verified_by_journal=in_journal)
    if refusal is not None:
        raise refusal
    baseline = (
        journal.workloads[snapshot.ref.key].verified
        if in_journal and journal is not None
        else f.kind.verified_state(f.obj, f.revisions)
    )
    source = copy.deepcopy(f.obj)
    source["spec"]["replicas"] = replicas
    source["spec"]["template"] = copy.deepcopy(baseline.template)
    conversion = convert(source, pre_hook_as_init_container=request.pre_hook_as_init_container)
    if conversion.refusals:
        more = f" (and {len(conversion.refusals) - 1} more)" if len(conversion.refusals) > 1 else ""
        raise RefusedError(conversion.refusals[0] + more)
    assert conversion.deployment is not None
    conversion.deployment["metadata"]["namespace"] = request.namespace
    plan = WorkloadPlan(
        snapshot=snapshot,
        baseline=baseline,
        revisions=f.revisions,
        restore={"spec": {"replicas": replicas}},
        notes=list(conversion.notes),
    )
    return plan, conversion


def _plan_deployment(
    name: str, conversion: Conversion, *, read: MigrateRead, request: MigrateRequest, resumed: bool
) -> WorkloadPlan:
    """The Deployment that replaces dc/``name``: created from its conversion, or taken over when a killed
    run of this migration created it (``resumed``); refused when one of that name is someone else's."""
    body = conversion.deployment
    assert body is not None
    existing = read.deployments.get(name)
    ours = existing is not None and made_from(existing, name)
    if existing is not None and not (ours and resumed):
        why = (
            "it was made from it earlier (rollguard migrate -o yaml, or a run this journal does not know)"
            if ours
            else f"it is not rollguard's migration of dc/{name} (no {MIGRATED_FROM}: dc/{name} annotation)"
        )
        raise RefusedError(
            f"deployment/{name} exists already and {why}",
            fix=f"delete or rename deployment/{name} (kubectl delete deployment {name} -n {request.namespace}), "
            "then migrate",
        )
    journal = read.journal
    return WorkloadPlan(
        snapshot=KINDS[TARGET_KIND].snapshot(existing if existing is not None else body),
        baseline=VerifiedState(template={}, triggers=None, revision=0, images={}, paused=False),
        revisions=[],
        manifest=body,
        create=existing is None,
        remove_on_revert=True,
        notes=[f"created from dc/{name} (a revert deletes it)"]
        if existing is None
        else [f"created by the killed migration {journal.run_id if journal else ''}: taken over"],
    )


def _decide_kept(read: MigrateRead, request: MigrateRequest) -> MigratePlan:
    """``--finish`` or ``--revert`` of a kept migration: the journal's DCs and Deployments, as they are."""
    journal = read.journal
    assert journal is not None
    migration = journal.migration
    replicas = {k: int(v) for k, v in (migration.get("replicas") or {}).items()}
    found = {f.ref.key: f for f in (read.group.workloads if read.group else [])}
    workloads: list[WorkloadPlan] = []
    for source, names in ((True, sorted(replicas)), (False, list(migration.get("deployments") or []))):
        kind = KINDS[SOURCE_KIND if source else TARGET_KIND]
        for name in names:
            key = kind.ref({"metadata": {"name": name}}).key
            f = found.get(key)
            if f is None and not source and MigrationState.of(journal) is MigrationState.MIGRATING:
                continue  # the killed run had not created it yet
            if f is None:
                raise RefusedError(
                    f"{key} of the migration (run {journal.run_id}) is gone from the group {request.selector!r}",
                    fix="check who deleted or relabelled it; put it back (or delete the journal "
                    "ConfigMap of the group to forget the migration) and run again",
                )
            entry = journal.workloads.get(key)
            baseline = entry.verified if entry is not None else kind.verified_state(f.obj, f.revisions)
            workloads.append(
                WorkloadPlan(
                    snapshot=kind.snapshot(f.obj),
                    baseline=baseline,
                    revisions=f.revisions,
                    restore={"spec": {"replicas": replicas[name]}} if source else {},
                    remove_on_revert=not source and request.action is MigrateAction.REVERT,
                )
            )
    earlier = {k: v for k, v in (migration.get("hpas") or {}).items()}
    plan = Plan(
        namespace=request.namespace,
        selector=request.selector,
        workloads=workloads,
        journal=journal,
        listed=dict(read.listed),
    )
    return MigratePlan(
        plan=plan,
        action=request.action,
        replicas=replicas,
        retargets=retargets(read.hpas, set(), earlier=earlier),
    )
