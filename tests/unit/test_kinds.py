"""The per-kind changes rollguard writes: pure transformations of workload dicts."""

from __future__ import annotations

import copy
import json

from rollguard.core.structs import DC, DEPLOYMENT, VerifiedState
from rollguard.kinds import KINDS, Owners, images_of, pods_of_revision

DC_OBJ = {
    "metadata": {"name": "api", "uid": "u1"},
    "spec": {
        "paused": True,
        "template": {
            "metadata": {"labels": {"name": "api"}},
            "spec": {
                "containers": [
                    {"name": "app", "image": "r/api@sha256:old"},
                    {"name": "proxy", "image": "r/proxy:v1"},
                ]
            },
        },
        "triggers": [
            {"type": "ConfigChange"},
            {
                "type": "ImageChange",
                "imageChangeParams": {
                    "automatic": True,
                    "containerNames": ["app"],
                    "lastTriggeredImage": "r/api@sha256:old",
                    "from": {"kind": "ImageStreamTag", "name": "api:latest"},
                },
            },
        ],
    },
    "status": {"latestVersion": 3},
}


def test_pinned_image_makes_trigger_manual_and_resumes() -> None:
    body = KINDS[DC].with_images(DC_OBJ, {"app": "r/api@sha256:new"}, trigger_tags={})
    assert images_of(body["spec"]["template"]) == {"app": "r/api@sha256:new", "proxy": "r/proxy:v1"}
    assert body["spec"]["paused"] is False
    assert body["spec"]["triggers"][1]["imageChangeParams"]["automatic"] is False
    assert DC_OBJ["spec"]["paused"] is True  # the input is never mutated


def test_promotion_pins_trigger_to_tag() -> None:
    body = KINDS[DC].with_images(DC_OBJ, {"app": "r/api@sha256:new"}, trigger_tags={"app": "api:abc123"})
    params = body["spec"]["triggers"][1]["imageChangeParams"]
    assert params["from"]["name"] == "api:abc123" and params["automatic"] is True
    assert params["lastTriggeredImage"] == "r/api@sha256:new"


def test_revert_restores_template_and_triggers_unpaused() -> None:
    state = VerifiedState(
        template={"spec": {"containers": [{"name": "app", "image": "r/api:v0"}]}},
        triggers=[{"type": "ConfigChange"}],
        revision=2,
        images={"app": "r/api:v0"},
        paused=False,
    )
    body = KINDS[DC].with_state(DC_OBJ, state)
    assert body["spec"]["triggers"] == [{"type": "ConfigChange"}]
    assert images_of(body["spec"]["template"]) == {"app": "r/api:v0"} and body["spec"]["paused"] is False


def test_dc_verified_state_of_paused_dc_is_the_running_rc() -> None:
    running = copy.deepcopy(DC_OBJ["spec"]["template"])
    running["spec"]["containers"][0]["image"] = "r/api@sha256:running"
    rc = {
        "metadata": {
            "name": "api-3",
            "ownerReferences": [{"uid": "u1"}],
            "annotations": {
                "openshift.io/deployment.phase": "Complete",
                "openshift.io/deployment-config.latest-version": "3",
                "openshift.io/encoded-deployment-config": json.dumps({"spec": {"template": running}}),
            },
        }
    }
    state = KINDS[DC].verified_state(DC_OBJ, [rc])
    assert state.images["app"] == "r/api@sha256:running" and state.revision == 3


def test_deployment_new_revision_ignores_pod_template_hash() -> None:
    template = {
        "metadata": {"labels": {"name": "web"}},
        "spec": {"containers": [{"name": "app", "image": "w:v2"}]},
    }
    deploy = {"metadata": {"name": "web", "uid": "d1"}, "spec": {"template": template}}
    rs_template = copy.deepcopy(template)
    rs_template["metadata"]["labels"]["pod-template-hash"] = "abc"
    rs = {
        "metadata": {
            "name": "web-abc",
            "ownerReferences": [{"uid": "d1"}],
            "annotations": {"deployment.kubernetes.io/revision": "2"},
        },
        "spec": {"template": rs_template},
    }
    kind = KINDS[DEPLOYMENT]
    assert kind.new_revision(deploy, kind.owned(deploy, [rs])) is rs


