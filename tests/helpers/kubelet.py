"""The stand-in kubelet's tests' equipment: bare pods and waits on them, on the official client."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from kubernetes import client, watch

APP = "registry.local/team/app"


def wait_for(list_fn: Callable[..., Any], *args: Any, name: str, until: Callable[[Any], bool],
             timeout: int = 30) -> Any:  # fmt: skip
    """Watch the object `name` until `until(obj)` holds; return it. Fails after `timeout` s."""
    last = None
    w = watch.Watch()
    for event in w.stream(list_fn, *args, field_selector=f"metadata.name={name}", timeout_seconds=timeout):
        last = event["object"]
        if event["type"] != "DELETED" and until(last):
            w.stop()
            return last
    pytest.fail(f"{name} did not get there in {timeout}s; last seen: {last and last.status}")


def make_pod(core: client.CoreV1Api, ns: str, name: str, image: str) -> None:
    core.create_namespaced_pod(
        ns, {"metadata": {"name": name}, "spec": {"containers": [{"name": "app", "image": image}]}}
    )


def waiting_reason(pod: client.V1Pod) -> str | None:
    statuses = pod.status.container_statuses or []
    return statuses[0].state.waiting.reason if statuses and statuses[0].state.waiting else None
