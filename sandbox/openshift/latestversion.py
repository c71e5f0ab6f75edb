"""A client's `latestVersion + 1` on a DC's main resource: the rollout request OpenShift's API honours.

openshift-apiserver pkg/apps/apiserver/registry/deployconfig/strategy.go (PrepareForUpdate, the main
resource's update strategy): the stored status is kept whatever the client sent, except that a
`status.latestVersion` of exactly the stored one + 1 is taken over ("oc deploy --latest from old
clients"), and that bump counts as a change of generation. Any other latestVersion (a jump by 2, a
decrease) is silently replaced by the stored one: no error, since validation runs after the status was
restored. This is what `oc rollout latest` and `oc rollout undo` fall back to when the `instantiate` /
`rollback` subresources are refused (oc pkg/cli/rollout/latest.go). The DC controller then finds no RC
for the new version and makes it from the current template, whatever its triggers
(openshift-controller-manager pkg/apps/deploymentconfig/deploymentconfig_controller.go, Handle).

A CRD with a status subresource drops every status change on the main resource before the client's
value can be seen, so the emulation splits it in two: the admission webhook, which does see the client's
body, records an accepted bump as the annotation `REQUEST` in the same write (so only a write that
lands leaves it), and the DC controller applies it to the status at once and removes the annotation
(`pending`). Differences left: the reply to the client's write still shows the old latestVersion, and a
bump that changes nothing else does not raise `metadata.generation` (a CRD raises it for spec changes
only).

The `/status` subresource takes any status, within ValidateDeploymentConfigStatusUpdate
(openshift-apiserver pkg/apps/apis/apps/validation/validation.go): no negative counts, and neither
latestVersion nor observedGeneration decremented (a jump is allowed there: the DC controller catches up
with an RC newer than its status that way). `status_errors` holds those rules for the webhook.
"""

from __future__ import annotations

from sandbox.openshift.kube import JSON

REQUEST = "sandbox.rollguard.io/requested-latest-version"  # the emulation's own mark, never OpenShift's


def version(dc: JSON | None) -> int:
    try:
        return int(((dc or {}).get("status") or {}).get("latestVersion") or 0)
    except (TypeError, ValueError):
        return 0


def accepted_bump(new: JSON, old: JSON | None) -> int | None:
    """The latestVersion a main-resource update asks for, when the API takes it (exactly stored + 1)."""
    if old is None:
        return None
    wanted = version(new)
    return wanted if wanted == version(old) + 1 else None


def mark_patch(obj: JSON, wanted: int) -> list[JSON]:
    """JSON-patch operations recording the accepted bump on the written object."""
    annotations = (obj.get("metadata") or {}).get("annotations")
    if not isinstance(annotations, dict):
        return [{"op": "add", "path": "/metadata/annotations", "value": {REQUEST: str(wanted)}}]
    key = REQUEST.replace("~", "~0").replace("/", "~1")
    return [{"op": "add", "path": f"/metadata/annotations/{key}", "value": str(wanted)}]


def pending(dc: JSON) -> tuple[bool, int | None]:
    """(marked at all, the version to set now or None when the mark is already applied or stale)."""
    raw = ((dc.get("metadata") or {}).get("annotations") or {}).get(REQUEST)
    if raw is None:
        return False, None
    try:
        wanted = int(raw)
    except ValueError:
        return True, None
    return True, wanted if wanted == version(dc) + 1 else None


_COUNTS = ("latestVersion", "observedGeneration", "replicas", "readyReplicas", "availableReplicas",
           "unavailableReplicas")  # fmt: skip


def status_errors(new: JSON, old: JSON | None) -> list[str]:
    """What a `/status` update of a DC breaks, as the API words it (ValidateDeploymentConfigStatusUpdate)."""
    status = new.get("status") or {}
    errors = [
        f"status.{name}: Invalid value: {status[name]}: must be greater than or equal to 0"
        for name in _COUNTS
        if isinstance(status.get(name), int) and status[name] < 0
    ]
    before = (old or {}).get("status") or {}
    for name, what in (("latestVersion", "latestVersion"), ("observedGeneration", "observedGeneration")):
        value, was = status.get(name) or 0, before.get(name) or 0
        if isinstance(value, int) and isinstance(was, int) and value < was:
            errors.append(f"status.{name}: Invalid value: {value}: {what} cannot be decremented")
    return errors


def invalid_message(name: str, errors: list[str]) -> str:
    """The 422's message: one error as it is, several in brackets (apimachinery NewInvalid)."""
    detail = errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]"
    return f'DeploymentConfig.apps.openshift.io "{name}" is invalid: {detail}'
