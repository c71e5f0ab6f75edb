"""Claims: one run at a time acts on a workload, whichever group (selector) it came by.

Groups may overlap: ``app=shop`` and ``tier=backend`` both match dc/a, and each group has its own Lease,
so the group lock alone would let two runs act on dc/a at once (one rolls it out, the other reverts it).
Before its first change a run therefore claims every workload of its group, in the namespace's one claim
register: the Lease `REGISTER` (``rollguard-claims``), whose annotation `CLAIMS_ANNOTATION` lists, per
run (its holder identity), the run's group Lease, its selector and the workloads it claims. A claim is
live while that group Lease is live and names the same holder, so it needs no renewing of its own and
dies with its run (a killed run's claims expire with its lease). A repair of named workloads in no group
claims them too, under a Lease of its own (no selector), so that a rollout starting meanwhile is refused
instead of acting on them at once.

Why one register rather than a Lease per workload: claims then cost a run one write to take and one to
release, whatever the size of its group (a Lease per workload cost three requests per workload). Every
write of the register carries its resourceVersion (a new one is created, 409 if another run created it
first), so two runs can never both find a workload free and both claim it: the second write conflicts,
re-reads, and finds the first run's claim. A run takes all its claims in that one write or none.

A second run that finds a live claim on one of its workloads refuses (exit 2, naming the holder and its
group); a dead one (its run's lease expired, was released or taken over; or its run was this group's
earlier run, whose lock this run now holds) is dropped from the register in the same write. When a run
ends it removes its own entry, and the register itself once it lists nobody. Only the group Leases of
runs whose claims overlap ours are read (one GET each), so a run alone in its namespace reads none.

The register's size: an annotation holds up to 256 KiB, some 8,000 claimed workloads at once per
namespace.
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass

from rollguard.cluster.api import Api
from rollguard.cluster.journal import MANAGED_BY
from rollguard.cluster.lock import GroupLock, read_lease
from rollguard.core.errors import Conflict, NotFound, RefusedError
from rollguard.core.resources import LEASES
from rollguard.core.structs import Obj, WorkloadRef

REGISTER = "rollguard-claims"
CLAIMS_ANNOTATION = "rollguard.io/claims"
CLAIM_LABEL = "rollguard.io/claim"
WRITE_ATTEMPTS = 8


@dataclass(frozen=True)
class ClaimView:
    """Who claims a workload and through which group (pure reading of the register)."""

    holder: str
    group_lease: str
    selector: str


@dataclass(frozen=True)
class RunClaims:
    """One run's entry in the register: its group Lease, its selector, the workload keys it claims."""

    holder: str
    group_lease: str
    selector: str
    workloads: tuple[str, ...]

    @property
    def view(self) -> ClaimView:
        return ClaimView(holder=self.holder, group_lease=self.group_lease, selector=self.selector)

    def to_json(self) -> Obj:
        return {"lease": self.group_lease, "selector": self.selector, "workloads": list(self.workloads)}


def read_register(register: Obj | None) -> dict[str, RunClaims]:
    """Every run's entry in the register object (none when there is no register; pure).

    An entry this version cannot read is kept under its holder with what could be read, never guessed
    free: a workload it names stays claimed for as long as its run's lease lives.
    """
    if register is None:
        return {}
    text = ((register.get("metadata") or {}).get("annotations") or {}).get(CLAIMS_ANNOTATION) or "{}"
    try:
        data = json.loads(text)
    except ValueError:
        data = {}
    runs = {}
    for holder, entry in (data if isinstance(data, dict) else {}).items():
        entry = entry if isinstance(entry, dict) else {}
        listed = entry.get("workloads")
        workloads: list[object] = listed if isinstance(listed, list) else []
        runs[str(holder)] = RunClaims(
            holder=str(holder),
            group_lease=str(entry.get("lease") or ""),
            selector=str(entry.get("selector") or ""),
            workloads=tuple(str(w) for w in workloads),
        )
    return runs


