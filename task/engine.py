"""The guarded rollout: one change per workload, watched in parallel, reverted as a group on failure.

A run ends all-new (`succeeded`) or all-old (`reverted`, verified); only when the revert itself
cannot be verified does it end `inconsistent`, with the journal saying what is left. The first error
is always the reported cause; errors met while cleaning up are added, never substituted.
"""

from __future__ import annotations

import copy
import getpass
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

from task import audit
from task.client import Client
from task.errors import ApiError, Conflict, Interrupted, RefusedError, RollguardError, RolloutFailed
from task.journal import Journal, JournalStore, WorkloadEntry, now
from task.kinds import images_of
from task.lock import GroupLock
from task.preflight import Plan, Promotion, WorkloadPlan, plan_rollout
from task.report import Outcome, WorkloadResult, pod_record
from task.resources import IMAGE_STREAMS, PODS, Resource
from task.structs import ImageTarget, Obj, Phase
from task.watch import Watched, wait_for
from task.watcher import NamespaceCache

Printer = Callable[[str], None]
PROMOTION_WAIT = 60.0
SETTLE_SECONDS = 5


def actor() -> str:
    """Who runs this: ROLLGUARD_ACTOR, else user@host (uid N@host for an arbitrary UID, as on OpenShift)."""
    if os.environ.get("ROLLGUARD_ACTOR"):
        return os.environ["ROLLGUARD_ACTOR"]
    try:
        user = getpass.getuser()
    except (KeyError, OSError):  # an arbitrary UID has no passwd entry and maybe no LOGNAME
        user = f"uid {os.getuid()}"
    return f"{user}@{socket.gethostname()}"


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


