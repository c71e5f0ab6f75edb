"""Image triggers on init containers, both spellings (issue 24, point 4), on the live sandbox.

library-go pkg/image/trigger/annotations.go (parseContainerReference, findContainerBySelector) with
pkg/image/referencemutator/pods.go (GetContainerByName) finds a container named in an
`image.openshift.io/triggers` field path in the init containers first, whatever the path's prefix:
`spec.template.spec.initContainers[?(@.name=="migrate")].image` and
`spec.template.spec.containers[?(@.name=="migrate")].image` both feed the init container `migrate`.
Emulated by sandbox/openshift/annotationtriggers.py (tests/sandbox/test_openshift_round3.py). An image
set directly on it must pause that entry, or the platform undoes it and the run is reverted.
"""

from __future__ import annotations

import json
from pathlib import Path

from rollguard.cluster.client import Client
from rollguard.core.resources import DEPLOYMENTS
from tests.helpers.cluster import (
    DEPLOYMENT,
    NEW,
    OLD,
    SELECTOR,
    create_group,
    deployment_body,
    rollguard,
    view,
)
from tests.helpers.scenarios import image_stream

ANNOTATION = "image.openshift.io/triggers"
MIGRATE = "registry.local/shop/migrate:v1"


def with_init_trigger(name: str, prefix: str) -> dict:
    """A Deployment whose init container `migrate` follows `migrate:latest` through a trigger entry whose
    field path starts with ``prefix`` (`initContainers` or `containers`)."""
    body = deployment_body(name, OLD)
    body["spec"]["template"]["spec"]["initContainers"] = [{"name": "migrate", "image": " "}]
    entry = {"from": {"kind": "ImageStreamTag", "name": "migrate:latest"},
             "fieldPath": f'spec.template.spec.{prefix}[?(@.name=="migrate")].image'}  # fmt: skip
    body["metadata"]["annotations"] = {ANNOTATION: json.dumps([entry])}
    return body


def entries(client: Client, namespace: str, name: str) -> list[dict]:
    return json.loads(
        client.get(DEPLOYMENTS, name, namespace=namespace)["metadata"]["annotations"][ANNOTATION]
    )


def test_an_init_container_image_set_directly_pauses_its_trigger_in_both_spellings(
    sandbox, namespace, client, tmp_path: Path
):
    """`--image deployment/NAME/migrate=REF` on an init container that a trigger entry feeds, spelled
    `initContainers[...]` (web) and `containers[...]` (api): each entry is paused in the run's one write
    (and said so), so the trigger controller leaves the image set; both roll out and succeed."""
    image_stream(client, namespace, "migrate", {"latest": MIGRATE})
    create_group(
        client,
        namespace,
        [with_init_trigger("web", "initContainers"), with_init_trigger("api", "containers")],
    )
    for name in ("web", "api"):
        ran = view(client, namespace, DEPLOYMENT, name).images["migrate"]
        assert ran.startswith("registry.local/shop/migrate@sha256:"), ran  # the trigger filled it in
    result = rollguard(
        sandbox.kubeconfig, "rollout", "-n", namespace, "-l", SELECTOR,
        "--image", f"deployment/web/migrate={NEW}", "--image", f"deployment/api/migrate={NEW}",
        report=tmp_path / "report.json",
    )  # fmt: skip
    assert result.code == 0, result.stdout + result.stderr
    for name in ("web", "api"):
        state = view(client, namespace, DEPLOYMENT, name)
        assert state.images == {"migrate": NEW, "app": OLD} and state.complete, state
        (entry,) = entries(client, namespace, name)
        assert entry["paused"] is True and entry["from"]["name"] == "migrate:latest", entry
    notes = {w["name"]: w["notes"] for w in result.report["workloads"]}
    assert all(any("migrate on migrate:latest made manual" in n for n in notes[n]) for n in ("web", "api")), (
        notes
    )
