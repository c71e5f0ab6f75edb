"""``--bake DURATION`` (issue 25) on the live sandbox: after the group is ready it is watched that long;
a release that rolls out ready and then crash-loops (the stand-in kubelet's `-dies<N>` images: ready,
then the process dies N s later) fails the run, which reverts the whole group; a quiet window passes.
"""

from __future__ import annotations

from pathlib import Path

from tests.helpers.cluster import (
    DC,
    DEPLOYMENT,
    IMAGE,
    NEW,
    OLD,
    SELECTOR,
    create_group,
    dc_body,
    deployment_body,
    rollguard,
    view,
)


def test_a_release_that_crashes_after_its_rollout_fails_the_bake_and_is_reverted(
    sandbox, namespace, client, tmp_path: Path
):
    create_group(client, namespace, [dc_body("dc1", OLD), deployment_body("web", OLD)])
    dies = f"{IMAGE}:v2-dies6"
    result = rollguard(
        sandbox.kubeconfig,
        "rollout",
        "-n",
        namespace,
        "-l",
        SELECTOR,
        "--image",
        f"dc/dc1={NEW}",
        "--image",
        f"deploy/web={dies}",
        "--bake",
        "2m",
        report=tmp_path / "r.json",
    )
    assert result.code == 1, result.stdout + result.stderr
    assert "deployment/web: complete" in result.stdout  # it rolled out ready first
    report = result.report
    assert report["error"].startswith("check 'bake' (bake) failed: after "), report["error"]
    assert "deployment/web: pod web-" in report["error"], report["error"]
    assert [(c["name"], c["kind"], c["outcome"]) for c in report["checks"]] == [("bake", "bake", "failed")]
    for kind, name in ((DC, "dc1"), (DEPLOYMENT, "web")):
        state = view(client, namespace, kind, name)
        assert state.images == {"app": OLD} and state.complete, name


def test_a_quiet_bake_window_passes(sandbox, namespace, client, tmp_path: Path):
    create_group(client, namespace, [dc_body("dc1", OLD), deployment_body("web", OLD)])
    result = rollguard(
        sandbox.kubeconfig,
        "rollout",
        "-n",
        namespace,
        "-l",
        SELECTOR,
        "--image",
        f"dc/dc1={NEW}",
        "--image",
        f"deploy/web={NEW}",
        "--bake",
        "3s",
        report=tmp_path / "r.json",
    )
    assert result.code == 0, result.stdout + result.stderr
    [check] = result.report["checks"]
    assert check["outcome"] == "passed" and check["evidence"].startswith("3s: 2 workload(s) stayed complete")
    assert "verify: bake 3s ok" in result.stdout