def test_deployment_new_revision_of_slimmed_replicasets_leaves_them_as_they_are() -> None:
    """The live cache's ReplicaSets are slimmed without the hash label: compared as they are (not copied),
    the one running the template is found, another is not, and neither object changes."""
    template = {
        "metadata": {"labels": {"name": "web"}},
        "spec": {"containers": [{"name": "app", "image": "w:v2"}]},
    }
    deploy = {"metadata": {"name": "web", "uid": "d1"}, "spec": {"template": template}}
    kind = KINDS[DEPLOYMENT]

    def slim(name: str, image: str) -> dict:
        rs_template = copy.deepcopy(template)
        rs_template["spec"]["containers"][0]["image"] = image
        raw = {
            "metadata": {"name": name, "ownerReferences": [{"uid": "d1"}]},
            "spec": {"template": rs_template},
        }
        return kind.slim_revision(raw, metadata=raw["metadata"])

    old, new = slim("web-a", "w:v1"), slim("web-b", "w:v2")
    before = copy.deepcopy([old, new, deploy])
    assert kind.new_revision(deploy, [old, new]) is new
    assert kind.new_revision(deploy, [old]) is None
    assert [old, new, deploy] == before


def _running(obj: dict, version: int) -> dict:
    """The RC `<dc>-<version>` running ``obj``'s template (its encoded DC, as OpenShift writes it)."""
    encoded = json.dumps({"spec": {"template": obj["spec"]["template"]}})
    return {
        "metadata": {
            "name": f"api-{version}",
            "annotations": {
                "openshift.io/deployment-config.latest-version": str(version),
                "openshift.io/encoded-deployment-config": encoded,
            },
        }
    }


def _start(triggers: list, change) -> tuple[str | None, dict]:  # type: ignore[no-untyped-def]
    """(the note, the body as written) of a change to an unpaused DC at version 3 with ``triggers``."""
    kind = KINDS[DC]
    obj = copy.deepcopy(DC_OBJ)
    obj["spec"].update(paused=False, triggers=triggers)
    body = copy.deepcopy(obj)
    change(body["spec"]["template"]["spec"])
    rcs = [_running(obj, 3)]
    return kind.start_request(obj, body, rcs), kind.with_start_request(obj, body, rcs)


def _image(spec: dict) -> None:
    spec["containers"][0]["image"] = "r/api@sha256:new"


def _init_image(spec: dict) -> None:
    spec["initContainers"] = [{"name": "migrate", "image": "r/migrate:v2"}]


def _env(spec: dict) -> None:
    spec["containers"][0]["env"] = [{"name": "MODE", "value": "fast"}]


def test_a_dc_rollout_its_triggers_would_not_start_is_asked_for_with_latest_version_plus_one() -> None:
    """openshift-controller-manager deploymentconfig_controller.go (triggerActivated, hasUpdatedImages):
    ConfigChange rolls out any template change, an ImageChange trigger (automatic or not) a changed
    regular container image; everything else gets latestVersion + 1 in the write (oc rollout latest's
    fallback, honoured by openshift-apiserver registry/deployconfig/strategy.go PrepareForUpdate)."""
    config, image = DC_OBJ["spec"]["triggers"]
    manual = copy.deepcopy(image)
    del manual["imageChangeParams"]["automatic"]
    for triggers in ([config], [config, image]):
        for change in (_image, _init_image, _env):
            note, body = _start(triggers, change)
            assert note is None and body["status"]["latestVersion"] == 3
    for triggers in ([image], [manual]):
        note, body = _start(triggers, _image)
        assert note is None and body["status"]["latestVersion"] == 3  # the controller starts it
        for change in (_init_image, _env):
            note, body = _start(triggers, change)
            assert note and "3 -> 4" in note and body["status"]["latestVersion"] == 4
    for change in (_image, _init_image, _env):
        note, body = _start([], change)
        assert note and body["status"]["latestVersion"] == 4
    note, body = _start([], lambda spec: None)  # nothing to roll out: nothing asked
    assert note is None and body["status"]["latestVersion"] == 3


def _rc(name: str, version: int, *, owner: str | None, dc_label: str | None) -> dict:
    meta: dict = {
        "name": name,
        "uid": f"uid-{name}",
        "annotations": {"openshift.io/deployment-config.latest-version": str(version)},
    }
    if owner:
        meta["ownerReferences"] = [{"uid": owner, "kind": "DeploymentConfig", "name": "x"}]
    if dc_label:
        meta["labels"] = {"openshift.io/deployment-config.name": dc_label}
    return {"metadata": meta}


def test_owners_index_keeps_what_a_full_scan_keeps() -> None:
    """The index is only a shortcut: `owned` over its candidates equals `owned` over everything."""
    api, web = DC_OBJ, {"metadata": {"name": "web", "uid": "u2"}}
    rcs = [
        _rc("api-1", 1, owner="u1", dc_label="api"),
        _rc("api-2", 2, owner=None, dc_label="api"),  # orphaned (e.g. DC re-created): the label claims it
        _rc("web-1", 1, owner="u2", dc_label="web"),
        _rc("stray", 1, owner="u9", dc_label=None),
    ]
    owners, dc = Owners(rcs), KINDS[DC]
    for workload in (api, web):
        assert dc.owned(workload, owners.candidates(workload)) == dc.owned(workload, rcs)
    assert [r["metadata"]["name"] for r in dc.owned(api, owners.candidates(api))] == ["api-2", "api-1"]
    # A Deployment owns by UID only: an RC labelled with its name is a candidate, never kept.
    deploy = {"metadata": {"name": "api", "uid": "u7"}}
    assert KINDS[DEPLOYMENT].owned(deploy, owners.candidates(deploy)) == []


