"""`python -m bench.drive CMD ...`: the benchmark's own cluster work, one process per step.

Each step runs in its own process so that its watch connections end with it: the API server counts
a WATCH request only when the watch closes, and a watch left open by one step would land in the
request counts of a later, measured step. Each prints one JSON line as its result.

  create    a namespace with N workloads (even index: DC, odd: Deployment), waiting for the first rollout
  scale     many workloads across namespaces, waiting only until each has its first revision object
  limit     one workload's own rollout: change its image, wait (watch) until complete
  together  a group's floor: every workload's image changed at once by a bare script, watched until complete
  baseline  the old pipeline stage: pause all, then per workload set image, resume, wait (watch)
  drift     half a group's workloads set to another image by hand (damage for `rollguard revert`)
  check     is every workload of a namespace on the given image, complete and not paused?
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import json
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from rollguard.cluster.cache import NamespaceCache
from rollguard.cluster.client import Client
from rollguard.core.errors import Conflict, NotFound
from rollguard.core.resources import DEPLOYMENT_CONFIGS, DEPLOYMENTS, NAMESPACES, PODS, Resource
from rollguard.core.structs import DC, DEPLOYMENT, Obj, RolloutPhase, WorkloadRef
from rollguard.kinds import KINDS, images_of
from rollguard.run.wait import Watched, wait_for
from tests.helpers.cluster import dc_body, deployment_body

SERVICE_ACCOUNTS = Resource("", "v1", "serviceaccounts", "ServiceAccount")
LABEL = "app=bench"
WAIT = 300.0


def workload_names(n: int) -> list[tuple[str, str]]:
    """(kind, name) of a group of ``n``: half DCs, half Deployments, alternating."""
    return [(DC, f"dc-{i}") if i % 2 == 0 else (DEPLOYMENT, f"deploy-{i}") for i in range(n)]


def body(kind: str, name: str, image: str, *, replicas: int = 1, labels: dict[str, str] | None = None) -> Obj:
    labels = {"app": "bench", **(labels or {})}
    if kind == DC:
        return dc_body(name, image, labels=labels, replicas=replicas)
    return deployment_body(name, image, labels=labels, replicas=replicas)


def ensure_namespace(client: Client, namespace: str) -> None:
    """Create ``namespace`` and wait until pods can be created in it (its default ServiceAccount's token)."""
    with contextlib.suppress(Conflict):  # 409 AlreadyExists: created by an earlier step
        client.create(NAMESPACES, {"metadata": {"name": namespace}})
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if client.get(SERVICE_ACCOUNTS, "default", namespace=namespace).get("secrets"):
                return
        except NotFound:
            pass
        time.sleep(0.1)  # set-up only, not measured: a short poll is simpler than a watch here


def resource_of(kind: str) -> Resource:
    return DEPLOYMENT_CONFIGS if kind == DC else DEPLOYMENTS


def group_cache(client: Client, namespace: str, kinds: set[str]) -> NamespaceCache:
    """A started live cache of the workloads and revisions of ``kinds`` in ``namespace``."""
    resources = [r for k in sorted(kinds) for r in (KINDS[k].resource, KINDS[k].revisions)]
    # and pods: readiness reads a revision's pods (a DC's deployer pod, crash evidence), as the run's own
    cache = NamespaceCache(client, namespace, [*resources, PODS])
    cache.start()
    return cache


def all_complete(cache: NamespaceCache, expected: dict[tuple[str, str], str], timeout: float) -> bool:
    """Watch until every (kind, name) runs its expected image completely; False on timeout or failure."""
    watched = [
        Watched(
            ref=WorkloadRef(kind, name),
            expected_images={"app": image},
            deadline=time.monotonic() + timeout,
            deadline_reason=f"not complete within {timeout:.0f}s",
        )
        for (kind, name), image in expected.items()
    ]
    wait_for(
        cache, watched, fail_fast=False, crash_restarts=0, stop_on_failure=True,
        cancel=threading.Event(), out=lambda _line: None,
    )  # fmt: skip
    return all(w.verdict is not None and w.verdict.phase is RolloutPhase.COMPLETE for w in watched)


def wait_complete(
    client: Client, namespace: str, expected: dict[tuple[str, str], str], timeout: float
) -> bool:
    """`all_complete` on a cache of its own."""
    cache = group_cache(client, namespace, {kind for kind, _ in expected})
    try:
        return all_complete(cache, expected, timeout)
    finally:
        cache.stop()


def set_image(client: Client, namespace: str, kind: str, name: str, image: str) -> Obj:
    """`oc set image`: read, change the container's image, write back (retry on conflict)."""
    res = resource_of(kind)
    for _ in range(10):
        obj = copy.deepcopy(client.get(res, name, namespace=namespace))
        for container in obj["spec"]["template"]["spec"]["containers"]:
            container["image"] = image
        try:
            return client.replace(res, obj, namespace=namespace)
        except Conflict:
            continue
    raise RuntimeError(f"{kind} {name}: too many conflicts")


def set_paused(client: Client, namespace: str, kind: str, name: str, paused: bool) -> None:
    client.patch(resource_of(kind), name, {"spec": {"paused": paused}}, namespace=namespace)


# -- steps ------------------------------------------------------------------------------------------------


def create(client: Client, args: argparse.Namespace) -> dict[str, Any]:
    t0 = time.perf_counter()
    ensure_namespace(client, args.namespace)
    names = workload_names(args.workloads)
    for kind, name in names:
        client.create(resource_of(kind), body(kind, name, args.image), namespace=args.namespace)
    ok = wait_complete(client, args.namespace, {n: args.image for n in names}, WAIT)
    return {"ok": ok, "seconds": time.perf_counter() - t0}


def scale(client: Client, args: argparse.Namespace) -> dict[str, Any]:
    """Workloads ``args.start`` .. ``args.start + args.workloads - 1``, round-robin over the namespaces.

    One in ten has a replica (so pods exist to read), the rest none, to keep the sandbox light.
    """
    t0 = time.perf_counter()
    namespaces = [f"{args.prefix}{i}" for i in range(args.namespaces)]
    for ns in namespaces:
        ensure_namespace(client, ns)

    def make(index: int) -> None:
        kind = DC if index % 2 == 0 else DEPLOYMENT
        name = f"{'dc' if kind == DC else 'deploy'}-{index}"
        labels = {"app": f"svc-{index % 7}", "bench": "scale"}
        obj = body(kind, name, args.image, replicas=1 if index % 10 == 0 else 0, labels=labels)
        with contextlib.suppress(Conflict):  # 409 AlreadyExists: a re-run of this step
            client.create(resource_of(kind), obj, namespace=namespaces[index % len(namespaces)])

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(make, range(args.start, args.start + args.workloads)))
    created = time.perf_counter() - t0
    # Reads are measured on settled objects: wait until every workload has its first revision object.
    want = args.start + args.workloads
    deadline = time.monotonic() + WAIT
    revs = 0
    while time.monotonic() < deadline:
        revs = sum(
            len(client.list(KINDS[k].revisions, namespace=ns)["items"])
            for k in (DC, DEPLOYMENT)
            for ns in namespaces
        )
        if revs >= want:
            break
        time.sleep(2)  # set-up only; counting the revision objects every 2 s is cheap enough
    return {
        "ok": revs >= want,
        "created_seconds": created,
        "seconds": time.perf_counter() - t0,
        "revisions": revs,
    }


