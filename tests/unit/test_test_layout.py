"""The tests' own layout (issue 28): shared equipment lives in tests/helpers, so no test module imports
another test module, and no test package reaches into another package's modules (a package's own
equipment, such as tests/tekton/manifests.py or tests/chaos/ledger.py, serves that package alone)."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]


def imported_modules(text: str) -> list[str]:
    """Every `tests.…` module a file imports (``from tests.x import y`` counts as tests.x.y too, which may
    be a module)."""
    found = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found += [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
    return [name for name in found if name.split(".")[0] == "tests"]


def reaches(path: Path, text: str | None = None) -> list[str]:
    """The imports of ``path`` (its ``text``, read when not given) that break the rule."""
    own = path.relative_to(TESTS).parts[0]
    wrong = []
    for name in imported_modules(path.read_text() if text is None else text):
        parts = name.split(".")
        if len(parts) < 2 or parts[1] == "helpers":
            continue
        if parts[1] != own:
            wrong.append(f"{name} (another test package's)")
        elif len(parts) > 2 and parts[2].startswith("test_") and (TESTS / own / f"{parts[2]}.py").exists():
            wrong.append(f"{name} (a test module)")
    return wrong


def test_no_test_module_imports_another_and_no_package_another_packages_modules() -> None:
    broken = {
        str(path.relative_to(TESTS)): wrong
        for path in sorted(TESTS.rglob("*.py"))
        if path.parent != TESTS and "__snapshots__" not in path.parts and (wrong := reaches(path))
    }
    assert not broken, f"move what they share into tests/helpers: {broken}"


def test_the_rule_is_caught() -> None:
    """What the check above is for, on made-up texts of a module: both ways of breaking the rule are found."""
    rollout = TESTS / "rollout" / "test_rollout.py"
    assert reaches(rollout) == []
    assert "another test package" in " ".join(reaches(rollout, "from tests.chaos.ledger import Entry"))
    assert "a test module" in " ".join(reaches(rollout, "from tests.rollout.test_faults import x"))
    assert "a test module" in " ".join(reaches(rollout, "from tests.rollout import test_faults"))
    assert reaches(rollout, "from tests.helpers.proxy import FaultProxy") == []
