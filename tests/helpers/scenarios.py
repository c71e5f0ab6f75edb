"""Damaged states built on the live sandbox the way real tools leave them, for the state and repair tests.

Everything goes through the API (rollguard's Client) and waits on watch events (tests.helpers.cluster.wait_until).
"""

from __future__ import annotations

import contextlib
import datetime as dt
from collections.abc import Callable, Iterator
from typing import Any

import yaml

from rollguard.cluster.client import Client
from rollguard.cluster.journal import Journal, JournalStore, WorkloadEntry
from rollguard.core.errors import Conflict, NotFound
from rollguard.core.resources import (
    CONFIG_MAPS,
    DEPLOYMENT_CONFIGS,
    DEPLOYMENTS,
    EVENTS,
    IMAGE_STREAMS,
    LEASES,
    NAMESPACES,
    REPLICATION_CONTROLLERS,
    Resource,
)
from rollguard.core.structs import DC, Obj
from rollguard.kinds import KINDS
from rollguard.plan.inputs import parse_selector
from rollguard.state.assessment import WorkloadState
from rollguard.state.inventory import read_namespace
from tests.helpers.cluster import (
    CRASH,
    NEW,
    OLD,
    SELECTOR,
    create_group,
    dc_body,
    rolled_out,
    rollguard,
    wait_until,
)

PHASE = "openshift.io/deployment.phase"


def states(client: Client, namespace: str, selector: str | None = None) -> dict[str, WorkloadState]:
    """The state model's verdict on the namespace, by ``dc/NAME`` / ``deployment/NAME``."""
    return {w.key: w for w in read_namespace(client, namespace, selector=selector).workloads}


def image_stream(
    client: Client, namespace: str, name: str, tags: dict[str, str], *, local: bool = False
) -> None:
    """An ImageStream whose tags import the given references (the sandbox pins them to digests);
    ``local``: each tag with ``referencePolicy: Local`` (triggers then write the stream's own repository)."""
    spec_tags: list[Obj] = [
        {"name": t, "from": {"kind": "DockerImage", "name": ref}} for t, ref in tags.items()
    ]
    if local:
        spec_tags = [{**t, "referencePolicy": {"type": "Local"}} for t in spec_tags]
    client.create(
        IMAGE_STREAMS,
        {
            "apiVersion": "image.openshift.io/v1",
            "kind": "ImageStream",
            "metadata": {"name": name},
            "spec": {"tags": spec_tags},
        },
        namespace=namespace,
    )


def move_tag(client: Client, namespace: str, stream: str, tag: str, ref: str) -> None:
    """`oc tag REF stream:tag`: point the tag at another image."""

    def point(obj: Obj) -> None:
        obj["spec"]["tags"] = [t for t in obj["spec"].get("tags", []) if t["name"] != tag] + [
            {"name": tag, "from": {"kind": "DockerImage", "name": ref}}
        ]

    edit(client, IMAGE_STREAMS, namespace, stream, point)


def image_change_trigger(stream_tag: str, *, automatic: bool = True) -> Obj:
    """A DC's ImageChange trigger of container ``app`` on ``stream:tag`` (manual: no ``automatic``, as the
    API stores it)."""
    params: Obj = {"containerNames": ["app"], "from": {"kind": "ImageStreamTag", "name": stream_tag}}
    if automatic:
        params["automatic"] = True
    return {"type": "ImageChange", "imageChangeParams": params}


def triggered_dc(name: str, stream_tag: str, *, timeout: int = 600) -> Obj:
    """A DC (image left to its trigger, as templates do) with a ConfigChange and an automatic ImageChange
    trigger on ``stream_tag``."""
    return dc_body(
        name, " ", timeout=timeout, triggers=[{"type": "ConfigChange"}, image_change_trigger(stream_tag)]
    )


def latest_dc(name: str, *, timeout: int = 600) -> Obj:
    """A DC fed by an automatic ImageChange trigger on ``NAME:latest`` (the old Jenkins setup)."""
    return triggered_dc(name, f"{name}:latest", timeout=timeout)


