"""The guarded rollout: one change per workload, watched in parallel, reverted as a group on failure.

`Rollout` fills in the `rollguard.run.group.GroupRun` skeleton: its preflight is `plan_rollout`, its journal
carries forward the last verified state of a run that died mid-way, its change promotes ImageStream
tags (``--promote-from``) and then writes every workload's one change at once, and it records an Event
on each workload it touched once the run has ended.

A run ends all-new (`succeeded`) or all-old (`reverted`, verified); only when the revert itself
cannot be verified does it end `inconsistent`, with the journal saying what is left. The first error
is always the reported cause; errors met while cleaning up are added, never substituted.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Collection, Mapping

from rollguard.cluster.api import Api
from rollguard.cluster.cache import NamespaceCache
from rollguard.cluster.journal import WorkloadEntry
from rollguard.core.errors import ApiError, RollguardError, RolloutFailed
from rollguard.core.resources import IMAGE_STREAMS, PODS
from rollguard.core.structs import EntryPhase, ExitStatus, Obj, RolloutPhase, RunState, VerifiedState
from rollguard.kinds import images_of
from rollguard.kinds.templates import same_template
from rollguard.plan.checks_read import preflight_checks
from rollguard.plan.merge import applied_record, combined_restore
from rollguard.plan.rollout_decide import RolloutRequest
from rollguard.plan.rollout_read import Plan, WorkloadPlan, plan_rollout
from rollguard.plan.tags import previous_tag, resolved_reference, without_promotion_effects
from rollguard.run import events
from rollguard.run.bake import Member, bake
from rollguard.run.checks import Context
from rollguard.run.group import GroupRun, Printer, actor, zero_replicas
from rollguard.run.group_write import each_at_once, watched_after
from rollguard.run.promote import RESTORE_WAIT, copy_tag, restore_tags, wait_restored
from rollguard.run.verify import Runner, not_run, verify
from rollguard.run.wait import Watched, judged

PROMOTION_WAIT = 60.0


class Rollout(GroupRun):
    """``rollguard rollout``: the guarded group rollout, filled into the `GroupRun` skeleton."""

    command = "rollout"
    said_reverting = "reverting the whole group to its last verified state"
    said_stopping = "interrupted: reverting the whole group to its last verified state"
    said_reverted = "reverted: the group is back on its previous state"

    def __init__(
        self, client: Api, request: RolloutRequest, *, out: Printer, cancel: threading.Event | None = None
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
        self.applying: dict[str, Obj] = {}  # per workload, what its manifest applies (merge.applied_record)
        self.checks = not_run(request.checks, bake=request.bake)
        if request.promote_from:
            self.extra_resources = (IMAGE_STREAMS,)

    def prepare(self) -> Plan:
        plan = plan_rollout(
            self.client, self.request, lock=self.lock, journal_store=self.store, claims=self.claims
        )
        preflight_checks(self.client, self.namespace, self.request.checks, run_id=self.run_id)
        return plan

    def verify(self, plan: Plan, cache: NamespaceCache) -> None:
        """``--verify`` and ``--bake`` (`rollguard.run.verify`), the journal saying ``verifying`` first: a
        run killed now is finished by the next one (or a repair) as one killed mid-watch."""
        if not self.request.checks and not self.request.bake:
            return
        self.journal.state = RunState.VERIFYING
        self.try_save()
        ctx = Context(client=self.client, namespace=self.namespace, run_id=self.run_id, say=self.say)
        ctx.stop_reason = lambda: f"interrupted by {self.stop_signal.split()[0]}"
        baking: Runner | None = None
        if self.request.bake:
            members = [
                Member(
                    key=wp.key,
                    kind=wp.kind,
                    name=wp.snapshot.ref.name,
                    images=images_of(self.live(wp).get("spec", {}).get("template", {})),
                )
                for wp in plan.workloads
            ]
            seconds = self.request.bake
            baking = lambda c: bake(members, seconds=seconds, cache=cache, ctx=c)  # noqa: E731
        verify(self.request.checks, bake=baking, ctx=ctx, cancel=self.cancel, results=self.checks)

    def begin(self, plan: Plan) -> None:
        names = ", ".join(w.key for w in plan.workloads)
        self.say(f"run {self.run_id}: group {self.selector!r} in {self.namespace}: {names}")
        for wp in plan.workloads:  # what the run changes besides images (triggers, paused), said first
            for note in wp.notes:
                self.say(f"{wp.key}: {note}")
        for name in plan.skipped:
            self.say(f"{name}: skipped (--skip-other-kinds): not a workload rollguard rolls out")
        if plan.carried_forward and plan.journal is not None:
            self.say(
                f"journal {self.store.name}: run {plan.journal.run_id} ended in state "
                f"'{plan.journal.state}'; its last verified state is carried forward"
            )
            self.journal = plan.journal
        elif plan.journal is not None:
            # A finished run's entries are replaced, but not what the group keeps across runs: the audit
            # trail, the last success (drift's reference, which a failed run must not wipe) and a kept
            # migration (`migrate --finish`/`--revert` and `status` read it).
            self.journal.history = list(plan.journal.history)
            self.journal.last_success = dict(plan.journal.last_success)
            self.journal.migration = dict(plan.journal.migration)
        self.journal.open_run(
            run_id=self.run_id, command=self.command, actor=actor(), state=RunState.APPLYING
        )
        if not plan.carried_forward:
            self.journal.tags = {}  # a finished run's tags are the verified state: nothing to restore
        earlier = self.journal.workloads if plan.carried_forward else {}
        loaded = plan.journal.workloads if plan.journal is not None else {}
        for wp in plan.workloads:
            if wp.accepted:
                self.members.append(f"{wp.key} {wp.accepted}")
        self.journal.workloads = {
            wp.key: WorkloadEntry(
                kind=wp.snapshot.ref.kind,
                name=wp.snapshot.ref.name,
                verified=self._verified_record(wp, loaded),
                # a killed run's change this run finishes is this run's own from here on: reverted on failure
                target_images=dict(earlier[wp.key].target_images) if wp.finish else self._targets(wp),
                phase=EntryPhase.APPLIED if wp.finish else EntryPhase.PENDING,
                created=wp.remove_on_revert,
                restore=combined_restore(earlier[wp.key].restore, wp.restore)
                if wp.key in earlier
                else wp.restore,
                applied=dict(loaded[wp.key].applied) if wp.key in loaded else {},
            )
            for wp in plan.workloads
        }
        # what each manifest applies, recorded once the run is verified (the next run's removals)
        self.applying = {
            wp.key: applied_record(wp.manifest) for wp in plan.workloads if wp.manifest is not None
        }

    @staticmethod
    def _verified_record(wp: WorkloadPlan, loaded: Mapping[str, WorkloadEntry]) -> VerifiedState:
        """The state the journal records as a member's last verified one: its baseline (what ran before
        this run's change, which a revert returns to), except for a member this run does not write whose
        baseline is someone else's change no run verified (a colleague's hotfix, its newest complete
        revision while a later one still rolls out): that keeps the group journal's last verified state,
        the one `status` measures drift against and `rollguard revert -l` returns to, so neither calls
        the colleague's intermediate revision verified. A success records the member as it verified it."""
        earlier = loaded.get(wp.key)
        if (
            wp.needs_change
            or wp.finish
            or earlier is None
            or not earlier.verified.template
            or same_template(earlier.verified.template, wp.baseline.template)
        ):
            return wp.baseline
        return earlier.verified

    def change(self, plan: Plan, cache: NamespaceCache) -> list[Watched]:
        self._failing_before_writes(plan, cache)
        self._promote(plan, cache)
        return self._apply(plan) + self._members(plan)

    def _failing_before_writes(self, plan: Plan, cache: NamespaceCache) -> None:
        """A killed run's change this run finishes that is failing already (the platform failed its
        rollout, or, with fail-fast, a new pod crash-loops) decides the run before its first write. Its
        own changes would only be written to be reverted (a rollout of each workload, then one back), so
        none is written: its targets stay as they are, and the killed run's change is reverted and
        verified as a failure found while watching would have it (exit 1). The killed run is still
        finished by this run; only writes whose revert was certain are spared."""
        for wp in plan.workloads:
            if not wp.finish:
                continue
            obj = cache.get(wp.kind.resource, wp.snapshot.ref.name)
            revisions = cache.owners(wp.kind.revisions).candidates(obj) if obj is not None else []
            pods = [p for r in revisions for p in cache.owners(PODS).children(r)]
            item = watched_after(wp, obj if obj is not None else wp.snapshot.raw, timeout=self.timeout)
            item.since, item.moved_at = "", time.monotonic()  # not our write: its whole rollout counts
            progress, _source = judged(
                item,
                obj,
                revisions,
                pods,
                now=item.moved_at,
                fail_fast=self.fail_fast,
                crash_restarts=self.crash_restarts,
            )
            if progress.phase is not RolloutPhase.FAILED:
                continue
            held_back = [w.key for w in plan.workloads if w.needs_change]
            for other in plan.workloads:
                if not other.needs_change:
                    continue
                other.notes.append(
                    f"not written: {wp.key} (left by a killed run, finished by this one) was failing "
                    "before this run's first write"
                )
                # a target the killed run had changed too (on its unverified change, or created by it) is
                # still returned to its verified state with the rest; one on it already is left untouched
                on_verified = not other.remove_on_revert and same_template(
                    (self.live(other).get("spec") or {}).get("template") or {}, other.baseline.template
                )
                unwritten = other.create or on_verified
                self.journal.workloads[other.key].phase = (
                    EntryPhase.UNCHANGED if unwritten else EntryPhase.APPLIED
                )
            entry = self.journal.workloads[wp.key]
            entry.phase, entry.note = EntryPhase.FAILED, progress.message
            spared = f"; {', '.join(held_back)} not written" if held_back else ""
            self.say(f"{wp.key}: failed: {progress.message}")
            raise RolloutFailed(
                f"{progress.message} (left by a killed run of this group, failing before this run's first "
                f"write{spared})",
                workload=wp.key,
            )

    @staticmethod
    def _targets(wp: WorkloadPlan) -> dict[str, str]:
        """The images the run's write sets: its --image targets, and with -f every image of the merged
        manifest, so that the next run can tell its change landed if this one is killed (`plan.members`)."""
        if wp.manifest is None or not wp.needs_change:
            return dict(wp.target_images)
        body = wp.server_view if wp.server_view is not None else wp.write_body(wp.snapshot.raw)
        return {**images_of((body.get("spec") or {}).get("template") or {}), **wp.target_images}

    def _members(self, plan: Plan) -> list[Watched]:
        """The members this run does not write, watched with its own changes (`rollguard.plan.members`):
        a killed run's change it finishes, and every other member it does not accept as unhealthy, so
        that a success is never claimed beside a member that is not healthy."""
        watched = []
        for wp in plan.workloads:
            if not (wp.finish or wp.observe):
                continue
            if wp.observe:
                self.observed.add(wp.key)
            item = watched_after(wp, self.live(wp), timeout=self.request.timeout)
            item.since = ""  # not our write: whatever its current rollout did counts
            watched.append(item)
        return watched

    def success_line(self, plan: Plan) -> str:
        """``succeeded:`` and which workloads did what (rolled out, finished, unchanged ...)."""
        by_word: dict[str, list[str]] = {}
        for wp in plan.workloads:
            by_word.setdefault(self._said(wp), []).append(wp.key)
        return "succeeded: " + "; ".join(f"{', '.join(keys)} {word}" for word, keys in by_word.items())

    def _said(self, wp: WorkloadPlan) -> str:
        if wp.accepted:
            return "left unhealthy (accepted)"
        if self.journal.workloads[wp.key].phase is not EntryPhase.COMPLETE:
            return "unchanged, healthy"
        if zero_replicas(self.live(wp)):
            return "not verified (0 replicas)"
        return "created" if wp.create else "finished (left by a killed run)" if wp.finish else "rolled out"

    def after_run(self, plan: Plan, status: ExitStatus) -> None:
        """An Event on every workload this run changed: who, which run, what it ended as, and why."""
        reason = {ExitStatus.SUCCEEDED: "RollguardRolledOut", ExitStatus.REVERTED: "RollguardReverted"}.get(
            status, "RollguardInconsistent"
        )

        def emit(wp: WorkloadPlan) -> None:
            obj = self.live(wp)
            images = images_of(obj.get("spec", {}).get("template", {}))
            message = f"{actor()} run {self.run_id} ({self.command}): {status}; images now {images}"
            if wp.notes:
                message += "; " + "; ".join(wp.notes)
            if self.first_error:  # a success has no cause, only warnings
                message += f"; {'warning' if status is ExitStatus.SUCCEEDED else 'cause'}: {self.first_error}"
            try:
                events.emit(
                    self.client,
                    wp.snapshot.ref,
                    obj,
                    reason=reason,
                    message=message,
                    warning=status is not ExitStatus.SUCCEEDED,
                )
            except ApiError as exc:  # the audit trail is best effort: the journal holds the record too
                self.errors.append(f"could not record an event on {wp.key}: {exc}")

        changed = [
            wp
            for wp in plan.workloads
            if wp.key in self.journal.workloads
            and self.journal.workloads[wp.key].phase.touched
            and self.journal.workloads[wp.key].phase is not EntryPhase.DELETED  # nothing to record it on
        ]
        each_at_once(changed, emit)

    def _promote(self, plan: Plan, cache: NamespaceCache) -> None:
        """Copy each promoted tag into the group's ImageStreams, then pin containers to the digests."""
        promotions = {(p.stream, p.tag): p for wp in plan.workloads for p in wp.promoted.values()}
        resolved: dict[tuple[str, str], str] = {}
        # Where each target tag was, journaled before it moves, so a revert (this run's, or the next
        # run's or `rollguard revert`'s after this one was killed) puts it back with the workloads; a
        # run carrying a dead one forward keeps the older record, which is the verified one.
        for stream, tag in sorted(promotions):
            self.journal.tags.setdefault(
                f"{stream}:{tag}", previous_tag(cache.get(IMAGE_STREAMS, stream), tag)
            )
        if promotions:  # no tag moves, no journal write ahead of the workloads' own
            self.save()
        for (stream, tag), promo in sorted(promotions.items()):
            copy_tag(self.client, namespace=self.namespace, promo=promo)
            self.say(
                f"imagestream {stream}: tag {tag} copied from {promo.source_namespace} ({promo.source_image})"
            )
        deadline = time.monotonic() + PROMOTION_WAIT
        while len(resolved) < len(promotions):
            self.check_cancel()
            for key, promo in promotions.items():
                ref = resolved_reference(cache.get(IMAGE_STREAMS, promo.stream), promo)
                if ref:
                    resolved[key] = ref
            timed_out = len(resolved) < len(promotions) and not cache.wait(deadline - time.monotonic())
            if timed_out and time.monotonic() >= deadline:
                missing = sorted(f"{s}:{t}" for s, t in promotions if (s, t) not in resolved)
                raise RolloutFailed(
                    f"promoted tags did not resolve within {PROMOTION_WAIT:.0f}s: {missing}",
                    workload="imagestreams",
                )
        for wp in plan.workloads:
            for container, promo in wp.promoted.items():
                wp.target_images[container] = resolved[(promo.stream, promo.tag)]
            entry = self.journal.workloads[wp.key]
            entry.target_images = {**entry.target_images, **wp.target_images}

    def record_success(self, templates: dict[str, Obj], *, verified: Collection[str] | None = None) -> None:
        self.journal.tags = {}  # the promoted tags are now the verified state
        for key, record in self.applying.items():
            if key in self.journal.workloads:
                self.journal.workloads[key].applied = record
        super().record_success(templates, verified=verified)

    def as_if_untriggered(self, plan: WorkloadPlan, live: Obj) -> Obj:
        refs = {c: plan.target_images[c] for c in plan.promoted if c in plan.target_images}
        return without_promotion_effects(live, plan.snapshot.raw, refs) if refs else live

    def revert(self, plan: Plan, timeout: int) -> bool:
        """The target tags go back first: a workload restored while its tag still points at the promoted
        image would be rewritten to it at once by its automatic trigger."""
        errors = restore_tags(self.client, namespace=self.namespace, tags=self.journal.tags)
        for line in errors:
            self.fail(line)
        if not errors and self.journal.tags:
            self.say(f"imagestreams: tags {', '.join(sorted(self.journal.tags))} restored")
            self.say_unresolved(self.journal.tags)
            self.journal.tags = {}
        return super().revert(plan, timeout) and not errors

    def say_unresolved(self, tags: dict[str, Obj]) -> None:
        """Wait for the restored tags to resolve before the workloads are judged and written (see
        `wait_restored`); say which did not in time (their automatic triggers are restored manual)."""
        left = wait_restored(
            self.client, namespace=self.namespace, tags=tags, seconds=RESTORE_WAIT, stopped=self.abort.is_set
        )
        if left:
            self.say(
                f"imagestreams: {', '.join(left)} not back on their earlier images within {RESTORE_WAIT:.0f}s; "
                "automatic triggers that follow them are restored manual"
            )

    def _apply(self, plan: Plan) -> list[Watched]:
        """Write every workload's one change at once, so a group of N costs one round trip, not N.

        The journal already holds every verified state and every target (written before the first
        change), so a run killed between these writes is finished by the next one, which tells what was
        written from the live objects; it is updated once, when all writes have answered: the phases
        and, when every write went through, the run's state ``watching``.
        """
        self.check_cancel()
        todo = []
        for wp in plan.workloads:
            if wp.needs_change:
                todo.append(wp)
            elif not wp.finish:  # a killed run's change this run finishes stays applied: it is watched
                self.journal.workloads[wp.key].phase = EntryPhase.UNCHANGED

        def apply(wp: WorkloadPlan) -> Watched:
            if wp.create:
                written = self.create(wp, wp.write_body(wp.snapshot.raw))
            else:
                written = self.write(wp, wp.write_body, guard_spec=True)
            self.journal.workloads[wp.key].phase = EntryPhase.APPLIED
            item = watched_after(wp, written, timeout=self.request.timeout)
            changes = {c: i for c, i in item.expected_images.items() if wp.snapshot.images.get(c) != i}
            if wp.create:
                self.say(f"{wp.key}: created {item.expected_images}")  # every image is new
            elif wp.write_fields:
                self.say(
                    f"{wp.key}: changed {', '.join(wp.write_fields)}; images {changes or 'as they were'}"
                )
            else:
                self.say(f"{wp.key}: changed {changes or '(resumed only)'}")
            return item

        results = each_at_once(todo, apply)
        watched = [r for r in results if isinstance(r, Watched)]
        errors = [r for r in results if isinstance(r, RollguardError)]
        if not errors:
            self.journal.state = RunState.WATCHING
        self.try_save()
        if errors:
            raise errors[0]
        return watched