def limit(client: Client, args: argparse.Namespace) -> dict[str, Any]:
    kind = KINDS[args.kind]
    cache = group_cache(
        client, args.namespace, {args.kind}
    )  # before the clock: the rollout itself, not our set-up
    try:
        t0 = time.perf_counter()
        written = set_image(client, args.namespace, args.kind, args.name, args.image)
        # else the watch may not have delivered our write yet, and the cached old object (complete, on the
        # old image) would be judged as changed by someone else
        cache.put(kind.resource, written)
        item = Watched(
            WorkloadRef(args.kind, args.name), {"app": args.image}, time.monotonic() + WAIT, "timeout"
        )
        wait_for(
            cache, [item], fail_fast=False, crash_restarts=0, stop_on_failure=True,
            cancel=threading.Event(), out=lambda _line: None,
        )  # fmt: skip
        seconds = time.perf_counter() - t0
    finally:
        cache.stop()
    ok = item.verdict is not None and item.verdict.phase is RolloutPhase.COMPLETE
    return {"ok": ok, "seconds": seconds, "requests": dict(client.requests)}


def together(client: Client, args: argparse.Namespace) -> dict[str, Any]:
    """The group's floor on this sandbox: every workload changed at once by a bare script, then watched.

    No preflight, lock or journal: what remains is N rollouts at once on the same cores, which is what
    separates the sandbox's own slowdown under load from what rollguard adds.
    """
    names = workload_names(args.workloads)
    cache = group_cache(client, args.namespace, {kind for kind, _ in names})  # before the clock, as for limit

    def change(ref: tuple[str, str]) -> None:
        cache.put(KINDS[ref[0]].resource, set_image(client, args.namespace, *ref, args.image))

    try:
        t0 = time.perf_counter()
        with ThreadPoolExecutor(len(names)) as pool:
            list(pool.map(change, names))
        written = time.perf_counter() - t0  # every write answered: what N writes at once cost this sandbox
        ok = all_complete(cache, {name: args.image for name in names}, WAIT)
        seconds = time.perf_counter() - t0
    finally:
        cache.stop()
    return {"ok": ok, "seconds": seconds, "written": written, "requests": dict(client.requests)}


