"""A mutating admission webhook that defaults (and validates) DCs and ImageStreams.

OpenShift defaults its API objects inside the API server, so a client sees the defaults in the answer to
its own create or update. A CRD cannot do that by itself; an admission webhook served from this process
can. The webhook is registered with failurePolicy Ignore: while this process is down, writes still work
and the DC controller applies the same defaults afterwards.

A DC's pod template is validated as OpenShift does it, with Kubernetes' own code: the webhook asks the
API server with one dry-run request per create or update of a DC (sandbox/openshift/podtemplate.py).
"""

from __future__ import annotations

import base64
import json
import logging
import ssl
import subprocess
import tempfile
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from sandbox.openshift import defaults, imagepolicy, latestversion
from sandbox.openshift.kube import JSON, ApiError, Kube
from sandbox.openshift.podtemplate import Verdict

log = logging.getLogger(__name__)
CONFIG_NAME = "rollguard-openshift-emulation"
_CONFIGS = "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations"


StreamLookup = Callable[[str, str], JSON | None]  # (namespace, name) -> ImageStream or None
TemplateCheck = Callable[[JSON], Verdict | None]  # defaulted DC -> the API server's word on its template


def review(
    request: JSON, lookup: StreamLookup | None = None, template_check: TemplateCheck | None = None
) -> JSON:
    """Answer one AdmissionReview request: a JSON patch of `spec`, or a denial.

    `lookup` reads an ImageStream (tag sources); `template_check` asks the API server what Kubernetes'
    validation says of a defaulted DC's pod template (sandbox/openshift/podtemplate.py check)."""
    uid = request.get("uid", "")
    obj = request.get("object") or {}
    old = request.get("oldObject")
    kind = (request.get("kind") or {}).get("kind")
    marks: list[JSON] = []
    if kind == "DeploymentConfig" and request.get("subResource") == "status":
        errors = latestversion.status_errors(obj, old)
        if not errors:
            return {"uid": uid, "allowed": True}
        message = latestversion.invalid_message(obj.get("metadata", {}).get("name", ""), errors)
        return {
            "uid": uid,
            "allowed": False,
            "status": {"code": 422, "reason": "Invalid", "message": message},
        }
    if kind == "DeploymentConfig":
        if request.get("namespace") and not obj.get("metadata", {}).get("namespace"):
            # a create's object may not carry the namespace of its URL yet: defaults need it
            obj = {**obj, "metadata": {**obj.get("metadata", {}), "namespace": request["namespace"]}}
        if request.get("operation") == "CREATE":
            # PrepareForCreate (openshift-apiserver registry/deployconfig/strategy.go): no trigger has
            # fired for a new DC, whatever the client sent
            obj = defaults.without_last_triggered(obj)
        new = defaults.default_dc(obj, create=request.get("operation") == "CREATE")
        if not request.get("subResource") and isinstance(new.get("spec"), dict):
            # the kube-apiserver's image policy admission (sandbox/openshift/imagepolicy.py)
            new["spec"]["template"] = imagepolicy.resolve_local_names(
                new, new["spec"].get("template"), lookup
            )
        name = obj.get("metadata", {}).get("name", "")
        # Kubernetes' own word on the pod template (one dry-run request to the API server): only for the
        # main resource, whose writes OpenShift validates in full (the status one validates the status).
        # The template goes as the client sent it: OpenShift decodes it before defaulting, and the API
        # server applies Kubernetes' defaults to it before validating, as OpenShift does.
        verdict = None
        if template_check and not request.get("subResource"):
            sent = (obj.get("spec") or {}).get("template")
            verdict = template_check({**new, "spec": {**new["spec"], "template": sent}})
        if verdict is not None and verdict.bad_request is not None:
            # decoding comes before any validation: the template cannot even be read as a PodTemplateSpec
            return {
                "uid": uid,
                "allowed": False,
                "status": {"code": 400, "reason": "BadRequest", "message": verdict.bad_request},
            }
        errors = defaults.validate_dc(new, verdict.errors if verdict is not None else None)
        if errors:
            return {
                "uid": uid,
                "allowed": False,
                "status": {
                    "code": 422,
                    "reason": "Invalid",
                    "message": latestversion.invalid_message(name, errors),
                    "details": {
                        "name": name,
                        "group": "apps.openshift.io",
                        "kind": "DeploymentConfig",
                        "causes": defaults.invalid_causes(errors),
                    },
                },
            }
        if request.get("operation") == "UPDATE" and not request.get("subResource"):
            # a client's latestVersion + 1 on the main resource (the oc rollout latest fallback): the
            # CRD would drop it with the rest of the status, so it is recorded for the controller
            bump = latestversion.accepted_bump(obj, old)
            if bump is not None:
                marks = latestversion.mark_patch(request.get("object") or {}, bump)
    elif kind == "ImageStream":
        new = defaults.default_is(obj, old)
        error = defaults.validate_tag_sources(new, old, request.get("namespace") or "", lookup)
        if error:
            name = obj.get("metadata", {}).get("name", "")
            message = (
                f'ImageStream.image.openshift.io "{name}" is invalid: : Internal error: '
                f'imagestreams "{name}" is invalid: {error}'
            )
            return {
                "uid": uid,
                "allowed": False,
                "status": {"code": 422, "reason": "Invalid", "message": message},
            }
    elif kind == "Deployment" and not request.get("subResource"):
        if request.get("namespace") and not obj.get("metadata", {}).get("namespace"):
            obj = {**obj, "metadata": {**obj.get("metadata", {}), "namespace": request["namespace"]}}
        spec = obj.get("spec") if isinstance(obj.get("spec"), dict) else {}
        template = imagepolicy.resolve_local_names(obj, spec.get("template"), lookup)
        if template is spec.get("template"):
            return {"uid": uid, "allowed": True}
        new = {**obj, "spec": {**spec, "template": template}}
    else:
        return {"uid": uid, "allowed": True}
    patch = list(marks)
    if new.get("spec") != (request.get("object") or {}).get("spec"):
        patch.append(
            {
                "op": "add" if "spec" not in (request.get("object") or {}) else "replace",
                "path": "/spec",
                "value": new["spec"],
            }
        )
    if not patch:
        return {"uid": uid, "allowed": True}
    return {
        "uid": uid,
        "allowed": True,
        "patchType": "JSONPatch",
        "patch": base64.b64encode(json.dumps(patch).encode()).decode(),
    }


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: the API server reuses its connection
    # The answer goes out in two writes (headers, body): with Nagle's algorithm the body waited for the
    # API server's delayed ACK, ~40 ms on every DC and ImageStream write (48 ms -> 4.4 ms a dry-run write).
    disable_nagle_algorithm = True
    lookup: StreamLookup | None = None
    template_check: TemplateCheck | None = None

    def do_POST(self) -> None:
        try:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
            answer = {
                "apiVersion": "admission.k8s.io/v1",
                "kind": "AdmissionReview",
                "response": review(body.get("request") or {}, type(self).lookup, type(self).template_check),
            }
            data, code = json.dumps(answer).encode(), 200
        except Exception as e:
            log.exception("admission review failed")
            data, code = json.dumps({"error": str(e)}).encode(), 500
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: object) -> None:
        log.debug("webhook: " + format, *args)


