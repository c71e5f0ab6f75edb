"""Per-workload claims: one run at a time acts on a workload, whichever group (selector) it came by.

Groups may overlap: ``app=shop`` and ``tier=backend`` both match dc/a, and each group has its own Lease,
so the group lock alone would let two runs act on dc/a at once (one rolls it out, the other reverts it).
Before its first change a run therefore claims every workload of its group: a Lease
``rollguard-claim-<kind>-<name>`` whose holder is the run and whose annotation names the run's group
Lease. A claim is live while that group Lease is live and names the same holder, so it needs no
renewing of its own and dies with its run (a killed run's claims expire with its lease). A repair of
named workloads in no group claims them too, under a Lease of its own (no selector on its claims), so
that a rollout starting meanwhile is refused instead of acting on them at once.

A second run that finds a live claim refuses (exit 2, naming the holder and its group); a dead one
(its run's lease expired, was released or taken over) it takes over, with the resourceVersion
precondition so that only one contender wins. Claims are taken one by one in name order: of two
overlapping runs started at once, at least one gets every claim it needs (the first workload both
want decides). They are released (deleted, only while still ours) when the run ends.
"""

from __future__ import annotations

import datetime as dt
import hashlib
from dataclasses import dataclass

from rollguard.cluster.api import Api
from rollguard.cluster.journal import MANAGED_BY, SELECTOR_ANNOTATION
from rollguard.cluster.lock import GroupLock, read_lease
from rollguard.core.errors import Conflict, NotFound, RefusedError
from rollguard.core.resources import LEASES
from rollguard.core.structs import SHORT_KIND, Obj, WorkloadRef

GROUP_LEASE_ANNOTATION = "rollguard.io/group-lease"
CLAIM_LABEL = "rollguard.io/claim"
_NAME_LIMIT = 253


def claim_name(ref: WorkloadRef) -> str:
    """The claim Lease's name for a workload: readable, and within the API's name limit."""
    name = f"rollguard-claim-{SHORT_KIND[ref.kind]}-{ref.name}"
    if len(name) <= _NAME_LIMIT:
        return name
    digest = hashlib.sha256(name.encode()).hexdigest()[:10]
    return f"{name[: _NAME_LIMIT - 11].rstrip('-.')}-{digest}"


@dataclass(frozen=True)
class ClaimView:
    """Who claims a workload and through which group (pure reading of the claim Lease)."""

    holder: str
    group_lease: str
    selector: str


def read_claim(claim: Obj) -> ClaimView:
    annotations = claim.get("metadata", {}).get("annotations") or {}
    return ClaimView(
        holder=str((claim.get("spec") or {}).get("holderIdentity") or ""),
        group_lease=str(annotations.get(GROUP_LEASE_ANNOTATION) or ""),
        selector=str(annotations.get(SELECTOR_ANNOTATION) or ""),
    )


def claim_live(claim: ClaimView, group_lease: Obj | None, *, at: dt.datetime | None = None) -> bool:
    """A claim holds while its group's Lease is live and names the claim's holder (pure given ``at``)."""
    if group_lease is None or not claim.holder:
        return False
    view = read_lease(group_lease, at=at)
    return view.live and view.holder == claim.holder


class ClaimHeldError(RefusedError):
    """Another live run has claimed a workload this run would touch.

    ``overlap``: this run came to the workload through another group (two selectors match it); else it
    is the same group's run whose journal is not written yet, or a repair of named workloads.
    """

    def __init__(self, *, key: str, claim: ClaimView, lease: str, namespace: str, overlap: bool = True) -> None:
        self.holder = claim.holder
        group = (
            f"rollout group {claim.selector!r}"
            if claim.selector
            else f"a repair of named workloads, Lease {claim.group_lease}"
        )
        fix = "wait for that run to finish (or, if it died, for its lease to expire)"
        super().__init__(
            f"{key} is claimed by {claim.holder} ({group} in {namespace}, claim Lease {lease}): "
            + ("it belongs to two rollout groups, and that run acts on it now" if overlap else "that run acts on it now"),
            fix=fix + "; to stop this, make the groups' selectors exclusive (`rollguard status` names workloads "
            "in two groups)"
            if overlap
            else fix + "; `rollguard status` shows where it stands",
        )