class GroupRun:
    """Shared machinery of every run on a group: lock, journal, live cache, writes, revert."""

    command = "rollout"

    def __init__(
        self,
        client: Client,
        *,
        namespace: str,
        selector: str,
        out: Printer,
        cancel: threading.Event | None = None,
    ) -> None:
        self.client = client
        self.namespace = namespace
        self.selector = selector
        self.out = out
        self.cancel = cancel or threading.Event()
        # Set when the revert may wait no longer (SIGTERM grace over, or a second SIGTERM).
        self.abort = threading.Event()
        self.run_id = time.strftime("%Y%m%d-%H%M%S-") + uuid.uuid4().hex[:6]
        self.store = JournalStore(client, namespace=namespace, selector=selector)
        self.lock = GroupLock(
            client, namespace=namespace, name=self.store.name, holder=f"{actor()} run {self.run_id}"
        )
        self.journal = Journal(namespace=namespace, selector=selector)
        self.cache: NamespaceCache | None = None
        self.first_error = ""
        self.errors: list[str] = []
        self.started = time.monotonic()

    # -- small helpers --------------------------------------------------------------------------------

    def say(self, line: str) -> None:
        self.out(f"[{time.monotonic() - self.started:6.1f}s] {line}")

    def fail(self, message: str) -> None:
        """Record an error: the first one is the cause, later ones are added."""
        if not self.first_error:
            self.first_error = message
            self.journal.error = message
        elif message not in self.errors and message != self.first_error:
            self.errors.append(message)
            self.journal.errors = list(self.errors)
        self.say(f"error: {message}")

    def save(self) -> None:
        self.store.save(self.journal)

    def check_cancel(self) -> None:
        if self.cancel.is_set():
            raise Interrupted(
                "interrupted by SIGTERM (e.g. the Tekton step timeout) before the rollout finished"
            )

    def start_cache(self, plan: Plan, *, extra: tuple[Resource, ...] = ()) -> NamespaceCache:
        from task.kinds import KINDS

        resources = []
        for name in sorted(plan.kinds):
            resources += [KINDS[name].resource, KINDS[name].revisions]
        resources.append(PODS)
        resources += [r for r in extra if r not in resources]
        cache = NamespaceCache(self.client, self.namespace, resources)
        cache.start()
        self.cache = cache
        return cache

    def live(self, plan: WorkloadPlan) -> Obj:
        # Before the cache starts (a run stopped ahead of its first change) the snapshot is current.
        obj = self.cache.get(plan.kind.resource, plan.snapshot.ref.name) if self.cache is not None else None
        return obj if obj is not None else plan.snapshot.raw

    def write(self, plan: WorkloadPlan, make_body: Callable[[Obj], Obj], *, guard_spec: bool) -> Obj:
        """One PUT with a resourceVersion precondition; on conflict re-read and retry.

        With ``guard_spec`` a conflict caused by someone else's spec edit fails instead of overwriting it.
        """
        kind, name = plan.kind, plan.snapshot.ref.name
        current = self.live(plan)
        if guard_spec and _spec(current) != _spec(plan.snapshot.raw):
            # The cache already holds someone else's edit: writing on top of it would pass the
            # resourceVersion precondition and silently undo that edit.
            raise RolloutFailed(
                f"{plan.key} was changed by someone else since preflight; not overwriting it",
                workload=plan.key,
            )
        for _ in range(8):
            try:
                written = self.client.replace(kind.resource, make_body(current), namespace=self.namespace)
                if self.cache is not None:
                    self.cache.put(kind.resource, written)
                return written
            except Conflict:
                fresh = self.client.get(kind.resource, name, namespace=self.namespace)
                if _spec(make_body(fresh)) == _spec(fresh):
                    # Our change is in already: a retried PUT whose first answer was lost had landed.
                    if self.cache is not None:
                        self.cache.put(kind.resource, fresh)
                    return fresh
                if guard_spec and fresh.get("spec") != plan.snapshot.raw.get("spec"):
                    raise RolloutFailed(
                        f"{plan.key} was changed by someone else since preflight; not overwriting it",
                        workload=plan.key,
                    ) from None
                current = fresh
        raise RolloutFailed(f"{plan.key}: too many write conflicts", workload=plan.key)

    def watched(self, plan: WorkloadPlan, written: Obj, timeout: int) -> Watched:
        """What to wait for after writing ``written``: its images, by the earlier of both deadlines."""
        own = plan.kind.deadline(written)
        reason = (
            f"not complete within --timeout {timeout}s"
            if timeout <= own
            else f"not complete within its own deadline of {own}s"
        )
        return Watched(
            ref=plan.snapshot.ref,
            expected_images=images_of(written["spec"]["template"]),
            deadline=time.monotonic() + min(timeout, own + SETTLE_SECONDS),
            deadline_reason=reason,
            since=now(),
        )

    # -- revert -----------------------------------------------------------------------------------------

    def needs_revert(self, plan: WorkloadPlan) -> bool:
        obj = self.live(plan)
        entry = self.journal.workloads.get(plan.key)
        touched = entry is not None and entry.phase not in ("pending", "unchanged")
        spec = obj.get("spec", {})
        return touched or bool(spec.get("paused")) or spec.get("template") != plan.baseline.template

    def revert(self, plan: Plan, timeout: int) -> bool:
        """Return every touched or drifted workload to its journal state; True when verified."""
        assert self.cache is not None
        self.journal.state = "reverting"
        self._try_save()
        watched = []
        for wp in plan.workloads:
            if not self.needs_revert(wp):
                continue
            entry = self.journal.workloads[wp.key]
            entry.phase = "reverting"
            try:
                self.write(wp, _reverter(wp), guard_spec=False)
                self.say(f"{wp.key}: reverting to revision {wp.baseline.revision} {wp.baseline.images}")
            except ApiError as exc:
                self.fail(f"revert of {wp.key} failed: {exc}")
                entry.phase = "error"
                continue
            watched.append(
                Watched(
                    ref=wp.snapshot.ref,
                    expected_images=wp.baseline.images,
                    deadline=time.monotonic() + timeout + SETTLE_SECONDS,
                    deadline_reason=f"revert not complete within {timeout}s",
                    since=now(),
                )
            )
        self._try_save()
        wait_for(
            self.cache,
            watched,
            fail_fast=False,
            crash_restarts=0,
            stop_on_failure=False,
            cancel=self.abort,
            out=self.say,
        )
        ok = True
        for item in watched:
            entry = self.journal.workloads[item.ref.key]
            if item.verdict is not None and item.verdict.phase is Phase.COMPLETE:
                entry.phase = "reverted"
                entry.revision_after = item.verdict.revision
            else:
                ok = False
                entry.phase = "error"
                why = (
                    item.verdict.message
                    if item.verdict
                    else f"stopped waiting after SIGTERM; last seen: {item.last_message or 'nothing'}"
                )
                entry.note = why
                self.fail(f"revert of {item.ref.key} not verified: {why}")
        return ok and not any(e.phase == "error" for e in self.journal.workloads.values())

    def _try_save(self) -> None:
        try:
            self.save()
        except ApiError as exc:
            self.fail(f"could not update the journal {self.store.name}: {exc}")

    # -- results ----------------------------------------------------------------------------------------

    def result(self, plan: Plan, wp: WorkloadPlan) -> WorkloadResult:
        obj = self.live(wp)
        entry = self.journal.workloads.get(wp.key)
        revisions = wp.kind.owned(obj, self.cache.objects(wp.kind.revisions)) if self.cache else []
        pods: list[Obj] = []
        current = wp.kind.new_revision(obj, revisions)
        if current is not None and self.cache is not None:
            from task.kinds import pods_of_revision

            pods = [
                pod_record(p, revision=current["metadata"]["name"])
                for p in pods_of_revision(current, self.cache.objects(PODS))
            ]
        phase = entry.phase if entry else "unchanged"
        outcome = {"complete": "rolled-out", "pending": "unchanged", "error": "inconsistent"}.get(
            phase, phase
        )
        return WorkloadResult(
            kind=wp.snapshot.ref.kind,
            name=wp.snapshot.ref.name,
            revision_before=wp.snapshot.revision,
            revision_after=wp.kind.revision(obj),
            images_before=dict(wp.snapshot.images),
            images_after=images_of(obj.get("spec", {}).get("template", {})),
            outcome=outcome,
            paused=bool(obj.get("spec", {}).get("paused")),
            paused_before=wp.snapshot.paused,
            notes=list(wp.notes),
            error=entry.note if entry else "",
            pods=sorted(pods, key=lambda p: p["name"]),
        )


