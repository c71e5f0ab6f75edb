"""`rollguard migrate`: a group's DeploymentConfigs become Deployments in one guarded, reversible change.

`Migrate` fills in the `rollguard.run.group.GroupRun` skeleton (lock, claims, journal, fencing, outcome
as for `rollout`); its preflight is `rollguard.plan.migrate_read.plan_migrate`. The run, in this order,
so that every Service selecting the pods (``deploymentconfig=<name>`` included) has ready endpoints
throughout:

1. the journal holds every DC's verified state and replicas, the HPAs' targets and the Deployments to
   create, before the first change (state ``migrating``);
2. the Deployments are created, scaled as the DCs are (the conversion is `rollguard.kinds.conversion`);
3. HorizontalPodAutoscalers that scale a DC are retargeted to its Deployment;
4. every Deployment is watched until available by its kind's rules (`Kind.progress`), with fail-fast;
5. only then are the DCs scaled to 0, kept (not deleted) for the way back: migration state ``kept``.

Any failure (or SIGTERM) puts the group back, in the order that keeps traffic: HPAs to the DCs, the DCs
back to their replicas and watched until their pods are ready (`Kind.serving`), and only then the
created Deployments deleted and seen gone. A killed run leaves the journal open: the next `migrate`
finishes it (the Deployments it created are taken over), and `rollguard revert -l` reverts it.

``--finish`` deletes the kept DCs and their RCs (migration ``finished``); ``--revert`` brings the kept
DCs back up and serving, then deletes the Deployments (migration ``reverted``).
"""

from __future__ import annotations

import contextlib
import copy
import threading
import time
from collections.abc import Collection

from rollguard.cluster.api import Api
from rollguard.cluster.cache import NamespaceCache
from rollguard.cluster.journal import WorkloadEntry
from rollguard.core.errors import ApiError, NotFound, RollguardError, RolloutFailed
from rollguard.core.report import WorkloadResult
from rollguard.core.resources import HORIZONTAL_POD_AUTOSCALERS
from rollguard.core.structs import EntryPhase, ExitStatus, Obj, RolloutPhase, RunState, WorkloadOutcome
from rollguard.kinds.conversion import is_source, scale_ref_text
from rollguard.plan.migrate_decide import MigrateAction, MigratePlan, MigrateRequest, MigrationState
from rollguard.plan.migrate_read import plan_migrate
from rollguard.plan.rollout_decide import Plan, WorkloadPlan
from rollguard.run import events
from rollguard.run.group import GroupRun, Printer, actor
from rollguard.run.group_write import SETTLE_SECONDS, each_at_once, watched_after
from rollguard.run.refusals import add_evidence
from rollguard.run.wait import Watched, wait_for

EVENT_REASONS = {
    MigrateAction.MIGRATE: "RollguardMigrated",
    MigrateAction.FINISH: "RollguardMigrationFinished",
    MigrateAction.REVERT: "RollguardMigrationReverted",
}


def scaled(obj: Obj, replicas: int) -> Obj:
    body = copy.deepcopy(obj)
    body["spec"]["replicas"] = replicas
    return body


