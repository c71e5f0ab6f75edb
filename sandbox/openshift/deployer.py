"""The deployer, emulated in-process: phases of a rollout's RC and the Rolling/Recreate strategies.

On OpenShift a deployer controller starts a deployer pod for each new RC (phase New -> Pending ->
Running; here New -> Running, as the emulated pod starts at once) and the pod runs the strategy,
scaling RCs until done (Complete) or out of time (Failed). Here the same state machine advances one
step per reconcile of the DC, driven by RC watch events (kube-controller-manager reports the RCs'
ready/available pods) and by a timer for the deadline; the deployer pod's name is recorded on the RC
but no pod runs. Failure rollback is not done here: the DC
controller scales the last complete RC back up once the latest RC is Failed, as on OpenShift.
"""

from __future__ import annotations

import logging
import threading
import time

from sandbox.openshift import appsutil as u
from sandbox.openshift.events import Recorder
from sandbox.openshift.informer import Informer
from sandbox.openshift.kube import JSON, MERGE_PATCH, ApiError, Kube
from sandbox.openshift.workqueue import Requeue

log = logging.getLogger(__name__)


def _fresh(rc: JSON) -> bool:
    """True when the RC's status describes its current spec (kube-controller-manager caught up)."""
    status = rc.get("status") or {}
    return int(status.get("observedGeneration") or 0) >= int(rc["metadata"].get("generation") or 0)