def claims_of(register: Obj | None) -> dict[str, ClaimView]:
    """Workload key -> who claims it, as the register says (live or not; pure)."""
    return {key: run.view for run in read_register(register).values() for key in run.workloads}


def claim_live(claim: ClaimView, group_lease: Obj | None, *, at: dt.datetime | None = None) -> bool:
    """A claim holds while its group's Lease is live and names the claim's holder (pure given ``at``)."""
    if group_lease is None or not claim.holder:
        return False
    view = read_lease(group_lease, at=at)
    return view.live and view.holder == claim.holder


@dataclass(frozen=True)
class Contest:
    """What taking claims finds in the register (pure; `contest`)."""

    kept: dict[str, RunClaims]  # the register's entries that stay (ours added by the caller)
    held: tuple[str, ClaimView] | None  # the first of our workloads a live run of another group claims


def overlapping(runs: dict[str, RunClaims], *, mine: RunClaims) -> dict[str, RunClaims]:
    """The other runs that claim one of ``mine``'s workloads, except our own group's earlier runs (pure)."""
    wanted = set(mine.workloads)
    return {
        holder: run
        for holder, run in runs.items()
        if holder != mine.holder and run.group_lease != mine.group_lease and wanted & set(run.workloads)
    }


def contest(runs: dict[str, RunClaims], *, mine: RunClaims, live: dict[str, bool]) -> Contest:
    """Decide on the register ``runs`` for a run that wants ``mine``'s workloads (pure).

    ``live``: for each overlapping run's holder, whether its claims hold. Our own group's earlier runs are
    dead (we hold that group's lock now) and dropped; an overlapping dead run is dropped; a live one that
    claims one of ours is the refusal (the first of our workloads it claims, in name order)."""
    clash = overlapping(runs, mine=mine)
    kept = {}
    for holder, run in runs.items():
        if holder == mine.holder:
            continue  # ours: written anew by the caller
        if run.group_lease == mine.group_lease or (holder in clash and not live.get(holder, False)):
            continue
        kept[holder] = run
    for key in sorted(mine.workloads):
        for holder, run in sorted(clash.items()):
            if live.get(holder, False) and key in run.workloads:
                return Contest(kept=kept, held=(key, run.view))
    return Contest(kept=kept, held=None)


