"""docs/tekton.md and docs/migrating.md agree with the Task, the CLI and the exit codes they describe."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
import yaml

from tests.tekton import tekton_rules as rules
from tests.tekton.manifests import GENERATED, ROOT, TEKTON_DOC, generated_block, is_our_task, task

DOCS = [TEKTON_DOC, ROOT / "docs" / "migrating.md", ROOT / "docs" / "opendevstack.md"]
COMMAND_DOCS = [
    *DOCS,
    ROOT / "README.md",
    ROOT / "docs" / "diagnostics.md",
    ROOT / "docs" / "migrating-to-deployments.md",
]


def fenced(path: Path, language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", path.read_text(), re.S)


@pytest.mark.parametrize("doc", [TEKTON_DOC, ROOT / "README.md"], ids=["tekton.md", "README.md"])
@pytest.mark.parametrize("name", list(GENERATED))
def test_generated_tables_match_the_task(name: str, doc: Path) -> None:
    block = generated_block(name, doc.read_text())
    assert block is not None, f"{doc.name} has no <!-- generated:{name} --> block"
    assert block == GENERATED[name](task()), (
        f"{doc.name} is out of date: run .venv/bin/python -m tests.tekton.manifests {doc.relative_to(ROOT)}"
    )


def test_exit_code_table_matches_the_code() -> None:
    from rollguard.core.report import EXIT_BY_STATUS

    rows = re.findall(r"^\| (\d) \| `([\w-]+)` \|", TEKTON_DOC.read_text(), re.M)
    # every status word with its code (0 has two, succeeded and dry-run; 3 has two)
    assert {(int(code), status) for code, status in rows} == {(c, s) for s, c in EXIT_BY_STATUS.items()}


def command_lines(path: Path) -> list[str]:
    lines = []
    for block in fenced(path, "sh"):
        for line in block.replace("\\\n", " ").splitlines():
            if line.strip().startswith("rollguard "):
                lines.append(line.strip())
    return lines


@pytest.mark.parametrize("doc", COMMAND_DOCS, ids=[d.name for d in COMMAND_DOCS])
def test_documented_commands_parse(doc: Path) -> None:
    from rollguard.cli import build_parser

    lines = command_lines(doc)
    if doc.name == "migrating.md":
        assert len(lines) >= 5
    for line in lines:
        argv = shlex.split(line, comments=True)[1:]
        try:
            build_parser().parse_args(argv)
        except SystemExit as exc:
            pytest.fail(f"{doc.name}: `{line}` does not parse ({exc})")


def task_params_used(snippet: object) -> list[dict[str, object]]:
    """Every `params` list next to a reference to rollguard-rollout (by name or by the git resolver)."""
    found = []
    if isinstance(snippet, dict):
        if is_our_task(snippet.get("taskRef") or {}):
            found.append(snippet)
        for value in snippet.values():
            found += task_params_used(value)
    elif isinstance(snippet, list):
        for item in snippet:
            found += task_params_used(item)
    return found


@pytest.mark.parametrize("doc", DOCS, ids=[d.name for d in DOCS])
def test_documented_yaml_uses_the_task_as_declared(doc: Path) -> None:
    declared = {p["name"]: p for p in task()["spec"]["params"]}
    workspaces = {w["name"] for w in task()["spec"]["workspaces"]}
    uses = [u for _, block in rules.yaml_blocks(doc) for u in task_params_used(block)]
    assert uses, f"{doc.name} shows no use of the Task"
    for use in uses:
        spec = use.get("spec", use)
        given = {p["name"]: p["value"] for p in spec["params"]}
        assert set(given) <= set(declared), set(given) - set(declared)
        assert {n for n, p in declared.items() if "default" not in p} <= set(given)
        for name, value in given.items():
            assert isinstance(value, list) == (declared[name].get("type") == "array"), name
        assert {w["name"] for w in spec.get("workspaces", [])} <= workspaces


# -- every YAML block, against Tekton's and OpenDevStack's rules (tests/tekton/tekton_rules.py) --------


@pytest.mark.parametrize("doc", DOCS, ids=[d.name for d in DOCS])
def test_every_yaml_block_follows_tektons_rules(doc: Path) -> None:
    """Each block resolved against the Task definitions it names (ours from tekton/, OpenDevStack's as
    released in tests/tekton/ods/): result references, params, workspaces, names, ods.yaml's fields."""
    assert rules.yaml_blocks(doc), f"{doc.name} has no YAML"
    problems = rules.check_doc(doc)
    assert not problems, "\n".join(problems)


