"""The guides' examples, run: the Task's script rendered with the values of docs/tekton.md's TaskRuns and
of docs/opendevstack.md's ods.yaml (ODS results filled in as ODS gives them), run by a real shell,
hands rollguard exactly the command line written out below, and that command line parses."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from rollguard.cli import build_parser
from rollguard.plan.inputs import parse_image_target
from tests.tekton.manifests import REFERENCE, ROOT, TEKTON_DOC, Obj, run_step, task, taskrun_inputs

ODS_DOC = ROOT / "docs" / "opendevstack.md"
DIGEST = "sha256:" + "4f2c" * 16
COMMIT = "0a1b2c3d" * 5
# What ODS gives the pipeline at run time: the image task's image-ref, start's commit.
ODS_RESULTS = {
    "tasks.package.results.image-ref": f"image-registry.openshift-image-registry.svc:5000/myproj-cd/api@{DIGEST}",
    "tasks.start.results.commit": COMMIT,
}
COMMON = ["rollout", "--namespace", "myproj-dev", "--selector", "app=myproj-api", "--timeout", "10m",
          "--step-timeout", "25m", "--on-paused", "take-over", "--results-dir", "/tekton/results"]  # fmt: skip


def yaml_blocks(path: Path) -> list[Any]:
    return [yaml.safe_load(b) for b in re.findall(r"```yaml\n(.*?)```", path.read_text(), re.S)]


def uses_of_the_task(node: Any) -> list[Obj]:
    """Every TaskRun spec or pipeline task that references rollguard-rollout, in document order."""
    found: list[Obj] = []
    if isinstance(node, dict):
        spec = node.get("spec", node)
        if isinstance(spec, dict) and (spec.get("taskRef") or {}).get("name") == "rollguard-rollout":
            return [node]
        for value in node.values():
            found += uses_of_the_task(value)
    elif isinstance(node, list):
        for item in node:
            found += uses_of_the_task(item)
    return found


def with_results(value: str) -> str:
    """Tekton's substitution of the pipeline-level variables the examples use."""
    return REFERENCE.sub(lambda m: ODS_RESULTS[f"{m[1]}.{m[2]}"], value)


def argv_of(use: Obj, tmp_path: Path) -> list[str]:
    params, arrays, bound = taskrun_inputs(use)
    params = {k: with_results(v) for k, v in params.items()}
    arrays = {k: [with_results(v) for v in vs] for k, vs in arrays.items()}
    argv, _ = run_step(task(), params, arrays, bound=bound, tmp_path=tmp_path)
    build_parser().parse_args(argv)  # and rollguard accepts it
    return argv


def test_the_tekton_guides_taskruns(tmp_path: Path) -> None:
    uses = [u for block in yaml_blocks(TEKTON_DOC) for u in uses_of_the_task(block) if "kind" in u]
    assert [u["kind"] for u in uses] == ["TaskRun", "TaskRun"], "the green and the failing TaskRun"
    for i in range(len(uses)):
        (tmp_path / str(i)).mkdir()
    green, broken = (argv_of(u, tmp_path / str(i)) for i, u in enumerate(uses))
    assert green == [
        *COMMON,
        "--image", "deployment/api=registry.example.com/myproj/api@sha256:4f2c...",
        "--image", "dc/worker/main=registry.example.com/myproj/worker@sha256:9ab0...",
        "--report", "/workspace/report/rollguard-report.json",
    ]  # fmt: skip
    crash = "registry.access.redhat.com/ubi9/ubi-minimal:9.6-1760515502@sha256:" \
            "34880b64c07f28f64d95737f82f891516de9a3b43583f39970f7bf8e4cfa48b7"  # fmt: skip
    assert broken == [
        *COMMON,
        "--image", f"deployment/api={crash}",
        "--image", "dc/worker/main=registry.example.com/myproj/worker@sha256:9ab0...",
    ]  # fmt: skip
    parse_image_target(broken[broken.index("--image") + 1])  # the failing example's image is a valid pin


def test_the_tekton_guides_manifest_pipeline(tmp_path: Path) -> None:
    """The guide's render-then-roll-out Pipeline: the rendered manifests reach `-f` from the source workspace."""
    uses = [u for block in yaml_blocks(TEKTON_DOC) for u in uses_of_the_task(block) if "kind" not in u]
    (rollout,) = [u for u in uses if any(p["name"] == "manifests" for p in u["params"])]
    argv = argv_of(rollout, tmp_path)
    assert argv[: len(COMMON)] == COMMON
    given = argv[argv.index("-f") + 1]
    assert given.endswith("/rendered") and "source" in given, argv
    assert "--skip-other-kinds" in argv and "--image" not in argv


def test_the_ods_yaml_example(tmp_path: Path) -> None:
    blocks = yaml_blocks(ODS_DOC)
    ods = next(b for b in blocks if isinstance(b, dict) and "pipelines" in b)
    pipeline = ods["pipelines"][0]
    (rollout,) = uses_of_the_task(pipeline["tasks"])
    assert rollout["name"] == "rollout" and "package" in rollout["runAfter"]
    argv = argv_of(rollout, tmp_path)
    assert argv == [
        *COMMON,
        "--image", f"deployment/api=image-registry.openshift-image-registry.svc:5000/myproj-cd/api@{DIGEST}",
        "--report", "/workspace/report/.ods/artifacts/rollguard/rollout-myproj-dev.json",
    ]  # fmt: skip
    parse_image_target(argv[argv.index("--image") + 1])  # image-ref fits `images` as it is
    # ODS's names: the shared workspace, the rollout alone as rollguard, status read in finally.
    assert {w["workspace"] for t in pipeline["tasks"] for w in t.get("workspaces", [])} == {"shared-workspace"}
    assert pipeline["taskRunSpecs"] == [{"pipelineTaskName": "rollout", "serviceAccountName": "rollguard"}]
    finals = {p["value"] for t in pipeline["finally"] for p in t["params"]}
    assert {"$(tasks.rollout.results.status)", "$(tasks.rollout.results.summary)"} <= finals


def test_the_ods_promotion_example(tmp_path: Path) -> None:
    uses = [u for block in yaml_blocks(ODS_DOC) for u in uses_of_the_task(block)]
    promoting = [u for u in uses if any(p["name"] == "promote-from" for p in u["params"])]
    assert len(promoting) == 1
    assert argv_of(promoting[0], tmp_path) == [
        *COMMON, "--promote-from", "myproj-cd", "--tag", COMMIT, "--report", "/workspace/report/rollguard-report.json",
    ]  # fmt: skip


@pytest.mark.parametrize("commit", [COMMIT, "abc"])
def test_the_short_sha_step_cuts_eight_characters(commit: str, tmp_path: Path) -> None:
    """docs/opendevstack.md's short-sha task, run by sh: Jenkins-era tags are the first 8 characters."""
    import subprocess

    block = next(b for b in yaml_blocks(ODS_DOC) if isinstance(b, list) and b and b[0].get("name") == "short-sha")
    step = block[0]["taskSpec"]["steps"][0]
    result = tmp_path / "tag"
    proc = subprocess.run(["sh", "-c", step["script"]], env={"COMMIT": commit, "TAG_RESULT": str(result)},
                          capture_output=True, text=True, timeout=30)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert result.read_text() == commit[:8]
