"""`same_template`: pod templates equal as OpenShift's typed comparison sees them (issue 24, point 3).

openshift-controller-manager deploymentconfig_controller.go (hasLatestPodTemplate) compares decoded,
typed templates; kubernetes pkg/apis/core/v1/defaults.go says what a server fills in.
"""

from __future__ import annotations

from typing import Any

import pytest

from rollguard.kinds.templates import canonical, same_template, template_changes


def tpl(**container: Any) -> dict[str, Any]:
    return {
        "metadata": {"labels": {"name": "api"}},
        "spec": {"containers": [{"name": "app", "image": "registry.local/api:v1", **container}]},
    }


def with_spec(base: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return {**base, "spec": {**base["spec"], **spec}}


SAME = [
    ("creationTimestamp null (encoders before Kubernetes 1.33)",
     {**tpl(), "metadata": {"labels": {"name": "api"}, "creationTimestamp": None}}, tpl()),
    ("resources {} (a struct: zero = absent)", tpl(resources={}), tpl()),
    ("a null list", tpl(env=None), tpl()),
    ("an empty list", tpl(env=[]), tpl()),
    ("empty annotations", {**tpl(), "metadata": {"labels": {"name": "api"}, "annotations": {}}}, tpl()),
    ("container defaults", tpl(terminationMessagePath="/dev/termination-log", terminationMessagePolicy="File",
                               imagePullPolicy="IfNotPresent"), tpl()),
    ("pod spec defaults", with_spec(tpl(), restartPolicy="Always", dnsPolicy="ClusterFirst",
                                    schedulerName="default-scheduler", terminationGracePeriodSeconds=30,
                                    securityContext={}), tpl()),
    ("probe defaults", tpl(readinessProbe={"httpGet": {"port": 8080}}),
     tpl(readinessProbe={"httpGet": {"port": 8080, "path": "/", "scheme": "HTTP"}, "timeoutSeconds": 1,
                         "periodSeconds": 10, "successThreshold": 1, "failureThreshold": 3})),
    ("port protocol", tpl(ports=[{"containerPort": 80}]), tpl(ports=[{"containerPort": 80, "protocol": "TCP"}])),
    ("fieldRef apiVersion", tpl(env=[{"name": "N", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}]),
     tpl(env=[{"name": "N", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name", "apiVersion": "v1"}}}])),
    ("volume default mode", with_spec(tpl(), volumes=[{"name": "c", "configMap": {"name": "x"}}]),
     with_spec(tpl(), volumes=[{"name": "c", "configMap": {"name": "x", "defaultMode": 420}}])),
]  # fmt: skip

DIFFERENT = [
    ("another image", tpl(), {**tpl(), "spec": {"containers": [{"name": "app", "image": "registry.local/api:v2"}]}}),
    ("a non-default pull policy", tpl(imagePullPolicy="Always"), tpl()),
    ("another restart grace", with_spec(tpl(), terminationGracePeriodSeconds=5), tpl()),
    ("an env var", tpl(env=[{"name": "A", "value": "1"}]), tpl()),
    ("another label", {**tpl(), "metadata": {"labels": {"name": "api", "v": "2"}}}, tpl()),
]  # fmt: skip


@pytest.mark.parametrize(("case", "a", "b"), SAME, ids=[c[0] for c in SAME])
def test_the_same_as_a_typed_decode_sees_it(case: str, a: dict[str, Any], b: dict[str, Any]) -> None:
    assert same_template(a, b) and same_template(b, a), case
    assert template_changes(a, b) == []


@pytest.mark.parametrize(("case", "a", "b"), DIFFERENT, ids=[c[0] for c in DIFFERENT])
def test_real_differences_still_count(case: str, a: dict[str, Any], b: dict[str, Any]) -> None:
    assert not same_template(a, b), case
    assert template_changes(a, b)


def test_latest_images_default_to_always_pull() -> None:
    assert canonical(tpl(image="r/api:latest"))["spec"]["containers"][0]["imagePullPolicy"] == "Always"
    untagged = {"spec": {"containers": [{"name": "app", "image": "r/api"}]}}
    assert canonical(untagged)["spec"]["containers"][0]["imagePullPolicy"] == "Always"
    pinned = {"spec": {"containers": [{"name": "app", "image": "r/api@sha256:" + "0" * 64}]}}
    assert canonical(pinned)["spec"]["containers"][0]["imagePullPolicy"] == "IfNotPresent"


def test_a_missing_template_is_the_same_only_as_another() -> None:
    assert same_template(None, None) and not same_template(tpl(), None) and not same_template(None, {})


@pytest.mark.parametrize(
    ("sent", "live", "rewrite"),
    [
        ("api:v2", "image-registry.openshift-image-registry.svc:5000/shop/api@sha256:" + "1" * 64, True),
        ("api", "image-registry.openshift-image-registry.svc:5000/shop/api@sha256:" + "1" * 64, True),
        ("api:v2", "image-registry.openshift-image-registry.svc:5000/shop/api:v2", True),  # tag not there yet
        ("api:v2", "image-registry.openshift-image-registry.svc:5000/shop/web@sha256:" + "1" * 64, False),
        ("api:v2", "registry.local/shop/api:v3", False),  # someone's edit, not a rewrite
        (
            "registry.local/shop/api:v2",
            "registry.local/shop/api@sha256:" + "1" * 64,
            False,
        ),  # not a local name
        ("api:v2", "api:v2", False),
    ],
)
def test_the_image_policy_admissions_local_name_rewrite(sent: str, live: str, rewrite: bool) -> None:
    from rollguard.kinds.templates import local_name_rewrite

    assert local_name_rewrite(sent, live) is rewrite


def test_a_write_as_admitted_takes_the_rewrite_only() -> None:
    from rollguard.kinds.templates import as_admitted

    digest = "image-registry.openshift-image-registry.svc:5000/shop/api@sha256:" + "1" * 64
    body = {"spec": {"replicas": 1, "template": {"spec": {"containers": [
        {"name": "app", "image": "api:v2"}, {"name": "side", "image": "side:v1"}]}}}}  # fmt: skip
    live = {"spec": {"replicas": 1, "template": {"spec": {"containers": [
        {"name": "app", "image": digest}, {"name": "side", "image": "registry.local/side:v9"}]}}}}  # fmt: skip
    admitted = as_admitted(body, live)
    assert [c["image"] for c in admitted["spec"]["template"]["spec"]["containers"]] == [digest, "side:v1"]
    assert body["spec"]["template"]["spec"]["containers"][0]["image"] == "api:v2"  # the input is kept
