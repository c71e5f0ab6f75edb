"""Every difference between the kinds stays in `rollguard.kinds` (task/kinds/): a scan of the sources.

Outside that package no module may branch on a workload's kind (compare a kind, a kind name or a kind's
resource), name a kind class, parse image triggers, or read a kind's annotations. A finding here means
the logic belongs in a `Kind` method (task/kinds/base.py and the kind's module) or in
task/kinds/triggers.py; the callers ask the `Kind`.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
KINDS_PACKAGE = ROOT / "task" / "kinds"
SOURCES = sorted(
    p for d in ("task", "tui") for p in (ROOT / d).rglob("*.py") if KINDS_PACKAGE not in p.parents
)

KIND_NAMES = {
    "DC",
    "DEPLOYMENT",
    "DEPLOYMENT_CONFIGS",
    "DEPLOYMENTS",
    "REPLICATION_CONTROLLERS",
    "REPLICA_SETS",
}
KIND_STRINGS = {"DeploymentConfig", "Deployment", "dc", "deploy", "deployment", "deploymentconfig"}
KIND_CLASSES = {"DeploymentConfigKind", "DeploymentKind"}
# Trigger fields and types (DC spec.triggers and the image.openshift.io/triggers annotation).
TRIGGER_STRINGS = {
    "ImageChange",
    "ConfigChange",
    "imageChangeParams",
    "containerNames",
    "lastTriggeredImage",
    "image.openshift.io/triggers",
}
ANNOTATION_PREFIXES = ("openshift.io/", "deployment.kubernetes.io/", "apps.openshift.io/")


def _is_kindish(node: ast.expr) -> bool:
    """An expression that names a kind: DC, DEPLOYMENTS, "DeploymentConfig", x.kind, kind_name ..."""
    if isinstance(node, ast.Name):
        return node.id in KIND_NAMES or node.id in {"kind_name"}
    if isinstance(node, ast.Attribute):
        return node.attr in KIND_NAMES or node.attr == "kind"
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value in KIND_STRINGS
    return False


def _key(node: ast.AST) -> str | None:
    """The string key of ``x["key"]`` or ``x.get("key", ...)`` (also pop/setdefault)."""
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
        return node.slice.value if isinstance(node.slice.value, str) else None
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in {"get", "pop", "setdefault"}
        and node.args
        and isinstance(node.args[0], ast.Constant)
        and isinstance(node.args[0].value, str)
    ):
        return node.args[0].value
    return None


def _receiver(node: ast.AST) -> ast.AST | None:
    if isinstance(node, ast.Subscript):
        return node.value
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        return node.func.value
    return None


def violations(source: str) -> Iterator[tuple[int, str]]:
    """(line, what) for each kind branch or trigger parse in ``source``."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            kindish = [o for o in operands if _is_kindish(o)]
            if all(isinstance(op, ast.In | ast.NotIn) for op in node.ops):
                # a lookup (``kind.kind in cache``) is no branch; ``kind in (DC, ...)`` is
                kindish = [
                    e
                    for o in node.comparators
                    if isinstance(o, ast.Tuple | ast.List | ast.Set)
                    for e in o.elts
                    if _is_kindish(e)
                ]
            # x.kind == y.kind (same kind?) is no branch on which kind; anything else that compares one is
            if kindish and not all(isinstance(o, ast.Attribute) and o.attr == "kind" for o in operands):
                yield node.lineno, f"compares a kind: {ast.unparse(node)}"
        elif isinstance(node, ast.Name) and node.id in KIND_CLASSES:
            yield node.lineno, f"names a kind class: {node.id}"
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            if node.value in TRIGGER_STRINGS:
                yield node.lineno, f"parses triggers: {node.value!r}"
            elif node.value.startswith(ANNOTATION_PREFIXES):
                yield node.lineno, f"reads a kind's annotation: {node.value!r}"
        key = _key(node)
        if key == "triggers":
            receiver = _receiver(node)
            if receiver is not None and _key(receiver) == "spec":
                yield node.lineno, f"reads a workload's triggers: {ast.unparse(node)}"


@pytest.mark.parametrize("path", SOURCES, ids=[str(p.relative_to(ROOT)) for p in SOURCES])
def test_no_kind_branching_outside_the_kinds_package(path: Path) -> None:
    found = [f"{path.relative_to(ROOT)}:{line}: {what}" for line, what in violations(path.read_text())]
    assert not found, "move this into rollguard.kinds (ask the Kind instead):\n" + "\n".join(found)


@pytest.mark.parametrize(
    "snippet",
    [
        "if kind.kind == DC: pass",
        "if ref.kind != 'DeploymentConfig': pass",
        "x = 'dc' if self.kind == 'DeploymentConfig' else 'deployment'",
        "if res is DEPLOYMENT_CONFIGS: pass",
        "if kind_name == DEPLOYMENT: pass",
        "if ref.kind in (DC, 'Deployment'): pass",
        "isinstance(k, DeploymentConfigKind)",
        "t.get('type') == 'ImageChange'",
        "params = trigger.get('imageChangeParams') or {}",
        "obj.get('spec', {}).get('triggers')",
        "body['spec']['triggers'] = []",
        "rc['metadata']['annotations'].get('openshift.io/deployment.phase')",
    ],
)
def test_the_scan_sees_each_form(snippet: str) -> None:
    assert list(violations(snippet)), snippet


def test_the_scan_leaves_kind_neutral_code_alone() -> None:
    neutral = """
kind = kind_of(ref)
if kind.rollout_blocker(obj): pass
same = a.kind == b.kind
cached = kind.kind in revisions_by_kind
by_kind = {k.kind: k for k in KINDS.values()}
data = {"triggers": state.triggers}
"""
    assert list(violations(neutral)) == []
