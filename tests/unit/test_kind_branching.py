"""Every difference between the kinds stays in `rollguard.kinds` (task/kinds/): a scan of the sources.

Outside that package no module may branch on a workload's kind (compare a kind, a kind name or a kind's
resource), keep a lookup table keyed by kind (a dict literal or comprehension whose keys are kinds or
their resources: a third kind would be missing from it), name a kind class, parse image triggers, or read
a kind's annotations. The one table allowed outside is `KIND_NAMES` in task/core/structs.py (the kinds'
names: `WorkloadRef`, below the kinds layer, names itself by it; `Kind.aliases` read it). A finding here means
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
# Lookup tables keyed by kind allowed outside task/kinds/: (source file, name assigned the table).
ALLOWED_TABLES = {("task/core/structs.py", "KIND_NAMES")}


def _is_kindish(node: ast.expr) -> bool:
    """An expression that names a kind: DC, DEPLOYMENTS, "DeploymentConfig", x.kind, kind_name ..."""
    if isinstance(node, ast.Name):
        return node.id in KIND_NAMES or node.id in {"kind_name"}
    if isinstance(node, ast.Attribute):
        return node.attr in KIND_NAMES or node.attr == "kind"
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value in KIND_STRINGS
    return False


def _names_a_kind(node: ast.expr | None) -> bool:
    """A kind itself as a table key: DC, DEPLOYMENT_CONFIGS, structs.DC, "DeploymentConfig", "dc" ..."""
    if isinstance(node, ast.Name):
        return node.id in KIND_NAMES
    if isinstance(node, ast.Attribute):
        return node.attr in KIND_NAMES
    return isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in KIND_STRINGS


def _kind_table(node: ast.AST) -> bool:
    """A dict literal or comprehension keyed by kind: ``{DC: "dc", DEPLOYMENT: "deploy"}``,
    ``{k: ... for k in (DC, DEPLOYMENT)}``. One string key that happens to be a kind's word
    (``{"deployment": rc_name}``, a report field) is no table; a kind constant as a key always is."""
    if isinstance(node, ast.Dict):
        keys = [k for k in node.keys if _names_a_kind(k)]
        return len(keys) >= 2 or any(not isinstance(k, ast.Constant) for k in keys)
    if isinstance(node, ast.DictComp):
        listed = [
            e
            for g in node.generators
            if isinstance(g.iter, ast.Tuple | ast.List | ast.Set)
            for e in g.iter.elts
        ]
        return _names_a_kind(node.key) or any(_names_a_kind(e) for e in listed)
    return False


def _allowed_tables(tree: ast.AST, names: set[str]) -> set[int]:
    """The ids of the dicts assigned to one of ``names`` (the allowed tables)."""
    allowed: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id in names for t in targets):
                allowed.add(id(node.value))
    return allowed


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


def violations(source: str, *, tables: set[str] | None = None) -> Iterator[tuple[int, str]]:
    """(line, what) for each kind branch, table keyed by kind or trigger parse in ``source``; a table
    assigned to one of ``tables`` is allowed."""
    tree = ast.parse(source)
    allowed = _allowed_tables(tree, tables or set())
    for node in ast.walk(tree):
        if _kind_table(node) and id(node) not in allowed:
            yield node.lineno, f"a table keyed by kind: {ast.unparse(node)[:80]}"
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
    rel = path.relative_to(ROOT).as_posix()
    tables = {name for file, name in ALLOWED_TABLES if file == rel}
    found = [f"{rel}:{line}: {what}" for line, what in violations(path.read_text(), tables=tables)]
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
        "PREFIX = {'DeploymentConfig': 'dc', 'Deployment': 'deploy'}",
        "SHORT = {DC: 'dc', DEPLOYMENT: 'deployment'}",
        "REDUCERS = {DEPLOYMENT_CONFIGS: workload, PODS: pod}",
        "by = {kind: names(kind) for kind in (DC, DEPLOYMENT)}",
        "KIND_NAMES = {DC: 'dc', DEPLOYMENT: 'deployment'}",  # allowed only in task/core/structs.py
    ],
)
def test_the_scan_sees_each_form(snippet: str) -> None:
    assert list(violations(snippet)), snippet


def test_the_scan_leaves_kind_neutral_code_alone() -> None:
    neutral = """
kind = kind_of(ref)
if kind.settled(obj): pass
same = a.kind == b.kind
cached = kind.kind in revisions_by_kind
by_kind = {k.kind: k for k in KINDS.values()}
data = {"triggers": state.triggers}
record = {"name": name, "deployment": rc_name}
reducers = {kind.resource: workload for kind in KINDS.values()}
"""
    assert list(violations(neutral)) == []


def test_the_one_table_of_kind_names_is_allowed_where_it_lives() -> None:
    table = "KIND_NAMES = {DC: KindNames(key='dc'), DEPLOYMENT: KindNames(key='deployment')}"
    assert list(violations(table, tables={"KIND_NAMES"})) == []
    assert list(violations(table.replace("KIND_NAMES", "OTHER"), tables={"KIND_NAMES"}))
