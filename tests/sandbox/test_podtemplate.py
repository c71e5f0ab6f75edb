"""The webhook's pod template check without a cluster: what it sends, how it reads the answer, where the
answer goes among the emulation's own errors (tests/sandbox/test_openshift.py has them live)."""

from __future__ import annotations

import base64
import copy
import json

from sandbox.openshift import podtemplate, webhook
from sandbox.openshift.kube import ApiError
from sandbox.openshift.podtemplate import Verdict

TRIGGER = {
    "type": "ImageChange",
    "imageChangeParams": {
        "containerNames": ["app"],
        "from": {"kind": "ImageStreamTag", "name": "app:latest"},
    },
}


def dc(*containers: dict, triggers: list | None = None) -> dict:
    return {
        "apiVersion": "apps.openshift.io/v1",
        "kind": "DeploymentConfig",
        "metadata": {"name": "web", "namespace": "shop"},
        "spec": {
            "replicas": 2,
            "selector": {"name": "web"},
            "triggers": triggers
            if triggers is not None
            else [{"type": "ConfigChange"}, copy.deepcopy(TRIGGER)],
            "template": {"metadata": {"labels": {"name": "web"}}, "spec": {"containers": list(containers)}},
        },
    }


def request(obj: dict, sub: str = "") -> dict:
    return {
        "uid": "u1",
        "kind": {"kind": "DeploymentConfig"},
        "operation": "CREATE",
        "namespace": "shop",
        "object": obj,
        "subResource": sub,
    }


def test_only_an_empty_image_an_image_trigger_names_is_filled_and_only_in_the_copy() -> None:
    """openshift-apiserver pkg/apps/apis/apps/validation/validation.go handleEmptyImageReferences: an
    empty image (len 0) of a container an ImageChange trigger names becomes "unset" for the validation."""
    body = dc({"name": "app", "image": ""}, {"name": "side", "image": ""}, {"name": "blank", "image": " "})
    body["spec"]["triggers"].append(
        {"type": "ConfigChange", "imageChangeParams": {"containerNames": ["side"]}}
    )
    rc = podtemplate.probe(body)
    assert [c["image"] for c in rc["spec"]["template"]["spec"]["containers"]] == ["unset", "", " "]
    assert body["spec"]["template"]["spec"]["containers"][0]["image"] == ""
    assert rc["kind"] == "ReplicationController" and rc["metadata"] == {
        "generateName": "deploymentconfig-template-"
    }
    assert (rc["spec"]["replicas"], rc["spec"]["selector"]) == (2, {"name": "web"})
    assert list(rc["spec"]) == [
        "replicas",
        "selector",
        "template",
    ]  # a decode error quotes the template's bytes


def test_the_answer_keeps_the_template_causes_and_names_the_dc_in_a_decode_error() -> None:
    invalid = ApiError(
        422,
        {
            "reason": "Invalid",
            "details": {
                "causes": [
                    {"field": "metadata.generateName", "message": "Invalid value: ..."},
                    {"field": "spec.selector", "message": "Required value"},
                    {"field": "spec.template.spec.containers[0].name", "message": 'Invalid value: "A": bad'},
                    {"field": "spec.template.spec.restartPolicy", "message": 'Unsupported value: "Never"'},
                ]
            },
        },
        "POST",
        "/",
    )
    assert podtemplate.verdict(invalid) == Verdict(
        errors=[
            'spec.template.spec.containers[0].name: Invalid value: "A": bad',
            'spec.template.spec.restartPolicy: Unsupported value: "Never"',
        ]
    )
    decode = ApiError(
        400,
        {
            "reason": "BadRequest",
            "message": 'ReplicationController in version "v1" cannot be handled as a ReplicationController: '
            "v1.ReplicationController.Spec: v1.ReplicationControllerSpec.Template: v1.PodTemplateSpec.Spec: "
            "unmarshalerDecoder: quantities must match",
        },
        "POST",
        "/",
    )
    assert podtemplate.verdict(decode) == Verdict(
        bad_request='DeploymentConfig in version "v1" cannot be handled as a DeploymentConfig: '
        "v1.DeploymentConfig.Spec: v1.DeploymentConfigSpec.Template: v1.PodTemplateSpec.Spec: "
        "unmarshalerDecoder: quantities must match"
    )
    assert podtemplate.verdict(None) == Verdict()
    for status, reason in (
        (403, "Forbidden"),
        (404, "NotFound"),
        (409, "AlreadyExists"),
        (500, "InternalError"),
    ):
        assert podtemplate.verdict(ApiError(status, {"reason": reason}, "POST", "/")) is None


def test_template_errors_come_after_the_triggers_and_the_strategy() -> None:
    """validation.go ValidateDeploymentConfigSpec: triggers, strategy, then the template; all in one 422.
    A trigger naming a container the template lacks ("app", not "App") is no error: validation.go never
    checks it, and the trigger controller ignores such a name."""
    body = dc({"name": "App", "image": "x:1"})
    body["spec"]["strategy"] = {"rollingParams": {"timeoutSeconds": 0}}
    body["spec"]["triggers"][1]["imageChangeParams"]["from"]["kind"] = "DockerImage"
    seen = []

    def check(defaulted: dict) -> Verdict:
        seen.append(defaulted)
        return Verdict(errors=['spec.template.spec.containers[0].name: Invalid value: "App": bad'])

    answer = webhook.review(request(body), template_check=check)
    assert answer["status"]["code"] == 422
    causes = answer["status"]["details"]["causes"]
    assert [c["field"] for c in causes] == [
        "spec.triggers[1].imageChangeParams.from.kind",
        "spec.strategy.rollingParams.timeoutSeconds",
        "spec.template.spec.containers[0].name",
    ]
    assert answer["status"]["message"].startswith('DeploymentConfig.apps.openshift.io "web" is invalid: [')
    # the template as the client sent it (the API server defaults it), the rest of the DC defaulted
    (sent,) = seen
    assert sent["spec"]["template"] == body["spec"]["template"]
    assert sent["spec"]["strategy"]["rollingParams"]["updatePeriodSeconds"] == 1


def test_a_bad_request_comes_before_any_validation_and_no_verdict_falls_back_to_the_own_rules() -> None:
    body = dc({"name": "app", "image": ""}, triggers=[{"type": "ConfigChange"}])
    answer = webhook.review(
        request(body), template_check=lambda _dc: Verdict(bad_request="cannot be handled")
    )
    assert answer["status"] == {"code": 400, "reason": "BadRequest", "message": "cannot be handled"}
    answer = webhook.review(request(body), template_check=lambda _dc: None)
    assert answer["status"]["message"].endswith(
        "is invalid: spec.template.spec.containers[0].image: Required value"
    )
    ok = webhook.review(request(dc({"name": "app", "image": ""})), template_check=lambda _dc: Verdict())
    assert ok["allowed"] is True
    patch = json.loads(base64.b64decode(ok["patch"]))
    assert patch[0]["value"]["template"]["spec"]["containers"][0]["image"] == ""  # stored as sent


def test_a_status_write_is_not_sent_to_the_api_server() -> None:
    def check(_dc: dict) -> Verdict:
        raise AssertionError("a status write asked for the template check")

    assert webhook.review(request(dc({"name": "App", "image": "x"}), "status"), template_check=check)[
        "allowed"
    ]