def rc_phase(client: Client, namespace: str, name: str, phase: str, *, timeout: float = 90) -> Obj:
    return wait_until(
        client, REPLICATION_CONTROLLERS, namespace, name,
        lambda rc: rc["metadata"].get("annotations", {}).get(PHASE) == phase, timeout=timeout, what=f"phase {phase}",
    )  # fmt: skip


def edit(client: Client, res: Resource, namespace: str, name: str, change: Callable[[Obj], None]) -> Obj:
    """Get, change, PUT, the way a person's tool does; again on a conflict with a controller that wrote
    the object's status in between (a stale resourceVersion is refused with 409, never merged)."""
    for _ in range(10):
        obj = client.get(res, name, namespace=namespace)
        change(obj)
        try:
            return client.replace(res, obj, namespace=namespace)
        except Conflict:
            continue
    raise AssertionError(f"{name}: too many conflicts")


def failed_and_settled(client: Client, namespace: str, name: str, *, timeout: float = 90) -> Obj:
    """RC ``name`` Failed and scaled to zero: after the deployer controller's phase, the DC controller's
    reconcile (openshift-controller-manager deploymentconfig_controller.go reconcileDeployments: every RC
    but the newest Complete one goes to zero) still writes the RC; a test that snapshots the namespace
    waits for that write first."""
    return wait_until(
        client, REPLICATION_CONTROLLERS, namespace, name,
        lambda rc: rc["metadata"].get("annotations", {}).get(PHASE) == "Failed"
        and int((rc.get("spec") or {}).get("replicas") or 0) == 0,
        timeout=timeout, what="Failed and scaled to zero",
    )  # fmt: skip


def set_image(client: Client, namespace: str, kind: str, name: str, image: str) -> Obj:
    """Edit the first container's image by hand (`kubectl set image` / `oc set image`)."""

    def point(obj: Obj) -> None:
        obj["spec"]["template"]["spec"]["containers"][0]["image"] = image

    return edit(client, KINDS[kind].resource, namespace, name, point)


def guarded_rollout(sandbox: Any, namespace: str, images: dict[str, str]) -> Any:
    """`rollguard rollout` of the test group with ``--image TARGET=REF`` for each entry; must succeed."""
    args = [a for target, ref in images.items() for a in ("--image", f"{target}={ref}")]
    result = rollguard(sandbox.kubeconfig, "rollout", "-n", namespace, "-l", SELECTOR, *args)
    assert result.code == 0, result.stdout + result.stderr
    return result


def deadline_exceeded(client: Client, namespace: str, name: str) -> Obj:
    """Wait until the Deployment's controller gives up on its rollout (ProgressDeadlineExceeded)."""
    return wait_until(
        client, DEPLOYMENTS, namespace, name,
        lambda d: any(c.get("reason") == "ProgressDeadlineExceeded" for c in d.get("status", {}).get("conditions", [])),
        timeout=90, what="to exceed its progress deadline",
    )  # fmt: skip


def pause(client: Client, namespace: str, name: str, paused: bool = True) -> None:
    client.patch(DEPLOYMENT_CONFIGS, name, {"spec": {"paused": paused}}, namespace=namespace)


def reference_state(client: Client, namespace: str) -> None:
    """Reference section 1, as the old Jenkins stage leaves it: dc1 new, dc2 failed (back on old), dc3
    paused with the new image waiting in its template (its `:latest` trigger fired while paused)."""
    for i in (1, 2, 3):
        image_stream(client, namespace, f"dc{i}", {"latest": OLD})
    create_group(client, namespace, [latest_dc(f"dc{i}", timeout=20) for i in (1, 2, 3)])
    for i in (1, 2, 3):  # bulkPause
        pause(client, namespace, f"dc{i}")
    move_tag(client, namespace, "dc1", "latest", NEW)
    pause(client, namespace, "dc1", False)
    rc_phase(client, namespace, "dc1-2", "Complete")
    move_tag(client, namespace, "dc2", "latest", CRASH)
    pause(client, namespace, "dc2", False)
    rc_phase(client, namespace, "dc2-2", "Failed", timeout=120)  # the rollout failed; dc2 rolled back
    move_tag(client, namespace, "dc3", "latest", NEW)  # tagged, but the stage died before resuming dc3
    wait_until(
        client, DEPLOYMENT_CONFIGS, namespace, "dc3",
        lambda dc: "@sha256:" in dc["spec"]["template"]["spec"]["containers"][0]["image"]
        and dc["spec"]["template"]["spec"]["containers"][0]["image"] != _running_image(client, namespace, "dc3"),
        what="to hold the new image while paused",
    )  # fmt: skip


