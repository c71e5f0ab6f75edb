"""The core (`rollguard` less `rollguard.tui`) must never import Textual: the CLI, the Tekton image and the
CronJob run without it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

BLOCKED = """
import importlib, pkgutil, sys
sys.modules["textual"] = None  # any `import textual...` now raises ImportError
import rollguard
names = [
    m.name for m in pkgutil.walk_packages(rollguard.__path__, "rollguard.")
    if m.name != "rollguard.tui" and not m.name.startswith("rollguard.tui.")
]
for name in names:
    importlib.import_module(name)
from rollguard.cli import build_parser
build_parser().parse_args(["tui", "-n", "x", "--read-only"])
assert not any(m == "textual" or m.startswith("textual.") for m in sys.modules if sys.modules[m] is not None)
print(len(names))
"""


def test_every_task_module_imports_without_textual():
    result = subprocess.run(
        [sys.executable, "-c", BLOCKED], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert int(result.stdout.strip()) >= 20  # all of rollguard.*, rollguard.commands.* included


def test_the_tui_subcommand_loads_textual_only_when_run():
    code = "import sys; from rollguard.cli import build_parser; build_parser(); print('textual' in sys.modules)"
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert result.stdout.strip() == "False", result.stderr


def test_the_tui_refuses_an_unusable_kubeconfig_before_opening(tmp_path: Path):
    result = subprocess.run(
        [sys.executable, "-m", "rollguard.cli", "tui", "--kubeconfig", str(tmp_path / "none")],
        cwd=ROOT, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode == 2
    assert "does not exist" in result.stderr and "Traceback" not in result.stderr
