"""The group lock: a coordination.k8s.io/v1 Lease, renewed while the run lives, and the fence on it.

A lease whose holder stopped renewing (a killed run) expires and may be taken over; the
resourceVersion precondition makes sure only one contender wins.

Fencing: a run that was frozen (SIGSTOP, a node under memory pressure, a partitioned step) or whose
renewals fail may wake up after another run took the group over. `GroupLock.prove` is called before
every mutating request of a run (`rollguard.cluster.client.Client.guarded`): it passes while the last
successful renew is younger than the lease duration less a margin, measured on this process's
*monotonic* clock from the moment that renew was sent (wall-clock jumps cannot extend it, and a
process that was stopped sees the time it lost). Past that age only a renew whose resourceVersion
precondition still holds proves that nobody took the lease in between; anything else (the lease
names another run, was deleted, or cannot be reached) loses the group for good: `lost` says why and
who holds it now, ``on_lost`` wakes the run, and every later `prove` raises `Superseded`.
The margin covers the other runs' clock skew (they judge expiry by their wall clock against our
``renewTime``) and a request's time in flight.
"""

from __future__ import annotations

import datetime as dt
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from rollguard.cluster.api import Api
from rollguard.core.errors import ApiError, Conflict, LockHeldError, NotFound, Superseded
from rollguard.core.resources import LEASES
from rollguard.core.structs import Obj

LEASE_SECONDS = 30  # the default --lease-duration
MIN_LEASE_SECONDS = 5
MAX_LEASE_SECONDS = 3600
RETRY_EVERY = 1.0  # a failed renew is retried this often, not at the next regular renew


def renew_every(duration: float) -> float:
    """The regular renew period: a third of the lease, so two renews may fail before the fence trips."""
    return duration / 3


def fence_margin(duration: float) -> float:
    """How long before the lease's expiry a run stops trusting it (skew and request time in flight)."""
    return max(1.0, duration / 5)


def _micro(ts: dt.datetime) -> str:
    return ts.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _parse(text: str | None) -> dt.datetime | None:
    if not text:
        return None
    for fmt in ("%Y-%m-%dT%H:%M:%S.%fZ", "%Y-%m-%dT%H:%M:%SZ"):
        try:
            return dt.datetime.strptime(text, fmt).replace(tzinfo=dt.UTC)
        except ValueError:
            continue
    return None


@dataclass(frozen=True)
class LeaseView:
    """Who holds a lease and for how much longer (pure reading of the object)."""

    holder: str
    expires_in: float

    @property
    def live(self) -> bool:
        return bool(self.holder) and self.expires_in > 0


def read_lease(lease: Obj, *, at: dt.datetime | None = None) -> LeaseView:
    spec = lease.get("spec", {}) or {}
    renewed = _parse(spec.get("renewTime")) or _parse(spec.get("acquireTime"))
    duration = int(spec.get("leaseDurationSeconds") or LEASE_SECONDS)
    current = at or dt.datetime.now(dt.UTC)
    expires_in = (renewed + dt.timedelta(seconds=duration) - current).total_seconds() if renewed else 0.0
    return LeaseView(holder=str(spec.get("holderIdentity") or ""), expires_in=expires_in)


def held(view: LeaseView | None, *, lease: str, holder: str) -> LockHeldError | None:
    """The refusal when another live run (not ``holder``) holds the lease ``view`` shows, else None (pure)."""
    if view is not None and view.live and view.holder != holder:
        return LockHeldError(lease=lease, holder=view.holder, expires_in=view.expires_in)
    return None


