"""When a DC's controller starts a rollout by itself, and how a client starts one when it would not.

The DC controller starts a rollout of a written DC only when a trigger says so (openshift-controller-
manager pkg/apps/deploymentconfig/deploymentconfig_controller.go, triggerActivated): a ConfigChange
trigger, for any difference between the template and the one its latest RC runs; an ImageChange trigger,
automatic or manual, when a regular container's image is none of the images of the latest RC's containers
(hasUpdatedImages); for the first rollout, an image trigger only once every image trigger has resolved
(lastTriggeredImage). A DC without triggers, or a change no trigger sees (an init container, an env
var, a redeploy's annotation on a DC with image triggers only), starts nothing.

Then a client asks for the rollout itself: `oc rollout latest` posts the `instantiate` subresource and,
where that is refused, falls back to a main-resource update with `status.latestVersion` + 1 (oc
pkg/cli/rollout/latest.go), which the API stores even though the rest of a client's status is dropped
(openshift-apiserver pkg/apps/apiserver/registry/deployconfig/strategy.go, PrepareForUpdate); the
controller finds no RC of the new version and makes it from the current template. rollguard uses that
fallback, in the same write as its change (a custom subresource needs the aggregated API server a real
OpenShift has; the main-resource update works on every one): one write, one rollout. A bump where the
controller would also have started the rollout still makes one RC (the controller creates the RC of the
new version and starts no other), so the rule below only keeps bumps to where they are needed.
"""

from __future__ import annotations

from rollguard.core.structs import Obj
from rollguard.kinds import triggers as trig
from rollguard.kinds.templates import same_template


def _images(template: Obj | None) -> list[str]:
    containers = ((template or {}).get("spec") or {}).get("containers") or []
    return [str(c.get("image") or "") for c in containers]


def starts_by_itself(body: Obj, *, running: Obj | None, version: int) -> bool:
    """Whether the controller rolls ``body`` (a DC as written) out by itself, or no rollout is wanted.

    ``running``: the template of the RC of its latestVersion (None when that RC is unknown: the DC's
    template before the write stands in); ``version``: its latestVersion.
    """
    spec = body.get("spec") or {}
    if spec.get("paused"):
        return True  # a paused DC starts nothing, and is not asked to
    if version and same_template(spec.get("template") or {}, running):
        return True  # nothing differs from what its latest RC runs: no rollout is wanted
    return rolls_out(body, running=running, version=version)


def rolls_out(body: Obj, *, running: Obj | None, version: int) -> bool:
    """Whether the controller starts a rollout of ``body`` by itself (triggerActivated): a write that
    starts none leaves no revision for rollguard's change-cause to name."""
    spec = body.get("spec") or {}
    if spec.get("paused"):
        return False
    triggers = spec.get("triggers")
    if triggers is None:
        triggers = [{"type": "ConfigChange"}]  # the API adds a ConfigChange trigger to a DC without the field
    image_params = [t.get("imageChangeParams") or {} for t in triggers if t.get("type") == "ImageChange"]
    if version == 0:
        if image_params:
            return all(p.get("lastTriggeredImage") for p in image_params)
        return trig.dc_has_config_change(triggers)
    template = spec.get("template") or {}
    if same_template(template, running):
        return False
    if trig.dc_has_config_change(triggers):
        return True
    if image_params:
        ran = set(_images(running))
        return any(image not in ran for image in _images(template))
    return False


def start_note(version: int) -> str:
    """The report's and the diff's note for a rollout rollguard starts itself."""
    return (
        f"rolled out by latestVersion {version} -> {version + 1} in the same write (as oc rollout latest): "
        "its triggers would not start a rollout of this change"
    )
