"""The group lock: a coordination.k8s.io/v1 Lease, renewed while the run lives.

A lease whose holder stopped renewing (a killed run) expires and may be taken over; the
resourceVersion precondition makes sure only one contender wins.
"""

from __future__ import annotations

import datetime as dt
import threading
from dataclasses import dataclass

from rollguard.client import Api
from rollguard.errors import ApiError, Conflict, LockHeldError, NotFound
from rollguard.resources import LEASES
from rollguard.structs import Obj

LEASE_SECONDS = 30
RENEW_EVERY = 10.0


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
    """Acquire, renew and release one group's Lease."""

    def __init__(self, client: Api, *, namespace: str, name: str, holder: str) -> None:
        self._client = client
        self.namespace = namespace
        self.name = name
        self.holder = holder
        self._lease: Obj | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.lost: str = ""

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
        stamp = _micro(dt.datetime.now(dt.UTC))
        spec = {
            "holderIdentity": self.holder,
            "leaseDurationSeconds": LEASE_SECONDS,
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
        self._thread = threading.Thread(target=self._renew_loop, name="lease-renew", daemon=True)
        self._thread.start()

    def _renew_loop(self) -> None:
        while not self._stop.wait(RENEW_EVERY):
            try:
                self.renew()
            except ApiError as exc:  # keep trying: the lease only expires after LEASE_SECONDS
                self.lost = str(exc)

    def renew(self) -> None:
        if self._lease is None:
            return
        body = dict(self._lease)
        body["spec"] = {**body["spec"], "renewTime": _micro(dt.datetime.now(dt.UTC))}
        try:
            self._lease = self._client.replace(LEASES, body, namespace=self.namespace)
            self.lost = ""
        except Conflict:
            current = self._client.get(LEASES, self.name, namespace=self.namespace)
            if read_lease(current).holder != self.holder:
                self.lost = f"lease {self.name} was taken over by {read_lease(current).holder}"
                raise
            self._lease = current
            self.renew()

    def release(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        if self._lease is None:
            return
        try:
            current = self._client.get(LEASES, self.name, namespace=self.namespace)
            if read_lease(current).holder == self.holder:
                self._client.delete(
                    LEASES,
                    self.name,
                    namespace=self.namespace,
                    resource_version=current["metadata"]["resourceVersion"],
                )
        except (NotFound, Conflict):  # gone already, or taken over after expiry: not ours to delete
            pass
        self._lease = None
