"""Test support: the test group's constants, real-shaped workloads, waits through the watch API, the CLI.

Shared by the cluster tests; everything here talks to the live sandbox through rollguard's own Client.
The one place for what several test files use: the group (`GROUP`, `make_group`, `image_args`, `all_on`, `SELECTOR`,
its journal's and lock's name `JOURNAL`), the images (`OLD`, `NEW`, ...; the stand-in kubelet, sandbox/kubelet.py, fails them by tag),
and the journal readers. Fixtures (`client`, `namespace`, `sandbox`, `k8s`) live in tests/conftest.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rollguard.cluster.client import Client
from rollguard.cluster.journal import JournalStore, group_name
from rollguard.cluster.journal_codec import decode
from rollguard.core.errors import NotFound
from rollguard.core.resources import (
    CONFIG_MAPS,
    DEPLOYMENT_CONFIGS,
    DEPLOYMENTS,
    IMAGE_STREAMS,
    LEASES,
    PODS,
    REPLICA_SETS,
    REPLICATION_CONTROLLERS,
    Resource,
)
from rollguard.core.structs import DC, DEPLOYMENT, Obj, RolloutPhase
from rollguard.kinds import KINDS, images_of
from rollguard.plan.inputs import parse_selector

GROUP_LABELS = {"app": "shop-api"}
SELECTOR = "app=shop-api"
JOURNAL = group_name(parse_selector(SELECTOR))  # the group's journal ConfigMap and its Lease

IMAGE = "registry.local/shop/api"  # the test group's repository; a tag's suffix tells the kubelet what to do
OLD = f"{IMAGE}:v1"
NEW = f"{IMAGE}:v2"
CRASH = f"{IMAGE}:v2-crash"  # a new version whose pods crash-loop
NEWER = f"{IMAGE}:v3"  # a third version, for a run after a run
NEWER_CRASH = f"{IMAGE}:v3-crash"


def dc_body(
    name: str,
    image: str,
    *,
    labels: dict[str, str] | None = None,
    replicas: int = 1,
    timeout: int = 600,
    containers: int = 1,
    triggers: list[Obj] | None = None,
) -> Obj:
    """A DeploymentConfig as an OpenShift template would create it."""
    spec: Obj = {
        "replicas": replicas,
        "selector": {"name": name},
        "strategy": {"type": "Rolling", "rollingParams": {"timeoutSeconds": timeout}},
        "template": {
            "metadata": {"labels": {"name": name}},
            "spec": {
                "containers": [
                    {"name": "app" if i == 0 else f"side{i}", "image": image} for i in range(containers)
                ]
            },
        },
    }
    if triggers is not None:
        spec["triggers"] = triggers
    return {
        "apiVersion": "apps.openshift.io/v1",
        "kind": "DeploymentConfig",
        "metadata": {"name": name, "labels": {**GROUP_LABELS, **(labels or {})}},
        "spec": spec,
    }


def deployment_body(
    name: str, image: str, *, labels: dict[str, str] | None = None, replicas: int = 1, deadline: int = 600
) -> Obj:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "labels": {**GROUP_LABELS, **(labels or {})}},
        "spec": {
            "replicas": replicas,
            "progressDeadlineSeconds": deadline,
            "selector": {"matchLabels": {"name": name}},
            "template": {
                "metadata": {"labels": {"name": name}},
                "spec": {"containers": [{"name": "app", "image": image}]},
            },
        },
    }


def wait_until(
    client: Client,
    res: Resource,
    namespace: str,
    name: str,
    predicate: Callable[[Obj], bool],
    *,
    timeout: float = 60.0,
    what: str = "",
) -> Obj:
    """Watch one object until ``predicate`` holds; fail the test with its last state otherwise."""
    deadline = time.monotonic() + timeout
    last: Obj | None = None
    while time.monotonic() < deadline:
        listing = client.list(res, namespace=namespace)
        for obj in listing.get("items", []):
            if obj["metadata"]["name"] == name:
                last = obj
        if last is not None and predicate(last):
            return last
        remaining = int(max(deadline - time.monotonic(), 1))
        try:
            for event in client.watch(
                res,
                namespace=namespace,
                timeout_seconds=min(remaining, 30),
                resource_version=listing["metadata"]["resourceVersion"],
            ):
                obj = event["object"]
                if obj.get("metadata", {}).get("name") != name:
                    continue
                last = obj
                if predicate(obj):
                    return obj
                if time.monotonic() > deadline:
                    break
        except Exception:  # a cut watch: re-list and go on
            continue
    raise AssertionError(f"timed out waiting for {res.kind} {name} {what}: {json.dumps(last)[:1500]}")


def rolled_out(client: Client, kind: str, namespace: str, name: str, *, timeout: float = 60.0) -> Obj:
    """Wait until the workload runs its current template completely."""
    k = KINDS[kind]

    def done(obj: Obj) -> bool:
        revisions = k.owned(obj, client.list(k.revisions, namespace=namespace)["items"])
        return k.progress(obj, revisions).phase is RolloutPhase.COMPLETE

    return wait_until(client, k.resource, namespace, name, done, timeout=timeout, what="to roll out")


def create_group(client: Client, namespace: str, bodies: list[Obj]) -> None:
    """Create workloads and wait until every one has rolled out its first version."""
    for body in bodies:
        res = DEPLOYMENT_CONFIGS if body["kind"] == DC else DEPLOYMENTS
        client.create(res, body, namespace=namespace)
    for body in bodies:
        rolled_out(client, body["kind"], namespace, body["metadata"]["name"])


GROUP = ((DC, "dc1"), (DC, "dc2"), (DEPLOYMENT, "web"))  # the test group most live tests roll out


def image_args(image: str, *, crash_second: str | None = None) -> list[str]:
    """``--image`` for each workload of `GROUP`; the second one gets ``crash_second`` if given."""
    target = {DC: "dc", DEPLOYMENT: "deploy"}
    args = []
    for index, (kind, name) in enumerate(GROUP):
        args += ["--image", f"{target[kind]}/{name}={crash_second if crash_second and index == 1 else image}"]
    return args


def make_group(client: Client, namespace: str, image: str = OLD) -> None:
    """The test group (`GROUP`: two DCs and a Deployment labelled `SELECTOR`) on ``image``, rolled out."""
    create_group(
        client, namespace, [dc_body("dc1", image), dc_body("dc2", image), deployment_body("web", image)]
    )


def all_on(client: Client, namespace: str, image: str) -> None:
    """Every member of the test group on ``image``, not paused, its rollout complete."""
    for kind, name in GROUP:
        state = view(client, namespace, kind, name)
        assert state.images == {"app": image} and not state.paused and state.complete, (name, state)


def journal(client: Client, namespace: str) -> Obj | None:
    """The test group's journal record as JSON, None when there is none."""
    try:
        cm = client.get(CONFIG_MAPS, JOURNAL, namespace=namespace)
    except NotFound:
        return None
    record: Obj = decode(cm)
    return record


