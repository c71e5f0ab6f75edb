"""Permission checks (`rollguard.cluster.access`): RBAC's rule matching (pure), and `ask` answering a run's needs
from one rules review per namespace, asking an access review only for what no rule allows."""

from __future__ import annotations

from typing import Any

import pytest

from rollguard.cluster.access import (
    IMAGE_STREAM_LAYERS,
    Answer,
    ask,
    first_gap,
    rollout_permissions,
    rule_allows,
)
from rollguard.core.errors import Forbidden
from rollguard.core.resources import CONFIG_MAPS, DEPLOYMENT_CONFIGS, DEPLOYMENTS, LEASES, Resource

NS = "shop"

# (rule, verb, resource, allowed): RBAC's matching (pkg/apis/rbac/v1/evaluation_helpers.go)
CASES = [
    ({"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}, "update", DEPLOYMENTS, True),
    (
        {"verbs": ["get", "update"], "apiGroups": ["apps"], "resources": ["deployments"]},
        "update",
        DEPLOYMENTS,
        True,
    ),
    ({"verbs": ["get"], "apiGroups": ["apps"], "resources": ["deployments"]}, "update", DEPLOYMENTS, False),
    ({"verbs": ["update"], "apiGroups": [""], "resources": ["deployments"]}, "update", DEPLOYMENTS, False),
    (
        {"verbs": ["update"], "apiGroups": ["apps"], "resources": ["replicasets"]},
        "update",
        DEPLOYMENTS,
        False,
    ),
    (
        {"verbs": ["update"], "apiGroups": ["apps.openshift.io"], "resources": ["deploymentconfigs"]},
        "update",
        DEPLOYMENT_CONFIGS,
        True,
    ),
    ({"verbs": ["create"], "apiGroups": [""], "resources": ["configmaps"]}, "create", CONFIG_MAPS, True),
    # a rule for named objects grants nothing a nameless need asks
    ({"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"], "resourceNames": ["x"]}, "get", LEASES, False),
    (
        {"verbs": ["get"], "apiGroups": ["image.openshift.io"], "resources": ["imagestreams/layers"]},
        "get",
        IMAGE_STREAM_LAYERS,
        True,
    ),
    (
        {"verbs": ["get"], "apiGroups": ["image.openshift.io"], "resources": ["*/layers"]},
        "get",
        IMAGE_STREAM_LAYERS,
        True,
    ),
    (
        {"verbs": ["get"], "apiGroups": ["image.openshift.io"], "resources": ["imagestreams"]},
        "get",
        IMAGE_STREAM_LAYERS,
        False,
    ),
    (
        {"verbs": ["get"], "apiGroups": ["image.openshift.io"], "resources": ["*/status"]},
        "get",
        IMAGE_STREAM_LAYERS,
        False,
    ),
    ({}, "get", LEASES, False),
]


@pytest.mark.parametrize(("rule", "verb", "res", "allowed"), CASES)
def test_rules_match_as_rbac_does(rule: dict[str, Any], verb: str, res: Resource, allowed: bool) -> None:
    assert rule_allows(rule, (verb, res, NS)) is allowed


class Reviews:
    """An API answering reviews only: rules per namespace, and an access review allowing ``granted``."""

    def __init__(self, rules: dict[str, list[dict[str, Any]]] | None, granted: set[tuple[str, str]]) -> None:
        self.rules, self.granted = rules, granted
        self.asked: list[tuple[str, str, str]] = []
        self.rules_asked: list[str] = []

    def create(self, res: Resource, body: dict[str, Any], **_kw: Any) -> dict[str, Any]:
        if res.plural == "selfsubjectrulesreviews":
            ns = body["spec"]["namespace"]
            self.rules_asked.append(ns)
            if self.rules is None:
                raise Forbidden("not allowed", status=403)
            return {**body, "status": {"resourceRules": self.rules.get(ns, []), "incomplete": False}}
        attrs = body["spec"]["resourceAttributes"]
        self.asked.append((attrs["verb"], attrs["resource"], attrs["namespace"]))
        return {**body, "status": {"allowed": (attrs["verb"], attrs["resource"]) in self.granted}}


def test_a_rollout_needs_one_rules_review_when_the_rules_allow_all() -> None:
    needs = rollout_permissions(NS, {"DeploymentConfig", "Deployment"}, promote_from=None)
    api = Reviews({NS: [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}]}, set())
    answers = ask(api, needs)  # type: ignore[arg-type]
    assert api.rules_asked == [NS] and api.asked == []
    assert [a.need for a in answers] == needs and all(a.allowed for a in answers)


def test_what_no_rule_allows_is_asked_and_the_first_gap_named_in_need_order() -> None:
    needs = rollout_permissions(NS, {"Deployment"}, promote_from=None)
    rules = [{"verbs": ["get", "list", "watch"], "apiGroups": ["*"], "resources": ["*"]}]
    granted = {("update", "deployments"), ("create", "configmaps")}
    api = Reviews({NS: rules}, granted)
    answers = ask(api, needs)  # type: ignore[arg-type]
    assert api.asked and all(verb not in ("get", "list", "watch") for verb, _r, _ns in api.asked)
    assert [a.need for a in answers] == needs
    gap = first_gap(answers)
    assert gap is not None and "not allowed to update configmaps" in str(gap), gap


def test_without_a_rules_review_every_need_is_asked_alone() -> None:
    needs = rollout_permissions(NS, {"Deployment"}, promote_from="cd")
    api = Reviews(None, {(v, r.plural) for v, r, _ns in needs})
    answers = ask(api, needs)  # type: ignore[arg-type]
    assert api.rules_asked == [NS]  # the promotion source has two needs: asked alone
    assert len(api.asked) == len(needs) and first_gap(answers) is None


def test_one_need_is_asked_alone() -> None:
    api = Reviews(
        {NS: [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}]}, {("patch", "deployments")}
    )
    assert ask(api, [("patch", DEPLOYMENTS, NS)]) == [Answer(("patch", DEPLOYMENTS, NS), True)]  # type: ignore[arg-type]
    assert api.rules_asked == [] and len(api.asked) == 1
