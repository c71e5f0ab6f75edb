"""One run on a rollout group, from preflight to outcome: the skeleton `rollout` and the repairs fill in.

`GroupRun.execute` is the skeleton every run shares, in this order:

1. ``prepare`` (the subclass): the read-only preflight, then the group's lock. A refusal, or an API
   error, here is status ``refused`` (exit 2) with nothing changed.
2. ``begin`` (the subclass) sets up the journal; it is saved before the first change, so a run killed
   after it is finished by the next one. A SIGTERM before that save, or a failed save: ``refused``.
3. The live cache starts; ``change`` (the subclass) writes the changes (through the guarded writes of
   `rollguard.run.group_write`) and says what to watch; every workload is watched at once; the first
   failure (or SIGTERM) reverts every workload the run touched to its journal's last verified state
   (`rollguard.run.group_revert`; ``reverted`` when verified, else ``inconsistent``).
4. ``after_run`` (the subclass) while the cache is still live; then, always, the cache stops and the
   claims and the lock are released; the `Report` reports the first error as the cause, later ones added.

`rollguard.run.rollout.Rollout` and `rollguard.run.repair.Repair` are the two kinds of run built on it. The
lock and journal are the group's: a repair of workloads in no group (``grouped`` false) keeps no
journal and holds a Lease of its own (``lock_name``), only so that its claims live while it runs.

One owner per workload: with the lock, every run claims every workload it acts on (`rollguard.cluster.claims`),
so that another run (of an overlapping group, of the same group before its journal is written, or a
repair of named workloads) is refused instead of acting on the same workload at once (``refused``,
naming the holder).

Fencing: every mutating request of a run goes through ``self.client``, which asks the group lock
first (`rollguard.cluster.client.guarded` with `GroupLock.prove`), and the journal's resourceVersion is the
fencing token (our save fails once another run wrote the journal). A run that lost its group (frozen
past its lease, renewals cut off, taken over) meets `Superseded` at its next write or wait, whatever
it was doing; the skeleton ends it as ``superseded`` (exit 3) and nothing more is written: no revert,
no journal, no Event. The renewer finding the loss wakes every wait, so the run stops at once.
"""

from __future__ import annotations

import getpass
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable, Collection

from rollguard.cluster.api import Api
from rollguard.cluster.cache import NamespaceCache
from rollguard.cluster.claims import Claims
from rollguard.cluster.client import guarded, hold_through_outages
from rollguard.cluster.journal import Journal, JournalStore, group_name, precise_now
from rollguard.cluster.lock import LEASE_SECONDS, GroupLock
from rollguard.core.errors import (
    ApiError,
    Conflict,
    Interrupted,
    RefusedError,
    RollguardError,
    RolloutFailed,
    Superseded,
    WorkloadDeleted,
)
from rollguard.core.report import CheckResult, Report, WorkloadResult, pod_record
from rollguard.core.resources import PODS, Resource
from rollguard.core.structs import EntryPhase, ExitStatus, Obj, RolloutPhase, RunState, WorkloadOutcome
from rollguard.kinds import images_of, pods_of_revision
from rollguard.plan.rollout_read import Plan, WorkloadPlan
from rollguard.run.group_revert import GroupRevert
from rollguard.run.group_write import GroupWrite
from rollguard.run.refusals import add_evidence
from rollguard.run.wait import Watched, wait_for

Printer = Callable[[str], None]


def zero_replicas(obj: Obj) -> bool:
    """A workload asked for no pods: its rollout completes without any pod running its template."""
    return int((obj.get("spec") or {}).get("replicas", 1) or 0) == 0


def actor() -> str:
    """Who runs this: ROLLGUARD_ACTOR, else user@host (uid N@host for an arbitrary UID, as on OpenShift)."""
    if os.environ.get("ROLLGUARD_ACTOR"):
        return os.environ["ROLLGUARD_ACTOR"]
    try:
        user = getpass.getuser()
    except (KeyError, OSError):  # an arbitrary UID has no passwd entry and maybe no LOGNAME
        user = f"uid {os.getuid()}"
    return f"{user}@{socket.gethostname()}"


