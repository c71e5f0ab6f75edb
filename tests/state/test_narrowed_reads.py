"""`-A -l SEL` on the live sandbox: the cluster-wide read plan gives exactly the per-namespace plan's lists.

`rollguard.state.list_plan` asks the revisions and pods of a selector's workloads cluster-wide when that is
fewer requests than asking each matched namespace, and keeps an answer only in a matched namespace
whose own workloads select it. Here the same workloads are read both ways: cluster-wide
(``namespace_lists(None, selector)``, what `status -A -l` and `drift-check -A -l` read) and per
namespace (``namespace_lists([...], selector)``, what `-n A B C -l` reads, each namespace on its own).
The cluster holds the traps that a bucketing by namespace or by selector alone would let through: a
same-named DC in an unmatched namespace (its RCs carry the same DC-name label), unmatched workloads
in matched namespaces whose pods and revisions carry the labels other namespaces' workloads select
by, and other tests' groups (all labelled ``app=shop-api``).
"""

from __future__ import annotations

import datetime as dt
import secrets
from collections.abc import Iterator

import pytest

from rollguard.cluster.client import Client
from rollguard.core.resources import NAMESPACES, Resource
from rollguard.state import inventory
from rollguard.state.assessment import assess_namespace
from tests.helpers.cluster import OLD, create_group, dc_body, deployment_body, wait_until

ACCOUNTS = Resource("", "v1", "serviceaccounts", "ServiceAccount")


@pytest.fixture
def four_namespaces(client: Client) -> Iterator[list[str]]:
    tag = secrets.token_hex(3)
    names = [f"narrow-{tag}-{x}" for x in "abcd"]
    for name in names:
        client.create(NAMESPACES, {"metadata": {"name": name}})
    for name in names:  # pods are refused until the default service account has its token
        wait_until(client, ACCOUNTS, name, "default", lambda a: bool(a.get("secrets")))
    yield names
    for name in names:
        client.delete(NAMESPACES, name)


def keys(lists: inventory.Lists) -> dict[str, list[str]]:
    return {arg: [o["metadata"]["name"] for o in objs] for arg, objs in lists.items()}


def test_cluster_wide_owned_reads_equal_the_per_namespace_reads(sandbox, client, four_namespaces):
    a, b, c, d = four_namespaces
    mine = {"narrow": a}  # a label only this test's workloads carry
    create_group(client, a, [dc_body("api", OLD, labels=mine), dc_body("worker", OLD, labels=mine),
                             deployment_body("web", OLD, labels=mine)])  # fmt: skip
    # b: a selected DC, plus unselected ones named (and so labelled) like a's selected "worker" and "web"
    create_group(client, b, [dc_body("api", OLD, labels=mine), dc_body("worker", OLD),
                             deployment_body("web", OLD)])  # fmt: skip
    create_group(client, c, [deployment_body("web", OLD, labels=mine)])
    # d: nothing selected, the same names: its RCs carry the DC-name label "api", its pods name=web
    create_group(client, d, [dc_body("api", OLD), deployment_body("web", OLD)])
    selector = f"narrow={a}"
    reader = Client.connect(kubeconfig=str(sandbox.kubeconfig))

    def counted(namespaces: list[str] | None) -> tuple[dict[str, inventory.Lists], int]:
        before = reader.requests["list"]
        got = dict(inventory.namespace_lists(reader, namespaces, selector=selector))
        # -A reads every namespace's journals too (other tests leave some): only those with workloads
        return {ns: got[ns] for ns in got if got[ns]["dcs"] or got[ns]["deployments"]}, (
            reader.requests["list"] - before
        )

    for _ in range(5):  # until no controller changed an object between the two reads
        apart, apart_requests = counted([a, b, c])
        together, together_requests = counted(None)
        if together == apart:
            break
    assert list(together) == [a, b, c]  # d: nothing matched there, not even a leaked pod
    assert {ns: keys(lists) for ns, lists in together.items()} == {
        ns: keys(lists) for ns, lists in apart.items()
    }
    assert together == apart
    assert keys(together[b])["rcs"] == ["api-1"] and keys(together[b])["rss"] == []
    assert {p["metadata"]["labels"]["name"] for p in together[b]["pods"]} == {"api"}
    assert {p["metadata"]["labels"]["name"] for p in together[a]["pods"]} == {"api", "worker", "web"}
    now = dt.datetime.now(dt.UTC)
    states = {ns: assess_namespace(ns, selector=selector, now=now, **lists) for ns, lists in together.items()}
    assert states == {
        ns: assess_namespace(ns, selector=selector, now=now, **lists) for ns, lists in apart.items()
    }
    assert [len(s.workloads) for s in states.values()] == [3, 1, 1]
    assert all(w.revisions and w.pods for s in states.values() for w in s.workloads)
    # cluster-wide: the DCs, Deployments, journals and Leases by label, then one list each of the RCs
    # (by DC name), ReplicaSets and pods (by the workloads' selectors); per namespace: those four in
    # each of a, b and c, then a's RCs, ReplicaSets and pods, b's RCs and pods, c's ReplicaSets and pods
    assert (together_requests, apart_requests) == (4 + 3, 3 * 4 + 3 + 2 + 2)
