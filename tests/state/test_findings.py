"""Each finding produced by a real scenario on the live sandbox, and none on a healthy group."""

from __future__ import annotations

import json

from rollguard.core.resources import DEPLOYMENT_CONFIGS, DEPLOYMENTS
from tests.helpers.cluster import (
    CRASH,
    DC,
    DEPLOYMENT,
    IMAGE,
    NEW,
    OLD,
    SELECTOR,
    create_group,
    dc_body,
    deployment_body,
    make_group,
    rollguard,
    wait_until,
)
from tests.helpers.scenarios import (
    deadline_exceeded,
    guarded_rollout,
    image_stream,
    killed_run,
    latest_dc,
    pause,
    rc_phase,
    reference_state,
    set_image,
    states,
)


def names(state) -> set[str]:
    return set(state.names)


def test_healthy_group_after_a_guarded_rollout(sandbox, namespace, client):
    make_group(client, namespace)
    guarded_rollout(sandbox, namespace, {"dc/dc1": NEW, "dc/dc2": NEW, "deploy/web": NEW})
    found = states(client, namespace)
    assert set(found) == {"dc/dc1", "dc/dc2", "deployment/web"}
    for state in found.values():
        assert state.healthy, (state.key, state.findings)
        assert state.group and state.selector == SELECTOR
        assert state.images == {"app": NEW} and state.ready == state.desired == 1


def test_paused_dc_with_and_without_pending_changes(namespace, client):
    create_group(client, namespace, [dc_body("dc1", OLD), dc_body("dc2", OLD)])
    pause(client, namespace, "dc1")
    pause(client, namespace, "dc2")
    set_image(client, namespace, DC, "dc2", NEW)
    wait_until(
        client,
        DEPLOYMENT_CONFIGS,
        namespace,
        "dc2",
        lambda o: o["status"].get("observedGeneration", 0) >= o["metadata"]["generation"],
    )
    found = states(client, namespace)
    assert names(found["dc/dc1"]) == {"paused"}
    assert names(found["dc/dc2"]) == {"paused", "stuck"}
    stuck = next(f.reason for f in found["dc/dc2"].findings if f.name == "stuck")
    assert stuck == f"paused with un-rolled changes: app: {OLD} -> {NEW}"


def test_crashed_rollouts_fail_and_first_one_is_unavailable(namespace, client):
    create_group(client, namespace, [dc_body("dc1", OLD, timeout=10)])
    client.create(DEPLOYMENTS, deployment_body("web", CRASH, deadline=10), namespace=namespace)
    set_image(client, namespace, DC, "dc1", CRASH)
    rc_phase(client, namespace, "dc1-2", "Failed")
    deadline_exceeded(client, namespace, "web")
    found = states(client, namespace)
    assert names(found["dc/dc1"]) == {"failed"}  # rolled itself back to dc1-1: still available
    assert "dc1-2" in found["dc/dc1"].findings[0].reason
    web = found["deployment/web"]
    assert names(web) == {"failed", "unavailable"}
    assert web.findings[0].reason == 'deployment "web" exceeded its progress deadline'


def test_rollout_in_progress_is_progressing(namespace, client):
    create_group(client, namespace, [dc_body("dc1", OLD)])
    set_image(client, namespace, DC, "dc1", f"{IMAGE}:v2-slow30")
    rc_phase(client, namespace, "dc1-2", "Running")
    state = states(client, namespace)["dc/dc1"]
    assert names(state) == {"progressing"}
    assert "of its 600s deadline" in state.findings[0].reason


def test_run_killed_mid_way_is_half_rolled(namespace, client):
    create_group(client, namespace, [dc_body("dc1", OLD), dc_body("dc2", OLD)])
    killed_run(client, namespace)
    found = states(client, namespace)
    for state in found.values():
        assert "half-rolled" in names(state), state.findings
        reason = next(f.reason for f in state.findings if f.name == "half-rolled")
        assert reason == (
            "run 20240502-090000-dead01 (rollout by tekton@killed-pod) stopped in state 'watching' "
            "and no live run holds the lock"
        )


def test_hand_edited_image_is_drifted(sandbox, namespace, client):
    create_group(client, namespace, [dc_body("dc1", OLD), deployment_body("web", OLD)])
    guarded_rollout(sandbox, namespace, {"dc/dc1": NEW, "deploy/web": NEW})
    set_image(client, namespace, DEPLOYMENT, "web", f"{IMAGE}:hotfix")
    found = states(client, namespace)
    assert found["dc/dc1"].healthy
    assert "drifted" in names(found["deployment/web"])
    drift = next(f.reason for f in found["deployment/web"].findings if f.name == "drifted")
    assert f"app: {NEW} -> {IMAGE}:hotfix" in drift


def test_latest_trigger_is_a_mutable_image(namespace, client):
    image_stream(client, namespace, "dc1", {"latest": OLD})
    create_group(client, namespace, [latest_dc("dc1"), deployment_body("web", f"{IMAGE}:latest")])
    found = states(client, namespace)
    assert names(found["dc/dc1"]) == {"mutable-image"}
    assert found["dc/dc1"].findings[0].reason == "trigger of app follows dc1:latest"
    assert names(found[f"{DEPLOYMENT.lower()}/web"]) == {"mutable-image"}


def test_reference_case_state(namespace, client):
    reference_state(client, namespace)
    found = states(client, namespace)
    assert names(found["dc/dc1"]) == {"mutable-image"}
    assert names(found["dc/dc2"]) == {"failed", "mutable-image"}
    assert names(found["dc/dc3"]) == {"paused", "stuck", "mutable-image"}


def test_status_command_table_and_json(sandbox, namespace, client):
    create_group(
        client, namespace, [dc_body("dc1", OLD), deployment_body("web", OLD, labels={"tier": "web"})]
    )
    guarded_rollout(sandbox, namespace, {"dc/dc1": NEW})
    pause(client, namespace, "dc1")
    table = rollguard(sandbox.kubeconfig, "status", "-n", namespace)
    assert table.code == 0, table.stderr
    first, *lines = table.stdout.splitlines()
    assert first.startswith(f"rollguard status: namespace {namespace} (--namespace)")
    assert lines[0].startswith(f"{namespace}: group 'app=shop-api' (journal rollguard-app-shop-api-")
    assert "succeeded, run " in lines[0]
    assert lines[1].split() == ["KIND", "NAME", "STATE", "REVISION", "READY", "IMAGES"]
    assert lines[2].split()[:5] == ["dc", "dc1", "paused", "2", "1/1"] and "app=api:v2" in lines[2]
    assert lines[3].strip() == "paused: DeploymentConfig is paused: no rollout happens until it is resumed"
    assert lines[4].split()[:5] == ["deployment", "web", "healthy", "1", "1/1"]
    data = json.loads(rollguard(sandbox.kubeconfig, "status", "-n", namespace, "-o", "json").stdout)
    (ns,) = data
    assert ns["namespace"] == namespace and ns["groups"][0]["state"] == "succeeded"
    by_name = {w["name"]: w for w in ns["workloads"]}
    assert by_name["dc1"]["state"] == ["paused"] and by_name["web"]["state"] == ["healthy"]
    only = json.loads(
        rollguard(sandbox.kubeconfig, "status", "-n", namespace, "-l", "tier=web", "-o", "json").stdout
    )
    assert [w["name"] for w in only[0]["workloads"]] == ["web"]