class Webhook:
    """The HTTPS server on 127.0.0.1 (a free port) and its registration with the API server."""

    def __init__(
        self, lookup: StreamLookup | None = None, template_check: TemplateCheck | None = None
    ) -> None:
        _Handler.lookup = staticmethod(lookup) if lookup else None  # type: ignore[assignment]
        _Handler.template_check = staticmethod(template_check) if template_check else None  # type: ignore[assignment]
        self._dir = Path(tempfile.mkdtemp(prefix="rollguard-openshift-webhook-"))
        cert, key = self._dir / "tls.crt", self._dir / "tls.key"
        subprocess.run(
            [
                "openssl",
                "req",
                "-x509",
                "-newkey",
                "ec",
                "-pkeyopt",
                "ec_paramgen_curve:prime256v1",
                "-nodes",
                "-keyout",
                str(key),
                "-out",
                str(cert),
                "-days",
                "3650",
                "-subj",
                "/CN=rollguard-openshift-webhook",
                "-addext",
                "subjectAltName=IP:127.0.0.1",
            ],
            check=True,
            capture_output=True,
        )
        self.ca_bundle = base64.b64encode(cert.read_bytes()).decode()
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(cert, key)
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self.server.daemon_threads = True
        self.server.socket = ctx.wrap_socket(self.server.socket, server_side=True)
        self.port = self.server.server_address[1]

    def start(self) -> None:
        threading.Thread(target=self.server.serve_forever, name="webhook", daemon=True).start()

    def register(self, kube: Kube) -> None:
        """Create or replace the MutatingWebhookConfiguration that points at this server."""

        def hook(name: str, group: str, *resources: str) -> JSON:
            return {
                "name": name,
                "clientConfig": {"url": f"https://127.0.0.1:{self.port}/mutate", "caBundle": self.ca_bundle},
                "rules": [
                    {
                        "apiGroups": [group],
                        "apiVersions": ["v1"],
                        "resources": list(resources),
                        "operations": ["CREATE", "UPDATE"],
                        "scope": "Namespaced",
                    }
                ],
                "admissionReviewVersions": ["v1"],
                "sideEffects": "None",
                "failurePolicy": "Ignore",
                "timeoutSeconds": 5,
                "reinvocationPolicy": "IfNeeded",
            }

        body: JSON = {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "MutatingWebhookConfiguration",
            "metadata": {"name": CONFIG_NAME},
            "webhooks": [
                hook(
                    "deploymentconfigs.apps.openshift.io",
                    "apps.openshift.io",
                    "deploymentconfigs",
                    "deploymentconfigs/status",  # only validated (latestversion.status_errors)
                ),
                hook("imagestreams.image.openshift.io", "image.openshift.io", "imagestreams"),
                # the image policy admission's local name resolution (imagepolicy.py)
                hook("deployments.imagepolicy.image.openshift.io", "apps", "deployments"),
            ],
        }
        for _ in range(5):
            try:
                current = kube.get(f"{_CONFIGS}/{CONFIG_NAME}")
            except ApiError as e:
                if e.status != 404:
                    raise
                try:
                    kube.request("POST", _CONFIGS, body)
                    return
                except ApiError as e2:
                    if e2.status != 409:
                        raise
                    continue
            body["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
            try:
                kube.request("PUT", f"{_CONFIGS}/{CONFIG_NAME}", body)
                return
            except ApiError as e:
                if e.status != 409:
                    raise
        raise RuntimeError("could not register the admission webhook")

    def close(self) -> None:
        self.server.shutdown()
        for f in self._dir.iterdir():
            f.unlink()
        self._dir.rmdir()
