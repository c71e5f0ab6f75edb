"""Reading namespaces (or the whole cluster) for the state model, in memory bounded by the report.

Never per workload and never one unbounded response:

- Every LIST is paginated and each page reduced to what the state model reads (`rollguard.cluster.client`,
  `rollguard.cluster.reduce`) before the next page is fetched.
- Cluster-wide without a selector: one paginated list per kind, the seven read side by side in
  namespace order (the API server lists from etcd in key order, ``namespace/name``). A namespace is
  assessed as soon as every list has passed it and its objects are dropped: memory is the biggest
  namespace plus the states, not the cluster. A list that breaks that order is refused, never
  assessed half-read (`OutOfOrder`).
- With a selector: the workloads first (the server applies the selector), then only the revisions
  and pods of those: RCs by their ``openshift.io/deployment-config.name`` label, ReplicaSets and pods
  by each workload's own selector (what its controllers select them by). `rollguard.state.list_plan`
  decides the requests: with -A, one set of queries cluster-wide when that is fewer requests than
  asking each matched namespace, the answers kept only in the namespace whose own workloads select
  them, streamed in namespace order as above. Requests and memory grow with what the selector
  matches; a namespace where it matches many reads its lists whole instead.
- Journal ConfigMaps and Leases: by label (few and small).
"""

from __future__ import annotations

import datetime as dt
import heapq
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor

from rollguard.cluster.api import Api
from rollguard.cluster.journal import JOURNAL_LABEL, MANAGED_BY
from rollguard.cluster.reduce import reducer_for
from rollguard.core.errors import ApiError, Forbidden, NoSuchNamespace, NotFound, RefusedError
from rollguard.core.resources import (
    CONFIG_MAPS,
    DEPLOYMENT_CONFIGS,
    DEPLOYMENTS,
    LEASES,
    NAMESPACES,
    PODS,
    REPLICA_SETS,
    REPLICATION_CONTROLLERS,
    Resource,
)
from rollguard.core.structs import Obj
from rollguard.kinds import KINDS
from rollguard.state.assessment import assess_namespace
from rollguard.state.list_plan import OWNED, ListPlan, Need, keeps, needs, plan_list
from rollguard.state.model import NamespaceState

Lists = dict[str, list[Obj]]

# assess_namespace's argument -> (resource, server-side label selector, filtered by the user's selector)
LISTS: dict[str, tuple[Resource, str | None, bool]] = {
    "dcs": (DEPLOYMENT_CONFIGS, None, True),
    "deployments": (DEPLOYMENTS, None, True),
    "rcs": (REPLICATION_CONTROLLERS, None, False),
    "rss": (REPLICA_SETS, None, False),
    "pods": (PODS, None, False),
    "configmaps": (CONFIG_MAPS, f"{JOURNAL_LABEL}=true", False),
    "leases": (LEASES, f"{MANAGED_BY}=rollguard", False),
}
WORKLOADS = ("dcs", "deployments")
_ARG = {res: arg for arg, (res, _, _) in LISTS.items()}
_PARALLEL = 4  # namespaces read at once when each is read on its own (-n NS..., or narrowed by -l)


class OutOfOrder(ApiError):
    """A cluster-wide list did not come in namespace order: streaming it would mix namespaces up."""


def _order(namespace: str) -> str:
    """Where a namespace's objects sit in a list: etcd's key order, ``namespace/name``."""
    return namespace + "/"


def _key(obj: Obj) -> str:
    meta = obj.get("metadata", {})
    return f"{meta.get('namespace', '')}/{meta.get('name', '')}"