def test_owners_children_are_the_pods_of_a_revision() -> None:
    rs = {"metadata": {"name": "web-abc", "uid": "rs1"}}
    pods = [
        {"metadata": {"name": "web-abc-1", "ownerReferences": [{"uid": "rs1", "controller": True}]}},
        {"metadata": {"name": "web-def-1", "ownerReferences": [{"uid": "rs2", "controller": True}]}},
        {"metadata": {"name": "bare"}},
    ]
    assert Owners(pods).children(rs) == pods_of_revision(rs, pods) == [pods[0]]
    assert Owners(pods).children({"metadata": {"name": "no-uid"}}) == []


def test_pod_selectors_as_label_selector_strings() -> None:
    """A DC selects its pods by a plain label map, a Deployment by a LabelSelector."""
    dc = {"spec": {"selector": {"name": "api", "app": "shop"}}}
    deploy = {
        "spec": {
            "selector": {
                "matchLabels": {"name": "web"},
                "matchExpressions": [
                    {"key": "tier", "operator": "In", "values": ["a", "b"]},
                    {"key": "canary", "operator": "DoesNotExist"},
                ],
            }
        }
    }
    assert KINDS[DC].pod_selector(dc) == "app=shop,name=api"
    assert KINDS[DEPLOYMENT].pod_selector(deploy) == "name=web,tier in (a,b),!canary"
    assert KINDS[DEPLOYMENT].pod_selector({"spec": {}}) == KINDS[DC].pod_selector({"spec": {}}) == ""
    assert KINDS[DC].revision_label == "openshift.io/deployment-config.name"
    assert KINDS[DEPLOYMENT].revision_label is None


def test_deployer_and_hook_pods_are_not_the_revisions_pods() -> None:
    """openshift-controller-manager pkg/apps/deployer/deployer_controller.go owns deployer pods by the RC
    without making it their controller; oc's lifecycle.go labels hook pods the same way."""
    rc = {"metadata": {"name": "api-2", "uid": "rc2"}}
    app = {"metadata": {"name": "api-2-x7k2p", "ownerReferences": [{"uid": "rc2", "controller": True}]}}
    deployer = {
        "metadata": {
            "name": "api-2-deploy",
            "labels": {"openshift.io/deployer-pod-for.name": "api-2"},
            "ownerReferences": [{"uid": "rc2", "kind": "ReplicationController", "name": "api-2"}],
        }
    }
    assert Owners([app, deployer]).children(rc) == [app, deployer]  # what explain() reads
    assert pods_of_revision(rc, [app, deployer]) == [app]


def test_the_pod_that_tells_how_a_revision_without_pods_went() -> None:
    """A DC's RC: its deployer pod while New, Pending, Running and once Failed, none once Complete, as
    openshift-apiserver pkg/apps/apiserver/registry/deploylog/rest.go picks the pod `oc logs dc/NAME`
    reads; a Deployment's ReplicaSet: none (no deployer runs)."""
    dc = KINDS[DC]

    def rc(phase: str, **extra: str) -> dict:
        return {
            "metadata": {"name": "api-2", "annotations": {"openshift.io/deployment.phase": phase, **extra}}
        }

    assert (
        dc.deployer_pod(rc("Failed", **{"openshift.io/deployer-pod.name": "api-2-deploy"})) == "api-2-deploy"
    )
    assert [dc.deployer_pod(rc(p)) for p in ("New", "Pending", "Running")] == ["api-2-deploy"] * 3
    assert dc.deployer_pod(rc("Complete")) is None
    assert KINDS[DEPLOYMENT].deployer_pod({"metadata": {"name": "api-5d8f"}}) is None


def test_each_kind_is_named_by_the_one_table() -> None:
    """`KIND_NAMES` (core) names every kind; refs, a TARGET's aliases and the TUI read it."""
    from rollguard.core.structs import KIND_NAMES, WorkloadRef
    from rollguard.kinds import KINDS, kind_of

    assert set(KIND_NAMES) == set(KINDS)
    for name, kind in KINDS.items():
        names = KIND_NAMES[name]
        assert kind.aliases == names.aliases
        assert {names.key, names.short} <= set(names.aliases)
        assert all(kind_of(alias) is kind for alias in names.aliases)
        assert str(WorkloadRef(name, "api")) == f"{names.key}/api"