class GroupRun:
    """The run skeleton (`execute`) and the machinery it shares: lock, journal, live cache; its writes
    and its revert are carried out by the `GroupWrite` and `GroupRevert` it owns (``group_write``,
    ``group_revert``).

    A subclass sets ``command`` and fills in `prepare`, `begin` and `change`; `record_success`,
    `end_run` and `after_run` have defaults it may override.
    """

    command: str
    grouped: bool = True  # the run holds the group's lock and journal (else a Lease of its own, no journal)
    done_phase: EntryPhase = EntryPhase.COMPLETE  # a watched workload's phase once verified
    success_state: RunState = RunState.SUCCEEDED  # the journal's run state after a verified success
    extra_resources: tuple[Resource, ...] = ()  # cached besides the kinds' objects and pods
    # The progress lines that end a run ({command}, {n} workloads); `Rollout` has its own (quoted in docs).
    said_succeeded = "{command} succeeded: {n} workloads verified"
    said_reverting = "{command} failed: returning what it changed to the last verified state"
    said_stopping = "{command} interrupted: returning what it changed to the last verified state"
    said_reverted = "reverted: back on the last verified state"

    def __init__(
        self,
        client: Api,
        *,
        namespace: str,
        selector: str,
        timeout: int,
        out: Printer,
        cancel: threading.Event | None = None,
        fail_fast: bool = True,
        crash_restarts: int = 2,
        lease_seconds: int = LEASE_SECONDS,
        lock_name: str = "",
    ) -> None:
        self.namespace = namespace
        self.selector = selector
        self.timeout = timeout
        self.fail_fast = fail_fast
        self.crash_restarts = crash_restarts
        self.out = out
        self.cancel = cancel or threading.Event()
        # Set when the revert may wait no longer (SIGTERM grace over, or a second SIGTERM).
        self.abort = threading.Event()
        self.run_id = time.strftime("%Y%m%d-%H%M%S-") + uuid.uuid4().hex[:6]
        # The lock renews with the bare client (renewing is how it proves the lease ours); every other
        # request of the run goes through the fenced one.
        self.lock = GroupLock(
            client,
            namespace=namespace,
            name=lock_name or group_name(selector),  # a run in no group: a Lease of its own
            holder=f"{actor()} run {self.run_id}",
            duration=lease_seconds,
            on_lost=self._lost,
        )
        self.client = guarded(client, self.lock.prove)
        self.store = JournalStore(self.client, namespace=namespace, selector=selector)
        self.claims = Claims(self.client, namespace=namespace, lock=self.lock, selector=selector)
        self.journal = Journal(namespace=namespace, selector=selector)
        self.cache: NamespaceCache | None = None
        self.first_error = ""
        self.errors: list[str] = []
        self.checks: list[CheckResult] = []  # the report's checks (`verify`)
        self.started = time.monotonic()
        self.stop_signal = "SIGTERM"  # what asked the run to stop (`stopped_by`): SIGTERM or SIGINT
        # The pod templates this run sent to (or got back from) each workload: a live template that
        # is none of them, nor the one preflight read, is someone else's edit, which the revert leaves
        # as they set it. Sent ones count too: a write whose answer was lost may have landed.
        self.ours: dict[str, list[Obj]] = {}
        # Members watched but never written (a colleague's rollout, a healthy member): their failure fails
        # the run, but they are not this run's to mark failed or to revert (`rollguard.plan.members`).
        self.observed: set[str] = set()
        # Members the verdict names besides the counts (left as someone else set them, accepted
        # unhealthy ...): the report's ``members`` and the summary.
        self.members: list[str] = []
        self.group_write = GroupWrite(self)
        self.group_revert = GroupRevert(self)
        self._unhold: Callable[[], None] = lambda: None  # ends the hold through API outages

    # -- what a kind of run fills in ----------------------------------------------------------------

    def prepare(self) -> Plan:
        """The read-only preflight; raise `RefusedError` (or let an `ApiError` through) to refuse."""
        raise NotImplementedError

    def begin(self, plan: Plan) -> None:
        """Open the run in ``self.journal`` (saved right after, before the first change)."""
        raise NotImplementedError

    def change(self, plan: Plan, cache: NamespaceCache) -> list[Watched]:
        """Write the run's changes; return what to watch. Raise a `RollguardError` to fail and revert."""
        raise NotImplementedError

    def record_success(self, templates: dict[str, Obj], *, verified: Collection[str] | None = None) -> None:
        """Record the verified templates as the group's last success (what drift is measured against).

        ``verified``: the keys this run verified (default: all); the others keep the time their own run
        verified them (``at``), so drift is measured per workload against the run that verified it last.
        """
        stamp, old = precise_now(), self.journal.last_success
        old_at = {
            k: (old.get("at") or {}).get(k) or old.get("finished", "") for k in old.get("templates") or {}
        }
        fresh = set(templates if verified is None else verified)
        at = {k: stamp if k in fresh or not old_at.get(k) else old_at[k] for k in templates}
        self.journal.last_success = {
            "run_id": self.run_id,
            "finished": stamp,
            "templates": templates,
            "at": at,
        }

    def end_run(self, state: RunState) -> None:
        """End the journal's run in ``state``; `INCONSISTENT` is left open, so the group shows half-rolled."""
        if state is RunState.INCONSISTENT:
            self.journal.state = state
        else:
            self.journal.close_run(state)
        self.try_save()

    def after_run(self, plan: Plan, status: ExitStatus) -> None:
        """Called with the run's status while the live cache still runs (e.g. for audit Events)."""

    def verify(self, plan: Plan, cache: NamespaceCache) -> None:
        """After every workload was judged complete, before the success is recorded: the run's checks
        (``self.checks`` their results). Raise a `RollguardError` to fail the run and revert the group."""

    # -- the skeleton ---------------------------------------------------------------------------------

    def execute(self) -> Report:
        """Carry the run out; never raises for a refusal or a failure: the `Report` says how it ended."""
        outcome = Report(
            status=ExitStatus.REFUSED,
            command=self.command,
            namespace=self.namespace,
            selector=self.selector,
            run_id=self.run_id,
            journal=self.store.name if self.grouped else "",
        )
        try:
            plan = self.prepare()
            self._hold(plan)
        except RefusedError as exc:
            outcome.error = str(exc)
            return outcome
        except ApiError as exc:  # nothing was changed yet: a refusal, with the API's own words
            outcome.error = f"the API server refused or failed a read during preflight: {exc}"
            return outcome
        try:
            try:
                outcome.status = self._run(plan)
                self.after_run(plan, outcome.status)
            except Superseded as exc:
                outcome.status = self._superseded(exc)
        finally:
            self._let_go()
        outcome.error, outcome.errors = self.first_error, list(self.errors)
        outcome.workloads = [self.result(wp) for wp in plan.workloads]
        outcome.members = list(self.members)
        outcome.checks = list(self.checks)
        return outcome

    def _run(self, plan: Plan) -> ExitStatus:
        try:
            self.begin(plan)
        except ApiError as exc:
            self.fail(f"could not read the journal {self.store.name}: {exc}")
            return ExitStatus.REFUSED
        self.check_held()
        if self.cancel.is_set():
            self.fail(f"interrupted by {self.stop_signal} before any change")
            return ExitStatus.REFUSED
        try:
            self.save()  # before the first change: the next run must know what to return to
        except ApiError as exc:
            self.fail(f"could not write the journal {self.store.name}: {exc}")
            return ExitStatus.REFUSED
        cache = self.start_cache(plan, extra=self.extra_resources)
        try:
            self.check_cancel()
            watched = self.change(plan, cache)
            for item in watched:  # every member must still be what it was judged when the last completes
                item.rejudge, item.watched_only = True, item.ref.key in self.observed
            wait_for(
                cache,
                watched,
                fail_fast=self.fail_fast,
                crash_restarts=self.crash_restarts,
                stop_on_failure=True,
                cancel=self.cancel,
                out=self.say,
            )
            add_evidence(self.client, self.namespace, watched)
            self.check_cancel()
            self._judge(watched)
            self.verify(plan, cache)
            self.check_cancel()
        except (RollguardError, TimeoutError) as exc:
            self.fail(str(exc))
            return self._fail_and_revert(plan, interrupted=isinstance(exc, Interrupted))
        return self._succeed(plan)

    def _judge(self, watched: list[Watched]) -> None:
        """Record every watched workload's verdict; the first failure (in plan order) fails the run."""
        failed = [w for w in watched if w.verdict is not None and w.verdict.phase is RolloutPhase.FAILED]
        failed = failed or [
            w for w in watched if w.verdict is None or w.verdict.phase is not RolloutPhase.COMPLETE
        ]
        if failed:
            item = failed[0]
            message = item.verdict.message if item.verdict else f"{item.ref.key}: no verdict"
            if item.ref.key in self.observed:  # not ours to mark failed, nor to revert
                message += f" ({item.ref.key} is not changed by this {self.command}: left as it is)"
            else:
                entry = self.journal.workloads[item.ref.key]
                entry.phase, entry.note = EntryPhase.FAILED, message
            raise RolloutFailed(message, workload=item.ref.key)
        for item in watched:
            assert item.verdict is not None
            if item.ref.key in self.observed:
                continue
            entry = self.journal.workloads[item.ref.key]
            entry.phase, entry.revision_after = self.done_phase, item.verdict.revision

    def _succeed(self, plan: Plan) -> ExitStatus:
        templates = {}
        for wp in plan.workloads:
            obj = self.live(wp)
            entry = self.journal.workloads[wp.key]
            entry.verified = wp.kind.verified_state(obj, self.revisions(wp, obj))
            templates[wp.key] = entry.verified.template
        self.record_success(templates)
        self.end_run(self.success_state)
        if not self._recorded():  # verified, but the journal says otherwise: not a success to report
            self.say(f"INCONSISTENT: verified, but {self.store.describe_last_saved()}")
            return ExitStatus.INCONSISTENT
        self.say(self.success_line(plan))
        return ExitStatus.SUCCEEDED

    def success_line(self, plan: Plan) -> str:
        """The progress line of a verified success (`Rollout` says which workloads did what)."""
        return self.said_succeeded.format(command=self.command, n=len(plan.workloads))

    def _fail_and_revert(self, plan: Plan, *, interrupted: bool) -> ExitStatus:
        said = self.said_stopping if interrupted else self.said_reverting  # a stop is not a failure
        self.say(said.format(command=self.command, n=len(plan.workloads)))
        try:
            ok = self.revert(plan, timeout=self.timeout)
        except (RollguardError, TimeoutError) as exc:
            self.fail(f"revert failed: {exc}")
            ok = False
        self.end_run(RunState.REVERTED if ok else RunState.INCONSISTENT)
        if ok and self._recorded():
            self.say(f"{self.said_reverted}; cause: {self.first_error}")
            return ExitStatus.REVERTED
        if ok:
            why = f"reverted and verified, but {self.store.describe_last_saved()}"
        elif self.group_revert.edited_away:
            left = ", ".join(self.group_revert.edited_away)
            why = f"{left} left as someone else set them, the rest reverted"
        elif self.group_revert.unhealthy_left:
            left = ", ".join(self.group_revert.unhealthy_left)
            why = f"{left} (not changed by this run, left as it is) not healthy, the rest reverted"
        else:
            why = "the revert could not be verified"
        self.say(f"INCONSISTENT: {why}" + (f"; see journal {self.store.name}" if self.grouped else ""))
        return ExitStatus.INCONSISTENT

    def _recorded(self) -> bool:
        """True when the journal holds what the run last meant to write (or the run keeps none)."""
        return not self.grouped or self.store.last_saved == (self.journal.state, self.journal.updated)

    # -- holding the group ------------------------------------------------------------------------------

    def _hold(self, plan: Plan) -> None:
        """Take the group's lock, then claim its workloads; refused (the lock given back) if one is held.

        From then on the run holds through API outages (`rollguard.cluster.pulse`): a request that gets
        no answer while the API server answers nothing is retried until it answers again (every write
        still fenced by the lock) or the run may wait no longer (``abort``). Before, an unreachable
        cluster is a refusal.
        """
        self.lock.acquire()
        self._unhold = hold_through_outages(self.client, stop=self.abort, say=self.say)
        try:
            self.claims.take([wp.snapshot.ref for wp in plan.workloads])
        except (RefusedError, ApiError):
            self.lock.release()
            self._unhold()
            raise

    def _lost(self) -> None:
        """The renewer (or a proof) found the group lost: stop every wait, so the run stops at once."""
        self.cancel.set()
        self.abort.set()
        if self.cache is not None:
            self.cache.wake()

    def _superseded(self, exc: Superseded) -> ExitStatus:
        """The run lost its group: the loss is the cause; what went wrong before is added."""
        self.say(f"SUPERSEDED: {exc}; this run writes nothing more")
        if self.first_error and self.first_error not in self.errors:
            self.errors.insert(0, self.first_error)
        self.first_error = str(exc)
        return ExitStatus.SUPERSEDED

    def _let_go(self) -> None:
        """At the end, always: stop the cache, release the claims, then the lock (each only while ours)."""
        if self.cache is not None:
            self.cache.stop()
        try:
            self.claims.release()
        except Superseded:  # lost with the group: the claims died with our lease
            pass
        except ApiError as exc:
            self.errors.append(f"could not release the claims: {exc}")
        try:
            self.lock.release()
        except ApiError as exc:
            self.errors.append(f"could not release the lock: {exc}")
        self._unhold()

    def check_held(self) -> None:
        """Raise `Superseded` once the group is lost (the renewer found it taken over, or a proof failed)."""
        if self.lock.lost:
            raise Superseded(self.lock.lost, holder=self.lock.held_by)

    # -- small helpers --------------------------------------------------------------------------------

    def say(self, line: str) -> None:
        self.out(f"[{time.monotonic() - self.started:6.1f}s] {line}")

    def fail(self, message: str) -> None:
        """Record an error: the first one is the cause, later ones are added; each is said once (the
        revert meets the edit or deletion that failed the watch again, in the same words)."""
        if message == self.first_error or message in self.errors:
            return
        if not self.first_error:
            self.first_error = message
            self.journal.error = message
        else:
            self.errors.append(message)
            self.journal.errors = list(self.errors)
        self.say(f"error: {message}")

    def save(self) -> None:
        if not self.grouped:
            return
        try:
            self.store.save(self.journal)
        except Conflict as exc:
            # The journal's resourceVersion is the fencing token: while we hold the lock only a run that
            # took the group over writes it.
            self.lock.lose("its journal was written by another run")
            raise Superseded(self.lock.lost, holder=self.lock.held_by) from exc

    def stopped_by(self, name: str) -> None:
        """The signal that asked the run to stop (the CLI's handler says which), for its messages."""
        self.stop_signal = name

    def check_cancel(self) -> None:
        self.check_held()
        if self.cancel.is_set():
            why = "e.g. the Tekton step timeout" if self.stop_signal == "SIGTERM" else "Ctrl-C"
            name = self.stop_signal.split()[0]
            raise Interrupted(f"interrupted by {name} ({why}) before the {self.command} finished")

    def start_cache(self, plan: Plan, *, extra: tuple[Resource, ...] = ()) -> NamespaceCache:
        from rollguard.kinds import KINDS

        resources = []
        for name in sorted(plan.kinds):
            resources += [KINDS[name].resource, KINDS[name].revisions]
        resources.append(PODS)
        resources += [r for r in extra if r not in resources]
        cache = NamespaceCache(self.client, self.namespace, resources)
        for res in resources:  # what preflight listed is not listed again: the watch goes on from there
            if res in plan.listed:
                cache.seed(res, plan.listed[res].items, plan.listed[res].resource_version)
        cache.start()
        self.cache = cache
        return cache

    def live(self, plan: WorkloadPlan) -> Obj:
        # Before the cache starts (a run stopped ahead of its first change) the snapshot is current.
        obj = self.cache.get(plan.kind.resource, plan.snapshot.ref.name) if self.cache is not None else None
        return obj if obj is not None else plan.snapshot.raw

    def revisions(self, plan: WorkloadPlan, obj: Obj) -> list[Obj]:
        """The workload's revision objects in the live cache, newest first."""
        if self.cache is None:
            return []
        return plan.kind.owned(obj, self.cache.owners(plan.kind.revisions).candidates(obj))

    # -- writes (carried out by `rollguard.run.group_write.GroupWrite`) ----------------------------------

    def write(
        self,
        plan: WorkloadPlan,
        make_body: Callable[[Obj], Obj],
        *,
        guard_spec: bool,
        reverting: bool = False,
    ) -> Obj:
        """One PUT with a resourceVersion precondition; on conflict re-read and retry.

        With ``guard_spec`` a conflict caused by someone else's spec edit fails instead of overwriting it;
        ``reverting``: the run's own revert (its change-cause says so).
        """
        return self.group_write.write(plan, make_body, guard_spec=guard_spec, reverting=reverting)

    def as_if_untriggered(self, plan: WorkloadPlan, live: Obj) -> Obj:
        """``live`` without the changes this run itself caused through the platform (a promotion's
        triggers), for the "changed by someone else" guard; a run that causes none returns it as is."""
        return live

    def create(self, plan: WorkloadPlan, body: Obj) -> Obj:
        """POST a workload the run brings (given by manifest, absent in preflight); 409 fails it."""
        return self.group_write.create(plan, body)

    def deleted(self, plan: WorkloadPlan) -> WorkloadDeleted:
        """Mark a workload someone else deleted during the run: reported as such, nothing to revert."""
        return self.group_write.deleted(plan)

    # -- revert (carried out by `rollguard.run.group_revert.GroupRevert`) -----------------------------------

    def revert(self, plan: Plan, timeout: int) -> bool:
        """Return every touched or drifted workload to its journal state; True when verified."""
        return self.group_revert.revert(plan, timeout)

    def remove(self, plans: list[WorkloadPlan]) -> None:
        """Delete the workloads the run created (its revert); a 404 means gone already."""
        self.group_revert.remove(plans)

    def wait_removed(self, plans: list[WorkloadPlan]) -> None:
        """Wait until every deleted workload is gone from the live view; one still there is unverified."""
        self.group_revert.wait_removed(plans)

    def try_save(self) -> None:
        """Save the journal; a failure is recorded as an error, not raised (the run goes on)."""
        try:
            self.save()
        except ApiError as exc:
            self.fail(
                f"could not update the journal {self.store.name}: {exc}; {self.store.describe_last_saved()}"
            )

    # -- results ----------------------------------------------------------------------------------------

    def result(self, wp: WorkloadPlan) -> WorkloadResult:
        entry = self.journal.workloads.get(wp.key)
        if entry is not None and entry.phase is EntryPhase.DELETED:  # nothing live to describe
            return WorkloadResult(
                kind=wp.snapshot.ref.kind,
                name=wp.snapshot.ref.name,
                revision_before=wp.snapshot.revision,
                images_before=dict(wp.snapshot.images),
                outcome=entry.phase.outcome,
                paused_before=wp.snapshot.paused,
                notes=list(wp.notes),
                error=entry.note,
            )
        obj = self.live(wp)
        revisions = self.revisions(wp, obj)
        scaled = wp.kind.scale_note(meant=wp.replicas_meant, live=obj)
        pods: list[Obj] = []
        current = wp.kind.new_revision(obj, revisions)
        if current is not None and self.cache is not None:
            pods = [
                pod_record(p, revision=current["metadata"]["name"])
                for p in pods_of_revision(current, self.cache.owners(PODS).children(current))
            ]
        outcome = entry.phase.outcome if entry else WorkloadOutcome.UNCHANGED
        if outcome is WorkloadOutcome.ROLLED_OUT and zero_replicas(obj):
            outcome = WorkloadOutcome.NOT_VERIFIED  # rolled out to no pod: nothing ran the new template
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
            notes=[*wp.notes, *([scaled] if scaled else [])],
            error=entry.note if entry else "",
            pods=sorted(pods, key=lambda p: p["name"]),
            revert_changes=list(wp.revert_changes),
        )
