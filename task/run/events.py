"""Audit records: Kubernetes Events on the workloads rollguard repaired or found damaged.

Repeats are counted, not piled up, as kubectl's and the controllers' event recorder does (client-go
tools/record/events_cache.go): events alike in source, involved object (kind, namespace, name, uid,
apiVersion), type, reason and message are one Event whose ``count`` and ``lastTimestamp`` go up. The
recorder keeps that key in memory; rollguard runs as a new process each time (a nightly CronJob), so the
key is carried in the Event's *name* instead: the next run finds the Event by name and counts it up,
until the API server's event TTL removes it and the next repeat starts a new one.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import socket

from rollguard.cluster.api import Api
from rollguard.core.errors import Conflict, Forbidden, NotFound
from rollguard.core.resources import EVENTS
from rollguard.core.structs import Obj, WorkloadRef
from rollguard.kinds import kind_of

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
    body: Obj = {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"namespace": meta.get("namespace", "")},
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
    body["metadata"]["name"] = event_name(ref.name, event_key(body))
    return body


def event_key(event: Obj) -> str:
    """What makes two events the same one (events_cache.go getEventKey; resourceVersion is not in it)."""
    involved, source = event.get("involvedObject", {}), event.get("source", {})
    parts = [
        source.get("component", ""),
        source.get("host", ""),
        *(involved.get(k, "") for k in ("kind", "namespace", "name", "fieldPath", "uid", "apiVersion")),
        event.get("type", ""),
        event.get("reason", ""),
        event.get("message", ""),
    ]
    return hashlib.sha256("\x00".join(parts).encode()).hexdigest()


def event_name(object_name: str, key: str) -> str:
    """``<object>.rollguard-<key>``: the recorder's ``<object>.<suffix>``, with a suffix that is the key."""
    return f"{object_name[:200]}.rollguard-{key[:16]}"


def counted(existing: Obj, *, at: dt.datetime | None = None) -> Obj:
    """The existing Event seen once more (pure): count + 1 and lastTimestamp now, as eventObserve patches."""
    stamp = (at or dt.datetime.now(dt.UTC)).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {**existing, "count": int(existing.get("count") or 1) + 1, "lastTimestamp": stamp}


def emit(client: Api, ref: WorkloadRef, obj: Obj, *, reason: str, message: str, warning: bool = False) -> Obj:
    """Record the Event, or count up the same one; API errors propagate (callers decide whether an
    audit failure matters)."""
    body = event_body(ref, obj, reason=reason, message=message, warning=warning)
    namespace, name = body["metadata"]["namespace"], body["metadata"]["name"]
    for _ in range(RECORD_ATTEMPTS):
        try:
            return client.create(EVENTS, body, namespace=namespace)
        except Conflict:  # AlreadyExists: the same event was recorded before
            pass
        try:
            existing = client.get(EVENTS, name, namespace=namespace)
            return client.replace(EVENTS, counted(existing), namespace=namespace)  # resourceVersion guards
        except (Conflict, NotFound):  # counted by someone else meanwhile, or expired: look again
            continue
        except Forbidden:  # may create events but not read or update them: record it anew, uncounted
            fresh = {**body, "metadata": {"namespace": namespace, "generateName": f"{name}-"}}
            return client.create(EVENTS, fresh, namespace=namespace)
    raise Conflict(f"event {namespace}/{name} kept changing while being counted up", status=409)


RECORD_ATTEMPTS = 5
