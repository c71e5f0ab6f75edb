"""DeploymentConfig -> Deployment, field by field (rollguard.kinds.conversion), from the YAML cases of
tests/cases/migrate/convert.yaml: what converts how, and what is refused with what to do."""

from __future__ import annotations

import json

import pytest
import yaml

from rollguard.kinds.conversion import MIGRATED_FROM, convert
from rollguard.kinds.triggers import TRIGGERS_ANNOTATION
from tests.helpers import CASES

CONVERT = yaml.safe_load((CASES / "migrate" / "convert.yaml").read_text())


@pytest.mark.parametrize("case", CONVERT, ids=[c["name"] for c in CONVERT])
def test_conversion(case: dict) -> None:
    result = convert(case["dc"], **case.get("options", {}))
    if "refused" in case:
        assert result.deployment is None
        text = " | ".join(result.refusals)
        for words in case["refused"]:
            assert words in text, text
        return
    assert not result.refusals, result.refusals
    dep = result.deployment
    assert dep is not None and dep["kind"] == "Deployment" and dep["apiVersion"] == "apps/v1"
    expect = case["expect"]
    for key, value in expect.get("spec", {}).items():
        assert dep["spec"].get(key) == value, key
    if "template_labels" in expect:
        assert dep["spec"]["template"]["metadata"]["labels"] == expect["template_labels"]
    if "triggers" in expect:
        entries = json.loads(dep["metadata"]["annotations"].get(TRIGGERS_ANNOTATION, "[]"))
        assert entries == expect["triggers"]
    if "labels" in expect:
        assert dep["metadata"]["labels"] == expect["labels"]
    if "init_containers" in expect:
        assert dep["spec"]["template"]["spec"]["initContainers"] == expect["init_containers"]
    assert dep["metadata"]["annotations"][MIGRATED_FROM] == f"dc/{case['dc']['metadata']['name']}"
    notes = " | ".join(result.notes)
    for words in expect.get("notes", []):
        assert words in notes, notes
    if expect.get("notes") == []:
        assert not result.notes, result.notes


def test_the_selector_never_takes_the_dc_label_so_neither_side_adopts_the_other() -> None:
    """The DC's RCs select ``deployment=<rc>`` (which no new pod has); the Deployment's ReplicaSets select
    ``pod-template-hash`` (which no DC pod has): the ``deploymentconfig`` label is only on the pods."""
    (case,) = [c for c in CONVERT if c["name"].startswith("recreate")]
    dep = convert(case["dc"]).deployment
    assert dep is not None
    assert "deploymentconfig" not in dep["spec"]["selector"]["matchLabels"]
    assert dep["spec"]["template"]["metadata"]["labels"]["deploymentconfig"] == "worker"


def test_the_dc_is_not_modified() -> None:
    case = CONVERT[0]
    before = json.dumps(case["dc"], sort_keys=True)
    convert(case["dc"])
    assert json.dumps(case["dc"], sort_keys=True) == before
