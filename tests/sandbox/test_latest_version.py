"""The emulation against the live sandbox: DCs without a ConfigChange trigger, and a client's
`latestVersion + 1` on the main resource (what `oc rollout latest` / `oc rollout undo` fall back to).

Every wait is a watch until a condition holds; expected values are OpenShift's.
"""

from __future__ import annotations

import pytest

from sandbox.openshift.kube import JSON, ApiError, Kube
from sandbox.openshift.latestversion import REQUEST
from tests.helpers.openshift_api import (
    APP,
    DCS,
    ISS,
    create_dc,
    dc_body,
    has_items,
    image_stream,
    patch,
    put_again_on_conflict,
    rc_replicas,
    set_image,
    settled,
    wait_for,
    wait_rc,
)

pytestmark = pytest.mark.cluster


def _put(kube: Kube, ns: str, dc: JSON, version: int) -> JSON:
    """A client's update of the main resource carrying `status.latestVersion: version` (read again and
    retried on a conflict, as a client does: the controller writes the status meanwhile)."""
    path = f"{DCS.format(ns=ns)}/{dc['metadata']['name']}"
    for _ in range(10):
        try:
            return kube.request("PUT", path, {**dc, "status": {**dc["status"], "latestVersion": version}})
        except ApiError as e:
            if e.status != 409:
                raise
            dc = kube.get(path)
    pytest.fail(f"{path}: too many conflicts")


def _unmarked(dc: JSON) -> bool:
    return settled(dc) and REQUEST not in (dc["metadata"].get("annotations") or {})


def test_main_resource_latest_version_plus_one_starts_a_rollout(kube: Kube, namespace: str) -> None:
    """openshift-apiserver pkg/apps/apiserver/registry/deployconfig/strategy.go (PrepareForUpdate): a
    main-resource update keeps the stored status except a latestVersion of exactly stored + 1, which
    it takes (the fallback of oc pkg/cli/rollout/latest.go); a jump by 2 or a decrease is silently
    replaced by the stored value, not refused (validation runs after the status was restored). The DC
    controller (openshift-controller-manager pkg/apps/deploymentconfig/deploymentconfig_controller.go,
    Handle) then makes the RC of the new version from the current template, though no trigger fired."""
    dcs = DCS.format(ns=namespace)
    create_dc(kube, namespace, dc_body("web", f"{APP}:v1", triggers=[]))
    dc = wait_for(kube, dcs, "web", settled)
    assert dc["status"]["latestVersion"] == 0 and rc_replicas(kube, namespace) == {}
    _put(kube, namespace, dc, 1)
    rc = wait_rc(kube, namespace, "web-1", "Complete")
    assert rc["spec"]["template"]["spec"]["containers"][0]["image"] == f"{APP}:v1"
    dc = wait_for(kube, dcs, "web", lambda d: _unmarked(d) and d["status"]["latestVersion"] == 1)

    # a template change alone rolls nothing out (no trigger); the bump in the same write does
    changed = set_image(kube, namespace, "web", f"{APP}:v2")
    dc = wait_for(
        kube, dcs, "web", lambda d: d["status"].get("observedGeneration") == changed["metadata"]["generation"]
    )
    assert dc["status"]["latestVersion"] == 1 and "web-2" not in rc_replicas(kube, namespace)
    written = _put(kube, namespace, dc, 2)
    assert written["status"]["latestVersion"] == 1  # (the emulation's reply lags: see latestversion.py)
    rc = wait_rc(kube, namespace, "web-2", "Complete")
    assert rc["spec"]["template"]["spec"]["containers"][0]["image"] == f"{APP}:v2"
    dc = wait_for(kube, dcs, "web", lambda d: _unmarked(d) and d["status"]["latestVersion"] == 2)

    # any other value is dropped without an error: neither a jump nor a decrease is stored
    for version in (4, 1, 0):
        kept = _put(kube, namespace, kube.get(f"{dcs}/web"), version)
        assert kept["status"]["latestVersion"] == 2
        assert REQUEST not in (kept["metadata"].get("annotations") or {})
        dc = kept
    edited = patch(kube, f"{dcs}/web", {"metadata": {"labels": {"edited": "yes"}}})
    dc = wait_for(kube, dcs, "web", lambda d: d["metadata"]["resourceVersion"] >= edited["metadata"]["resourceVersion"]
                  and settled(d))  # fmt: skip
    assert dc["status"]["latestVersion"] == 2 and set(rc_replicas(kube, namespace)) == {"web-1", "web-2"}


def _image_only(name: str, tag: str, *, automatic: bool) -> JSON:
    trigger: JSON = {"containerNames": ["app"], "from": {"kind": "ImageStreamTag", "name": tag}}
    if automatic:
        trigger["automatic"] = True
    return dc_body(name, f"{APP}:v1", triggers=[{"type": "ImageChange", "imageChangeParams": trigger}])