class Claims:
    """Take and release one run's claims on its workloads (``client``: the run's guarded client)."""

    def __init__(self, client: Api, *, namespace: str, lock: GroupLock, selector: str) -> None:
        self._client = client
        self.namespace = namespace
        self.lock = lock
        self.selector = selector
        self.taken: list[str] = []

    def _body(self, ref: WorkloadRef) -> Obj:
        stamp = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        return {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {
                "name": claim_name(ref),
                "namespace": self.namespace,
                "labels": {MANAGED_BY: "rollguard", CLAIM_LABEL: "true"},
                "annotations": {GROUP_LEASE_ANNOTATION: self.lock.name, SELECTOR_ANNOTATION: self.selector},
            },
            "spec": {
                "holderIdentity": self.lock.holder,
                "leaseDurationSeconds": self.lock.duration,
                "acquireTime": stamp,
                "renewTime": stamp,
            },
        }

    def _group_lease(self, name: str) -> Obj | None:
        try:
            return self._client.get(LEASES, name, namespace=self.namespace)
        except NotFound:
            return None

    def _refuse_if_live(self, key: str, current: Obj) -> None:
        view = read_claim(current)
        if view.holder == self.lock.holder:
            return
        # Our own group's earlier run: we hold that group's lock now, so its claim is dead.
        if view.group_lease != self.lock.name and claim_live(view, self._group_lease(view.group_lease)):
            raise ClaimHeldError(
                key=key,
                claim=view,
                lease=current["metadata"]["name"],
                namespace=self.namespace,
                overlap=bool(view.selector and self.selector),
            )

    def check(self, refs: list[WorkloadRef]) -> None:
        """Read-only (preflight): raise `ClaimHeldError` if a live run of another group claims one of ``refs``."""
        for ref in sorted(refs):
            try:
                current = self._client.get(LEASES, claim_name(ref), namespace=self.namespace)
            except NotFound:
                continue
            self._refuse_if_live(ref.key, current)

    def take(self, refs: list[WorkloadRef]) -> None:
        """Claim every workload in ``refs`` (name order), or raise `ClaimHeldError` having taken none."""
        try:
            for ref in sorted(refs):
                self._take(ref)
        except ClaimHeldError:
            self.release()
            raise

    def _take(self, ref: WorkloadRef) -> None:
        body = self._body(ref)
        name = body["metadata"]["name"]
        try:
            self._client.create(LEASES, body, namespace=self.namespace)
            self.taken.append(name)
            return
        except Conflict:
            pass
        for _ in range(5):
            current = self._client.get(LEASES, name, namespace=self.namespace)
            self._refuse_if_live(ref.key, current)
            if read_claim(current).holder == self.lock.holder:  # a retried write of ours had landed
                self.taken.append(name)
                return
            body["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
            try:
                self._client.replace(LEASES, body, namespace=self.namespace)
                self.taken.append(name)
                return
            except Conflict:  # another contender wrote it first: look again
                continue
        raise Conflict(f"claim {name}: too many write conflicts", status=409)

    def release(self) -> None:
        """Delete the claims still ours (resourceVersion precondition: a taken-over one is left alone)."""
        for name in reversed(self.taken):
            try:
                current = self._client.get(LEASES, name, namespace=self.namespace)
                if read_claim(current).holder == self.lock.holder:
                    self._client.delete(
                        LEASES, name, namespace=self.namespace, resource_version=current["metadata"]["resourceVersion"]
                    )
            except (NotFound, Conflict):
                pass
        self.taken = []
