"""What could not be honoured later is refused in preflight: exit 2, the fix named, nothing changed.

Revision phases as OpenShift's DC controller writes them (openshift-controller-manager
pkg/apps/deployer/deployer_controller.go: Failed after the deadline, the cancelled annotation); the
emulation in sandbox/openshift mirrors it.
"""

from __future__ import annotations

import json

from rollguard.core.resources import DEPLOYMENT_CONFIGS, REPLICATION_CONTROLLERS
from tests.helpers.cluster import (
    CRASH,
    NEW,
    OLD,
    SELECTOR,
    create_group,
    dc_body,
    resource_versions,
    rollguard,
    view,
    wait_until,
)
from tests.helpers.scenarios import failed_and_settled, set_image


def refused(result, *words: str) -> str:
    assert result.code == 2, result.stdout + result.stderr
    message = result.stderr.strip().splitlines()[-1]
    assert "Traceback" not in result.stderr
    for word in words:
        assert word in message, message
    return message


def test_unwritable_results_dir_and_report_are_refused_before_any_change(
    sandbox, namespace, client, tmp_path
):
    create_group(client, namespace, [dc_body("dc1", OLD)])
    before = resource_versions(client, namespace)
    a_file = tmp_path / "results"
    a_file.write_text("not a directory")
    base = ["rollout", "-n", namespace, "-l", SELECTOR, "--image", f"dc/dc1={NEW}"]
    refused(
        rollguard(sandbox.kubeconfig, *base, "--results-dir", str(a_file)), "--results-dir", "not a directory"
    )
    refused(rollguard(sandbox.kubeconfig, *base, "--results-dir", str(a_file / "sub")), "--results-dir")
    taken = tmp_path / "taken"
    (taken / "status").mkdir(parents=True)
    refused(rollguard(sandbox.kubeconfig, *base, "--results-dir", str(taken)), "'status'")
    refused(rollguard(sandbox.kubeconfig, *base, "--report", str(a_file / "report.json")), "--report")
    refused(rollguard(sandbox.kubeconfig, *base, "--report", str(tmp_path)), "--report")
    assert a_file.read_text() == "not a directory"
    assert resource_versions(client, namespace) == before
    assert view(client, namespace, "DeploymentConfig", "dc1").images == {"app": OLD}

    results = tmp_path / "new" / "results"  # a directory that can be created is fine
    done = rollguard(sandbox.kubeconfig, *base, "--results-dir", str(results))
    assert done.code == 0, done.stdout + done.stderr
    assert (results / "status").read_text() == "succeeded"


def test_a_workload_that_never_completed_is_refused_unless_accepted(sandbox, namespace, client, tmp_path):
    create_group(client, namespace, [dc_body("dc1", OLD)])
    # its first rollout failed (crash loop past a 3 s deadline): no revision ever ran complete
    client.create(DEPLOYMENT_CONFIGS, dc_body("dc2", CRASH, timeout=3), namespace=namespace)
    failed_and_settled(client, namespace, "dc2-1")
    before = resource_versions(client, namespace)
    base = ["rollout", "-n", namespace, "-l", SELECTOR, "--image", f"dc/dc2={NEW}"]
    message = refused(rollguard(sandbox.kubeconfig, *base), "dc/dc2 never completed a rollout",
                      "--allow-never-completed")  # fmt: skip
    assert "nothing verified to revert" in message
    assert resource_versions(client, namespace) == before

    # not in the run (dc1 only): refused too, since the verdict covers the whole group (issue 31) ...
    only = ["rollout", "-n", namespace, "-l", SELECTOR, "--image", f"dc/dc1={NEW}"]
    refused(rollguard(sandbox.kubeconfig, *only), "dc/dc2 never completed a rollout and this run does not change it",
            "--allow-never-completed")  # fmt: skip
    assert resource_versions(client, namespace) == before
    # ... unless accepted knowingly: then the summary names it
    only_dc1 = rollguard(sandbox.kubeconfig, *only, "--allow-never-completed")
    assert only_dc1.code == 0, only_dc1.stdout + only_dc1.stderr
    assert "dc/dc2 never completed a rollout, accepted" in only_dc1.stdout.strip().splitlines()[-1]

    report = tmp_path / "report.json"
    accepted = rollguard(sandbox.kubeconfig, *base, "--allow-never-completed", report=report)
    assert accepted.code == 0, accepted.stdout + accepted.stderr
    assert view(client, namespace, "DeploymentConfig", "dc2").images == {"app": NEW}
    (dc2,) = [w for w in json.loads(report.read_text())["workloads"] if w["name"] == "dc2"]
    assert any("never completed a rollout" in n for n in dc2["notes"]), dc2["notes"]


def test_revert_to_a_failed_revision_is_refused_unless_allowed(sandbox, namespace, client):
    create_group(client, namespace, [dc_body("dc1", OLD, timeout=3)])
    set_image(client, namespace, "DeploymentConfig", "dc1", CRASH)
    failed_and_settled(client, namespace, "dc1-2")
    replicas = client.get(DEPLOYMENT_CONFIGS, "dc1", namespace=namespace)["spec"]["replicas"]
    wait_until(client, REPLICATION_CONTROLLERS, namespace, "dc1-1", lambda rc: rc["spec"]["replicas"] == replicas,
               what="the complete revision scaled back")  # fmt: skip
    before = resource_versions(client, namespace)
    message = refused(
        rollguard(sandbox.kubeconfig, "revert", "-n", namespace, "dc/dc1", "--to-revision", "2"),
        "revision 2 failed",
        "--allow-failed",
    )
    assert "complete revision (1)" in message
    assert resource_versions(client, namespace) == before
    allowed = rollguard(sandbox.kubeconfig, "revert", "-n", namespace, "dc/dc1", "--to-revision", "2",
                        "--allow-failed", "--dry-run")  # fmt: skip
    assert allowed.code == 0, allowed.stdout + allowed.stderr
    assert "revision 2 (failed; accepted with --allow-failed)" in allowed.stdout
    assert resource_versions(client, namespace) == before