class Deployer:
    """Advances rollouts; one call of `step` per reconcile, never blocking."""

    def __init__(self, kube: Kube, rcs: Informer, recorder: Recorder) -> None:
        self.kube, self.rcs, self.recorder = kube, rcs, recorder
        self._last_progress: dict[str, float] = {}  # RC uid -> wall time of the last scale made
        self._lock = threading.Lock()
        # per worker thread: annotations that start the rollout (Pending -> Running), to be sent along
        # with the first write to the RC instead of in a write of their own
        self._local = threading.local()

    def step(self, dc: JSON, rcs: list[JSON], rc: JSON) -> float | None:
        """Advance the rollout of `rc`; return seconds until its deadline, None when it has ended."""
        phase = u.phase_of(rc)
        if u.is_cancelled(rc) and phase in (u.NEW, u.PENDING, u.RUNNING, ""):
            self._transition(rc, u.FAILED, {u.DEPLOYER_COMPLETED_AT: u.go_time()}, guard=True)
            self.forget(rc)
            name = f"{rc['metadata']['namespace']}/{rc['metadata']['name']}"
            self.recorder.event(dc, "Normal", "RolloutCancelled", f'Rollout for "{name}" cancelled')
            return None
        starting = None
        if phase in (u.NEW, u.PENDING, ""):
            # the deployer "pod" is created and starts at once: New goes straight to Running, and that
            # change rides on the strategy's first write to the RC rather than costing a write of its own
            ts = u.go_time()
            starting = {u.PHASE: u.RUNNING, u.DEPLOYER_STARTED_AT: ts}
            if phase != u.PENDING:
                starting |= {
                    u.DEPLOYER_POD: u.deployer_pod_name(rc["metadata"]["name"]),
                    u.DEPLOYER_CREATED_AT: ts,
                }
            with self._lock:
                self._last_progress[rc["metadata"]["uid"]] = time.time()
        elif phase != u.RUNNING:
            return None
        return self._run_strategy(dc, rcs, rc, starting)

    def forget(self, rc: JSON) -> None:
        with self._lock:
            self._last_progress.pop(rc["metadata"].get("uid", ""), None)

    # -- strategies -------------------------------------------------------------------------------------

    def _run_strategy(
        self, dc: JSON, rcs: list[JSON], to: JSON, starting: dict[str, str] | None
    ) -> float | None:
        self._local.starting, self._local.to = starting, to["metadata"]["name"]
        try:
            result = self._strategy(dc, rcs, to)
            if self._local.starting is not None:  # the strategy did not write the RC: start it on its own
                current = self.rcs.get(to["metadata"]["namespace"], to["metadata"]["name"]) or to
                self._transition(current, u.RUNNING, {})
            return result
        finally:
            self._local.starting = None

    def _strategy(self, dc: JSON, rcs: list[JSON], to: JSON) -> float | None:
        config = u.decode_config(to) or dc
        try:
            desired = int(u.annotations_of(to).get(u.DESIRED_REPLICAS, ""))
        except ValueError:
            desired = int(config.get("spec", {}).get("replicas") or 0)
        older = [rc for rc in rcs if u.version_of(rc) < u.version_of(to)]
        complete = [rc for rc in older if u.phase_of(rc) == u.COMPLETE]
        source = max(complete, key=u.version_of) if complete else None
        for rc in older:  # everything but the last complete RC goes to zero first
            if rc is not source and u.spec_replicas(rc) > 0:
                self._scale(rc, 0)
        strategy = config.get("spec", {}).get("strategy") or {}
        if strategy.get("type", "Rolling") == "Rolling" and source is not None:
            done, progressed = self._rolling(strategy.get("rollingParams") or {}, source, to, desired)
        else:
            done, progressed = self._recreate(source, to, desired)
        uid = to["metadata"]["uid"]
        now = time.time()
        with self._lock:
            if progressed or uid not in self._last_progress:
                started = u.parse_time(u.annotations_of(to).get(u.DEPLOYER_STARTED_AT))
                self._last_progress[uid] = now if progressed or started is None else started
            last = self._last_progress[uid]
        if done:
            self._transition(
                to,
                u.COMPLETE,
                {
                    u.DEPLOYMENT_REPLICAS: str(desired),
                    u.DESIRED_REPLICAS: None,
                    u.DEPLOYER_COMPLETED_AT: u.go_time(),
                },
                guard=True,
            )
            self.forget(to)
            return None
        ns, name = to["metadata"]["namespace"], to["metadata"]["name"]
        # the deployer pod's activeDeadlineSeconds: the kubelet kills it, the RC fails without a reason
        started = u.parse_time(u.annotations_of(to).get(u.DEPLOYER_STARTED_AT)) or now
        killed_in = started + int(strategy.get("activeDeadlineSeconds") or u.DEFAULT_ACTIVE_DEADLINE) - now
        if killed_in <= 0:
            log.info("rollout of %s/%s failed: deployer pod reached its active deadline", ns, name)
            self._transition(to, u.FAILED, {u.DEPLOYER_COMPLETED_AT: u.go_time()}, guard=True)
            self.forget(to)
            return None
        timeout = u.timeout_of(config)
        left = last + timeout - now
        if left > 0:
            return min(left, killed_in) + 0.05
        reason = f'pods for rc "{ns}/{name}" took longer than {timeout} seconds to become ready'
        log.info("rollout of %s/%s failed: %s", ns, name, reason)
        self._transition(
            to, u.FAILED, {u.STATUS_REASON: reason, u.DEPLOYER_COMPLETED_AT: u.go_time()}, guard=True
        )
        self.forget(to)
        return None

    def _rolling(self, params: JSON, old: JSON, new: JSON, desired: int) -> tuple[bool, bool]:
        """One pass of the rolling updater's loop: scale up within the surge, down within availability."""
        surge, unavailable = u.fenceposts(params, desired)
        min_available = max(0, desired - unavailable)
        old_n, new_n = u.spec_replicas(old), u.spec_replicas(new)
        if desired == 0:
            min_available = 0
        progressed = False
        if new_n != desired:
            increment = desired - new_n if old_n == 0 else (desired + surge) - (old_n + new_n)
            if increment > 0:
                new_n = min(desired, new_n + increment)
                new = self._scale(new, new_n)
                progressed = True
        if old_n > 0:
            new_available = u.status_int(new, "availableReplicas") if _fresh(new) else 0
            decrement = (old_n + new_n) - min_available - (new_n - new_available)
            target = max(0, old_n - decrement) if decrement > 0 else old_n
            if new_n == desired and new_available >= desired:
                target = 0
            if target != old_n:
                self._scale(old, target)
                old_n = target
                progressed = True
        return new_n == desired and old_n == 0, progressed

    def _recreate(self, old: JSON | None, new: JSON, desired: int) -> tuple[bool, bool]:
        """Recreate (also a Rolling DC's first rollout): old down to zero, then new up and accepted."""
        if old is not None:
            if u.spec_replicas(old) > 0:
                self._scale(old, 0)
                return False, True
            if not _fresh(old) or u.status_int(old, "replicas") > 0:
                return False, False
        new_n = u.spec_replicas(new)
        available = u.status_int(new, "availableReplicas") if _fresh(new) else -1
        if desired == 0:
            return True, False
        if old is not None and desired > 1:  # one replica first, accepted before the full scale-up
            if new_n == 0:
                self._scale(new, 1)
                return False, True
            if new_n == 1:
                if available >= 1:
                    self._scale(new, desired)
                    return False, True
                return False, False
            return _fresh(new) and u.status_int(new, "replicas") == desired, False
        if new_n != desired:
            self._scale(new, desired)
            return False, True
        return available >= desired, False

    # -- writes -----------------------------------------------------------------------------------------

    def _scale(self, rc: JSON, replicas: int) -> JSON:
        m = rc["metadata"]
        body: JSON = {"spec": {"replicas": replicas}}
        starting = getattr(self._local, "starting", None)
        if starting is not None and m["name"] == self._local.to:
            body["metadata"] = {"annotations": starting}
        try:
            updated = self.kube.request("PATCH", u.rc_path(rc), body, content_type=MERGE_PATCH)
        except ApiError as e:
            if e.status == 404:
                return rc
            raise
        if "metadata" in body:
            self._local.starting = None
            log.info("%s/%s: New -> Running", m["namespace"], m["name"])
        self.rcs.store(updated)
        return updated

    def _transition(self, rc: JSON, phase: str, extra: dict[str, str | None], guard: bool = False) -> JSON:
        """Set the phase annotation (and others); with `guard`, only on the RC as we read it."""
        m = rc["metadata"]
        path = u.rc_path(rc)
        starting = getattr(self._local, "starting", None)
        if starting is not None and m["name"] == self._local.to:  # Pending straight to the next phase
            extra = {**starting, **extra}
            self._local.starting = None
        patch: JSON = {"metadata": {"annotations": {**extra, u.PHASE: phase}}}
        for attempt in range(3):
            if guard:
                patch["metadata"]["resourceVersion"] = rc["metadata"]["resourceVersion"]
            try:
                updated = self.kube.request("PATCH", path, patch, content_type=MERGE_PATCH)
                break
            except ApiError as e:
                if e.status != 409 or attempt == 2:
                    raise
                # kube-controller-manager updates RC status all the time: re-read, and go on only if
                # nothing that matters here (phase, cancellation) changed meanwhile
                fresh = self.kube.get(path)
                self.rcs.store(fresh)
                if u.phase_of(fresh) != u.phase_of(rc) or u.is_cancelled(fresh) != u.is_cancelled(rc):
                    raise Requeue(f"{m['name']} changed while moving it to {phase}") from e
                rc = fresh
        self.rcs.store(updated)
        log.info("%s/%s: %s -> %s", m["namespace"], m["name"], u.phase_of(rc) or "?", phase)
        return updated
