"""The CustomResourceDefinitions for DeploymentConfig and ImageStream: apply them and wait until served."""

from __future__ import annotations

import logging
import time
from pathlib import Path

import yaml

from sandbox.openshift.kube import JSON, ApiError, Kube

log = logging.getLogger(__name__)
CRD_FILES = ("deploymentconfigs.yaml", "imagestreams.yaml")
_CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


def load() -> list[JSON]:
    here = Path(__file__).resolve().parent
    return [yaml.safe_load((here / f).read_text()) for f in CRD_FILES]


def apply(kube: Kube, timeout: float = 60.0) -> None:
    """Create or update every CRD, then wait until each is Established."""
    for crd in load():
        name = crd["metadata"]["name"]
        for _ in range(10):
            try:
                current = kube.get(f"{_CRDS}/{name}")
            except ApiError as e:
                if e.status != 404:
                    raise
                try:
                    kube.request("POST", _CRDS, crd)
                    log.info("created CRD %s", name)
                    break
                except ApiError as e2:
                    if e2.status == 409:
                        continue
                    raise
            if current["spec"] == {**current["spec"], **crd["spec"]}:
                break
            body = {
                **crd,
                "metadata": {**crd["metadata"], "resourceVersion": current["metadata"]["resourceVersion"]},
            }
            try:
                kube.request("PUT", f"{_CRDS}/{name}", body)
                log.info("updated CRD %s", name)
                break
            except ApiError as e:
                if e.status != 409:
                    raise
    deadline = time.monotonic() + timeout
    for crd in load():
        _wait_established(kube, crd["metadata"]["name"], deadline)


def _established(obj: JSON) -> bool:
    conds = obj.get("status", {}).get("conditions") or []
    return any(c.get("type") == "Established" and c.get("status") == "True" for c in conds)


def _wait_established(kube: Kube, name: str, deadline: float) -> None:
    while True:
        lst = kube.get(_CRDS, fieldSelector=f"metadata.name={name}")
        if any(_established(o) for o in lst.get("items", [])):
            return
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError(f"CRD {name} not Established in time")
        rv = lst["metadata"]["resourceVersion"]
        try:
            for ev in kube.watch(
                _CRDS, rv, timeout_seconds=max(1, int(left)), fieldSelector=f"metadata.name={name}"
            ):
                if _established(ev.get("object") or {}):
                    return
        except ApiError as e:
            if e.status != 410:
                raise