def journal_reaches(client: Client, namespace: str, *states: str, timeout: float = 90) -> Obj:
    """Watch the test group's journal until its run is in one of ``states``; the main record then.

    The state is read as rollguard reads it (`JournalStore.load`), so a journal committed in part
    ConfigMaps counts too."""

    def there(_cm: Obj) -> bool:
        loaded = JournalStore(client, namespace=namespace, selector=SELECTOR).load()
        return loaded is not None and loaded.state in states

    cm = wait_until(client, CONFIG_MAPS, namespace, JOURNAL, there, timeout=timeout,
                    what=f"journal state in {states}")  # fmt: skip
    record: Obj = decode(cm)
    return record


@dataclass
class WorkloadView:
    """What a test asserts on: a workload's live state."""

    kind: str
    name: str
    images: dict[str, str]
    paused: bool
    revision: int
    complete: bool
    latest_phase: str


def view(client: Client, namespace: str, kind: str, name: str) -> WorkloadView:
    k = KINDS[kind]
    obj = client.get(k.resource, name, namespace=namespace)
    revisions = k.owned(obj, client.list(k.revisions, namespace=namespace)["items"])
    phase = ""
    if kind == DC and revisions:
        phase = revisions[0]["metadata"]["annotations"].get("openshift.io/deployment.phase", "")
    return WorkloadView(
        kind=kind,
        name=name,
        images=images_of(obj["spec"]["template"]),
        paused=bool(obj["spec"].get("paused")),
        revision=k.revision(obj),
        complete=k.progress(obj, revisions).phase is RolloutPhase.COMPLETE,
        latest_phase=phase,
    )


