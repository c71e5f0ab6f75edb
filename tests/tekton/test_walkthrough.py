"""docs/tekton.md's walkthrough, run on the live sandbox: its sample workloads (workloads.yaml) are
created as the doc shows them, then its two TaskRuns (rollout.yaml, rollout-broken.yaml) run through
the Task's step as Tekton renders it, with the real rollguard.

The one change to the doc's YAML is the images, by what each stands for: the sandbox registry mints its
own digests, so UBI minimal and "rollguard's image from step 2" become sandbox images that start;
the broken run's digest nobody pushed stays as it is (a digest the registry never minted is
ErrImagePull there as on a real registry). Asserted: what the doc says the user sees, on the live
state: exit code and results, the report, the Events on both workloads, and the images they run.
`-s` prints the log lines the doc quotes.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from rollguard.cluster.client import Client
from rollguard.core.resources import EVENTS
from tests.helpers.cluster import create_group, view
from tests.tekton.manifests import TEKTON_DOC, Obj, run_task, task, taskrun_inputs
from tests.tekton.tekton_rules import yaml_blocks

UBI = re.compile(r"registry\.access\.redhat\.com/ubi9/ubi-minimal:[^@\s]+@sha256:[0-9a-f]{64}")
ROLLGUARD_FROM_STEP_2 = "image-registry.openshift-image-registry.svc:5000/myproj-cd/rollguard@sha256:4f2c..."
SANDBOX = {
    "ubi": "registry.local/ubi9/ubi-minimal:9.6",
    "rollguard": "registry.local/myproj-cd/rollguard:0.1.0",
}


def for_the_sandbox(text: str) -> str:
    return UBI.sub(SANDBOX["ubi"], text.replace(ROLLGUARD_FROM_STEP_2, SANDBOX["rollguard"]))


def doc_objects() -> tuple[list[Obj], dict[str, Obj]]:
    """(the sample workloads, the TaskRuns by generateName) as docs/tekton.md shows them."""
    workloads, taskruns = [], {}
    for _, block in yaml_blocks(TEKTON_DOC):
        for obj in block if isinstance(block, list) else [block]:
            if isinstance(obj, dict) and obj.get("kind") in ("Deployment", "DeploymentConfig"):
                workloads.append(obj)
            elif isinstance(obj, dict) and obj.get("kind") == "TaskRun":
                taskruns[obj["metadata"]["generateName"]] = obj
    return workloads, taskruns


def events(client: Client, namespace: str, reason: str) -> dict[str, Obj]:
    found = client.list(EVENTS, namespace=namespace)["items"]
    return {
        f"{e['involvedObject']['kind']}/{e['involvedObject']['name']}": e
        for e in found
        if e["reason"] == reason
    }


def run(taskrun: Obj, namespace: str, kubeconfig: Path, tmp_path: Path) -> tuple[Any, dict[str, str], Obj]:
    params, arrays, _ = taskrun_inputs(json.loads(for_the_sandbox(json.dumps(taskrun))))
    params["namespace"] = namespace
    proc, results = run_task(task(), kubeconfig, tmp_path, params, arrays["images"])
    print(proc.stdout + proc.stderr)  # the doc quotes these lines
    report = json.loads((tmp_path / "workspace" / "report" / params["report-file"]).read_text())
    return proc, results, report


@pytest.mark.cluster
def test_the_walkthrough_green_then_reverted(sandbox, client: Client, namespace: str, tmp_path: Path) -> None:
    workloads, taskruns = doc_objects()
    assert [w["kind"] for w in workloads] == ["Deployment", "DeploymentConfig"], "a DC and a Deployment"
    assert set(taskruns) == {"rollout-", "rollout-broken-"}
    bodies = [json.loads(for_the_sandbox(json.dumps(w))) for w in workloads]
    for body in bodies:
        assert body["metadata"]["labels"]["app"] == "myproj-api"
    create_group(client, namespace, bodies)
    kubeconfig = Path(sandbox.kubeconfig)

    (tmp_path / "green").mkdir()
    proc, results, report = run(taskruns["rollout-"], namespace, kubeconfig, tmp_path / "green")
    assert proc.returncode == 0, proc.stderr
    assert results == {"status": "succeeded", "summary": "succeeded: 2 rolled-out"}
    assert report["status"] == "succeeded"
    assert {w["outcome"] for w in report["workloads"]} == {"rolled-out"}
    for kind, name in (("Deployment", "api"), ("DeploymentConfig", "worker")):
        assert view(client, namespace, kind, name).images == {name: SANDBOX["rollguard"]}
    rolled = events(client, namespace, "RollguardRolledOut")
    assert set(rolled) == {"Deployment/api", "DeploymentConfig/worker"}
    assert all(e["type"] == "Normal" and "succeeded" in e["message"] for e in rolled.values())
    print("EVENT", rolled["Deployment/api"]["message"])

    (tmp_path / "broken").mkdir()
    proc, results, report = run(taskruns["rollout-broken-"], namespace, kubeconfig, tmp_path / "broken")
    assert proc.returncode == 1, proc.stderr
    assert results["status"] == "reverted" and "ImagePull" in results["summary"], results
    assert report["status"] == "reverted" and report["error"]
    assert {w["outcome"] for w in report["workloads"]} == {"reverted"}
    for kind, name in (("Deployment", "api"), ("DeploymentConfig", "worker")):
        back = view(client, namespace, kind, name)
        assert back.images == {name: SANDBOX["rollguard"]} and not back.paused
    reverted = events(client, namespace, "RollguardReverted")
    assert set(reverted) == {"Deployment/api", "DeploymentConfig/worker"}
    assert all(e["type"] == "Warning" and "cause:" in e["message"] for e in reverted.values())
