"""DC lifecycle hooks (issue 24, point 2), on the live sandbox: the emulated deployer runs `pre` and
`post` hooks in hook pods after oc pkg/cli/deployer/strategy/support/lifecycle.go (createHookPodManifest,
Execute) and rolling.go, and the deployer controller owns them (openshift-controller-manager
pkg/apps/deployer/deployer_controller.go setDeployerPodsOwnerRef). A hook runs its container's image
with the hook's command, and the sandbox registry's rules read both: `migrate-slow15` runs 15 s and
ends; an image `-exit1` fails whatever its command."""

from __future__ import annotations

import json
from pathlib import Path

from rollguard.core.resources import DEPLOYMENT_CONFIGS, PODS
from tests.helpers.cluster import (
    DC,
    NEW,
    OLD,
    SELECTOR,
    create_group,
    dc_body,
    rolled_out,
    rollguard,
    view,
    wait_until,
)  # fmt: skip

FAILING = "registry.local/shop/api:v2-exit1"  # its hook (this image, run with the hook's command) fails
SLOW_HOOK = "registry.local/shop/api:v2-slow30"  # its hook takes 30 s


def hooked_dc(command: list[str], policy: str, *, timeout: int) -> dict:
    body = dc_body("api", OLD, timeout=timeout)
    body["spec"]["strategy"]["rollingParams"]["pre"] = {
        "failurePolicy": policy,
        "execNewPod": {"containerName": "app", "command": command},
    }
    return body


def test_a_hook_longer_than_timeout_seconds_rolls_out(sandbox, namespace, client, tmp_path: Path):
    """A hook has no timeout but its pod's activeDeadlineSeconds: a 15 s pre hook on a DC with
    timeoutSeconds 5 rolls out on OpenShift, so rollguard's no-progress clock must not count it. The
    hook pod is no pod of the revision (report), and the progress lines show it."""
    create_group(client, namespace, [hooked_dc(["migrate-slow15"], "Abort", timeout=5)])
    rolled_out(client, DC, namespace, "api", timeout=90)
    result = rollguard(
        sandbox.kubeconfig, "rollout", "-n", namespace, "-l", SELECTOR, "--image", f"dc/api={NEW}",
        "--timeout", "120s", report=tmp_path / "report.json",
    )  # fmt: skip
    assert result.code == 0, result.stdout + result.stderr
    assert "pre hook pod api-2-hook-pre running" in result.stdout, result.stdout
    hook = client.get(PODS, "api-2-hook-pre", namespace=namespace)
    assert hook["metadata"]["labels"] == {
        "openshift.io/deployer-pod-for.name": "api-2",
        "openshift.io/deployer-pod.type": "hook-pre",
    }
    assert hook["spec"]["restartPolicy"] == "Never" and hook["spec"]["containers"][0]["name"] == "lifecycle"
    assert hook["status"]["phase"] == "Succeeded"
    (workload,) = result.report["workloads"]
    assert all(not p["name"].endswith(("-deploy", "-hook-pre")) for p in workload["pods"]), workload["pods"]
    assert view(client, namespace, DC, "api").images == {"app": NEW}


def test_a_failed_abort_hook_is_the_first_error_naming_it_and_its_pod(
    sandbox, namespace, client, tmp_path: Path
):
    """An Abort hook that fails fails the RC: the deployer exits with `pre hook failed: the pre hook
    failed: <the pod's status message>, aborting rollout of <ns>/<rc>` (recreate.go, rolling.go around
    lifecycle.go Execute). rollguard's first error names the hook and its pod; the group is reverted.
    (The new image's hook fails before any pod of it exists.)"""
    create_group(client, namespace, [hooked_dc(["migrate"], "Abort", timeout=600)])
    rolled_out(client, DC, namespace, "api", timeout=90)
    result = rollguard(
        sandbox.kubeconfig, "rollout", "-n", namespace, "-l", SELECTOR, "--image", f"dc/api={FAILING}",
        "--timeout", "120s", report=tmp_path / "report.json",
    )  # fmt: skip
    assert result.code == 1, result.stdout + result.stderr
    error = result.report["error"]
    assert error.startswith('dc/api: replication controller "api-2" has failed progressing; '), error
    assert f"error: pre hook failed: the pre hook failed: , aborting rollout of {namespace}/api-2" in error, (
        error
    )
    assert error.endswith("; pre hook pod api-2-hook-pre: exit code 1"), error
    assert view(client, namespace, DC, "api").images == {"app": OLD}


def test_status_shows_a_hook_in_progress(sandbox, namespace, client):
    """`rollguard status` while a pre hook runs: progressing with the hook named (never `stuck` past the
    DC's timeoutSeconds, as a hook has no deadline but its pod's: unit test_status_of_a_running_hook)."""
    create_group(client, namespace, [hooked_dc(["migrate-slow20"], "Abort", timeout=5)])
    rolled_out(client, DC, namespace, "api", timeout=120)
    body = client.get(DEPLOYMENT_CONFIGS, "api", namespace=namespace)
    body["spec"]["template"]["spec"]["containers"][0]["image"] = NEW
    client.replace(DEPLOYMENT_CONFIGS, body, namespace=namespace)
    wait_until(
        client, PODS, namespace, "api-2-hook-pre", lambda p: bool(p["metadata"].get("ownerReferences"))
        and p["status"].get("phase") == "Running", what="to run",
    )  # fmt: skip
    result = rollguard(sandbox.kubeconfig, "status", "-n", namespace, "-o", "json")
    assert result.code in (0, 1), result.stdout + result.stderr
    ((entry,),) = [[w for w in e["workloads"] if w["name"] == "api"] for e in json.loads(result.stdout)]
    assert entry["message"].endswith("; pre hook pod api-2-hook-pre running"), entry
    assert [f["name"] for f in entry["findings"]] == ["progressing"], entry["findings"]


def test_a_run_that_ends_during_a_hook_says_so_in_the_report(sandbox, namespace, client, tmp_path: Path):
    """--timeout while the new version's pre hook runs (it takes 30 s with the new image): the report's
    first error and the workload's error show the hook in progress; the revert (whose hook, with the old
    image, ends at once) leaves the group all-old."""
    create_group(client, namespace, [hooked_dc(["migrate"], "Abort", timeout=600)])
    rolled_out(client, DC, namespace, "api", timeout=90)
    result = rollguard(
        sandbox.kubeconfig, "rollout", "-n", namespace, "-l", SELECTOR, "--image", f"dc/api={SLOW_HOOK}",
        "--timeout", "10s", report=tmp_path / "report.json",
    )  # fmt: skip
    assert result.code == 1, result.stdout + result.stderr
    error = result.report["error"]
    assert error.startswith("dc/api: not complete within --timeout"), error
    assert error.endswith("; pre hook pod api-2-hook-pre running)"), error
    (workload,) = result.report["workloads"]
    assert "pre hook pod api-2-hook-pre running" in workload["error"], workload
    assert view(client, namespace, DC, "api").images == {"app": OLD}
