"""Annotation image triggers on the live sandbox: a Deployment as `oc set triggers deploy/web
--from-image` leaves it, and its trigger entries read back."""

from __future__ import annotations

import json

from rollguard.cluster.client import Client
from rollguard.core.resources import (
    DEPLOYMENTS,
)
from tests.helpers.cluster import (
    deployment_body,
)


def annotated_web(stream_tag: str) -> dict:
    """A Deployment as `oc set triggers deploy/web --from-image=api:latest -c app` leaves it."""
    body = deployment_body("web", " ")
    entry = {"from": {"kind": "ImageStreamTag", "name": stream_tag},
             "fieldPath": 'spec.template.spec.containers[?(@.name=="app")].image'}  # fmt: skip
    body["metadata"]["annotations"] = {"image.openshift.io/triggers": json.dumps([entry])}
    return body


def trigger_entries(client: Client, namespace: str) -> list[dict]:
    dep = client.get(DEPLOYMENTS, "web", namespace=namespace)
    return json.loads(dep["metadata"]["annotations"]["image.openshift.io/triggers"])