class _Reader:
    """The lists of one read; ``problems`` given: forbidden lists are noted there instead of refused."""

    def __init__(self, client: Api, problems: list[str] | None = None) -> None:
        self.client = client
        self.problems = problems

    def items(self, res: Resource, *, namespace: str | None, selector: str | None) -> Iterator[Obj]:
        """Every reduced object of one list, page by page.

        After an expired continue token the client hands the full list (client-go's fallback); the
        objects before the last one already handed on are skipped, in the list's key order.
        """
        where = f"in namespace {namespace!r}" if namespace else "cluster-wide"
        last = ""
        try:
            for page in self.client.pages(
                res, namespace=namespace, selector=selector, reduce=reducer_for(res)
            ):
                for obj in page.items:
                    key = _key(obj)
                    if page.restarted and key <= last:
                        continue
                    last = key
                    yield obj
        except NotFound:
            if any(kind.optional_api and kind.resource == res for kind in KINDS.values()):
                return  # e.g. not an OpenShift cluster: no DCs to read
            if self.problems is not None:
                return
            raise RefusedError(
                f"cannot list {res.label} {where}: not found", fix="check the namespace"
            ) from None
        except Forbidden as exc:
            if self.problems is not None:
                self.problems.append(f"not allowed to list {res.label} {where}: findings may be incomplete")
                return
            raise RefusedError(
                f"not allowed to list {res.label} {where}",
                fix="grant 'list' on it (see tekton/drift-check-cronjob.yaml for the read-only Role)",
            ) from exc

    def listed(self, arg: str, *, namespace: str | None, selector: str | None = None) -> list[Obj]:
        res, fixed, filtered = LISTS[arg]
        return list(self.items(res, namespace=namespace, selector=selector if filtered else fixed))

    # -- by owner (`rollguard.state.list_plan` decides which requests) ---------------------------------------

    def owned(self, namespace: str, lists: Lists) -> None:
        """Fill ``lists`` with the revisions and pods of its workloads only, read in ``namespace``."""
        wanted = needs({namespace: _workloads(lists)})
        for arg in OWNED:
            plan = plan_list(wanted[arg], cluster_wide=False)
            lists[arg] = self.in_namespace(arg, namespace, plan, wanted[arg].get(namespace))

    def in_namespace(self, arg: str, namespace: str, plan: ListPlan, need: Need) -> list[Obj]:
        """What ``plan`` asks of one list in ``namespace``: nothing, its whole list, or what ``need`` selects."""
        if namespace not in plan.per_namespace:
            return []  # nothing asked there (no workload of that kind, or answered cluster-wide)
        asked = plan.per_namespace[namespace]
        if asked is None or need is None:
            return self.listed(arg, namespace=namespace)
        kept = self.union(LISTS[arg][0], namespace, asked, lambda obj: keeps(need, obj))
        return sorted(kept.values(), key=_key)

    def cluster_wide(
        self, arg: str, plan: ListPlan, wanted: dict[str, Need]
    ) -> Iterator[tuple[str, list[Obj]]]:
        """``plan``'s cluster-wide queries of one list, a namespace at a time in namespace order: each
        covered namespace's objects that its own need selects (each once, in key order).

        Every query's answer comes in etcd's key order (``namespace/name``); merged by namespace they
        stream like `_side_by_side`'s lists, so one namespace's objects are held at a time, not the
        whole answer (`OutOfOrder` when a list breaks that order).
        """

        def mine(obj: Obj) -> bool:
            ns = obj.get("metadata", {}).get("namespace", "")
            need = wanted.get(ns) if ns in plan.covered else None
            return need is not None and keeps(need, obj)

        res = LISTS[arg][0]
        answers = [
            filter(mine, self.items(res, namespace=None, selector=query)) for query in plan.cluster_wide
        ]
        merged = heapq.merge(*answers, key=lambda obj: _order(obj.get("metadata", {}).get("namespace", "")))
        for ns, objs in _runs(merged, res.label):
            once = {_identity(obj): obj for obj in objs}
            yield ns, sorted(once.values(), key=_key)

    def union(
        self, res: Resource, namespace: str | None, selectors: Iterable[str], keep: Callable[[Obj], bool]
    ) -> dict[str, Obj]:
        """The objects any of ``selectors`` selects that ``keep`` keeps, each once (by UID)."""
        found: dict[str, Obj] = {}
        for selector in selectors:
            for obj in self.items(res, namespace=namespace, selector=selector):
                if keep(obj):
                    found[_identity(obj)] = obj
        return found


def _identity(obj: Obj) -> str:
    """What makes an object the same one in two answers: its UID (its key when it has none)."""
    return str(obj["metadata"].get("uid") or _key(obj))


Heads = dict[str, tuple[str, list[Obj]] | None]  # per list: its next (namespace, objects), None when done


def _advance(
    pool: ThreadPoolExecutor, streams: Mapping[str, Iterator[tuple[str, list[Obj]]]], args: Iterable[str]
) -> Heads:
    """The next (namespace, objects) of each stream in ``args``, their pages fetched side by side."""
    moving = list(args)
    return dict(zip(moving, pool.map(lambda a: next(streams[a], None), moving), strict=True))


