"""The rollout preflight's independent reads, all sent at once, and kept for the run's watches.

Why: read one after another, a preflight's dozen reads cost a dozen round trips before the first
write, and the run's live cache then listed the same workloads and revisions again before it could
watch. `Prefetch` sends every read that depends on no other at once when the preflight starts: the
namespace, each kind's workloads (the whole namespace's, matched to the selector here, then that kind's
revisions as soon as some match), the pods, the permission rules (`rollguard.cluster.access.rules`), the
group's Lease and its journal. The preflight (`rollguard.plan.rollout_read.read_rollout`) still *consumes*
them one by one in its fixed order, so the first refusal is the one the sequential reads found (a read
that failed is raised only when its turn comes; one after a refusal is never looked at).

A kind the command line names (``--image dc/api=...``, a manifest of a Deployment: ``expected``) will be
in the group unless the run is refused anyway, so its revisions are listed at once with the rest rather
than after its workloads' list came back: one round trip fewer before the first write. A kind named
nowhere is listed as before, once some of its workloads match the selector; an early list of a kind that
then matches nothing is the one read too many, and only a run that is refused pays it.

The lists are kept (`Listed`: items and the resourceVersion they were read at) and handed to the run's
live cache (`Plan.listed`, `rollguard.cluster.cache.NamespaceCache.seed`), which watches on from that
version as an informer does after its list: nothing is read twice, and the changes since preflight
arrive as watch events (an expired version, 410 Gone, makes the cache list again itself).

Workloads are listed whole and matched here with `rollguard.core.selectors.matches` (the selector as
`rollguard.plan.inputs.parse_selector` normalized it): the live cache watches every workload of the
namespace anyway (one that someone relabels out of the group during the run is still seen, as an edit),
and a manifest's workload outside the group is found in the same list instead of by a GET of its own.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Collection, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import TypeVar

from rollguard.cluster.access import rules
from rollguard.cluster.api import Api
from rollguard.cluster.cache import Listed
from rollguard.cluster.journal import Journal, JournalStore
from rollguard.cluster.lock import GroupLock, LeaseView
from rollguard.core.errors import ApiError, Forbidden, NotFound
from rollguard.core.resources import PODS, Resource
from rollguard.core.selectors import matches
from rollguard.core.structs import Obj
from rollguard.kinds import KINDS, Kind, Owners
from rollguard.plan.rollout_decide import Found, GroupListing
from rollguard.state.inventory import namespace_exists

READERS = 10  # reads in flight at once: about as many as a preflight sends
T = TypeVar("T")


def list_whole(client: Api, res: Resource, namespace: str) -> Listed:
    listing = client.list(res, namespace=namespace)
    return Listed(listing.get("items", []), str((listing.get("metadata") or {}).get("resourceVersion") or ""))


@dataclass(frozen=True)
class KindRead:
    """One kind's workloads in the namespace and, when some are in the group, its revisions."""

    kind: Kind
    listed: Listed | None = None  # None: the cluster has no such kind, or we may not list it
    forbidden: Forbidden | None = None
    group: tuple[Obj, ...] = ()
    revisions: Listed | None = None
    revisions_error: ApiError | None = None  # raised when the revisions are consumed, not before


def labels(obj: Obj) -> dict[str, str]:
    return dict((obj.get("metadata") or {}).get("labels") or {})


