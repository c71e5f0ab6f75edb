"""The emulated DC image trigger (sandbox/openshift/triggers.py update_images) against OpenShift's:
openshift-controller-manager pkg/image/trigger/deploymentconfigs/deploymentconfigs.go,
UpdateDeploymentConfigImages. Pure: no cluster."""

from __future__ import annotations

from sandbox.openshift.triggers import update_images

REF = "registry.local/shop/api@sha256:new"
OLD = "registry.local/shop/api@sha256:old"


def dc(image: str, last: str, *, automatic: bool = True, paused: bool = False) -> dict:
    params = {
        "automatic": automatic,
        "containerNames": ["app"],
        "from": {"kind": "ImageStreamTag", "name": "api:latest"},
    }
    if last:
        params["lastTriggeredImage"] = last
    return {"metadata": {"namespace": "ns"}, "spec": {"paused": paused,
            "triggers": [{"type": "ConfigChange"}, {"type": "ImageChange", "imageChangeParams": params}],
            "template": {"spec": {"containers": [{"name": "app", "image": image}]}}}}  # fmt: skip


def tag(ref: str | None):
    return lambda namespace, stream, name: (
        ref if (namespace, stream, name) == ("ns", "api", "latest") else None
    )


def test_a_tag_move_rewrites_an_automatic_trigger_paused_or_not():
    for paused in (False, True):
        out = update_images(dc(OLD, OLD, paused=paused), tag(REF))
        assert out is not None
        assert out["spec"]["template"]["spec"]["containers"][0]["image"] == REF
        assert out["spec"]["triggers"][1]["imageChangeParams"]["lastTriggeredImage"] == REF


def test_nothing_changes_where_image_and_last_triggered_image_already_are_the_tags():
    """What a promotion pins before the copy lands: the controller finds nothing to do."""
    assert update_images(dc(REF, REF), tag(REF)) is None


def test_a_manual_trigger_is_skipped_and_an_unresolvable_one_leaves_the_dc_alone():
    assert update_images(dc(OLD, OLD, automatic=False), tag(REF)) is None
    assert update_images(dc(OLD, ""), tag(None)) is None


def test_the_image_is_rewritten_even_when_last_triggered_image_is_the_tags():
    """The Go code compares each container's image with the tag's reference on its own: a container set
    to something else is put back to the tag's image although lastTriggeredImage already matches."""
    out = update_images(dc(OLD, REF), tag(REF))
    assert out is not None and out["spec"]["template"]["spec"]["containers"][0]["image"] == REF