def _running_image(client: Client, namespace: str, name: str) -> str:
    rc = client.get(REPLICATION_CONTROLLERS, f"{name}-1", namespace=namespace)
    image: str = rc["spec"]["template"]["spec"]["containers"][0]["image"]
    return image


def killed_run(client: Client, namespace: str, *, selector: str = SELECTOR) -> None:
    """What a rollout killed mid-way leaves: a journal in state 'watching' and a Lease nobody renews."""
    normalized = parse_selector(selector)
    store = JournalStore(client, namespace=namespace, selector=normalized)
    journal = Journal(namespace=namespace, selector=normalized, run_id="20240502-090000-dead01",
                      command="rollout", actor="tekton@killed-pod", state="watching")  # fmt: skip
    for key, obj, kind in _group(client, namespace, normalized):
        revisions = kind.owned(obj, client.list(kind.revisions, namespace=namespace)["items"])
        journal.workloads[key] = WorkloadEntry(
            kind=kind.kind, name=obj["metadata"]["name"], verified=kind.verified_state(obj, revisions),
            target_images={"app": NEW}, phase="applied",
        )  # fmt: skip
    store.save(journal)
    stale = (dt.datetime.now(dt.UTC) - dt.timedelta(minutes=5)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    client.create(LEASES, {
        "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": store.name, "labels": {"app.kubernetes.io/managed-by": "rollguard"}},
        "spec": {"holderIdentity": "tekton@killed-pod run 20240502-090000-dead01", "leaseDurationSeconds": 30,
                 "acquireTime": stale, "renewTime": stale},
    }, namespace=namespace)  # fmt: skip


def _group(client: Client, namespace: str, selector: str) -> list[tuple[str, Obj, Any]]:
    out = []
    for kind in KINDS.values():
        for obj in client.list(kind.resource, namespace=namespace, selector=selector)["items"]:
            out.append((f"{'dc' if kind.kind == DC else 'deployment'}/{obj['metadata']['name']}", obj, kind))
    return out


def events(client: Client, namespace: str, reason: str) -> list[Obj]:
    items: list[Obj] = client.list(EVENTS, namespace=namespace)["items"]
    return [e for e in items if e.get("reason") == reason]


__all__ = ["rolled_out"]


OCM = "openshift-controller-manager"  # the namespace of its config, as on OpenShift


@contextlib.contextmanager
def deployer_image_format(client: Client, image_format: str) -> Iterator[Callable[[], None]]:
    """Gives a call that sets the cluster's deployer image (openshift-controller-manager's config,
    ``deployer.imageTemplateFormat.format``) to ``image_format``; the config is removed on leaving,
    whatever happened, so the next test gets the working deployer image."""

    def apply() -> None:
        with contextlib.suppress(Conflict):  # there already, from an earlier test of the session
            client.create(NAMESPACES, {"metadata": {"name": OCM}})
        config = {"deployer": {"imageTemplateFormat": {"format": image_format}}}
        body = {"metadata": {"name": "config"}, "data": {"config.yaml": yaml.safe_dump(config)}}
        client.create(CONFIG_MAPS, body, namespace=OCM)

    try:
        yield apply
    finally:
        with contextlib.suppress(NotFound):
            client.delete(CONFIG_MAPS, "config", namespace=OCM)
