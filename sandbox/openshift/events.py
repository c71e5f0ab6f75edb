"""Kubernetes Events about DeploymentConfigs, written in the background like client-go's recorder."""

from __future__ import annotations

import logging
import queue
import secrets
import threading

from sandbox.openshift.appsutil import now
from sandbox.openshift.kube import JSON, ApiError, Kube

log = logging.getLogger(__name__)


class Recorder:
    """Queue events and post them from one thread, so a reconcile never waits for an event write."""

    def __init__(self, kube: Kube, component: str) -> None:
        self.kube, self.component = kube, component
        self._queue: queue.Queue[JSON] = queue.Queue(maxsize=10000)
        threading.Thread(target=self._run, name=f"events {component}", daemon=True).start()

    def event(self, obj: JSON, type_: str, reason: str, message: str, *, component: str = "") -> None:
        """Post an event about `obj`; `component`: its source, when not this recorder's (a deployer pod's)."""
        m = obj.get("metadata", {})
        component = component or self.component
        ts = now()
        ev = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": f"{m.get('name')}.{secrets.token_hex(8)}", "namespace": m.get("namespace")},
            "involvedObject": {
                "kind": obj.get("kind"),
                "apiVersion": obj.get("apiVersion"),
                "name": m.get("name"),
                "namespace": m.get("namespace"),
                "uid": m.get("uid"),
                "resourceVersion": m.get("resourceVersion"),
            },
            "reason": reason,
            "message": message,
            "type": type_,
            "source": {"component": component},
            "firstTimestamp": ts,
            "lastTimestamp": ts,
            "count": 1,
            "reportingComponent": component,
            "reportingInstance": "",
        }
        try:
            self._queue.put_nowait(ev)
        except queue.Full:
            log.warning("event queue full, dropping %s %s", reason, message)

    def _run(self) -> None:
        while True:
            ev = self._queue.get()
            try:
                self.kube.request("POST", f"/api/v1/namespaces/{ev['metadata']['namespace']}/events", ev)
            except ApiError as e:
                if e.status != 404:  # the namespace is gone: nothing to tell
                    log.debug("event %s: %s", ev["reason"], e)
            except Exception as e:
                log.debug("event %s: %r", ev["reason"], e)
