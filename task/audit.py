"""Audit records: Kubernetes Events on the workloads rollguard repaired or found damaged."""

from __future__ import annotations

import datetime as dt
import socket

from rollguard.client import Client
from rollguard.kinds import kind_of
from rollguard.resources import EVENTS
from rollguard.structs import Obj, WorkloadRef

MESSAGE_LIMIT = 1000  # the API server refuses longer event messages (1 KiB)


def event_body(
    ref: WorkloadRef,
    obj: Obj,
    *,
    reason: str,
    message: str,
    warning: bool = False,
    at: dt.datetime | None = None,
) -> Obj:
    """A core/v1 Event about ``obj`` (pure), as `kubectl describe` and the console show them."""
    meta = obj.get("metadata", {})
    stamp = (at or dt.datetime.now(dt.UTC)).strftime("%Y-%m-%dT%H:%M:%SZ")
    text = message if len(message) <= MESSAGE_LIMIT else message[: MESSAGE_LIMIT - 3] + "..."
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"generateName": f"{ref.name}.rollguard-", "namespace": meta.get("namespace", "")},
        "involvedObject": {
            "apiVersion": kind_of(ref).resource.api_version,
            "kind": ref.kind,
            "name": ref.name,
            "namespace": meta.get("namespace", ""),
            "uid": meta.get("uid", ""),
            "resourceVersion": meta.get("resourceVersion", ""),
        },
        "reason": reason,
        "message": text,
        "type": "Warning" if warning else "Normal",
        "source": {"component": "rollguard"},
        "reportingComponent": "rollguard",
        "reportingInstance": socket.gethostname()[:128],
        "firstTimestamp": stamp,
        "lastTimestamp": stamp,
        "count": 1,
    }


def emit(
    client: Client, ref: WorkloadRef, obj: Obj, *, reason: str, message: str, warning: bool = False
) -> Obj:
    """Create the Event; API errors propagate (callers decide whether an audit failure matters)."""
    body = event_body(ref, obj, reason=reason, message=message, warning=warning)
    return client.create(EVENTS, body, namespace=body["metadata"]["namespace"])