class Migrate(GroupRun):
    """``rollguard migrate`` (and its ``--finish`` and ``--revert``), filled into the `GroupRun` skeleton."""

    command = "migrate"
    said_succeeded = "migrated: {n} workloads verified; the DeploymentConfigs are kept at 0 replicas"
    said_reverting = "migration failed: putting the DeploymentConfigs back and deleting the Deployments"
    said_stopping = "migration interrupted: putting the DeploymentConfigs back and deleting the Deployments"
    said_reverted = "reverted: the DeploymentConfigs serve again, the Deployments are deleted"

    def __init__(
        self, client: Api, request: MigrateRequest, *, out: Printer, cancel: threading.Event | None = None
    ) -> None:
        super().__init__(
            client,
            namespace=request.namespace,
            selector=request.selector,
            timeout=request.timeout,
            out=out,
            cancel=cancel,
            fail_fast=request.fail_fast,
            crash_restarts=request.crash_restarts,
            lease_seconds=request.lease_seconds,
        )
        self.request = request
        self.mplan: MigratePlan | None = None
        self.retargeted = False  # HPAs may point at the Deployments: a revert puts them back
        if request.action is MigrateAction.FINISH:
            self.said_succeeded = "finished: the DeploymentConfigs and their RCs are deleted"
        elif request.action is MigrateAction.REVERT:
            self.said_succeeded = (
                "reverted the migration: the DeploymentConfigs serve, the Deployments are deleted"
            )

    @property
    def migration(self) -> MigratePlan:
        assert self.mplan is not None
        return self.mplan

    def prepare(self) -> Plan:
        self.mplan = plan_migrate(self.client, self.request, lock=self.lock, journal_store=self.store)
        return self.mplan.plan

    def _what(self) -> str:
        """The command as typed: ``migrate``, ``migrate --finish`` or ``migrate --revert``."""
        action = self.migration.action
        return self.command if action is MigrateAction.MIGRATE else f"{self.command} --{action}"

    def begin(self, plan: Plan) -> None:
        m = self.migration
        names = ", ".join(w.key for w in plan.workloads)
        self.say(f"run {self.run_id}: {self._what()} of group {self.selector!r} in {self.namespace}: {names}")
        for wp in plan.workloads:
            for note in wp.notes:
                self.say(f"{wp.key}: {note}")
        for key in m.left_alone:
            self.say(f"{key}: a Deployment already, left as it is")
        if plan.journal is not None:
            self.journal = plan.journal  # its history and last success go on
        if m.resumed and plan.journal is not None:
            self.say(f"journal {self.store.name}: migration run {plan.journal.run_id} was left "
                     f"'{plan.journal.state}'; this run finishes it")  # fmt: skip
        self.journal.open_run(
            run_id=self.run_id, command=self.command, actor=actor(), state=RunState.APPLYING
        )
        self.journal.tags = {}
        self.journal.workloads = {
            wp.key: WorkloadEntry(
                kind=wp.snapshot.ref.kind,
                name=wp.snapshot.ref.name,
                verified=wp.baseline,
                created=wp.remove_on_revert,
                restore=wp.restore,
            )
            for wp in plan.workloads
        }
        if m.action is MigrateAction.MIGRATE:
            self.journal.migration = {
                "state": MigrationState.MIGRATING,
                "replicas": dict(m.replicas),
                "hpas": {r.name: r.before for r in m.retargets},
                "deployments": [wp.snapshot.ref.name for wp in m.deployments],
            }
        else:
            self.retargeted = m.action is MigrateAction.REVERT  # the HPAs point at the Deployments

    def change(self, plan: Plan, cache: NamespaceCache) -> list[Watched]:
        action = self.migration.action
        if action is MigrateAction.FINISH:
            self._finish()
            return []
        if action is MigrateAction.REVERT:
            if not self._back(self.migration.plan, timeout=self.timeout):
                raise RolloutFailed(
                    self.first_error or "the revert could not be verified", workload="migration"
                )
            return []
        return self._migrate(cache)

    # -- the migration ----------------------------------------------------------------------------------

    def _migrate(self, cache: NamespaceCache) -> list[Watched]:
        m = self.migration

        def make(wp: WorkloadPlan) -> Watched:
            assert wp.manifest is not None
            if wp.create:
                written = self.create(wp, wp.manifest)
            else:  # created by the killed run this one finishes: written over, ours either way
                manifest = wp.manifest
                written = self.write(wp, lambda live: {**manifest, "metadata": {
                    **manifest["metadata"], "resourceVersion": live["metadata"].get("resourceVersion")}},
                    guard_spec=False)  # fmt: skip
            self.journal.workloads[wp.key].phase = EntryPhase.APPLIED
            self.say(f"{wp.key}: {'created' if wp.create else 'taken over'} with {wp.kind.replicas(written)} "
                     f"replicas, images {wp.kind.snapshot(written).images}")  # fmt: skip
            return watched_after(wp, written, timeout=self.timeout)

        results = each_at_once(m.deployments, make)
        self.try_save()
        errors = [r for r in results if isinstance(r, RollguardError)]
        if errors:
            raise errors[0]
        watched = [r for r in results if isinstance(r, Watched)]
        self._retarget(forward=True)
        self.journal.state = RunState.WATCHING
        self.try_save()
        wait_for(cache, watched, fail_fast=self.fail_fast, crash_restarts=self.crash_restarts,
                 stop_on_failure=True, cancel=self.cancel, out=self.say)  # fmt: skip
        add_evidence(self.client, self.namespace, watched)
        self.check_cancel()
        self._judge(watched)
        self.say("every Deployment is available: scaling the DeploymentConfigs to 0 (kept for the way back)")

        def scale_down(wp: WorkloadPlan) -> Watched:
            written = self.write(wp, lambda live: scaled(live, 0), guard_spec=True)
            self.journal.workloads[wp.key].phase = EntryPhase.APPLIED
            return watched_after(wp, written, timeout=self.timeout)

        results = each_at_once(m.dcs, scale_down)
        self.try_save()
        errors = [r for r in results if isinstance(r, RollguardError)]
        if errors:
            raise errors[0]
        return [*watched, *(r for r in results if isinstance(r, Watched))]

    def _retarget(self, *, forward: bool) -> None:
        """Point every HPA of the plan at the Deployments (``forward``) or back at the DCs; one merge
        patch each. An HPA someone deleted meanwhile has nothing to point back: noted, not an error."""
        for r in self.migration.retargets:
            target = r.after if forward else r.before
            try:
                self.client.patch(HORIZONTAL_POD_AUTOSCALERS, r.name, {"spec": {"scaleTargetRef": target}},
                                  namespace=self.namespace)  # fmt: skip
            except NotFound:
                self.say(f"horizontalpodautoscaler {r.name}: deleted by someone else; nothing to retarget")
                continue
            self.retargeted = forward
            self.say(f"horizontalpodautoscaler {r.name}: now scales {scale_ref_text(target)}")

    def record_success(self, templates: dict[str, Obj], *, verified: Collection[str] | None = None) -> None:
        m = self.migration
        gone = {wp.key for wp in (m.dcs if m.action is MigrateAction.FINISH else m.deployments)}
        if m.action is MigrateAction.MIGRATE:
            self.journal.migration["state"] = MigrationState.KEPT
            gone = set()
        elif m.action is MigrateAction.FINISH:
            self.journal.migration["state"] = MigrationState.FINISHED
        else:
            self.journal.migration["state"] = MigrationState.REVERTED
        for key in gone:
            self.journal.workloads.pop(key, None)
        super().record_success({k: t for k, t in templates.items() if k not in gone})

    def result(self, wp: WorkloadPlan) -> WorkloadResult:
        """The report's line; a DC the migration kept at 0, or a workload --finish or --revert removed,
        is said so (not "not verified (0 replicas)")."""
        out = super().result(wp)
        state = MigrationState.of(self.journal)
        source = is_source(wp.snapshot.ref.kind)
        if state is MigrationState.KEPT and source:
            out.outcome = WorkloadOutcome.KEPT
        elif (state is MigrationState.FINISHED and source) or (
            state is MigrationState.REVERTED and not source and self.migration.action is MigrateAction.REVERT
        ):
            out.outcome = WorkloadOutcome.REMOVED
        return out

    def after_run(self, plan: Plan, status: ExitStatus) -> None:
        """An Event on every workload of the run still there: who, which run, how it ended and why."""
        if status is ExitStatus.REFUSED:  # stopped before any change: nothing to record
            return
        reason = {
            ExitStatus.SUCCEEDED: EVENT_REASONS[self.migration.action],
            ExitStatus.REVERTED: "RollguardReverted",
        }.get(status, "RollguardInconsistent")
        message = f"{actor()} run {self.run_id} ({self._what()}): {status}"
        if self.first_error:
            message += f"; {'warning' if status is ExitStatus.SUCCEEDED else 'cause'}: {self.first_error}"

        def emit(wp: WorkloadPlan) -> None:
            obj = self.cache.get(wp.kind.resource, wp.snapshot.ref.name) if self.cache is not None else None
            if obj is None:  # deleted (a Deployment reverted, a DC finished): nothing to record it on
                return
            try:
                events.emit(self.client, wp.snapshot.ref, obj, reason=reason, message=message,
                            warning=status is not ExitStatus.SUCCEEDED)  # fmt: skip
            except ApiError as exc:  # the audit trail is best effort: the journal holds the record too
                self.errors.append(f"could not record an event on {wp.key}: {exc}")

        each_at_once(list(plan.workloads), emit)

    # -- the way back -------------------------------------------------------------------------------------

    def revert(self, plan: Plan, timeout: int) -> bool:
        """Put the group back as it was before the migration, keeping traffic; True when verified."""
        ok = self._back(plan, timeout=timeout)
        if ok:
            self.journal.migration["state"] = MigrationState.REVERTED
        return ok

    def _back(self, plan: Plan, *, timeout: int) -> bool:
        """HPAs to the DCs; the DCs at their replicas, their pods ready; then the Deployments deleted."""
        assert self.cache is not None
        m = self.migration
        self.journal.state = RunState.REVERTING
        self.try_save()
        if m.retargets and (self.retargeted or m.resumed or m.action is MigrateAction.REVERT):
            try:
                self._retarget(forward=False)
            except ApiError as exc:
                self.fail(f"could not point the autoscalers back at the DeploymentConfigs: {exc}")
                return False
        dcs = [wp for wp in plan.workloads if is_source(wp.snapshot.ref.kind)]
        for wp in dcs:  # scaled down by this run, or by the killed one it finishes: both go back up
            entry = self.journal.workloads[wp.key]
            if wp.kind.replicas(self.live(wp)) != m.replicas.get(wp.snapshot.ref.name, wp.snapshot.replicas):
                entry.phase = EntryPhase.APPLIED
        dc_plan = Plan(namespace=plan.namespace, selector=plan.selector, workloads=dcs, journal=plan.journal)
        try:
            ok = self.group_revert.revert(dc_plan, timeout)
        except (RollguardError, TimeoutError) as exc:
            self.fail(f"revert failed: {exc}")
            ok = False
        ok = self._wait_serving(dcs, timeout=timeout) and ok
        if not ok:  # the DCs do not serve: keep the Deployments, whatever they are worth
            self.fail("the DeploymentConfigs do not serve again: the Deployments are left in place")
            return False
        deployments = [
            wp for wp in plan.workloads if wp.remove_on_revert and self.group_revert.needs_revert(wp)
        ]
        self.remove(deployments)
        self.wait_removed(deployments)
        self.try_save()
        return not any(self.journal.workloads[wp.key].phase is EntryPhase.ERROR for wp in deployments)

    def _wait_serving(self, dcs: list[WorkloadPlan], *, timeout: int) -> bool:
        """Wait until every DC runs its replicas ready (`Kind.serving`): a DC scaled back up with no
        rollout is complete at once by `Kind.progress`, before its pods are ready."""
        assert self.cache is not None
        deadline = time.monotonic() + timeout + SETTLE_SECONDS
        waiting = list(dcs)
        last: dict[str, str] = {}
        while waiting and not self.abort.is_set():
            still = []
            for wp in waiting:
                obj = self.live(wp)
                verdict = wp.kind.serving(obj, self.revisions(wp, obj))
                if last.get(wp.key) != verdict.message:
                    last[wp.key] = verdict.message
                    self.say(verdict.message)
                if verdict.phase is not RolloutPhase.COMPLETE:
                    still.append(wp)
            waiting = still
            if not waiting or time.monotonic() >= deadline:
                break
            self.cache.wait(min(1.0, deadline - time.monotonic()))
        for wp in waiting:
            self.journal.workloads[wp.key].phase = EntryPhase.ERROR
            self.fail(f"revert of {wp.key} not verified: {last.get(wp.key, 'not serving')}")
        return not waiting

    # -- --finish -------------------------------------------------------------------------------------------

    def _finish(self) -> None:
        """Delete the kept DCs and their RCs (their pods are gone already: the DCs are at 0)."""
        assert self.cache is not None
        for wp in self.migration.dcs:
            obj = self.live(wp)
            if wp.kind.replicas(obj) != 0:
                raise RolloutFailed(
                    f"{wp.key} runs {wp.kind.replicas(obj)} replicas again (scaled by someone else?): not deleting it",
                    workload=wp.key,
                )
        for wp in self.migration.dcs:
            rcs = self.revisions(wp, self.live(wp))
            with contextlib.suppress(NotFound):
                self.client.delete(wp.kind.resource, wp.snapshot.ref.name, namespace=self.namespace)
            for rc in rcs:
                with contextlib.suppress(NotFound):
                    self.client.delete(wp.kind.revisions, rc["metadata"]["name"], namespace=self.namespace)
            self.journal.workloads[wp.key].phase = EntryPhase.APPLIED
            self.say(f"{wp.key}: deleted with its {len(rcs)} replication controllers")
        self.try_save()
