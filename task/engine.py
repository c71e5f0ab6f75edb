"""The guarded rollout: one change per workload, watched in parallel, reverted as a group on failure.

A run ends all-new (`succeeded`) or all-old (`reverted`, verified); only when the revert itself
cannot be verified does it end `inconsistent`, with the journal saying what is left. The first error
is always the reported cause; errors met while cleaning up are added, never substituted.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from rollguard import audit
from rollguard.client import Api
from rollguard.errors import ApiError, RefusedError, RollguardError, RolloutFailed
from rollguard.group import GroupRun, Printer, actor
from rollguard.journal import WorkloadEntry, now
from rollguard.kinds import images_of
from rollguard.preflight import Plan, WorkloadPlan, plan_rollout
from rollguard.promote import copy_tag, resolved_reference
from rollguard.report import Outcome
from rollguard.resources import IMAGE_STREAMS
from rollguard.structs import ImageTarget, Obj, Phase, RunState, Status, WorkloadPhase
from rollguard.watch import Watched, wait_for
from rollguard.watcher import NamespaceCache

PROMOTION_WAIT = 60.0


@dataclass
class RolloutRequest:
    namespace: str
    selector: str
    targets: list[ImageTarget] = field(default_factory=list)
    promote_from: str | None = None
    tag: str | None = None
    timeout: int = 600
    on_paused: str = "take-over"
    fail_fast: bool = True
    crash_restarts: int = 2
    allow_never_completed: bool = False


class Rollout(GroupRun):
    """``rollguard rollout``: the guarded group rollout."""

    def __init__(
        self, client: Api, request: RolloutRequest, *, out: Printer, cancel: threading.Event | None = None
    ) -> None:
        super().__init__(
            client, namespace=request.namespace, selector=request.selector, out=out, cancel=cancel
        )
        self.request = request

    def execute(self) -> Outcome:
        req = self.request
        outcome = Outcome(
            status=Status.REFUSED,
            command=self.command,
            namespace=req.namespace,
            selector=req.selector,
            run_id=self.run_id,
            journal=self.store.name,
        )
        try:
            plan = plan_rollout(
                self.client,
                namespace=req.namespace,
                selector=req.selector,
                targets=req.targets,
                promote_from=req.promote_from,
                tag=req.tag,
                on_paused=req.on_paused,
                lock=self.lock,
                journal_store=self.store,
                allow_never_completed=req.allow_never_completed,
            )
            self.lock.acquire()
        except RefusedError as exc:
            outcome.error = str(exc)
            return outcome
        except ApiError as exc:  # nothing was changed yet: a refusal, with the API's own words
            outcome.error = f"the API server refused or failed a read during preflight: {exc}"
            return outcome
        try:
            outcome.status = self._run(plan)
            self._audit(plan, outcome.status)
        finally:
            if self.cache is not None:
                self.cache.stop()
            try:
                self.lock.release()
            except ApiError as exc:
                self.errors.append(f"could not release the lock: {exc}")
        outcome.error, outcome.errors = self.first_error, list(self.errors)
        outcome.workloads = [self.result(plan, wp) for wp in plan.workloads]
        return outcome

    def _audit(self, plan: Plan, status: Status) -> None:
        """An Event on every workload this run changed: who, which run, what it ended as, and why."""
        reason = {Status.SUCCEEDED: "RollguardRolledOut", Status.REVERTED: "RollguardReverted"}.get(
            status, "RollguardInconsistent"
        )

        def emit(wp: WorkloadPlan) -> None:
            obj = self.live(wp)
            images = images_of(obj.get("spec", {}).get("template", {}))
            message = f"{actor()} run {self.run_id} ({self.command}): {status}; images now {images}"
            if wp.notes:
                message += "; " + "; ".join(wp.notes)
            if self.first_error:  # a success has no cause, only warnings
                message += f"; {'warning' if status == 'succeeded' else 'cause'}: {self.first_error}"
            try:
                audit.emit(
                    self.client,
                    wp.snapshot.ref,
                    obj,
                    reason=reason,
                    message=message,
                    warning=status is not Status.SUCCEEDED,
                )
            except ApiError as exc:  # the audit trail is best effort: the journal holds the record too
                self.errors.append(f"could not record an event on {wp.key}: {exc}")

        changed = [
            wp
            for wp in plan.workloads
            if wp.key in self.journal.workloads and self.journal.workloads[wp.key].phase.touched
        ]
        self.each_at_once(changed, emit)

    def _run(self, plan: Plan) -> Status:
        req = self.request
        names = ", ".join(w.key for w in plan.workloads)
        self.say(f"run {self.run_id}: group {req.selector!r} in {req.namespace}: {names}")
        for wp in plan.workloads:  # what the run changes besides images (triggers, paused), said first
            for note in wp.notes:
                self.say(f"{wp.key}: {note}")
        if plan.carried_forward and plan.journal is not None:
            self.say(
                f"journal {self.store.name}: run {plan.journal.run_id} ended in state "
                f"'{plan.journal.state}'; its last verified state is carried forward"
            )
            self.journal = plan.journal
        self.journal.run_id, self.journal.command, self.journal.actor = self.run_id, self.command, actor()
        self.journal.state, self.journal.started, self.journal.error, self.journal.errors = (
            RunState.APPLYING,
            now(),
            "",
            [],
        )
        self.journal.workloads = {
            wp.key: WorkloadEntry(
                kind=wp.snapshot.ref.kind,
                name=wp.snapshot.ref.name,
                verified=wp.baseline,
                target_images=dict(wp.target_images),
            )
            for wp in plan.workloads
        }
        if self.cancel.is_set():
            self.fail("interrupted by SIGTERM before any change")
            return Status.REFUSED
        try:
            self.save()  # before the first change: the next run must know what to return to
        except ApiError as exc:
            self.fail(f"could not write the journal {self.store.name}: {exc}")
            return Status.REFUSED
        cache = self.start_cache(plan, extra=(IMAGE_STREAMS,) if req.promote_from else ())
        try:
            self.check_cancel()
            self._promote(plan, cache)
            watched = self._apply(plan)
            self.journal.state = RunState.WATCHING
            self._try_save()
            wait_for(
                cache,
                watched,
                fail_fast=req.fail_fast,
                crash_restarts=req.crash_restarts,
                stop_on_failure=True,
                cancel=self.cancel,
                out=self.say,
            )
            self.check_cancel()
            failed = [w for w in watched if w.verdict is not None and w.verdict.phase is Phase.FAILED]
            if failed:
                self.journal.workloads[failed[0].ref.key].phase = WorkloadPhase.FAILED
                self.journal.workloads[failed[0].ref.key].note = failed[0].verdict.message  # type: ignore[union-attr]
                raise RolloutFailed(failed[0].verdict.message, workload=failed[0].ref.key)  # type: ignore[union-attr]
            for item in watched:
                entry = self.journal.workloads[item.ref.key]
                entry.phase, entry.revision_after = WorkloadPhase.COMPLETE, item.verdict.revision  # type: ignore[union-attr]
        except (RollguardError, TimeoutError) as exc:
            self.fail(str(exc))
            return self._fail_and_revert(plan)
        return self._succeed(plan)

    def _promote(self, plan: Plan, cache: NamespaceCache) -> None:
        """Copy each promoted tag into the group's ImageStreams, then pin containers to the digests."""
        promotions = {(p.stream, p.tag): p for wp in plan.workloads for p in wp.promoted.values()}
        resolved: dict[tuple[str, str], str] = {}
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
            self.journal.workloads[wp.key].target_images = dict(wp.target_images)

    def _apply(self, plan: Plan) -> list[Watched]:
        """Write every workload's one change at once, so a group of N costs one round trip, not N.

        The journal already holds every verified state, so a run killed between these writes can be
        finished by the next one; it is updated once, when all writes have answered.
        """
        self.check_cancel()
        todo = []
        for wp in plan.workloads:
            if wp.needs_change:
                todo.append(wp)
            else:
                self.journal.workloads[wp.key].phase = WorkloadPhase.UNCHANGED

        def apply(wp: WorkloadPlan) -> Watched:
            written = self.write(wp, _changer(wp), guard_spec=True)
            self.journal.workloads[wp.key].phase = WorkloadPhase.APPLIED
            item = self.watched(wp, written, self.request.timeout)
            changes = {c: i for c, i in item.expected_images.items() if wp.snapshot.images.get(c) != i}
            self.say(f"{wp.key}: changed {changes or '(resumed only)'}")
            return item

        results = self.each_at_once(todo, apply)
        watched = [r for r in results if isinstance(r, Watched)]
        errors = [r for r in results if isinstance(r, RollguardError)]
        self._try_save()
        if errors:
            raise errors[0]
        return watched

    def _succeed(self, plan: Plan) -> Status:
        templates = {}
        assert self.cache is not None
        for wp in plan.workloads:
            obj = self.live(wp)
            entry = self.journal.workloads[wp.key]
            entry.verified = wp.kind.verified_state(obj, self.revisions(wp, obj))
            templates[wp.key] = entry.verified.template
        self.journal.last_success = {"run_id": self.run_id, "finished": now(), "templates": templates}
        self.journal.close_run(RunState.SUCCEEDED)
        self._try_save()
        self.say(f"succeeded: {len(plan.workloads)} workloads on their new state")
        return Status.SUCCEEDED

    def _fail_and_revert(self, plan: Plan) -> Status:
        self.say("reverting the whole group to its last verified state")
        try:
            ok = self.revert(plan, timeout=self.request.timeout)
        except (RollguardError, TimeoutError) as exc:
            self.fail(f"revert failed: {exc}")
            ok = False
        if ok:
            self.journal.close_run(RunState.REVERTED)
            self._try_save()
            self.say(f"reverted: the group is back on its previous state; cause: {self.first_error}")
            return Status.REVERTED
        self.journal.state = RunState.INCONSISTENT
        self._try_save()
        self.say(f"INCONSISTENT: the revert could not be verified; see journal {self.store.name}")
        return Status.INCONSISTENT


def _changer(wp: WorkloadPlan) -> Callable[[Obj], Obj]:
    """The rollout's one change to a workload, applied to whatever version of it is current."""
    trigger_tags = {c: f"{p.stream}:{p.tag}" for c, p in wp.promoted.items()}

    def change(obj: Obj) -> Obj:
        return wp.kind.with_images(obj, wp.target_images, trigger_tags=trigger_tags)

    return change