def baseline(client: Client, args: argparse.Namespace) -> dict[str, Any]:
    """The old stage, step by step; each wait opens its own watch, as `oc rollout status` does."""
    names = workload_names(args.workloads)
    t0 = time.perf_counter()
    for kind, name in names:
        set_paused(client, args.namespace, kind, name, True)
    each = []
    ok = True
    for kind, name in names:
        t1 = time.perf_counter()
        set_image(client, args.namespace, kind, name, args.image)
        set_paused(client, args.namespace, kind, name, False)
        ok = wait_complete(client, args.namespace, {(kind, name): args.image}, WAIT) and ok
        each.append(time.perf_counter() - t1)
    return {"ok": ok, "seconds": time.perf_counter() - t0, "each": each, "requests": dict(client.requests)}


def drift(client: Client, args: argparse.Namespace) -> dict[str, Any]:
    """Damage for `rollguard revert`: half the group (both kinds) set to another image by hand, rolled out."""
    names = [w for i, w in enumerate(workload_names(args.workloads)) if i % 4 in (0, 1)]
    for kind, name in names:
        set_image(client, args.namespace, kind, name, args.image)
    return {
        "ok": wait_complete(client, args.namespace, {w: args.image for w in names}, WAIT),
        "changed": len(names),
    }


def check(client: Client, args: argparse.Namespace) -> dict[str, Any]:
    problems = []
    for kind, name in workload_names(args.workloads):
        k = KINDS[kind]
        obj = client.get(k.resource, name, namespace=args.namespace)
        revisions = k.owned(obj, client.list(k.revisions, namespace=args.namespace)["items"])
        images = images_of(obj["spec"]["template"])
        if images != {"app": args.image}:
            problems.append(f"{kind} {name} runs {images}")
        if obj["spec"].get("paused"):
            problems.append(f"{kind} {name} is paused")
        if k.progress(obj, revisions).phase is not RolloutPhase.COMPLETE:
            problems.append(f"{kind} {name} is not complete")
    return {"ok": not problems, "problems": problems}


STEPS = {
    "create": create,
    "scale": scale,
    "limit": limit,
    "together": together,
    "baseline": baseline,
    "drift": drift,
    "check": check,
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.drive", description=__doc__)
    parser.add_argument("step", choices=sorted(STEPS))
    parser.add_argument("--kubeconfig", required=True)
    parser.add_argument("-n", "--namespace", default="")
    parser.add_argument("--workloads", type=int, default=1)
    parser.add_argument("--image", required=True)
    parser.add_argument("--kind", default=DC)
    parser.add_argument("--name", default="")
    parser.add_argument("--prefix", default="bench-scale-")
    parser.add_argument("--namespaces", type=int, default=10)
    parser.add_argument("--start", type=int, default=0)
    args = parser.parse_args(argv)
    client = Client.connect(kubeconfig=args.kubeconfig)
    try:
        result = STEPS[args.step](client, args)
    except Exception as exc:  # reported as the step's result: the benchmark goes on with the next case
        result = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
    print(json.dumps(result), flush=True)
    return 0 if result.get("ok") else 1


if __name__ == "__main__":
    sys.exit(main())