class Prefetch:
    """The reads of one rollout preflight, started at once; each accessor waits for its own answer."""

    def __init__(
        self,
        client: Api,
        *,
        namespace: str,
        selector: str,
        promote_from: str | None,
        lock: GroupLock,
        journal_store: JournalStore,
        expected: Collection[str] = (),
    ) -> None:
        self._client, self.namespace, self.selector = client, namespace, selector
        self._pool = ThreadPoolExecutor(max_workers=READERS, thread_name_prefix="preflight")
        submit = self._submit
        # first in the queue: a kind's read that waits for its early revisions finds them started already
        self._early = {
            name: submit(list_whole, client, kind.revisions, namespace)
            for name, kind in KINDS.items()
            if name in expected
        }
        self._namespace = submit(namespace_exists, client, namespace)
        self._kinds = {name: submit(self._read_kind, kind) for name, kind in KINDS.items()}
        self._rules = submit(rules, client, [namespace])
        self._lease = submit(lock.view)
        self._journal = submit(journal_store.load)
        self._pods = submit(list_whole, client, PODS, namespace)
        self._promote_namespace = submit(namespace_exists, client, promote_from) if promote_from else None

    def _submit(self, fn: Callable[..., T], *args: object) -> Future[T]:
        return self._pool.submit(fn, *args)

    def close(self) -> None:
        """Stop what has not started (a refusal came first); what is in flight ends by itself."""
        self._pool.shutdown(wait=False, cancel_futures=True)

    def _read_kind(self, kind: Kind) -> KindRead:
        try:
            listed = list_whole(self._client, kind.resource, self.namespace)
        except NotFound:  # the cluster has no such kind (no OpenShift): none of it in the group
            return KindRead(kind)
        except Forbidden as exc:
            return KindRead(kind, forbidden=exc)
        group = tuple(o for o in listed.items if matches(self.selector, labels(o)))
        if not group:
            return KindRead(kind, listed=listed)
        early = self._early.get(kind.kind)
        try:
            revisions = (
                early.result()
                if early is not None
                else list_whole(self._client, kind.revisions, self.namespace)
            )
        except ApiError as exc:
            return KindRead(kind, listed=listed, group=group, revisions_error=exc)
        return KindRead(kind, listed=listed, group=group, revisions=revisions)

    # -- the answers, each when its turn comes ---------------------------------------------------------

    def namespace_found(self) -> bool:
        return self._namespace.result()

    def promote_namespace_found(self) -> bool:
        return self._promote_namespace.result() if self._promote_namespace is not None else True

    def kinds(self) -> list[KindRead]:
        return [future.result() for future in self._kinds.values()]

    def listing(self) -> GroupListing:
        """The group: every DC and Deployment matching the selector (or the first kind we may not list)."""
        found: list[Found] = []
        for read in self.kinds():
            if read.forbidden is not None:
                return GroupListing(workloads=[], forbidden=(read.kind.resource, read.forbidden))
            found.extend(Found(read.kind, obj) for obj in read.group)
        return GroupListing(sorted(found, key=lambda f: (f.kind.kind, f.obj["metadata"]["name"])))

    def namespace_labels(self) -> dict[tuple[str, str], dict[str, str]]:
        """(kind, name) -> labels of every workload listed in the namespace, in the group or not."""
        return {
            (read.kind.kind, str(obj["metadata"]["name"])): labels(obj)
            for read in self.kinds()
            if read.listed is not None
            for obj in read.listed.items
        }

    def rules(self) -> dict[str, list[Obj]]:
        return self._rules.result()

    def lease(self) -> LeaseView | None:
        return self._lease.result()

    def journal(self) -> Journal | None:
        return self._journal.result()

    def with_revisions(self, found: Iterable[Found]) -> list[Found]:
        """``found`` with each workload's revisions, from its kind's list (raising that list's error)."""
        owners: dict[str, Owners] = {}
        reads = {read.kind.kind: read for read in self.kinds()}
        out = []
        for f in found:
            if f.kind.kind not in owners:
                read = reads[f.kind.kind]
                if read.revisions_error is not None:
                    raise read.revisions_error
                owners[f.kind.kind] = Owners(read.revisions.items if read.revisions else [])
            out.append(Found(f.kind, f.obj, f.kind.owned(f.obj, owners[f.kind.kind].candidates(f.obj))))
        return out

    def listed(self) -> dict[Resource, Listed]:
        """Every list read whole, by resource, for the run's live cache to watch on from."""
        kept: dict[Resource, Listed] = {}
        for read in self.kinds():
            if read.listed is not None:
                kept[read.kind.resource] = read.listed
            if read.revisions is not None:
                kept[read.kind.revisions] = read.revisions
        with contextlib.suppress(ApiError):  # else the cache lists them itself (and meets the error there)
            kept[PODS] = self._pods.result()
        return kept