class ClaimHeldError(RefusedError):
    """Another live run has claimed a workload this run would touch.

    ``overlap``: this run came to the workload through another group (two selectors match it); else it
    is the same group's run whose journal is not written yet, or a repair of named workloads.
    """

    def __init__(
        self, *, key: str, claim: ClaimView, lease: str, namespace: str, overlap: bool = True
    ) -> None:
        self.holder = claim.holder
        group = (
            f"rollout group {claim.selector!r}"
            if claim.selector
            else f"a repair of named workloads, Lease {claim.group_lease}"
        )
        fix = "wait for that run to finish (or, if it died, for its lease to expire)"
        super().__init__(
            f"{key} is claimed by {claim.holder} ({group} in {namespace}, claim Lease {lease}): "
            + (
                "it belongs to two rollout groups, and that run acts on it now"
                if overlap
                else "that run acts on it now"
            ),
            fix=fix
            + "; to stop this, make the groups' selectors exclusive (`rollguard status` names workloads "
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
        self.taken: list[str] = []  # the workload keys this run claims now
        self._register: Obj | None = None  # the register as our last write left it

    def _mine(self, refs: list[WorkloadRef]) -> RunClaims:
        return RunClaims(
            holder=self.lock.holder,
            group_lease=self.lock.name,
            selector=self.selector,
            workloads=tuple(sorted({ref.key for ref in refs})),
        )

    def _read(self) -> Obj | None:
        try:
            return self._client.get(LEASES, REGISTER, namespace=self.namespace)
        except NotFound:
            return None

    def _live(self, runs: dict[str, RunClaims]) -> dict[str, bool]:
        """Whether each run's claims hold: one GET of each distinct group Lease."""
        leases: dict[str, Obj | None] = {}
        for run in runs.values():
            if run.group_lease and run.group_lease not in leases:
                try:
                    leases[run.group_lease] = self._client.get(
                        LEASES, run.group_lease, namespace=self.namespace
                    )
                except NotFound:
                    leases[run.group_lease] = None
        return {holder: claim_live(run.view, leases.get(run.group_lease)) for holder, run in runs.items()}

    def _refusal(self, held: tuple[str, ClaimView]) -> ClaimHeldError:
        key, view = held
        return ClaimHeldError(
            key=key,
            claim=view,
            lease=REGISTER,
            namespace=self.namespace,
            overlap=bool(view.selector and self.selector),
        )

    def check(self, refs: list[WorkloadRef]) -> None:
        """Read-only (preflight): raise `ClaimHeldError` if a live run of another group claims one of ``refs``."""
        mine = self._mine(refs)
        runs = read_register(self._read())
        found = contest(runs, mine=mine, live=self._live(overlapping(runs, mine=mine)))
        if found.held is not None:
            raise self._refusal(found.held)

    def take(self, refs: list[WorkloadRef]) -> None:
        """Claim every workload in ``refs`` in one write of the register, or raise `ClaimHeldError` having
        taken none. Alone in its namespace a run sends one request (it creates the register)."""
        mine = self._mine(refs)
        current: Obj | None = None
        for attempt in range(WRITE_ATTEMPTS):
            if attempt:
                current = self._read()
            runs = read_register(current)
            found = contest(runs, mine=mine, live=self._live(overlapping(runs, mine=mine)))
            if found.held is not None:
                raise self._refusal(found.held)
            try:
                self._register = self._write(current, {**found.kept, mine.holder: mine})
                self.taken = list(mine.workloads)
                return
            except Conflict:  # another run wrote (or created) the register first: look again
                continue
        raise Conflict(f"claim register {REGISTER}: too many write conflicts", status=409)

    def _write(self, current: Obj | None, runs: dict[str, RunClaims]) -> Obj | None:
        """Store ``runs`` as the register (create, replace, or delete it when empty), with the
        resourceVersion of ``current`` as precondition; returns the register as stored (None: deleted)."""
        if current is not None and not runs:
            self._client.delete(
                LEASES,
                REGISTER,
                namespace=self.namespace,
                resource_version=current["metadata"]["resourceVersion"],
            )
            return None
        metadata: Obj = {
            "name": REGISTER,
            "namespace": self.namespace,
            "labels": {MANAGED_BY: "rollguard", CLAIM_LABEL: "true"},
            "annotations": {
                CLAIMS_ANNOTATION: json.dumps(
                    {h: r.to_json() for h, r in sorted(runs.items())}, sort_keys=True
                )
            },
        }
        body: Obj = {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": metadata,
            "spec": {},
        }
        if current is None:
            return self._client.create(LEASES, body, namespace=self.namespace)
        metadata["resourceVersion"] = current["metadata"]["resourceVersion"]
        return self._client.replace(LEASES, body, namespace=self.namespace)

    def release(self) -> None:
        """Remove our entry from the register (the register with it when it lists nobody else); one write
        while nobody else wrote the register since our last one."""
        if not self.taken:
            return
        current = self._register
        for attempt in range(WRITE_ATTEMPTS):
            if attempt or current is None:
                current = self._read()
            runs = read_register(current)
            if current is None or self.lock.holder not in runs:  # gone (a run that found us dead dropped it)
                break
            try:
                self._write(current, {h: r for h, r in runs.items() if h != self.lock.holder})
                break
            except NotFound:
                break
            except Conflict:
                current = None
                continue
        self.taken = []
        self._register = None
