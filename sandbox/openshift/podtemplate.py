"""Kubernetes' own validation of a DC's pod template, asked of the sandbox's real kube-apiserver.

OpenShift validates a DC's `spec.template` with Kubernetes' code: openshift-apiserver
pkg/apps/apis/apps/validation/validation.go (ValidateDeploymentConfigSpec) calls
`ValidatePodTemplateSpecForRC(spec.Template, spec.Selector, spec.Replicas, "spec.template")` of
kubernetes pkg/apis/core/validation/validation.go, after `handleEmptyImageReferences` has put "unset" in
the empty image of each container an image-change trigger names. That is the very function a
ReplicationController's spec is validated with (ValidateReplicationControllerSpec, same path
`spec.template`), so a server-side dry run (`dryRun=All`, nothing stored) of an RC holding the DC's
selector, replicas and (so prepared) template answers with Kubernetes' words for the DC's template; the
causes outside `spec.template` (the RC's own name, selector, replicas) are the RC's, not the DC's, and are
left out.

A template that cannot even be decoded (`cpu: lots`, a port given as a word) is refused by OpenShift
before validation, when it decodes the request: `400 BadRequest` "DeploymentConfig in version "v1" cannot
be handled as a DeploymentConfig: ..." (k8s.io/apiserver pkg/endpoints/handlers/rest.go
transformDecodeError). The RC's decode error is the same error with the RC's type names: they are put
back to the DC's (the fields json-iterator names on its way, and the byte context it quotes, are those of
the RC's body, not of the DC the client sent).

Any other answer (the server busy or down, a quota, a namespace being deleted) gives no verdict: the
webhook then falls back to the emulation's own rules (sandbox/openshift/defaults.py validate_dc).
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field
from typing import Any

from sandbox.openshift.kube import JSON, ApiError, Kube

TEMPLATE = "spec.template"
_RC_DECODE = 'ReplicationController in version "v1" cannot be handled as a ReplicationController: '
_DC_DECODE = 'DeploymentConfig in version "v1" cannot be handled as a DeploymentConfig: '
# the Go types json-iterator names on its way to the error, and the DC's types in their place
_RC_TYPES = (
    ("v1.ReplicationController.", "v1.DeploymentConfig."),
    ("v1.ReplicationControllerSpec.", "v1.DeploymentConfigSpec."),
)
# How long the webhook waits for the API server's answer: the API server gives the webhook 5 s in all.
TIMEOUT_SECONDS = 3.0


@dataclass
class Verdict:
    """The API server's word on a DC's template: `bad_request` (it cannot be decoded) or `errors`
    (each "field: detail", as Kubernetes' field.Error prints it, in Kubernetes' order; none: valid)."""

    errors: list[str] = field(default_factory=list)
    bad_request: str | None = None


def with_empty_images_filled(template: JSON, triggers: Any) -> JSON:
    """A copy of `template` as validation.go handleEmptyImageReferences leaves it: a container whose image
    is empty ("", not " ") and that an ImageChange trigger names gets the image "unset" (only for the
    validation: the DC keeps its empty image until the trigger fills it in)."""
    template = copy.deepcopy(template)
    spec = template.get("spec")
    containers = spec.get("containers") if isinstance(spec, dict) else None
    if not isinstance(containers, list):
        return template
    named: set[Any] = set()
    for t in triggers if isinstance(triggers, list) else []:
        if not isinstance(t, dict) or t.get("type") != "ImageChange":
            continue
        params = t.get("imageChangeParams")
        if isinstance(params, dict) and isinstance(params.get("containerNames"), list):
            named.update(n for n in params["containerNames"] if isinstance(n, str))
    for c in containers:
        if isinstance(c, dict) and not c.get("image") and c.get("name") in named:
            c["image"] = "unset"
    return template


def probe(dc: JSON) -> JSON:
    """The ReplicationController whose dry-run create validates `dc`'s template (the defaulted DC,
    its template as the client sent it: the API server defaults it as OpenShift does)."""
    spec = dc.get("spec") or {}
    replicas = spec.get("replicas")
    selector = spec.get("selector")
    rc_spec: JSON = {
        # only > 1 matters to the template's validation (read-only persistent disks)
        "replicas": replicas if isinstance(replicas, int) and not isinstance(replicas, bool) else 0,
    }
    if isinstance(selector, dict) and all(isinstance(v, str) for v in selector.values()):
        rc_spec["selector"] = selector
    # the template last: a decode error quotes the bytes around it, which should be the template's
    rc_spec["template"] = with_empty_images_filled(spec["template"], spec.get("triggers"))
    return {
        "apiVersion": "v1",
        "kind": "ReplicationController",
        # a generated name: a dry-run create of a name that exists would be refused as a conflict
        "metadata": {"generateName": "deploymentconfig-template-"},
        "spec": rc_spec,
    }


def verdict(error: ApiError | None) -> Verdict | None:
    """What the dry run's answer says of the template; None when the server did not judge it."""
    if error is None:
        return Verdict()
    body = error.body or {}
    message = str(body.get("message") or "")
    if error.status == 400 and message.startswith(_RC_DECODE) and "v1.PodTemplateSpec" in message:
        reason = message[len(_RC_DECODE) :]
        for rc_type, dc_type in _RC_TYPES:
            reason = reason.replace(rc_type, dc_type)
        return Verdict(bad_request=_DC_DECODE + reason)
    if error.status != 422 or body.get("reason") != "Invalid":
        return None
    causes = (body.get("details") or {}).get("causes") or []
    errors = []
    for cause in causes:
        path = str(cause.get("field") or "")
        if path == TEMPLATE or path.startswith((TEMPLATE + ".", TEMPLATE + "[")):
            errors.append(f"{path}: {cause.get('message', '')}")
    return Verdict(errors=errors)


def check(kube: Kube, dc: JSON) -> Verdict | None:
    """Ask the API server (one dry-run create in the DC's namespace) what it says of `dc`'s template."""
    namespace = (dc.get("metadata") or {}).get("namespace")
    if not namespace or not isinstance((dc.get("spec") or {}).get("template"), dict):
        return None
    if not re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?", namespace):
        return None
    try:
        kube.request(
            "POST",
            f"/api/v1/namespaces/{namespace}/replicationcontrollers",
            probe(dc),
            query={"dryRun": "All"},
            timeout=TIMEOUT_SECONDS,
        )
    except ApiError as e:
        return verdict(e)
    except Exception:  # the server did not answer in time, or the connection failed: no verdict
        return None
    return verdict(None)