def resource_versions(client: Client, namespace: str) -> dict[str, str]:
    """A fingerprint of everything rollguard could change in the namespace, to prove it changed nothing.

    Workloads and their revisions are compared by ``metadata.generation`` (bumped by every spec write),
    since their controllers keep writing status, which changes resourceVersion without any client; the
    objects only rollguard writes (journal ConfigMaps, Leases, ImageStreams) by resourceVersion.
    """
    found = {}
    for res in (DEPLOYMENT_CONFIGS, DEPLOYMENTS, REPLICATION_CONTROLLERS, REPLICA_SETS):
        for obj in client.list(res, namespace=namespace).get("items", []):
            found[f"{res.plural}/{obj['metadata']['name']}"] = (
                f"generation {obj['metadata'].get('generation')}"
            )
    for res in (CONFIG_MAPS, LEASES, IMAGE_STREAMS):
        for obj in client.list(res, namespace=namespace).get("items", []):
            found[f"{res.plural}/{obj['metadata']['name']}"] = obj["metadata"]["resourceVersion"]
    return found


@dataclass
class Result:
    code: int
    stdout: str
    stderr: str
    report: Obj


def rollguard(
    kubeconfig: str | Path,
    *args: str,
    report: Path | None = None,
    timeout: float = 240,
    env: dict[str, str] | None = None,
    stdin: str | None = None,
) -> Result:
    """Run the CLI as a subprocess, like the Tekton step does (``stdin``: what is piped into it)."""
    cmd = [sys.executable, "-m", "rollguard.cli", *args, "--kubeconfig", str(kubeconfig)]
    if report is not None:
        cmd += ["--report", str(report)]
    proc = subprocess.run(
        cmd,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
        input=stdin if stdin is not None else "",
    )
    data = json.loads(report.read_text()) if report is not None and report.exists() else {}
    return Result(proc.returncode, proc.stdout, proc.stderr, data)


def start_rollguard(
    kubeconfig: str | Path, *args: str, report: Path | None = None, env: dict[str, str] | None = None
) -> subprocess.Popen[str]:
    """Start the CLI as a subprocess and return at once (to kill it, or to race it)."""
    cmd = [sys.executable, "-m", "rollguard.cli", *args, "--kubeconfig", str(kubeconfig)]
    if report is not None:
        cmd += ["--report", str(report)]
    return subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ, **(env or {})}
    )


def pin(sandbox: Any, ref: str) -> str:
    """A digest reference the sandbox's registry knows (so the kubelet applies its rules)."""
    pinned: str = sandbox.pin(ref)
    return pinned


__all__ = ["DC", "DEPLOYMENT", "SELECTOR"]


def crash_looping(prefix: str) -> Callable[[Obj], bool]:
    """A pod of ``prefix`` (an RC's name and a dash) whose container is in CrashLoopBackOff."""

    def judged(pod: Obj) -> bool:
        statuses = (pod.get("status") or {}).get("containerStatuses") or []
        return pod["metadata"]["name"].startswith(prefix) and any(
            ((s.get("state") or {}).get("waiting") or {}).get("reason") == "CrashLoopBackOff"
            for s in statuses
        )

    return judged


def wait_for_pod(
    client: Client, namespace: str, predicate: Callable[[Obj], bool], timeout: float = 60
) -> Obj:
    """Watch the namespace's pods until one satisfies ``predicate``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        listing = client.list(PODS, namespace=namespace)
        found = [p for p in listing["items"] if predicate(p)]
        if found:
            return found[0]
        left = int(max(deadline - time.monotonic(), 1))
        for event in client.watch(PODS, namespace=namespace, timeout_seconds=min(left, 30),
                                  resource_version=listing["metadata"]["resourceVersion"]):  # fmt: skip
            if predicate(event["object"]):
                return event["object"]
    raise AssertionError(f"no such pod in {namespace} within {timeout}s")