def _take(heads: Heads, ns: str, lists: Lists) -> list[str]:
    """Put into ``lists`` every head that is at ``ns``; the lists taken (they move on next)."""
    here = [arg for arg, head in heads.items() if head is not None and head[0] == ns]
    for arg in here:
        lists[arg] = heads[arg][1]  # type: ignore[index]
    return here


def _workloads(lists: Lists) -> list[tuple[str, Obj]]:
    """(kind, workload) of every selected DC and Deployment in ``lists``."""
    return [(kind.kind, obj) for kind in KINDS.values() for obj in lists[_ARG[kind.resource]]]


def _runs(items: Iterator[Obj], what: str) -> Iterator[tuple[str, list[Obj]]]:
    """(namespace, its objects) from a list in namespace order; `OutOfOrder` when it is not."""
    current: str | None = None
    run: list[Obj] = []
    for obj in items:
        ns = obj.get("metadata", {}).get("namespace", "")
        if ns != current:
            if current is not None:
                if _order(ns) < _order(current):
                    raise OutOfOrder(
                        f"the list of {what} came out of namespace order ({ns!r} after {current!r})"
                    )
                yield current, run
            current, run = ns, []
        run.append(obj)
    if current is not None:
        yield current, run


def _side_by_side(reader: _Reader, selector: str | None) -> Iterator[tuple[str, Lists]]:
    """Every namespace's lists, from the seven cluster-wide lists read in step (namespace order).

    The lists that must move on to the next namespace fetch their pages at once (one thread each), so
    the API server serves several kinds in parallel; still at most one page per kind is held.
    """
    streams = {
        arg: _runs(reader.items(res, namespace=None, selector=selector if filtered else fixed), res.label)
        for arg, (res, fixed, filtered) in LISTS.items()
    }
    with ThreadPoolExecutor(len(streams), thread_name_prefix="list") as pool:
        heads = _advance(pool, streams, streams)
        while any(heads.values()):
            ns = min((h[0] for h in heads.values() if h), key=_order)
            lists: Lists = {arg: [] for arg in LISTS}
            done = _take(heads, ns, lists)
            yield ns, lists
            del lists
            heads.update(_advance(pool, streams, done))


def _in_parallel(items: Iterable[str], read: Callable[[str], Lists]) -> Iterator[tuple[str, Lists]]:
    """(item, read(item)) in order, a few reads at a time (each one's requests are small and many)."""
    with ThreadPoolExecutor(_PARALLEL, thread_name_prefix="list") as pool:
        ahead: deque[tuple[str, Future[Lists]]] = deque()
        for name in items:
            ahead.append((name, pool.submit(read, name)))
            if len(ahead) > _PARALLEL:  # never more read ahead than being read: memory stays bounded
                done, future = ahead.popleft()
                yield done, future.result()
        while ahead:
            done, future = ahead.popleft()
            yield done, future.result()


def namespace_lists(
    client: Api,
    namespaces: Iterable[str] | None,
    *,
    selector: str | None = None,
    problems: list[str] | None = None,
) -> Iterator[tuple[str, Lists]]:
    """(namespace, reduced objects by `assess_namespace` argument), one namespace at a time.

    ``namespaces`` None: the whole cluster, namespaces holding a selected DC or Deployment (or a journal)
    in list order. ``problems``: forbidden lists are noted there (the TUI) instead of refused.
    """
    reader = _Reader(client, problems)
    if namespaces is not None:
        yield from _in_parallel(
            dict.fromkeys(namespaces),
            lambda ns: _namespace(reader, ns, selector=selector, one_by_one=problems is not None),
        )
    elif not selector:
        yield from _side_by_side(reader, None)
    else:
        yield from _selected(reader, selector)


def _namespace(reader: _Reader, ns: str, *, selector: str | None, one_by_one: bool) -> Lists:
    """One named namespace's lists (``one_by_one``: where problems are noted rather than refused)."""
    # A namespace's lists go out at once: `status -n NS` waits for one round trip, not seven. (Where
    # problems are noted rather than refused, one after another: their order stays the lists'.)
    args = (*WORKLOADS, "configmaps", "leases") + (() if selector else OWNED)
    # The first list that fails ends the read: the lists not yet sent are dropped and those in
    # flight not waited for (with one worker, a hung server would otherwise cost every list its
    # own timeout, one after another).
    pool = ThreadPoolExecutor(1 if one_by_one else len(args), thread_name_prefix="list")
    try:
        futures = {
            arg: pool.submit(reader.listed, arg, namespace=ns, selector=None if arg in OWNED else selector)
            for arg in args
        }
        lists = {arg: future.result() for arg, future in futures.items()}
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
    if selector:
        reader.owned(ns, lists)
    return lists