@pytest.mark.parametrize("automatic", [True, False], ids=["automatic", "manual"])
def test_an_image_trigger_alone_rolls_out_a_changed_image(
    kube: Kube, namespace: str, automatic: bool
) -> None:
    """openshift-controller-manager pkg/apps/deploymentconfig/deploymentconfig_controller.go
    (triggerActivated, hasUpdatedImages): a DC with an ImageChange trigger, automatic or manual, and no
    ConfigChange trigger rolls out when a regular container of its template runs an image that its
    latest RC's containers do not; any other template change waits for `oc rollout latest`."""
    dcs = DCS.format(ns=namespace)
    kube.request("POST", ISS.format(ns=namespace),
                 image_stream("app", {"latest": {"kind": "DockerImage", "name": f"{APP}:v1"}}))  # fmt: skip
    wait_for(kube, ISS.format(ns=namespace), "app", has_items("latest"))
    create_dc(kube, namespace, _image_only("web", "app:latest", automatic=automatic))
    if automatic:  # the first rollout waits for the trigger's image
        wait_rc(kube, namespace, "web-1", "Complete")
    else:  # a manual trigger never resolves by itself: the first rollout is `oc rollout latest`'s
        dc = wait_for(kube, dcs, "web", settled)
        assert dc["status"]["latestVersion"] == 0
        _put(kube, namespace, dc, 1)
        wait_rc(kube, namespace, "web-1", "Complete")
    wait_for(kube, dcs, "web", lambda d: _unmarked(d) and d["status"]["latestVersion"] == 1)

    # one write: a new image, and the trigger manual so that its tag does not take the container back
    # (what rollguard writes); the trigger being there at all is what rolls it out
    def v2(dc: JSON) -> JSON:
        dc["spec"]["template"]["spec"]["containers"][0]["image"] = f"{APP}:v2"
        dc["spec"]["triggers"][0]["imageChangeParams"].pop("automatic", None)
        return dc

    put_again_on_conflict(kube, f"{dcs}/web", v2)  # the controller writes the status meanwhile
    rc = wait_rc(kube, namespace, "web-2", "Complete")
    assert rc["spec"]["template"]["spec"]["containers"][0]["image"] == f"{APP}:v2"
    dc = wait_for(kube, dcs, "web", lambda d: settled(d) and d["status"]["latestVersion"] == 2)
    assert dc["status"]["details"]["causes"][0]["type"] == "ImageChange"

    env = [{"name": "MODE", "value": "fast"}]
    changed = patch(kube, f"{dcs}/web", {"spec": {"template": {"spec": {"containers": [
        {"name": "app", "image": f"{APP}:v2", "env": env}]}}}})  # fmt: skip
    dc = wait_for(
        kube, dcs, "web", lambda d: d["status"].get("observedGeneration") == changed["metadata"]["generation"]
    )
    assert dc["status"]["latestVersion"] == 2 and "web-3" not in rc_replicas(kube, namespace)


def test_status_subresource_refuses_a_decrement_and_takes_a_jump(kube: Kube, namespace: str) -> None:
    """openshift-apiserver pkg/apps/apis/apps/validation/validation.go (ValidateDeploymentConfigStatus,
    ValidateDeploymentConfigStatusUpdate), the /status subresource's update validation: no negative
    counts, latestVersion and observedGeneration never decremented (422); a jump is allowed there (the
    controller catches up that way) and the controller rolls the version out."""
    dcs = DCS.format(ns=namespace)
    create_dc(kube, namespace, dc_body("web", f"{APP}:v1", triggers=[]))
    dc = wait_for(kube, dcs, "web", settled)
    _put(kube, namespace, dc, 1)
    wait_rc(kube, namespace, "web-1", "Complete")
    dc = wait_for(kube, dcs, "web", lambda d: _unmarked(d) and d["status"]["latestVersion"] == 1)
    status = f"{dcs}/web/status"
    for change, words in (
        ({"latestVersion": 0}, "status.latestVersion: Invalid value: 0: latestVersion cannot be decremented"),
        ({"observedGeneration": 0}, "observedGeneration cannot be decremented"),
        ({"replicas": -1}, "status.replicas: Invalid value: -1: must be greater than or equal to 0"),
    ):
        with pytest.raises(ApiError) as refused:
            kube.request("PUT", status, {**dc, "status": {**dc["status"], **change}})
        assert refused.value.status == 422
        message = str((refused.value.body or {}).get("message"))
        assert 'DeploymentConfig.apps.openshift.io "web" is invalid: ' in message and words in message
    put_again_on_conflict(
        kube, f"{dcs}/web", lambda d: {**d, "status": {**d["status"], "latestVersion": 3}}, to=status
    )
    rc = wait_rc(kube, namespace, "web-3", "Complete")
    assert rc["metadata"]["annotations"]["openshift.io/deployment-config.latest-version"] == "3"
