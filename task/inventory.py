"""Reading namespaces (or the whole cluster) for the state model, in memory bounded by the report.

Never per workload and never one unbounded response:

- Every LIST is paginated and each page reduced to what the state model reads (`rollguard.client`,
  `rollguard.reduce`) before the next page is fetched.
- Cluster-wide without a selector: one paginated list per kind, the seven read side by side in
  namespace order (the API server lists from etcd in key order, ``namespace/name``). A namespace is
  assessed as soon as every list has passed it and its objects are dropped: memory is the biggest
  namespace plus the states, not the cluster. A list that breaks that order is refused, never
  assessed half-read (`OutOfOrder`).
- With a selector: the workloads first (the server applies the selector), then only the revisions
  and pods of those: RCs by their ``openshift.io/deployment-config.name`` label, ReplicaSets and pods
  by each workload's own selector (what its controllers select them by). Requests and memory grow
  with what the selector matches; a namespace where it matches many reads its lists whole instead.
- Journal ConfigMaps and Leases: by label (few and small).
"""

from __future__ import annotations

import datetime as dt
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor

from rollguard.client import Api
from rollguard.errors import ApiError, Forbidden, NotFound, RefusedError
from rollguard.journal import JOURNAL_LABEL, MANAGED_BY
from rollguard.kinds import KINDS
from rollguard.reduce import reducer_for
from rollguard.resources import (
    CONFIG_MAPS,
    DEPLOYMENT_CONFIGS,
    DEPLOYMENTS,
    LEASES,
    PODS,
    REPLICA_SETS,
    REPLICATION_CONTROLLERS,
    Resource,
)
from rollguard.state import NamespaceState, assess_namespace
from rollguard.structs import Obj

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
OWNED = ("rcs", "rss", "pods")
# Above this many selected workloads in a namespace, its revisions and pods are read whole (3 lists)
# rather than by owner (up to 2 lists per workload).
NARROW_MAX = 20
_PARALLEL = 4  # namespaces read at once when each is read on its own (-n NS..., or narrowed by -l)
_NAMES_PER_QUERY = 50  # names per ``label in (...)`` selector: keeps the query string short


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

    # -- by owner ---------------------------------------------------------------------------------------

    def owned(self, namespace: str, lists: Lists) -> None:
        """Fill ``lists`` with the revisions and pods of its workloads only (whole lists when many)."""
        if sum(len(lists[arg]) for arg in WORKLOADS) > NARROW_MAX:
            for arg in OWNED:
                lists[arg] = self.listed(arg, namespace=namespace)
            return
        pod_selectors: set[str] = set()
        for kind in KINDS.values():
            workloads, arg = lists[_ARG[kind.resource]], _ARG[kind.revisions]
            selectors = {kind.pod_selector(o) for o in workloads}
            pod_selectors |= selectors
            if kind.revision_label:  # its revisions carry its name in a label
                names = [o["metadata"]["name"] for o in workloads]
                lists[arg] = self.union(kind.revisions, namespace, _in_queries(kind.revision_label, names))
            else:  # its revisions are what its pod selector selects
                # a workload selecting nothing by label: read the namespace's list whole
                lists[arg] = (
                    self.listed(arg, namespace=namespace)
                    if "" in selectors
                    else self.union(kind.revisions, namespace, _combined(selectors))
                )
        lists["pods"] = (
            self.listed("pods", namespace=namespace)
            if "" in pod_selectors
            else self.union(PODS, namespace, _combined(pod_selectors))
        )

    def union(self, res: Resource, namespace: str, selectors: Iterable[str]) -> list[Obj]:
        """The objects any of ``selectors`` selects, each once."""
        found: dict[str, Obj] = {}
        for selector in selectors:
            for obj in self.items(res, namespace=namespace, selector=selector):
                found[obj["metadata"].get("uid") or _key(obj)] = obj
        return list(found.values())


def _in_queries(key: str, values: Iterable[str]) -> list[str]:
    """``key in (...)`` selectors covering ``values``, a bounded number of values each."""
    ordered = sorted(set(values))
    return [
        f"{key} in ({','.join(ordered[i : i + _NAMES_PER_QUERY])})"
        for i in range(0, len(ordered), _NAMES_PER_QUERY)
    ]


def _combined(selectors: Iterable[str]) -> list[str]:
    """Fewer queries selecting the same union: single ``k=v`` selectors of one key become ``k in (...)``."""
    by_key: dict[str, list[str]] = {}
    rest = []
    for selector in selectors:
        key, _, value = selector.partition("=")
        if value and not any(c in selector for c in ", !()") and "=" not in value:
            by_key.setdefault(key, []).append(value)
        else:
            rest.append(selector)
    return sorted(rest) + [q for key, values in sorted(by_key.items()) for q in _in_queries(key, values)]


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

        def advance(args: Iterable[str]) -> dict[str, tuple[str, list[Obj]] | None]:
            moving = list(args)
            return dict(zip(moving, pool.map(lambda a: next(streams[a], None), moving), strict=True))

        heads = advance(streams)
        while any(heads.values()):
            ns = min((h[0] for h in heads.values() if h), key=_order)
            lists: Lists = {arg: [] for arg in LISTS}
            done = [arg for arg, head in heads.items() if head is not None and head[0] == ns]
            for arg in done:
                lists[arg] = heads[arg][1]  # type: ignore[index]
            yield ns, lists
            del lists
            heads.update(advance(done))


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

        def read(ns: str) -> Lists:
            lists = {
                arg: reader.listed(arg, namespace=ns, selector=selector)
                for arg in (*WORKLOADS, "configmaps", "leases")
            }
            if selector:
                reader.owned(ns, lists)
            else:
                for arg in OWNED:
                    lists[arg] = reader.listed(arg, namespace=ns)
            return lists

        yield from _in_parallel(dict.fromkeys(namespaces), read)
        return
    if not selector:
        yield from _side_by_side(reader, None)
        return
    found: dict[str, Lists] = {}
    for arg in (*WORKLOADS, "configmaps", "leases"):
        for obj in reader.listed(arg, namespace=None, selector=selector):
            ns = obj.get("metadata", {}).get("namespace", "")
            found.setdefault(ns, {a: [] for a in LISTS})[arg].append(obj)

    def owned(ns: str) -> Lists:
        lists = found.pop(ns)
        if lists["dcs"] or lists["deployments"]:
            reader.owned(ns, lists)
        return lists

    yield from _in_parallel(sorted(found, key=_order), owned)


def read_namespace(
    client: Api, namespace: str, *, selector: str | None = None, now: dt.datetime | None = None
) -> NamespaceState:
    """The state of every DC and Deployment in ``namespace`` (matching ``selector``, if given)."""
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