def test_the_walkthrough_has_what_a_reader_creates() -> None:
    """From nothing: the sample workloads (a Deployment and a DC of one component), the report's PVC, the
    build's PipelineRun, and a green and a failing TaskRun."""
    kinds = [o.get("kind") for _, b in rules.yaml_blocks(TEKTON_DOC) for o in (b if isinstance(b, list) else [b])
             if isinstance(o, dict)]  # fmt: skip
    for kind in ("Deployment", "DeploymentConfig", "PersistentVolumeClaim", "PipelineRun"):
        assert kind in kinds, kind
    assert kinds.count("TaskRun") == 2
    text = TEKTON_DOC.read_text()
    for said in (
        "OpenShift Pipelines 1.17 or later",
        "`admin` in each namespace involved",
        "Before OpenShift 4.12",
    ):
        assert said in text, said


ODS = ROOT / "docs" / "opendevstack.md"


def ods_yaml_text() -> str:
    return rules._ods_yaml_of(ODS)


@pytest.mark.parametrize(
    ("mistake", "change", "message"),
    [
        (
            "image-ref result (the old docs)",
            ("$(tasks.image-ref.results.ref)", "$(tasks.package.results.image-ref)"),
            '"image-ref" is not a named result returned by pipeline task "package"',
        ),
        (
            "a result of a task that is not there",
            ("$(tasks.image-ref.results.ref)", "$(tasks.push.results.ref)"),
            'referenced pipeline task "push" does not exist',
        ),
        (
            "a required param left out",
            ("- { name: selector, value: app=myproj-api }", ""),
            "missing values for these params which have no default values: [selector]",
        ),
        (
            "a param the Task does not have",
            ("name: report-file", "name: report-path"),
            "'report-path' is not declared",
        ),
        (
            "a workspace the Task does not have",
            ("- { name: report, workspace", "- { name: reports, workspace"),
            "workspace 'reports' is not declared by the Task",
        ),
        (
            "a workspace ODS does not give",
            ("{ name: report, workspace: shared-workspace }", "{ name: report, workspace: ws }"),
            "'ws' is not a workspace of the Pipeline",
        ),
        (
            "a Pipeline param ODS does not set",
            ("$(params.component)", "$(params.image)"),
            "$(params.image) is not a param",
        ),
        (
            "an ods.yaml field ODS does not know",
            ("    taskRunSpecs:", "    taskRunSpec:"),
            "unknown field 'taskRunSpec'",
        ),
        (
            "a status outside finally",
            (
                "- { name: namespace, value: myproj-dev }",
                "- { name: namespace, value: $(tasks.package.status) }",
            ),
            "can be used only in finally",
        ),
        (
            "an ODS Task revision nobody released",
            ("value: v0.3.0", "value: v0.3.1"),
            "is not a Task this test knows",
        ),
        (
            "an array param given a string",
            (
                "- name: images\n            value:\n              - deployment/api=$(tasks.image-ref.results.ref)\n              - dc/worker=$(tasks.image-ref.results.ref)",
                "- { name: images, value: deployment/api=x }",
            ),
            "param 'images' must be array",
        ),
    ],
)
def test_the_rules_catch(mistake: str, change: tuple[str, str], message: str) -> None:
    """The check fails where Tekton or ODS would: each of these mistakes in the guide's ods.yaml."""
    text = ods_yaml_text()
    assert change[0] in text, mistake
    problems = rules.Problems()
    rules.check_ods(yaml.safe_load(text.replace(change[0], change[1], 1)), "ods.yaml", problems)
    assert any(message in p for p in problems), f"{mistake}: {problems}"


def test_the_ods_test_data_is_as_released() -> None:
    """tests/tekton/ods/ holds OpenDevStack's files unchanged: their sha256 as SOURCES.md records them."""
    import hashlib

    table = (rules.ODS_DATA / "SOURCES.md").read_text()
    files = sorted(rules.ODS_DATA.glob("*.yaml"))
    assert {f.name for f in files} == set(rules.ODS_TASKS.values()) | set(rules.ODS_MANAGER_TASKS.values())
    for f in files:
        row = next(line for line in table.splitlines() if line.startswith(f"| `{f.name}`"))
        assert hashlib.sha256(f.read_bytes()).hexdigest() in row, f"{f.name} differs from the release"