def _selected(reader: _Reader, selector: str) -> Iterator[tuple[str, Lists]]:
    """The whole cluster by a selector: the selected workloads, journals and leases listed cluster-wide,
    then what they own (RCs, ReplicaSets, pods) cluster-wide or per namespace, whichever costs less
    (`rollguard.state.list_plan`), each namespace given once the cluster-wide lists have passed it."""
    found: dict[str, Lists] = {}
    for arg in (*WORKLOADS, "configmaps", "leases"):
        for obj in reader.listed(arg, namespace=None, selector=selector):
            ns = obj.get("metadata", {}).get("namespace", "")
            found.setdefault(ns, {a: [] for a in LISTS})[arg].append(obj)
    wanted = needs({ns: _workloads(lists) for ns, lists in found.items()})
    plans = {arg: plan_list(wanted[arg]) for arg in OWNED}
    wide = {
        arg: reader.cluster_wide(arg, plans[arg], wanted[arg]) for arg in OWNED if plans[arg].cluster_wide
    }
    ready: dict[str, Lists] = {}

    def owned(ns: str) -> Lists:
        lists = ready.pop(ns)
        for arg in OWNED:
            if ns in plans[arg].per_namespace:
                lists[arg] = reader.in_namespace(arg, ns, plans[arg], wanted[arg].get(ns))
        return lists

    with ThreadPoolExecutor(max(len(wide), 1), thread_name_prefix="list") as pool:
        heads = _advance(pool, wide, wide)

        def in_order() -> Iterator[str]:
            """Each namespace once its cluster-wide lists have passed it (its part of them attached)."""
            for ns in sorted(found, key=_order):
                lists = found.pop(ns)
                ready[ns] = lists
                heads.update(_advance(pool, wide, _take(heads, ns, lists)))
                yield ns

        yield from _in_parallel(in_order(), owned)


def namespace_exists(client: Api, namespace: str) -> bool:
    """False only on a 404: a user who may not read namespaces cluster-wide learns from later reads."""
    try:
        client.get(NAMESPACES, namespace)
    except NotFound:
        return False
    except Forbidden:
        pass
    return True


def check_namespace(client: Api, namespace: str) -> None:
    """`NoSuchNamespace` unless ``namespace`` exists (empty lists are what a mistyped name gives too)."""
    if not namespace_exists(client, namespace):
        raise NoSuchNamespace(namespace)


def read_namespace(
    client: Api, namespace: str, *, selector: str | None = None, now: dt.datetime | None = None
) -> NamespaceState:
    """The state of every DC and Deployment in ``namespace`` (matching ``selector``, if given).

    A seam for the tests (tests/helpers/scenarios.py judges one namespace with it); rollguard itself
    reads with `read_namespaces` and `read_cluster`."""
    return read_namespaces(client, [namespace], selector=selector, now=now)[0]


def read_namespaces(
    client: Api, namespaces: Iterable[str], *, selector: str | None = None, now: dt.datetime | None = None
) -> list[NamespaceState]:
    """`read_namespace` for each namespace, in the order given (duplicates dropped)."""
    at = now or dt.datetime.now(dt.UTC)
    return [
        assess_namespace(ns, selector=selector, now=at, **lists)
        for ns, lists in namespace_lists(client, namespaces, selector=selector)
    ]


def stream_cluster(
    client: Api, *, selector: str | None = None, now: dt.datetime | None = None
) -> Iterator[NamespaceState]:
    """Every namespace holding a DC or Deployment (matching ``selector``), one at a time, in order."""
    at = now or dt.datetime.now(dt.UTC)
    for ns, lists in namespace_lists(client, None, selector=selector):
        if lists["dcs"] or lists["deployments"]:
            yield assess_namespace(ns, selector=selector, now=at, **lists)


def read_cluster(
    client: Api, *, selector: str | None = None, now: dt.datetime | None = None
) -> list[NamespaceState]:
    """`stream_cluster` as a list, sorted by namespace name."""
    return sorted(stream_cluster(client, selector=selector, now=now), key=lambda s: s.namespace)
