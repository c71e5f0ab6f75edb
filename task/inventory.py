"""Reading a namespace (or the whole cluster) for the state model: one LIST per kind and namespace.

Never per workload: `drift-check` over hundreds of workloads costs a fixed number of requests per
namespace (or per kind, cluster-wide with ``--all-namespaces``). The objects go to `rollguard.state`.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable

from rollguard.client import Client
from rollguard.errors import Forbidden, NotFound, RefusedError
from rollguard.journal import JOURNAL_LABEL, MANAGED_BY
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


def _list(client: Client, res: Resource, *, namespace: str | None, selector: str | None) -> list[Obj]:
    where = f"in namespace {namespace!r}" if namespace else "cluster-wide"
    try:
        items: list[Obj] = client.list(res, namespace=namespace, selector=selector).get("items", [])
    except NotFound:
        if res is DEPLOYMENT_CONFIGS:
            return []  # not an OpenShift cluster: no DCs to read
        raise RefusedError(f"cannot list {res.label} {where}: not found", fix="check the namespace") from None
    except Forbidden as exc:
        raise RefusedError(
            f"not allowed to list {res.label} {where}",
            fix="grant 'list' on it (see tekton/drift-check-cronjob.yaml for the read-only Role)",
        ) from exc
    return items


def read_namespace(
    client: Client, namespace: str, *, selector: str | None = None, now: dt.datetime | None = None
) -> NamespaceState:
    """The state of every DC and Deployment in ``namespace`` (matching ``selector``, if given)."""
    lists = {
        arg: _list(client, res, namespace=namespace, selector=selector if filtered else fixed)
        for arg, (res, fixed, filtered) in LISTS.items()
    }
    return assess_namespace(namespace, selector=selector, now=now, **lists)


def read_namespaces(
    client: Client, namespaces: Iterable[str], *, selector: str | None = None, now: dt.datetime | None = None
) -> list[NamespaceState]:
    """`read_namespace` for each namespace, in the order given (duplicates dropped)."""
    at = now or dt.datetime.now(dt.UTC)
    return [read_namespace(client, ns, selector=selector, now=at) for ns in dict.fromkeys(namespaces)]


def read_cluster(
    client: Client, *, selector: str | None = None, now: dt.datetime | None = None
) -> list[NamespaceState]:
    """Every namespace holding a DC or Deployment (matching ``selector``), from cluster-wide lists."""
    at = now or dt.datetime.now(dt.UTC)
    by_namespace: dict[str, dict[str, list[Obj]]] = {}
    for arg, (res, fixed, filtered) in LISTS.items():
        for obj in _list(client, res, namespace=None, selector=selector if filtered else fixed):
            ns = obj.get("metadata", {}).get("namespace", "")
            by_namespace.setdefault(ns, {a: [] for a in LISTS})[arg].append(obj)
    return [
        assess_namespace(ns, selector=selector, now=at, **lists)
        for ns, lists in sorted(by_namespace.items())
        if lists["dcs"] or lists["deployments"]
    ]
