"""Equipment for the `rollguard migrate` tests: a DC group as `oc new-app` leaves it, and a recorder of a
Service's Endpoints that sees every change the endpoints controller makes while a migration runs.

`EndpointsRecorder` lists, then watches, the Endpoints object of one Service in a thread of its own and
keeps every version it sees (the ready addresses, by pod name): a test asserts that none of them, from
before the migration to after it, was without a ready address. The sandbox's real endpoints controller
(kube-controller-manager) fills them from the pods the stand-in kubelet reports ready.
"""

from __future__ import annotations

import datetime as dt
import threading
import time
from dataclasses import dataclass, field

from rollguard.cluster.client import Client
from rollguard.core.resources import DEPLOYMENT_CONFIGS, HORIZONTAL_POD_AUTOSCALERS, LEASES, Resource
from rollguard.core.structs import Obj
from tests.helpers.cluster import dc_body, rolled_out, wait_until
from tests.helpers.scenarios import edit, image_change_trigger

SERVICES = Resource("", "v1", "services", "Service")
ENDPOINTS = Resource("", "v1", "endpoints", "Endpoints")


def ready_pods(endpoints: Obj) -> list[str]:
    """The pods an Endpoints object lists as ready addresses."""
    return sorted(
        str((a.get("targetRef") or {}).get("name", a.get("ip")))
        for s in endpoints.get("subsets") or []
        for a in s.get("addresses") or []
    )


@dataclass
class EndpointsRecorder:
    """Every version of one Endpoints object from `start` to `stop` (its ready pods each time)."""

    client: Client
    namespace: str
    name: str
    seen: list[list[str]] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None
    _error: BaseException | None = None

    def start(self) -> EndpointsRecorder:
        first = wait_until(self.client, ENDPOINTS, self.namespace, self.name, lambda e: bool(ready_pods(e)),
                           timeout=60, what="to list a ready address")  # fmt: skip
        self.seen.append(ready_pods(first))
        version = first["metadata"]["resourceVersion"]
        self._thread = threading.Thread(target=self._run, args=(version,), daemon=True)
        self._thread.start()
        return self

    def _run(self, version: str) -> None:
        try:
            while not self._stop.is_set():
                for event in self.client.watch(ENDPOINTS, namespace=self.namespace, timeout_seconds=2,
                                               resource_version=version):  # fmt: skip
                    obj = event["object"]
                    version = obj.get("metadata", {}).get("resourceVersion", version)
                    if obj.get("metadata", {}).get("name") == self.name:
                        self.seen.append([] if event["type"] == "DELETED" else ready_pods(obj))
                    if self._stop.is_set():
                        break
        except BaseException as exc:
            self._error = exc

    def stop(self) -> list[list[str]]:
        """Stop and return what was seen; the last entry is re-read so the end state is current."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
        if self._error is not None:
            raise AssertionError(f"the Endpoints watch failed: {self._error!r}")
        self.seen.append(ready_pods(self.client.get(ENDPOINTS, self.name, namespace=self.namespace)))
        return self.seen

    def without_ready(self) -> list[int]:
        """The indexes of the versions seen with no ready address."""
        return [i for i, pods in enumerate(self.seen) if not pods]


def service(client: Client, namespace: str, name: str, selector: dict[str, str]) -> None:
    """A Service as `oc new-app` makes it for DC ``name`` (selecting ``deploymentconfig=<name>``)."""
    client.create(SERVICES, {
        "apiVersion": "v1", "kind": "Service", "metadata": {"name": name},
        "spec": {"selector": selector, "ports": [{"name": "8080-tcp", "port": 8080, "targetPort": 8080}]},
    }, namespace=namespace)  # fmt: skip


def hpa_on_dc(client: Client, namespace: str, name: str, *, low: int, high: int) -> None:
    """An autoscaling/v1 HPA that scales DC ``name`` (``oc autoscale dc/NAME``; the sandbox's API server
    serves autoscaling/v1 only)."""
    client.create(HORIZONTAL_POD_AUTOSCALERS, {
        "apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler", "metadata": {"name": name},
        "spec": {"scaleTargetRef": {"apiVersion": "apps.openshift.io/v1", "kind": "DeploymentConfig", "name": name},
                 "minReplicas": low, "maxReplicas": high, "targetCPUUtilizationPercentage": 80},
    }, namespace=namespace)  # fmt: skip


def rolling_dc(name: str, stream_tag: str, *, replicas: int) -> Obj:
    """A Rolling DC fed by an automatic ImageChange trigger, with a ConfigChange trigger (`oc new-app`)."""
    body = dc_body(name, " ", replicas=replicas,
                   triggers=[{"type": "ConfigChange"}, image_change_trigger(stream_tag)])  # fmt: skip
    body["spec"]["template"]["metadata"]["labels"]["deploymentconfig"] = name
    return body


def recreate_dc(name: str, stream_tag: str, *, replicas: int) -> Obj:
    """A Recreate DC fed by an ImageChange trigger (made manual once it rolled out: `manual_trigger`)."""
    body = rolling_dc(name, stream_tag, replicas=replicas)
    body["spec"]["strategy"] = {"type": "Recreate", "recreateParams": {"timeoutSeconds": 600}}
    return body


def manual_trigger(client: Client, namespace: str, name: str) -> None:
    """`oc set triggers dc/NAME --manual`: the image trigger stops following its tag (no rollout)."""

    def manual(obj: Obj) -> None:
        for t in obj["spec"]["triggers"]:
            if t["type"] == "ImageChange":
                t["imageChangeParams"].pop("automatic", None)

    edit(client, DEPLOYMENT_CONFIGS, namespace, name, manual)


def create_dcs(client: Client, namespace: str, bodies: list[Obj]) -> None:
    for body in bodies:
        client.create(DEPLOYMENT_CONFIGS, body, namespace=namespace)
    for body in bodies:
        rolled_out(client, "DeploymentConfig", namespace, body["metadata"]["name"], timeout=90)


def expire_lease(client: Client, namespace: str, name: str) -> None:
    """Move a killed run's Lease renewTime into the past: what waiting out its duration would do (a lease
    expires by the clock alone, with no event to wait on)."""
    lease = client.get(LEASES, name, namespace=namespace)
    past = (dt.datetime.now(dt.UTC) - dt.timedelta(minutes=5)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    lease["spec"]["renewTime"] = lease["spec"]["acquireTime"] = past
    client.replace(LEASES, lease, namespace=namespace)


def wait_gone(client: Client, res: Resource, namespace: str, name: str, *, timeout: float = 60) -> None:
    """Watch until object ``name`` is deleted (finalizers and all)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        listing = client.list(res, namespace=namespace)
        if not any(o["metadata"]["name"] == name for o in listing.get("items", [])):
            return
        for event in client.watch(res, namespace=namespace, timeout_seconds=5,
                                  resource_version=listing["metadata"]["resourceVersion"]):  # fmt: skip
            if event["type"] == "DELETED" and event["object"]["metadata"]["name"] == name:
                return
    raise AssertionError(f"{res.kind} {name} still there after {timeout:.0f}s")