class Rollout(GroupRun):
    """``rollguard rollout``: the guarded group rollout."""

    def __init__(
        self, client: Client, request: RolloutRequest, *, out: Printer, cancel: threading.Event | None = None
    ) -> None:
        super().__init__(
            client, namespace=request.namespace, selector=request.selector, out=out, cancel=cancel
        )
        self.request = request

    def execute(self) -> Outcome:
        req = self.request
        outcome = Outcome(
            status="refused",
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

    def _audit(self, plan: Plan, status: str) -> None:
        """An Event on every workload this run changed: who, which run, what it ended as, and why."""
        reason = {"succeeded": "RollguardRolledOut", "reverted": "RollguardReverted"}.get(
            status, "RollguardInconsistent"
        )
        for wp in plan.workloads:
            entry = self.journal.workloads.get(wp.key)
            if entry is None or entry.phase in ("pending", "unchanged"):
                continue
            obj = self.live(wp)
            images = images_of(obj.get("spec", {}).get("template", {}))
            message = f"{actor()} run {self.run_id} ({self.command}): {status}; images now {images}"
            if self.first_error:
                message += f"; cause: {self.first_error}"
            try:
                audit.emit(
                    self.client,
                    wp.snapshot.ref,
                    obj,
                    reason=reason,
                    message=message,
                    warning=status != "succeeded",
                )
            except ApiError as exc:  # the audit trail is best effort: the journal holds the record too
                self.errors.append(f"could not record an event on {wp.key}: {exc}")

    def _run(self, plan: Plan) -> str:
        req = self.request
        names = ", ".join(w.key for w in plan.workloads)
        self.say(f"run {self.run_id}: group {req.selector!r} in {req.namespace}: {names}")
        if plan.carried_forward and plan.journal is not None:
            self.say(
                f"journal {self.store.name}: run {plan.journal.run_id} ended in state "
                f"{plan.journal.state!r}; its last verified state is carried forward"
            )
            self.journal = plan.journal
        self.journal.run_id, self.journal.command, self.journal.actor = self.run_id, self.command, actor()
        self.journal.state, self.journal.started, self.journal.error, self.journal.errors = (
            "applying",
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
            return "refused"
        try:
            self.save()  # before the first change: the next run must know what to return to
        except ApiError as exc:
            self.fail(f"could not write the journal {self.store.name}: {exc}")
            return "refused"
        cache = self.start_cache(plan, extra=(IMAGE_STREAMS,) if req.promote_from else ())
        try:
            self.check_cancel()
            self._promote(plan, cache)
            watched = self._apply(plan)
            self.journal.state = "watching"
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
                self.journal.workloads[failed[0].ref.key].phase = "failed"
                self.journal.workloads[failed[0].ref.key].note = failed[0].verdict.message  # type: ignore[union-attr]
                raise RolloutFailed(failed[0].verdict.message, workload=failed[0].ref.key)  # type: ignore[union-attr]
            for item in watched:
                entry = self.journal.workloads[item.ref.key]
                entry.phase, entry.revision_after = "complete", item.verdict.revision  # type: ignore[union-attr]
        except (RollguardError, TimeoutError) as exc:
            self.fail(str(exc))
            return self._fail_and_revert(plan)
        return self._succeed(plan)

    def _promote(self, plan: Plan, cache: NamespaceCache) -> None:
        """Copy each promoted tag into the group's ImageStreams, then pin containers to the digests."""
        promotions = {(p.stream, p.tag): p for wp in plan.workloads for p in wp.promoted.values()}
        resolved: dict[tuple[str, str], str] = {}
        for (stream, tag), promo in sorted(promotions.items()):
            self._copy_tag(promo)
            self.say(
                f"imagestream {stream}: tag {tag} copied from {promo.source_namespace} ({promo.source_image})"
            )
        deadline = time.monotonic() + PROMOTION_WAIT
        while len(resolved) < len(promotions):
            self.check_cancel()
            for key, promo in promotions.items():
                ref = _resolved_reference(cache.get(IMAGE_STREAMS, promo.stream), promo)
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

    def _copy_tag(self, promo: Promotion) -> None:
        def body(stream: Obj) -> Obj:
            new = copy.deepcopy(stream)
            tags = [t for t in new.setdefault("spec", {}).get("tags", []) or [] if t.get("name") != promo.tag]
            tags.append(
                {
                    "name": promo.tag,
                    "from": {
                        "kind": "ImageStreamImage",
                        "namespace": promo.source_namespace,
                        "name": f"{promo.stream}@{promo.source_image}",
                    },
                    "referencePolicy": {"type": "Source"},
                }
            )
            new["spec"]["tags"] = tags
            return new

        for _ in range(5):
            stream = self.client.get(IMAGE_STREAMS, promo.stream, namespace=self.namespace)
            try:
                self.client.replace(IMAGE_STREAMS, body(stream), namespace=self.namespace)
                return
            except Conflict:
                continue
        raise RolloutFailed(f"imagestream {promo.stream}: too many write conflicts", workload="imagestreams")

    def _apply(self, plan: Plan) -> list[Watched]:
        watched = []
        for wp in plan.workloads:
            self.check_cancel()
            entry = self.journal.workloads[wp.key]
            if not wp.needs_change:
                entry.phase = "unchanged"
                continue
            written = self.write(wp, _changer(wp), guard_spec=True)
            entry.phase = "applied"
            self._try_save()
            watched.append(self.watched(wp, written, self.request.timeout))
            expected = watched[-1].expected_images
            changes = {c: i for c, i in expected.items() if wp.snapshot.images.get(c) != i}
            self.say(f"{wp.key}: changed {changes or '(resumed only)'}")
        return watched

    def _succeed(self, plan: Plan) -> str:
        templates = {}
        assert self.cache is not None
        for wp in plan.workloads:
            obj = self.live(wp)
            entry = self.journal.workloads[wp.key]
            entry.verified = wp.kind.verified_state(
                obj, wp.kind.owned(obj, self.cache.objects(wp.kind.revisions))
            )
            templates[wp.key] = entry.verified.template
        self.journal.last_success = {"run_id": self.run_id, "finished": now(), "templates": templates}
        self.journal.close_run("succeeded")
        self._try_save()
        self.say(f"succeeded: {len(plan.workloads)} workloads on their new state")
        return "succeeded"

    def _fail_and_revert(self, plan: Plan) -> str:
        self.say("reverting the whole group to its last verified state")
        try:
            ok = self.revert(plan, timeout=self.request.timeout)
        except (RollguardError, TimeoutError) as exc:
            self.fail(f"revert failed: {exc}")
            ok = False
        if ok:
            self.journal.close_run("reverted")
            self._try_save()
            self.say(f"reverted: the group is back on its previous state; cause: {self.first_error}")
            return "reverted"
        self.journal.state = "inconsistent"
        self._try_save()
        self.say(f"INCONSISTENT: the revert could not be verified; see journal {self.store.name}")
        return "inconsistent"


def _spec(obj: Obj) -> Obj:
    """A spec to compare: ``paused: false`` and no ``paused`` are the same (the API omits it)."""
    spec = dict(obj.get("spec") or {})
    if not spec.get("paused"):
        spec.pop("paused", None)
    return spec


def _changer(wp: WorkloadPlan) -> Callable[[Obj], Obj]:
    """The rollout's one change to a workload, applied to whatever version of it is current."""
    trigger_tags = {c: f"{p.stream}:{p.tag}" for c, p in wp.promoted.items()}

    def change(obj: Obj) -> Obj:
        return wp.kind.with_images(obj, wp.target_images, trigger_tags=trigger_tags)

    return change


def _reverter(wp: WorkloadPlan) -> Callable[[Obj], Obj]:
    def revert(obj: Obj) -> Obj:
        return wp.kind.with_state(obj, wp.baseline)

    return revert


def _resolved_reference(stream: Obj | None, promo: Promotion) -> str:
    """The dockerImageReference the group's stream now gives the promoted tag, once it has resolved."""
    if stream is None:
        return ""
    for entry in stream.get("status", {}).get("tags", []) or []:
        if entry.get("tag") == promo.tag and entry.get("items"):
            item = entry["items"][0]
            if item.get("image") == promo.source_image:
                return str(item.get("dockerImageReference", ""))
    return ""
