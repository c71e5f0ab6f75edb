"""The guides' examples, run: the Task's script rendered with the values of docs/tekton.md's TaskRuns and
of docs/opendevstack.md's ods.yaml (ODS results filled in as ODS gives them), run by a real shell,
hands rollguard exactly the command line written out below, and that command line parses."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from rollguard.cli import build_parser
from rollguard.plan.inputs import parse_image_target
from tests.tekton import tekton_rules as rules
from tests.tekton.manifests import (
    REFERENCE,
    ROOT,
    TEKTON_DOC,
    Obj,
    is_our_task,
    load_one,
    run_step,
    task,
    taskrun_inputs,
)
from tests.tekton.tekton_rules import ODS_DATA, ODS_TASKS

ODS_DOC = ROOT / "docs" / "opendevstack.md"
DIGEST = "sha256:" + "4f2c" * 16
COMMIT = "0a1b2c3d" * 5
RUN = "api-x7k2p"
API_IMAGE = f"image-registry.openshift-image-registry.svc:5000/myproj-cd/api@{DIGEST}"
# What the pipeline gives at run time: the image task's image-digest (a bare digest), the image-ref
# task's ref (what test_the_image_ref_step_reads_what_the_image_task_writes shows it writes), start's
# commit, the PipelineRun's name.
ODS_RESULTS = {
    "tasks.package.results.image-digest": DIGEST,
    "tasks.image-ref.results.ref": API_IMAGE,
    "tasks.start.results.commit": COMMIT,
    "context.pipelineRun.name": RUN,
}
# ods-pipeline-image v0.3.0 writes .ods/artifacts/image-digests/<stream>.json with Go's json.Marshal of
# ods-pipeline's pkg/artifact.Image (fields in this order, compact).
IMAGE_ARTIFACT = {
    "image": f"image-registry.openshift-image-registry.svc:5000/myproj-cd/api:{COMMIT}",
    "registry": "image-registry.openshift-image-registry.svc:5000",
    "repository": "myproj-cd",
    "name": "api",
    "tag": COMMIT,
    "digest": DIGEST,
}
COMMON = ["rollout", "--namespace", "myproj-dev", "--selector", "app=myproj-api", "--timeout", "10m",
          "--step-timeout", "25m", "--on-paused", "take-over", "--results-dir", "/tekton/results"]  # fmt: skip


def yaml_blocks(path: Path) -> list[Any]:
    return [block for _, block in rules.yaml_blocks(path)]


def uses_of_the_task(node: Any) -> list[Obj]:
    """Every TaskRun spec or pipeline task that references rollguard-rollout, in document order."""
    found: list[Obj] = []
    if isinstance(node, dict):
        spec = node.get("spec", node)
        if isinstance(spec, dict) and is_our_task(spec.get("taskRef") or {}):
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
    built = (
        "image-registry.openshift-image-registry.svc:5000/myproj-cd/rollguard@sha256:4f2c..."  # from step 2
    )
    report = "/workspace/report/rollout-myproj-dev.json"
    assert green == [
        *COMMON,
        "--image",
        f"deployment/api={built}",
        "--image",
        f"dc/worker={built}",
        "--report",
        report,
    ]
    ubi = "registry.access.redhat.com/ubi9/ubi-minimal:9.6-1760515502@sha256:" \
          "34880b64c07f28f64d95737f82f891516de9a3b43583f39970f7bf8e4cfa48b7"  # fmt: skip
    missing = "image-registry.openshift-image-registry.svc:5000/myproj-cd/rollguard@sha256:" + "0" * 64
    assert broken == [
        *COMMON,
        "--image",
        f"deployment/api={missing}",
        "--image",
        f"dc/worker={ubi}",
        "--report",
        report,
    ]
    for image in (missing, ubi):  # the failing example's images are valid pins: only the registry lacks one
        parse_image_target(f"dc/worker={image}")


def test_the_tekton_guides_manifest_pipeline(tmp_path: Path) -> None:
    """The guide's render-then-roll-out Pipeline: the rendered manifests reach `-f` from the source workspace."""
    uses = [u for block in yaml_blocks(TEKTON_DOC) for u in uses_of_the_task(block) if "kind" not in u]
    (rollout,) = [u for u in uses if any(p["name"] == "manifests" for p in u["params"])]
    argv = argv_of(rollout, tmp_path)
    assert argv[: len(COMMON)] == COMMON
    given = argv[argv.index("-f") + 1]
    assert given.endswith("/rendered") and "source" in given, argv
    assert "--skip-other-kinds" in argv and "--image" not in argv


def ods_pipeline() -> Obj:
    ods = next(b for b in yaml_blocks(ODS_DOC) if isinstance(b, dict) and "pipelines" in b)
    pipeline: Obj = ods["pipelines"][0]
    return pipeline


