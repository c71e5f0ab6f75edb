"""The core (`rollguard` less `rollguard.tui`) must never import Textual: the CLI, the Tekton image and the
CronJob run without it."""

from __future__ import annotations

import ast
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
    code = (
        "import sys; from rollguard.cli import build_parser; build_parser(); print('textual' in sys.modules)"
    )
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


SCREENS_WITHOUT_APP = """
import importlib, pkgutil, sys
sys.modules["rollguard.tui.app"] = None  # any run-time `import rollguard.tui.app` now raises ImportError
import rollguard.tui.screens, rollguard.tui.widgets
names = [m.name for pkg in (rollguard.tui.screens, rollguard.tui.widgets)
         for m in pkgutil.walk_packages(pkg.__path__, pkg.__name__ + ".")]
for name in names:
    importlib.import_module(name)
print(len(names))
"""


def test_screens_and_widgets_import_the_app_only_for_typing():
    """The app imports its screens; a screen or widget that imported the app back would be a cycle."""
    result = subprocess.run(
        [sys.executable, "-c", SCREENS_WITHOUT_APP], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert int(result.stdout.strip()) >= 8  # every screen and widget module


# What talks to a cluster or reads a kubeconfig: only the rollguard.tui.backend package (tui/backend/) may
# import these at run time.
IO_MODULES = ("kubernetes", "rollguard.cluster.access", "rollguard.cluster.client", "rollguard.state.inventory", "rollguard.cluster.kubeconfig",
              "rollguard.plan.rollout_read", "rollguard.run.repair", "rollguard.cluster.transport", "rollguard.cluster.cache")  # fmt: skip


def _runtime_imports(path: Path) -> set[str]:
    """Modules ``path`` imports, leaving out those under ``if TYPE_CHECKING:``."""
    tree = ast.parse(path.read_text())
    typing_only = {
        id(node)
        for block in ast.walk(tree)
        if isinstance(block, ast.If) and ast.unparse(block.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING")
        for node in ast.walk(block)
    }
    found = set()
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
    return found


def test_cluster_io_lives_in_the_backend_only():
    offenders = {}
    for path in sorted((ROOT / "tui").rglob("*.py")):
        if path.parent == ROOT / "tui" / "backend":
            continue
        bad = {m for m in _runtime_imports(path) if m in IO_MODULES or m.startswith("kubernetes.")}
        if bad:
            offenders[str(path.relative_to(ROOT))] = sorted(bad)
    assert not offenders, offenders
