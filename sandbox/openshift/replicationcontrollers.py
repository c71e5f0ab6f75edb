"""The ReplicationController of a DC revision, as OpenShift's MakeDeployment builds it."""

from __future__ import annotations

import copy
import json
from typing import Any

from sandbox.openshift import appsutil as u
from sandbox.openshift.informer import key_of
from sandbox.openshift.kube import JSON


def controller_ref(dc: JSON) -> JSON:
    return {
        "apiVersion": u.GROUP_VERSION,
        "kind": "DeploymentConfig",
        "name": dc["metadata"]["name"],
        "uid": dc["metadata"]["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }


def make_deployment(dc: JSON) -> JSON:
    """The RC `<dc>-<latestVersion>` for the DC as it is now (OpenShift's MakeDeployment), at 0 replicas."""
    ns, name = key_of(dc)
    version = int(dc["status"]["latestVersion"])
    rc_name = u.rc_name(name, version)
    spec = dc.get("spec", {})
    template: dict[str, Any] = copy.deepcopy(spec.get("template") or {})
    meta = template.setdefault("metadata", {})
    pod_spec = template.setdefault("spec", {})
    for key in ("initContainers", "containers"):
        for c in pod_spec.get(key) or []:
            c["image"] = (c.get("image") or "").strip()
    meta["labels"] = {
        **(meta.get("labels") or {}),
        u.DC_LABEL: name,
        u.DEPLOYMENT_LABEL: rc_name,
        u.DC_NAME_LABEL: name,
    }
    meta["annotations"] = {
        **(meta.get("annotations") or {}),
        u.DEPLOYMENT_NAME: rc_name,
        u.DC_NAME: name,
        u.LATEST_VERSION: str(version),
    }
    # managedFields are the API server's bookkeeping, not configuration: leave them out of every RC
    dc_meta = {k: v for k, v in dc["metadata"].items() if k != "managedFields"}
    encoded = {**dc, "kind": "DeploymentConfig", "apiVersion": u.GROUP_VERSION, "metadata": dc_meta}
    annotations = {
        u.DC_NAME: name,
        u.ENCODED_CONFIG: json.dumps(encoded, separators=(",", ":")) + "\n",
        u.PHASE: u.NEW,
        u.LATEST_VERSION: str(version),
        u.DESIRED_REPLICAS: str(int(spec.get("replicas") or 0)),
        u.DEPLOYMENT_REPLICAS: "0",
    }  # no deployer-pod.name yet: the deployer controller sets it once it created (or found) the pod
    message = ((dc.get("status") or {}).get("details") or {}).get("message")
    if message:
        annotations[u.STATUS_REASON] = message
    rc_spec: JSON = {
        "replicas": 0,
        "selector": {**(spec.get("selector") or {}), u.DC_LABEL: name, u.DEPLOYMENT_LABEL: rc_name},
        "template": template,
    }
    if spec.get("minReadySeconds"):
        rc_spec["minReadySeconds"] = spec["minReadySeconds"]
    return {
        "apiVersion": "v1",
        "kind": "ReplicationController",
        "metadata": {
            "name": rc_name,
            "namespace": ns,
            "labels": {**(dc["metadata"].get("labels") or {}), u.DC_NAME: name},
            "annotations": annotations,
            "ownerReferences": [controller_ref(dc)],
        },
        "spec": rc_spec,
    }