class GroupLock:
    """Acquire, renew, prove and release one group's Lease.

    ``client`` must be the unguarded one: renewing is how the run proves it holds the lease.
    """

    def __init__(
        self,
        client: Api,
        *,
        namespace: str,
        name: str,
        holder: str,
        duration: int = LEASE_SECONDS,
        on_lost: Callable[[], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._client = client
        self.namespace = namespace
        self.name = name
        self.holder = holder
        self.duration = duration
        self._on_lost = on_lost
        self._clock = clock
        self._lease: Obj | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._renewing = threading.Lock()  # the renewer thread and `prove` renew one at a time
        self.renewed_at: float | None = None  # monotonic time the last successful renew was sent
        self.last_error = ""  # the last failed renew's error (renewals are retried until expiry)
        self.lost = ""  # why the group was lost, naming who holds it now; empty while held
        self.held_by = ""  # who held the lease when it was lost ("" when nobody did)

    def view(self) -> LeaseView | None:
        """Read-only: who holds the lease now (None: there is no lease)."""
        try:
            return read_lease(self._client.get(LEASES, self.name, namespace=self.namespace))
        except NotFound:
            return None

    def check(self) -> None:
        """Read-only: raise LockHeldError when another live run holds the lease."""
        refusal = held(self.view(), lease=self.name, holder=self.holder)
        if refusal is not None:
            raise refusal

    def acquire(self) -> None:
        sent = self._clock()
        stamp = _micro(dt.datetime.now(dt.UTC))
        spec = {
            "holderIdentity": self.holder,
            "leaseDurationSeconds": self.duration,
            "acquireTime": stamp,
            "renewTime": stamp,
        }
        try:
            self._lease = self._client.create(
                LEASES,
                {
                    "apiVersion": "coordination.k8s.io/v1",
                    "kind": "Lease",
                    "metadata": {
                        "name": self.name,
                        "namespace": self.namespace,
                        "labels": {"app.kubernetes.io/managed-by": "rollguard"},
                    },
                    "spec": spec,
                },
                namespace=self.namespace,
            )
        except Conflict:
            current = self._client.get(LEASES, self.name, namespace=self.namespace)
            view = read_lease(current)
            if view.live and view.holder != self.holder:
                raise LockHeldError(lease=self.name, holder=view.holder, expires_in=view.expires_in) from None
            # Expired (its run died) or ours already (a retried create): take it over.
            transitions = int(current.get("spec", {}).get("leaseTransitions") or 0) + 1
            current["spec"] = {**spec, "leaseTransitions": transitions}
            try:
                self._lease = self._client.replace(LEASES, current, namespace=self.namespace)
            except Conflict:
                latest = self._client.get(LEASES, self.name, namespace=self.namespace)
                view = read_lease(latest)
                if view.holder != self.holder:
                    raise LockHeldError(
                        lease=self.name, holder=view.holder, expires_in=view.expires_in
                    ) from None
                # Ours: a retried take-over whose first answer was lost had landed.
                self._lease = latest
        self.renewed_at = sent
        self._thread = threading.Thread(target=self._renew_loop, name="lease-renew", daemon=True)
        self._thread.start()

    # -- holding on -----------------------------------------------------------------------------------

    @property
    def safe_for(self) -> float:
        """Seconds the last successful renew still proves the lease ours (<= 0: it proves nothing)."""
        if self.renewed_at is None:
            return 0.0
        return self.renewed_at + self.duration - fence_margin(self.duration) - self._clock()

    def _renew_loop(self) -> None:
        wait = renew_every(self.duration)
        while not self._stop.wait(wait):
            if self.lost:
                return
            try:
                self.renew()
                wait = renew_every(self.duration)
            except ApiError as exc:
                # Transient (or not): retried every RETRY_EVERY, well before the lease expires; once
                # the last good renew proves nothing any more the group is lost.
                self.last_error = str(exc)
                if self.safe_for <= 0:
                    self.lose(
                        f"its lease was not renewed for {self.duration - fence_margin(self.duration):.0f}s "
                        f"(last error: {exc})"
                    )
                    return
                wait = min(RETRY_EVERY, max(self.safe_for / 2, 0.1))

    def renew(self) -> None:
        """A renew with the resourceVersion precondition; loses the group when another run holds it.

        A renew held through an API outage (`rollguard.cluster.pulse`) lands with the renewTime it was
        sent with, which may be past the lease by then: it proves nothing, and to others the lease
        looks expired. It is renewed again at once with a fresh time (the server answers again, so
        that one is quick; a renew that answers in time ends the loop).
        """
        with self._renewing:
            while self._lease is not None and not self.lost:
                self._renew_once()
                if self.safe_for > 0:
                    return

    def _renew_once(self) -> None:
        """One renew, its answer or its loss."""
        if self._lease is None or self.lost:
            return
        sent = self._clock()
        body = dict(self._lease)
        body["spec"] = {**body["spec"], "renewTime": _micro(dt.datetime.now(dt.UTC))}
        try:
            self._lease = self._client.replace(LEASES, body, namespace=self.namespace)
        except NotFound:
            self.lose("its lease was deleted (released or removed by someone else)")
            return
        except Conflict:
            current = self._client.get(LEASES, self.name, namespace=self.namespace)
            if read_lease(current).holder != self.holder:
                self.lose("its lease was taken over")
                return
            # Still ours (a retried renew whose answer was lost had landed): renew from it.
            self._lease = current
            body = dict(current)
            body["spec"] = {**body["spec"], "renewTime": _micro(dt.datetime.now(dt.UTC))}
            self._lease = self._client.replace(LEASES, body, namespace=self.namespace)
        self.renewed_at = sent
        self.last_error = ""

    def prove(self) -> None:
        """Raise `Superseded` unless this run provably still holds the group (before every write).

        Cheap while the last renew is young; past that, one renew decides. Not yet acquired (a run
        of workloads in no group, or the read-only preflight): nothing to prove.
        """
        if self.lost:
            raise Superseded(self.lost, holder=self.held_by)
        if self.renewed_at is None or self.safe_for > 0:
            return
        try:
            self.renew()
        except ApiError as exc:
            self.lose(f"its lease could not be renewed in time ({exc})")
        if not self.lost and self.safe_for <= 0:
            self.lose("its lease could not be renewed in time")
        if self.lost:
            raise Superseded(self.lost, holder=self.held_by)

    def lose(self, why: str) -> None:
        """Give the group up for good: say why and who holds it now (one read), wake the run."""
        if self.lost:
            return
        try:
            view = self.view()
            if view is None:
                now_text = "no run holds it now (the lease is gone)"
            elif view.holder != self.holder and view.live:
                self.held_by = view.holder
                now_text = f"it is held now by {view.holder} (expires in {view.expires_in:.0f}s)"
            elif view.holder != self.holder:
                self.held_by = view.holder
                now_text = f"its last holder is {view.holder}, whose lease expired too"
            else:
                now_text = "no other run holds it yet, but it may at any moment"
        except ApiError as exc:
            now_text = f"who holds it now is unknown (the lease cannot be read: {exc})"
        self.lost = f"this run lost the group's lock (Lease {self.name}): {why}; {now_text}"
        self._stop.set()
        if self._on_lost is not None:
            self._on_lost()

    def release(self) -> None:
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=5)
        if self._lease is None or self.lost:  # a lost lease is someone else's (or nobody's) now
            return
        # One DELETE with the resourceVersion of our last renew: it can only delete the lease as we
        # left it. A conflict means it changed since (a renew of ours whose answer was lost, or a take-
        # over after expiry): read it and delete it only while it still names us.
        try:
            try:
                self._delete(self._lease)
            except Conflict:
                current = self._client.get(LEASES, self.name, namespace=self.namespace)
                if read_lease(current).holder == self.holder:
                    self._delete(current)
        except (NotFound, Conflict):  # gone already, or taken over after expiry: not ours to delete
            pass
        self._lease = None

    def _delete(self, lease: Obj) -> None:
        self._client.delete(
            LEASES, self.name, namespace=self.namespace, resource_version=lease["metadata"]["resourceVersion"]
        )
