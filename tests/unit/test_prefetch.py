"""The rollout preflight's reads go out at once (`rollguard.plan.prefetch.Prefetch`) but are consumed in
the sequential order (`rollguard.plan.rollout_read.read_rollout`): the first refusal is the one the
reads one after another found, and a read that failed behind a refusal is never raised. Against an
in-memory API whose answers are set per request."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from rollguard.cluster.journal import JournalStore
from rollguard.cluster.lock import GroupLock
from rollguard.core.errors import Forbidden, NotFound, ServerError
from rollguard.core.resources import PODS, REPLICATION_CONTROLLERS, Resource
from rollguard.core.structs import DC, ImageTarget, WorkloadRef
from rollguard.plan.rollout_decide import RolloutRequest, read_refusal
from rollguard.plan.rollout_read import read_rollout

NS, SELECTOR = "shop", "app=shop"


def dc(name: str, labels: dict[str, str]) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": NS, "labels": labels}, "spec": {"template": {"spec": {}}}}


class Answers:
    """GET/LIST answers by resource plural (an exception is raised); SelfSubjectRulesReview allows all."""

    def __init__(self, answers: dict[str, Any]) -> None:
        self.answers = answers
        self.asked: list[str] = []

    def _answer(self, key: str) -> Any:
        self.asked.append(key)
        found = self.answers.get(key)
        if isinstance(found, Exception):
            raise found
        if found is None:
            raise NotFound(f"{key}: 404", status=404)
        return found

    def get(self, res: Resource, name: str, *, namespace: str | None = None) -> dict[str, Any]:
        return self._answer(f"get {res.plural}")  # type: ignore[no-any-return]

    def list(self, res: Resource, **_kw: Any) -> dict[str, Any]:
        return self._answer(f"list {res.plural}")  # type: ignore[no-any-return]

    def create(self, res: Resource, body: dict[str, Any], **_kw: Any) -> dict[str, Any]:
        rules = [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}]
        return {"status": {"resourceRules": rules if self.answers.get("rules", True) else []}}


def read(api: Answers) -> Any:
    lock = GroupLock(api, namespace=NS, name="rollguard-app-shop", holder="me")  # type: ignore[arg-type]
    store = JournalStore(api, namespace=NS, selector=SELECTOR)  # type: ignore[arg-type]
    return read_rollout(api, RolloutRequest(namespace=NS, selector=SELECTOR), lock=lock, journal_store=store)  # type: ignore[arg-type]


def listed(*items: dict[str, Any]) -> dict[str, Any]:
    return {"items": list(items), "metadata": {"resourceVersion": "7"}}


def test_a_missing_namespace_refuses_first_whatever_the_other_reads_met() -> None:
    api = Answers(
        {
            "list deploymentconfigs": ServerError("on fire", status=500),
            "list pods": ServerError("x", status=500),
        }
    )
    got = read(api)
    assert not got.namespace_found and "does not exist" in str(read_refusal(got))


def test_the_group_is_the_namespace_list_matched_to_the_selector_and_the_lists_are_kept() -> None:
    api = Answers({
        "get namespaces": {}, "get leases": None,
        "list deploymentconfigs": listed(dc("a", {"app": "shop"}), dc("b", {"app": "other"})),
        "list deployments": listed(), "list replicationcontrollers": listed(), "list pods": listed(),
    })  # fmt: skip
    got = read(api)
    assert read_refusal(got) is None
    assert [f.obj["metadata"]["name"] for f in got.group.workloads] == ["a"]
    kept = {res.plural: (len(x.items), x.resource_version) for res, x in got.listed.items()}
    assert kept == {"deploymentconfigs": (2, "7"), "deployments": (0, "7"), "replicationcontrollers": (0, "7"),
                    "pods": (0, "7")}  # fmt: skip
    assert "list replicasets" not in api.asked  # no Deployment in the group: its revisions are not read
    assert PODS in got.listed


def test_a_failed_read_behind_a_refusal_is_never_raised() -> None:
    api = Answers({
        "get namespaces": {}, "list deploymentconfigs": Forbidden("no", status=403),
        "list deployments": listed(), "get leases": ServerError("on fire", status=500),
        "get configmaps": ServerError("on fire", status=500), "list pods": listed(),
    })  # fmt: skip
    got = read(api)
    assert "not allowed to list" in str(read_refusal(got))


def test_a_failed_read_whose_turn_comes_is_raised_as_before() -> None:
    api = Answers({
        "get namespaces": {}, "list deploymentconfigs": listed(dc("a", {"app": "shop"})),
        "list deployments": listed(), "list replicationcontrollers": listed(), "list pods": listed(),
        "get leases": ServerError("on fire", status=500),
    })  # fmt: skip
    with pytest.raises(ServerError):
        read(api)


class NamedFirst(Answers):
    """The DeploymentConfigs' list answers only once the RCs' list was asked (or after 10 s): whether the
    revisions of a kind the command line names went out with the rest, not after its workloads' list."""

    def __init__(self, answers: dict[str, Any]) -> None:
        super().__init__(answers)
        self.rcs_asked = threading.Event()
        self.rcs_before_dcs = False

    def list(self, res: Resource, **kw: Any) -> dict[str, Any]:
        if res.plural == "replicationcontrollers":
            self.rcs_asked.set()
        elif res.plural == "deploymentconfigs":
            self.rcs_before_dcs = self.rcs_asked.wait(10)
        return super().list(res, **kw)


def test_the_revisions_of_a_kind_the_command_line_names_go_out_with_the_first_reads_once() -> None:
    rc = {
        "metadata": {
            "name": "a-1",
            "namespace": NS,
            "annotations": {"openshift.io/deployment-config.name": "a"},
        }
    }
    api = NamedFirst({
        "get namespaces": {}, "get leases": None,
        "list deploymentconfigs": listed(dc("a", {"app": "shop"})), "list deployments": listed(),
        "list replicationcontrollers": listed(rc), "list pods": listed(),
    })  # fmt: skip
    lock = GroupLock(api, namespace=NS, name="rollguard-app-shop", holder="me")  # type: ignore[arg-type]
    store = JournalStore(api, namespace=NS, selector=SELECTOR)  # type: ignore[arg-type]
    target = ImageTarget(ref=WorkloadRef(DC, "a"), container=None, image="r/a:2")
    request = RolloutRequest(namespace=NS, selector=SELECTOR, targets=[target])
    got = read_rollout(api, request, lock=lock, journal_store=store)  # type: ignore[arg-type]
    assert api.rcs_before_dcs
    assert api.asked.count("list replicationcontrollers") == 1  # listed early, and not again
    assert "list replicasets" not in api.asked  # a kind named nowhere and matching nothing: not read
    assert [r["metadata"]["name"] for r in got.listed[REPLICATION_CONTROLLERS].items] == ["a-1"]
