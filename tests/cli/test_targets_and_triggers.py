"""Targets that find init containers, and every side effect on triggers said in output, report and Event.

DeploymentConfig image triggers as OpenShift's trigger controller handles them (openshift-controller-manager
pkg/image/trigger/deploymentconfigs: an automatic ImageChange trigger rewrites the container on each tag
move, so a rollout that sets an image by hand must make it manual); the emulation in sandbox/openshift
mirrors it. Container names are unique across initContainers and containers (kube-apiserver
pkg/apis/core/validation ValidatePodSpec), so TARGET/NAME finds exactly one.
"""

from __future__ import annotations

import json

from rollguard.core.resources import DEPLOYMENT_CONFIGS
from tests.helpers.cluster import (
    NEW,
    OLD,
    SELECTOR,
    create_group,
    dc_body,
    resource_versions,
    rollguard,
    view,
)
from tests.helpers.scenarios import events, image_stream, latest_dc

MIGRATE_OLD, MIGRATE_NEW = "registry.local/shop/migrate:v1", "registry.local/shop/migrate:v2"


def with_init(body: dict, image: str = MIGRATE_OLD) -> dict:
    body["spec"]["template"]["spec"]["initContainers"] = [{"name": "migrate", "image": image}]
    return body


def test_init_container_target_rolls_out_and_ambiguity_lists_init_containers(
    sandbox, namespace, client, tmp_path
):
    create_group(
        client, namespace, [with_init(dc_body("dc1", OLD)), with_init(dc_body("dc2", OLD, containers=2))]
    )
    before = resource_versions(client, namespace)
    ambiguous = rollguard(
        sandbox.kubeconfig, "rollout", "-n", namespace, "-l", SELECTOR, "--image", f"dc/dc2={NEW}"
    )
    assert ambiguous.code == 2
    assert "dc/dc2 is ambiguous: it has containers app, side1; init containers: migrate" in ambiguous.stderr
    unknown = rollguard(sandbox.kubeconfig, "rollout", "-n", namespace, "-l", SELECTOR,
                        "--image", f"dc/dc1/nope={NEW}")  # fmt: skip
    assert unknown.code == 2 and "its containers are: app; init containers: migrate" in unknown.stderr
    assert resource_versions(client, namespace) == before

    report = tmp_path / "report.json"
    result = rollguard(sandbox.kubeconfig, "rollout", "-n", namespace, "-l", SELECTOR,
                       "--image", f"dc/dc1/migrate={MIGRATE_NEW}", "--image", f"dc/dc1={NEW}", report=report)  # fmt: skip
    assert result.code == 0, result.stdout + result.stderr
    dc1 = client.get(DEPLOYMENT_CONFIGS, "dc1", namespace=namespace)
    spec = dc1["spec"]["template"]["spec"]
    assert spec["initContainers"][0]["image"] == MIGRATE_NEW and spec["containers"][0]["image"] == NEW
    assert view(client, namespace, "DeploymentConfig", "dc1").complete
    (entry,) = [w for w in json.loads(report.read_text())["workloads"] if w["name"] == "dc1"]
    assert entry["images_after"] == {"migrate": MIGRATE_NEW, "app": NEW}
    assert entry["images_before"] == {"migrate": MIGRATE_OLD, "app": OLD}


def test_trigger_made_manual_is_said_in_output_report_and_event(sandbox, namespace, client, tmp_path):
    image_stream(client, namespace, "dc1", {"latest": OLD})
    create_group(client, namespace, [latest_dc("dc1")])
    report = tmp_path / "report.json"
    result = rollguard(sandbox.kubeconfig, "rollout", "-n", namespace, "-l", SELECTOR, "--image", f"dc/dc1={NEW}",
                       report=report)  # fmt: skip
    assert result.code == 0, result.stdout + result.stderr
    said = "image trigger of app on dc1:latest made manual"
    line = next(x for x in result.stdout.splitlines() if said in x)
    assert "no longer roll out dc/dc1" in line and "oc set triggers dc/dc1 --auto" in line
    (entry,) = json.loads(report.read_text())["workloads"]
    assert any(said in note for note in entry["notes"]), entry["notes"]
    (event,) = events(client, namespace, "RollguardRolledOut")
    assert said in event["message"] and "cause" not in event["message"]
    # and it is true on the cluster
    dc = client.get(DEPLOYMENT_CONFIGS, "dc1", namespace=namespace)
    trigger = next(t for t in dc["spec"]["triggers"] if t["type"] == "ImageChange")
    # manual: the API drops `automatic: false` (omitempty in openshift/api apps/v1/types.go), so absent
    assert trigger["imageChangeParams"].get("automatic", False) is False

    # the revert's restoring of the trigger is said as well (dry run: the diff and its notes)
    back = rollguard(
        sandbox.kubeconfig, "revert", "-n", namespace, "dc/dc1", "--to-revision", "1", "--dry-run"
    )
    assert back.code == 0, back.stdout + back.stderr
    assert "# image trigger of app on dc1:latest made" in back.stdout, back.stdout
