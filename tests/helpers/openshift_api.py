"""The emulation's own tests' equipment: DC, RC and ImageStream bodies, paths and waits on the
sandbox's plain HTTP client (`sandbox.openshift.kube`), independent of rollguard's client."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import pytest

from sandbox.openshift.kube import JSON, MERGE_PATCH, ApiError, Kube

APP = "registry.local/team/app"


DCS = "/apis/apps.openshift.io/v1/namespaces/{ns}/deploymentconfigs"


ISS = "/apis/image.openshift.io/v1/namespaces/{ns}/imagestreams"


RCS = "/api/v1/namespaces/{ns}/replicationcontrollers"


PHASE = "openshift.io/deployment.phase"


def wait_for(
    kube: Kube, collection: str, name: str, until: Callable[[JSON], bool], timeout: float = 30
) -> JSON:
    """Watch `collection/name` until `until(obj)` holds and return the object; fail after `timeout` s."""
    deadline = time.monotonic() + timeout
    last: JSON | None = None
    selector = f"metadata.name={name}"
    while time.monotonic() < deadline:
        page = kube.get(collection, fieldSelector=selector)
        for last in page["items"]:
            if until(last):
                return last
        try:
            left = max(1, int(deadline - time.monotonic()))
            for ev in kube.watch(
                collection, page["metadata"]["resourceVersion"], left, fieldSelector=selector
            ):
                if ev["type"] in ("ADDED", "MODIFIED"):
                    last = ev["object"]
                    if until(last):
                        return last
        except ApiError as e:
            if e.status != 410:
                raise
    pytest.fail(
        f"{collection}/{name} did not get there in {timeout}s; last seen:\n{json.dumps(last, indent=1)}"
    )


def wait_gone(kube: Kube, collection: str, name: str, timeout: float = 30) -> None:
    """Watch until `collection/name` no longer exists."""
    selector = f"metadata.name={name}"
    page = kube.get(collection, fieldSelector=selector)
    if not page["items"]:
        return
    for ev in kube.watch(
        collection, page["metadata"]["resourceVersion"], int(timeout), fieldSelector=selector
    ):
        if ev["type"] == "DELETED":
            return
    pytest.fail(f"{collection}/{name} still there after {timeout}s")


def dc_body(name: str, image: str, replicas: int = 1, **spec: Any) -> JSON:
    return {
        "apiVersion": "apps.openshift.io/v1",
        "kind": "DeploymentConfig",
        "metadata": {"name": name, "labels": {"app": "shop"}},
        "spec": {
            "replicas": replicas,
            "selector": {"name": name},
            "template": {
                "metadata": {"labels": {"name": name}},
                "spec": {"containers": [{"name": "app", "image": image}]},
            },
            **spec,
        },
    }


def create_dc(kube: Kube, ns: str, body: JSON) -> JSON:
    return kube.request("POST", DCS.format(ns=ns), body)


def patch(kube: Kube, path: str, body: JSON) -> JSON:
    return kube.request("PATCH", path, body, content_type=MERGE_PATCH)


def put_again_on_conflict(
    kube: Kube, read: str, change: Callable[[JSON], JSON], *, to: str | None = None
) -> JSON:
    """GET ``read``, PUT ``change(obj)`` to ``to`` (default: the same path), as a client's update does; read
    again on a 409 (a controller wrote the object's status meanwhile)."""
    for _ in range(10):
        try:
            return kube.request("PUT", to or read, change(kube.get(read)))
        except ApiError as e:
            if e.status != 409:
                raise
    pytest.fail(f"{to or read}: too many conflicts")


def set_image(kube: Kube, ns: str, dc: str, image: str, **spec: Any) -> JSON:
    body = {"spec": {**spec, "template": {"spec": {"containers": [{"name": "app", "image": image}]}}}}
    return patch(kube, f"{DCS.format(ns=ns)}/{dc}", body)


def phase_is(*phases: str) -> Callable[[JSON], bool]:
    return lambda rc: rc["metadata"].get("annotations", {}).get(PHASE) in phases


def wait_rc(kube: Kube, ns: str, name: str, *phases: str, timeout: float = 30) -> JSON:
    return wait_for(kube, RCS.format(ns=ns), name, phase_is(*phases), timeout)


def rolled_out(rc: str) -> Callable[[JSON], bool]:
    """The DC's Progressing condition says `rc` successfully rolled out."""
    message = f'replication controller "{rc}" successfully rolled out'
    return lambda dc: any(
        c.get("type") == "Progressing" and c.get("message") == message
        for c in dc.get("status", {}).get("conditions") or []
    )


def settled(dc: JSON) -> bool:
    """The controller has seen the DC's latest spec and no rollout is running."""
    return dc.get("status", {}).get("observedGeneration") == dc["metadata"]["generation"]


def rc_replicas(kube: Kube, ns: str) -> dict[str, int]:
    return {rc["metadata"]["name"]: rc["spec"]["replicas"] for rc in kube.get(RCS.format(ns=ns))["items"]}


def image_stream(name: str, tags: dict[str, JSON]) -> JSON:
    return {
        "apiVersion": "image.openshift.io/v1",
        "kind": "ImageStream",
        "metadata": {"name": name},
        "spec": {"tags": [{"name": t, "from": src} for t, src in tags.items()]},
    }


def status_tag(stream: JSON, tag: str) -> JSON | None:
    return next((t for t in stream.get("status", {}).get("tags") or [] if t["tag"] == tag), None)


def has_items(tag: str, n: int = 1) -> Callable[[JSON], bool]:
    return lambda s: len((status_tag(s, tag) or {}).get("items") or []) >= n
