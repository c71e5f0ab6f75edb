"""A scale during the rollout (an HPA, `oc scale`) is neither a stall nor someone's edit (issue 24, point 1).

openshift-controller-manager pkg/apps/deploymentconfig/deploymentconfig_controller.go (Handle,
updateStatus, calculateStatus) leaves a DC's `status.observedGeneration` behind while its latest RC
runs ("we don't want to compete with the deployer") and catches up when it ends; openshift-apiserver
pkg/apps/apiserver/registry/deployconfig/strategy.go (PrepareForUpdate) bumps `metadata.generation` on
any spec change, a scale included. A Deployment's controller observes a scale at once, but an HPA may
scale it between rollguard's preflight and its write. In both cases the run goes on, the new replica
count is kept, and the report says so.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kubernetes import client as kube

from rollguard.core.resources import CONFIG_MAPS, DEPLOYMENT_CONFIGS, DEPLOYMENTS, REPLICATION_CONTROLLERS
from tests.helpers.cluster import (
    DC,
    DEPLOYMENT,
    OLD,
    SELECTOR,
    create_group,
    dc_body,
    deployment_body,
    rollguard,
    start_rollguard,
    view,
    wait_until,
)
from tests.helpers.proxy import FaultProxy, Record

SLOW = "registry.local/shop/api:v2-slow6"  # each new pod ready 6 s after it starts


def scale(k8s: kube.ApiClient, namespace: str, kind: str, name: str, replicas: int) -> None:
    """What an HPA and `oc scale` do: a write to the workload's scale subresource."""
    body: Any = {"spec": {"replicas": replicas}}
    if kind == DC:
        kube.CustomObjectsApi(k8s).patch_namespaced_custom_object_scale(
            "apps.openshift.io", "v1", namespace, "deploymentconfigs", name, body
        )
    else:
        kube.AppsV1Api(k8s).patch_namespaced_deployment_scale(name, namespace, body)


def test_a_workload_scaled_while_its_rollout_runs_is_judged_on_it_not_frozen(
    sandbox, namespace, client, k8s, tmp_path: Path
):
    """openshift-controller-manager deploymentconfig_controller.go: while the latest RC runs, Handle
    calls updateStatus(config, ..., false), so a scale leaves status.observedGeneration behind until the
    rollout ends. Judged on "has the controller observed the spec?" the DC would stand still at "waiting
    for the controller to observe the change" for the rest of the rollout (three 6 s steps here, longer
    than its own no-progress deadline of 8 s): rollguard must judge the running RC, succeed, and keep and
    note the new replica count. A Deployment scaled by an HPA while its rollout runs (here beside it, its
    controller observes the scale at once) is kept and noted alike."""
    create_group(
        client,
        namespace,
        [dc_body("api", OLD, replicas=3, timeout=8), deployment_body("web", OLD, replicas=3)],
    )
    proc = start_rollguard(
        sandbox.kubeconfig, "rollout", "-n", namespace, "-l", SELECTOR,
        "--image", f"dc/api={SLOW}", "--image", f"deploy/web={SLOW}", report=tmp_path / "report.json",
    )  # fmt: skip
    try:
        wait_until(
            client, REPLICATION_CONTROLLERS, namespace, "api-2",
            lambda rc: rc["metadata"]["annotations"].get("openshift.io/deployment.phase") == "Running",
            timeout=120, what="to run",
        )  # fmt: skip
        scale(k8s, namespace, DC, "api", 4)
        wait_until(  # web's rollout is under way (its new ReplicaSet made), not done: then the HPA scales it
            client, DEPLOYMENTS, namespace, "web",
            lambda d: d["metadata"]["annotations"].get("deployment.kubernetes.io/revision") == "2",
        )  # fmt: skip
        scale(k8s, namespace, DEPLOYMENT, "web", 4)
        stdout, stderr = proc.communicate(timeout=240)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, stdout + stderr
    state = view(client, namespace, DC, "api")
    assert state.images == {"app": SLOW} and state.complete, state
    dc = wait_until(
        client, DEPLOYMENT_CONFIGS, namespace, "api", lambda d: d["status"].get("replicas") == 4,
        what="to run the 4 replicas it was scaled to",
    )  # fmt: skip
    assert dc["spec"]["replicas"] == 4
    web = view(client, namespace, DEPLOYMENT, "web")
    assert web.images == {"app": SLOW} and web.complete, web
    assert client.get(DEPLOYMENTS, "web", namespace=namespace)["spec"]["replicas"] == 4
    for workload in json.loads((tmp_path / "report.json").read_text())["workloads"]:
        assert any(
            "replicas changed by someone else during the run (3 -> 4)" in n for n in workload["notes"]
        ), workload


def test_a_scale_between_preflight_and_the_write_is_kept_not_taken_for_an_edit(
    sandbox, namespace, client, k8s, tmp_path: Path
):
    """An HPA (or `oc scale`) that scales a workload after rollguard's preflight read it and before its
    write changes only `spec.replicas`: that is not someone's edit of the workload (their edit wins and
    fails the run); the run writes its change over the new count, keeps it, and notes it. Played here by
    scaling a DC and a Deployment right after the run wrote its journal (its last write before them)."""
    create_group(client, namespace, [dc_body("api", OLD), deployment_body("web", OLD)])
    scaled: list[str] = []

    def scale_both(_record: Record) -> None:
        if not scaled:
            scale(k8s, namespace, DC, "api", 2)
            scale(k8s, namespace, DEPLOYMENT, "web", 2)
            scaled.append("done")

    def journal_written(record: Record) -> bool:
        return record.resource == CONFIG_MAPS.plural and record.method in ("POST", "PUT")

    with FaultProxy(sandbox.server, sandbox.ca, seed=24) as proxy:
        kubeconfig = proxy.kubeconfig(sandbox.kubeconfig, tmp_path / "kubeconfig")
        proxy.after_mutation_matching(journal_written, scale_both)
        result = rollguard(
            kubeconfig, "rollout", "-n", namespace, "-l", SELECTOR,
            "--image", f"dc/api={SLOW}", "--image", f"deploy/web={SLOW}", report=tmp_path / "report.json",
        )  # fmt: skip
        assert not proxy.hook_errors, proxy.hook_errors
    assert scaled
    assert result.code == 0, result.stdout + result.stderr
    assert view(client, namespace, DC, "api").images == {"app": SLOW}
    assert view(client, namespace, DEPLOYMENT, "web").images == {"app": SLOW}
    assert client.get(DEPLOYMENT_CONFIGS, "api", namespace=namespace)["spec"]["replicas"] == 2
    assert client.get(DEPLOYMENTS, "web", namespace=namespace)["spec"]["replicas"] == 2
    for workload in result.report["workloads"]:
        assert any(
            "replicas changed by someone else during the run (1 -> 2)" in n for n in workload["notes"]
        ), workload
