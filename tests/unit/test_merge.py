"""The manifest merge rules (rollguard.plan.merge) and the manifest reader (rollguard.plan.manifests), pure.

Merge cases come from tests/cases/manifests/merge.yaml: the live object, the manifest, the
merged body (whole or by path), the fields it changes and what a revert would put back.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from rollguard.core.errors import RefusedError
from rollguard.core.structs import DC, DEPLOYMENT, WorkloadRef
from rollguard.kinds import KINDS
from rollguard.plan import merge
from rollguard.plan.manifest_decide import ManifestRead, hpa_targets, manifest_refusal
from rollguard.plan.manifests import Source, parse, read_sources
from tests.helpers import CASES

CASES = yaml.safe_load((CASES / "manifests" / "merge.yaml").read_text())


def at(obj, path: str):
    for part in path.split("."):
        obj = obj[part]
    return obj


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_merge_case(case: dict) -> None:
    kind = KINDS[case["kind"]]
    live_before = json.dumps(case["live"], sort_keys=True)
    body = merge.merged(
        case["live"],
        case["manifest"],
        kind=kind,
        keep_replicas=case.get("keep_replicas", False),
        last=case.get("last"),
    )
    assert json.dumps(case["live"], sort_keys=True) == live_before  # the live object is not touched
    if "want" in case:
        assert body == case["want"]
    for path, want in (case.get("want_at") or {}).items():
        assert at(body, path) == want, path
    if "fields" in case:
        assert merge.changed_fields(case["live"], body) == case["fields"]
    if "restore" in case:
        record = merge.restore_record(case["live"], body)
        assert record == case["restore"]
        back = merge.restored(body, record)
        assert back["metadata"]["labels"] == case["live"]["metadata"]["labels"]
        assert back["metadata"]["annotations"] == case["live"]["metadata"]["annotations"]
        assert {k: v for k, v in back["spec"].items() if k != "template"} == {
            k: v for k, v in case["live"]["spec"].items() if k != "template"
        }


def test_combined_restore_keeps_the_earlier_runs_values() -> None:
    earlier = {"labels": {"release": None}, "spec": {"replicas": 2}}
    later = {"labels": {"release": "r2", "tier": None}, "annotations": {"a": "1"}}
    assert merge.combined_restore(earlier, later) == {
        "annotations": {"a": "1"},
        "labels": {"release": None, "tier": None},
        "spec": {"replicas": 2},
    }


HELM_OUTPUT = """
---
# Source: shop/templates/configmap.yaml
apiVersion: v1
kind: ConfigMap
metadata: {name: shop-config-5f7d}
data: {a: "1"}
---
# Source: shop/templates/web.yaml
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, labels: {app: shop-api}}
spec: {template: {spec: {containers: [{name: app, image: a:v2}]}}}
---
apiVersion: v1
kind: List
items:
  - apiVersion: apps.openshift.io/v1
    kind: DeploymentConfig
    metadata: {name: api, labels: {app: shop-api}}
    spec: {template: {spec: {containers: [{name: app, image: " "}]}}}
  - apiVersion: v1
    kind: Secret
    metadata: {name: db}
---
"""


def test_parse_sorts_workloads_and_other_kinds_through_lists() -> None:
    found = parse([Source("stdin", HELM_OUTPUT)], namespace="shop")
    assert sorted(r.key for r in found.workloads) == ["dc/api", "deployment/web"]
    assert found.workloads[WorkloadRef(DC, "api")].origin == "stdin#3.items[0]"
    assert found.other_names == ["ConfigMap/shop-config-5f7d", "Secret/db"]
    read = ManifestRead(manifests=found)
    refusal = manifest_refusal(read, selector="app=shop-api")
    assert refusal is not None and "ConfigMap/shop-config-5f7d (stdin#1)" in str(refusal)
    assert "--skip-other-kinds" in str(refusal) and "Secret/db would not be touched" in str(refusal)
    skipping = ManifestRead(manifests=found, skip_other_kinds=True)
    assert manifest_refusal(skipping, selector="app=shop-api") is None
    assert skipping.skipped == ["ConfigMap/shop-config-5f7d", "Secret/db"]
    assert "does not match the selector" in str(manifest_refusal(skipping, selector="app=other"))


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("kind: Deployment\napiVersion: apps/v1\nmetadata: {name: web}\n", "has no spec.template"),
        ("kind: Deployment\napiVersion: apps/v1\nspec: {}\n", "has no kind or metadata.name"),
        ("a: [unclosed\n", "is not valid YAML or JSON"),
        ("- just\n- a list\n", "is not an object"),
        (
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: prod}\nspec: {template: {}}\n",
            "is for namespace 'prod', not 'shop'",
        ),
        (
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: w}\nspec: {template: {}}\n---\n"
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: w}\nspec: {template: {}}\n",
            "deployment/w is given twice (x.yaml#1 and x.yaml#2)",
        ),
    ],
)
def test_parse_refuses_malformed_input(text: str, message: str) -> None:
    with pytest.raises(RefusedError) as refused:
        parse([Source("x.yaml", text)], namespace="shop")
    assert message in str(refused.value)


def test_read_sources_directory_file_and_refusals(tmp_path: Path) -> None:
    (tmp_path / "b.yaml").write_text("b")
    (tmp_path / "a.json").write_text("a")
    (tmp_path / "notes.txt").write_text("ignored")
    assert [s.name for s in read_sources([str(tmp_path)])] == [
        str(tmp_path / "a.json"),
        str(tmp_path / "b.yaml"),
    ]
    with pytest.raises(RefusedError, match="no such file"):
        read_sources([str(tmp_path / "missing.yaml")])
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(RefusedError, match="holds no"):
        read_sources([str(empty)])


def test_hpa_targets_of_known_kinds_only() -> None:
    hpas = [
        {"spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web"}}},
        {"spec": {"scaleTargetRef": {"kind": "DeploymentConfig", "name": "api"}}},
        {"spec": {"scaleTargetRef": {"kind": "StatefulSet", "name": "db"}}},
    ]
    assert hpa_targets(hpas) == {WorkloadRef(DEPLOYMENT, "web"), WorkloadRef(DC, "api")}