def test_the_ods_yaml_example(tmp_path: Path) -> None:
    pipeline = ods_pipeline()
    (rollout,) = uses_of_the_task(pipeline["tasks"])
    assert rollout["name"] == "rollout" and "image-ref" in rollout["runAfter"]
    argv = argv_of(rollout, tmp_path)
    assert argv == [
        *COMMON,
        "--image", f"deployment/api={API_IMAGE}",
        "--image", f"dc/worker={API_IMAGE}",
        "--report", f"/workspace/report/.ods/artifacts/rollguard/rollout-myproj-dev-{RUN}.json",
    ]  # fmt: skip
    parse_image_target(argv[argv.index("--image") + 1])  # image-ref's result fits `images` as it is
    # ODS's names: the shared workspace, the rollout alone as rollguard, status read in finally.
    assert {w["workspace"] for t in pipeline["tasks"] for w in t.get("workspaces", [])} == {
        "shared-workspace"
    }
    assert pipeline["taskRunSpecs"] == [{"pipelineTaskName": "rollout", "serviceAccountName": "rollguard"}]
    finals = {p["value"] for t in pipeline["finally"] for p in t["params"]}
    assert {"$(tasks.rollout.results.status)", "$(tasks.rollout.results.summary)"} <= finals


def test_the_digest_only_variant(tmp_path: Path) -> None:
    """The variant without image-ref: the image task's bare digest after the repository it pushes to."""
    uses = [u for b in yaml_blocks(ODS_DOC) if isinstance(b, list) for u in uses_of_the_task(b)]
    (direct,) = [u for u in uses if "image-digest" in str(u["params"])]
    argv = argv_of(direct, tmp_path)
    assert argv.count("--image") == 2 and f"deployment/api={API_IMAGE}" in argv
    parse_image_target(f"deployment/api={API_IMAGE}")


def image_ref_step() -> Obj:
    (task_,) = [t for t in ods_pipeline()["tasks"] if t["name"] == "image-ref"]
    step: Obj = task_["taskSpec"]["steps"][0]
    return step


def run_image_ref(workspace: Path, stream: str) -> tuple[subprocess.CompletedProcess[str], Path]:
    step = image_ref_step()
    result = workspace.parent / "ref"
    script = workspace.parent / "read.py"
    script.write_text(step["script"])
    proc = subprocess.run([sys.executable, str(script)], cwd=workspace, capture_output=True, text=True, timeout=30,
                          env={"IMAGE_STREAM": stream, "REF_RESULT": str(result), "PATH": os.environ["PATH"]})  # fmt: skip
    return proc, result


def test_the_image_ref_step_reads_what_the_image_task_writes(tmp_path: Path) -> None:
    """docs/opendevstack.md's image-ref step, run: from the file ods-pipeline-image writes when it builds
    (and ods-start downloads when it skips) to `registry/repository/name@digest`; and the report's folder,
    group-writable for the next run's ods-start."""
    step = image_ref_step()
    assert step["script"].startswith("#!/usr/bin/env python3\n")
    assert step["workingDir"] == "$(workspaces.source.path)"
    workspace = tmp_path / "source"
    digests = workspace / ".ods" / "artifacts" / "image-digests"
    digests.mkdir(parents=True)
    (digests / "api.json").write_text(json.dumps(IMAGE_ARTIFACT, separators=(",", ":")))
    proc, result = run_image_ref(workspace, "api")
    assert proc.returncode == 0, proc.stderr
    assert result.read_text() == API_IMAGE
    folder = workspace / ".ods" / "artifacts" / "rollguard"
    assert stat.S_IMODE(folder.stat().st_mode) == 0o2775
    proc, _ = run_image_ref(workspace, "web")  # no such stream: a clear failure, not an empty result
    assert proc.returncode != 0 and "image-digests/web.json" in proc.stderr


def test_the_image_task_declares_what_the_docs_read() -> None:
    """The result and the file the guide relies on, in ods-pipeline-image v0.3.0 as released."""
    package = load_one(ODS_DATA / ODS_TASKS[
        ("https://github.com/opendevstack/ods-pipeline-image.git", "v0.3.0", "tasks/package.yaml")])  # fmt: skip
    assert [r["name"] for r in package["spec"]["results"]] == ["image-digest"]
    assert "chown -R 1001:0 .ods/artifacts/image-digests" in package["spec"]["steps"][0]["script"]


def test_the_ods_promotion_example(tmp_path: Path) -> None:
    uses = [u for block in yaml_blocks(ODS_DOC) for u in uses_of_the_task(block)]
    promoting = [u for u in uses if any(p["name"] == "promote-from" for p in u["params"])]
    assert len(promoting) == 1
    assert argv_of(promoting[0], tmp_path) == [
        *COMMON, "--promote-from", "myproj-cd", "--tag", COMMIT,
        "--report", f"/workspace/report/.ods/artifacts/rollguard/rollout-myproj-dev-{RUN}.json",
    ]  # fmt: skip


@pytest.mark.parametrize("commit", [COMMIT, "abc"])
def test_the_short_sha_step_cuts_eight_characters(commit: str, tmp_path: Path) -> None:
    """docs/opendevstack.md's short-sha task, run by sh: Jenkins-era tags are the first 8 characters."""
    import subprocess

    block = next(
        b for b in yaml_blocks(ODS_DOC) if isinstance(b, list) and b and b[0].get("name") == "short-sha"
    )
    step = block[0]["taskSpec"]["steps"][0]
    result = tmp_path / "tag"
    proc = subprocess.run(["sh", "-c", step["script"]], env={"COMMIT": commit, "TAG_RESULT": str(result)},
                          capture_output=True, text=True, timeout=30)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert result.read_text() == commit[:8]
