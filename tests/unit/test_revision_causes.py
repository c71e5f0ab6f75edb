"""The cause of each revision (issue 30 points 5 and 6), from the YAML case tables in tests/cases/revisions/:
`causes.yaml` judged by `rollguard.kinds.revision_causes` on the objects as the API returns them and as the
TUI's caches reduce them, `next.yaml` the revision a write starts (`Kind.next_revision`, which rollguard's
change-cause names), and the mark itself (`rollguard.kinds.causes`).

What the platform records was read in OpenShift's own code: library-go pkg/apps/appsutil/util.go
MakeDeployment (the whole DC encoded into the RC, details.message as its status-reason),
openshift-controller-manager pkg/apps/deploymentconfig/deploymentconfig_controller.go
(recordConfigChangeCause, recordImageChangeCauses), openshift-apiserver
pkg/apps/apiserver/registry/instantiate/rest.go (Manual for `oc rollout latest`) and
deployconfig/strategy.go PrepareForUpdate (a main-resource latestVersion + 1 keeps the stored details),
oc pkg/helpers/originpolymorphichelpers/deploymentconfigs/history.go (`oc rollout history`'s CAUSE).
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
import yaml

from rollguard.cluster.reduce import reducer_for
from rollguard.kinds import kind_of
from rollguard.kinds.causes import CHANGE_CAUSE, Cause, RunMark, parse_mark, with_mark
from rollguard.kinds.revision_causes import revision_causes
from rollguard.kinds.templates import field_changes
from tests.helpers import CASES

CAUSES = yaml.safe_load((CASES / "revisions" / "causes.yaml").read_text())
NEXT = yaml.safe_load((CASES / "revisions" / "next.yaml").read_text())
ENCODED = "openshift.io/encoded-deployment-config"


def _revision(raw: dict[str, Any]) -> dict[str, Any]:
    """A revision object of the table: ``encoded`` goes into the RC's annotation as JSON."""
    rev = copy.deepcopy(raw)
    encoded = rev.pop("encoded", None)
    if encoded is not None:
        notes = rev.setdefault("metadata", {}).setdefault("annotations", {})
        notes[ENCODED] = json.dumps({"kind": "DeploymentConfig", **encoded}) + "\n"
    return rev


@pytest.mark.parametrize("case", CAUSES, ids=[c["name"] for c in CAUSES])
def test_revision_causes(case: dict[str, Any]) -> None:
    kind = kind_of(case["kind"])
    revisions = [_revision(r) for r in case["revisions"]]
    expect = {int(n): words for n, words in case["expect"].items()}
    causes = revision_causes(kind, revisions)
    assert {n: c.text() for n, c in causes.items()} == expect
    reduce = reducer_for(kind.revisions)
    assert reduce is not None
    reduced = revision_causes(kind, [reduce(r) for r in revisions])
    assert {n: c.text() for n, c in reduced.items()} == expect, "the reduced objects tell another cause"


@pytest.mark.parametrize("case", NEXT, ids=[c["name"] for c in NEXT])
def test_next_revision(case: dict[str, Any]) -> None:
    kind = kind_of(case["kind"])
    assert kind.next_revision(case["obj"], case["body"], case["revisions"]) == case["expect"]


def test_the_mark_reads_back_and_only_rollguards_does() -> None:
    mark = RunMark(command="revert", run_id="20261203-081500-1a2b3c", revision=7)
    assert mark.text() == "rollguard revert run 20261203-081500-1a2b3c (revision 7)"
    assert parse_mark(mark.text()) == mark
    reverting = RunMark(command="rollout", run_id="r-1", revision=3, reverting=True)
    assert parse_mark(reverting.text()) == reverting
    for other in ("", None, "kubectl set image deployment/web web=web:v2 --record=true", "rollguard did it"):
        assert parse_mark(other) is None


def test_the_mark_goes_on_the_workload_never_into_its_template() -> None:
    body = {
        "metadata": {"name": "web", "annotations": {"team": "shop"}},
        "spec": {"template": {"metadata": {"annotations": {"a": "b"}}, "spec": {"containers": []}}},
    }
    before = copy.deepcopy(body)
    marked = with_mark(body, RunMark(command="rollout", run_id="r-1", revision=2))
    assert marked["metadata"]["annotations"] == {
        "team": "shop",
        CHANGE_CAUSE: "rollguard rollout run r-1 (revision 2)",
    }
    assert marked["spec"] == before["spec"] and body == before  # template untouched, input not modified
    # a revert's report lists what it changed: never the record of the write itself
    assert field_changes(body, marked) == []


def test_a_cause_word_per_kind_of_cause() -> None:
    """Every Cause appears in the table (a cause nobody can produce has no business in the enum)."""
    seen = {
        c.cause
        for case in CAUSES
        for c in revision_causes(kind_of(case["kind"]), [_revision(r) for r in case["revisions"]]).values()
    }
    assert seen == set(Cause)
