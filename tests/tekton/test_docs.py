"""docs/tekton.md and docs/migrating.md agree with the Task, the CLI and the exit codes they describe."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
import yaml

from tests.tekton.manifests import GENERATED, ROOT, TEKTON_DOC, generated_block, task

DOCS = [TEKTON_DOC, ROOT / "docs" / "migrating.md", ROOT / "docs" / "opendevstack.md"]
COMMAND_DOCS = [*DOCS, ROOT / "README.md", ROOT / "docs" / "diagnostics.md"]


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
    """Every `params` list next to a `taskRef: {name: rollguard-rollout}` in a YAML snippet."""
    found = []
    if isinstance(snippet, dict):
        if (snippet.get("taskRef") or {}).get("name") == "rollguard-rollout":
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
    uses = [u for block in fenced(doc, "yaml") for u in task_params_used(yaml.safe_load(block))]
    assert uses, f"{doc.name} shows no use of the Task"
    for use in uses:
        spec = use.get("spec", use)
        given = {p["name"]: p["value"] for p in spec["params"]}
        assert set(given) <= set(declared), set(given) - set(declared)
        assert {n for n, p in declared.items() if "default" not in p} <= set(given)
        for name, value in given.items():
            assert isinstance(value, list) == (declared[name].get("type") == "array"), name
        assert {w["name"] for w in spec.get("workspaces", [])} <= workspaces
