"""Paginated, reduced reads on the live sandbox: the same states as one whole, unreduced read.

A page size of 1 forces a continue token on every list (the real API server's `limit`/`continue`);
the states of rollguard's reads (namespaced, cluster-wide side by side, cluster-wide narrowed by a
selector) must equal `assess_namespace` over unpaginated LISTs of whole objects. The second test
expires a continue token the way it happens in production, by compacting etcd past the list's
snapshot, and shows the read handled as client-go's tools/pager/pager.go does (a full list instead).
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import urllib.request

from rollguard.cluster.client import Client
from rollguard.core.resources import CONFIG_MAPS
from rollguard.state import inventory
from rollguard.state.assessment import NamespaceState, assess_namespace
from rollguard.state.inventory import LISTS
from tests.helpers.cluster import GROUP_LABELS, SELECTOR, create_group, dc_body, deployment_body, rolled_out
from tests.helpers.scenarios import NEW, OLD, killed_run, set_image


def whole_read(
    client: Client, namespace: str, *, now: dt.datetime, selector: str | None = None
) -> NamespaceState:
    """The reference: one unpaginated LIST per kind, whole objects, as rollguard read before paging."""
    assert client.page_size == 0
    lists = {
        arg: client.list(res, namespace=namespace, selector=selector if filtered else fixed)["items"]
        for arg, (res, fixed, filtered) in LISTS.items()
    }
    return assess_namespace(namespace, selector=selector, now=now, **lists)


def settled_pair(sandbox, namespace: str, read) -> tuple[NamespaceState, NamespaceState]:
    """(whole read, rollguard's read) of a namespace no controller changed in between."""
    whole = Client.connect(kubeconfig=str(sandbox.kubeconfig))
    whole.page_size = 0
    now = dt.datetime.now(dt.UTC)
    for _ in range(5):
        before = whole_read(whole, namespace, now=now)
        got = read(now)
        if whole_read(whole, namespace, now=now) == before:
            return before, got
    raise AssertionError("the namespace kept changing")


def test_small_pages_and_reduced_objects_give_the_same_states(sandbox, namespace):
    client = Client.connect(kubeconfig=str(sandbox.kubeconfig))
    labels = {**GROUP_LABELS, "paging": namespace}
    create_group(client, namespace, [
        dc_body("dc1", OLD, labels=labels), dc_body("dc2", OLD, labels=labels),
        deployment_body("web", OLD, labels=labels), deployment_body("other", OLD, labels={"app": "other"}),
    ])  # fmt: skip
    for kind, name in (("DeploymentConfig", "dc1"), ("Deployment", "web")):
        set_image(client, namespace, kind, name, NEW)
        rolled_out(client, kind, namespace, name)
    killed_run(client, namespace)  # a journal and a Lease: groups and half-rolled findings too

    paged = Client.connect(kubeconfig=str(sandbox.kubeconfig))
    paged.page_size = 1

    def mine(states: list[NamespaceState]) -> NamespaceState:
        return next(s for s in states if s.namespace == namespace)

    want, got = settled_pair(
        sandbox, namespace, lambda now: inventory.read_namespace(paged, namespace, now=now)
    )
    assert got == want and len(want.workloads) == 4 and want.groups
    assert {f.name for w in want.workloads for f in w.findings} >= {"half-rolled"}
    assert all(w.revisions and w.pods for w in want.workloads)
    lists_before = paged.requests["list"]
    want, got = settled_pair(sandbox, namespace, lambda now: mine(inventory.read_cluster(paged, now=now)))
    assert got == want
    assert paged.requests["list"] - lists_before >= 16  # a request per object: the pages were small

    selector = f"paging={namespace}"
    whole = Client.connect(kubeconfig=str(sandbox.kubeconfig))
    whole.page_size = 0
    now = dt.datetime.now(dt.UTC)
    want_sel = whole_read(whole, namespace, now=now, selector=selector)
    got_sel = inventory.read_cluster(paged, selector=selector, now=now)
    assert [s.namespace for s in got_sel] == [namespace]
    assert got_sel[0].workloads == want_sel.workloads and len(want_sel.workloads) == 3
    assert [s.namespace for s in inventory.read_cluster(paged, selector=SELECTOR + ",paging=none")] == []


def _etcd(sandbox, call: str, body: dict) -> dict:
    """etcd's own v3 API (its JSON gateway), on the sandbox's etcd client port."""
    req = urllib.request.Request(
        f"http://127.0.0.1:{sandbox.port + 10000}/v3/{call}",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(req, timeout=30) as resp:
        return json.loads(resp.read())


def compact_etcd(sandbox) -> int:
    """Compact etcd at its current revision: every older snapshot, and continue tokens into it, expire."""
    key = base64.b64encode(b"/registry/").decode()
    revision = int(_etcd(sandbox, "kv/range", {"key": key, "limit": 1})["header"]["revision"])
    _etcd(sandbox, "kv/compaction", {"revision": revision, "physical": True})
    return revision


def test_an_expired_continue_token_falls_back_to_a_full_list(sandbox, namespace):
    client = Client.connect(kubeconfig=str(sandbox.kubeconfig))
    for i in range(5):
        client.create(
            CONFIG_MAPS, {"metadata": {"name": f"cm-{i}"}, "data": {"i": str(i)}}, namespace=namespace
        )
    client.page_size = 2
    pages = client.pages(CONFIG_MAPS, namespace=namespace)
    first = next(pages)
    assert [o["metadata"]["name"] for o in first.items] == ["cm-0", "cm-1"]
    # A change after the list began, then the compaction that the API server runs every 5 minutes.
    client.create(CONFIG_MAPS, {"metadata": {"name": "cm-5"}, "data": {"i": "5"}}, namespace=namespace)
    compact_etcd(sandbox)
    rest = list(pages)
    assert len(rest) == 1 and rest[0].restarted  # client-go's fallback: one full list, at the latest version
    full = [o["metadata"]["name"] for o in rest[0].items]
    assert [n for n in full if n.startswith("cm-")] == [f"cm-{i}" for i in range(6)]
    assert int(rest[0].resource_version) > int(first.resource_version)

    # Collected (Client.list): the full list replaces the pages before it, nothing twice. The compaction
    # happens while the first page is being reduced, i.e. before the second page is asked for.
    compacted: list[int] = []

    def compact_once(obj: dict) -> dict:
        if not compacted:
            client.create(CONFIG_MAPS, {"metadata": {"name": "cm-6"}}, namespace=namespace)
            compacted.append(compact_etcd(sandbox))
        return obj

    listed = client.list(CONFIG_MAPS, namespace=namespace, reduce=compact_once)
    assert compacted
    assert [n for n in names_of(listed["items"]) if n.startswith("cm-")] == [f"cm-{i}" for i in range(7)]

    # Streamed (the inventory's reader): what was handed on already is skipped, in the list's key order.
    stream = inventory._Reader(client).items(CONFIG_MAPS, namespace=namespace, selector=None)
    seen = [next(stream)["metadata"]["name"], next(stream)["metadata"]["name"]]
    client.create(CONFIG_MAPS, {"metadata": {"name": "cm-7"}}, namespace=namespace)
    compact_etcd(sandbox)
    seen += names_of(stream)
    assert [n for n in seen if n.startswith("cm-")] == [f"cm-{i}" for i in range(8)], seen


def names_of(objs) -> list[str]:
    return [o["metadata"]["name"] for o in objs]
