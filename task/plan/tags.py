"""ImageStream tags as a promotion and its revert change them, judged and built as data (pure).

A promotion copies a built tag into the group's streams (a copy of the *image*, kind ImageStreamImage,
that does not move when the source tag moves later); its revert puts each tag back where the journal
says it was. `rollguard.run.promote` does the writes and waits; the repair planner judges, before a
revert, what the restored tags will resolve to.
"""

from __future__ import annotations

import copy

from rollguard.core.structs import Obj
from rollguard.kinds.triggers import tag_reference, untrigger_promotion
from rollguard.plan.rollout_decide import Promotion


def with_tag_copy(stream: Obj, promo: Promotion) -> Obj:
    """``stream`` with spec tag ``promo.tag`` pointing at the promoted image (pure).

    The tag keeps its ``referencePolicy`` (a ``Local`` tag stays pulled through the integrated
    registry, which is what its image triggers then write); a new tag gets ``Source``, as `oc tag` does.
    """
    new = copy.deepcopy(stream)
    old = [t for t in new.setdefault("spec", {}).get("tags", []) or [] if t.get("name") == promo.tag]
    policy = (old[0].get("referencePolicy") if old else None) or {"type": "Source"}
    tags = [t for t in new.setdefault("spec", {}).get("tags", []) or [] if t.get("name") != promo.tag]
    tags.append(
        {
            "name": promo.tag,
            "from": {
                "kind": "ImageStreamImage",
                "namespace": promo.source_namespace,
                "name": f"{promo.stream}@{promo.source_image}",
            },
            "referencePolicy": copy.deepcopy(policy),
        }
    )
    new["spec"]["tags"] = tags
    return new


def resolved_reference(stream: Obj | None, promo: Promotion) -> str:
    """The reference the group's stream now gives the promoted tag, once it has resolved: what its image
    triggers write (so pinning to it fires none), `referencePolicy: Local` included."""
    return tag_reference(stream, promo.tag, image=promo.source_image)


def previous_tag(stream: Obj | None, tag: str) -> Obj:
    """What ``tag`` of the group's ``stream`` holds before a promotion copies over it (pure), for the
    journal: its spec tag item (None when the tag is only in status, e.g. pushed by a build) and the image
    its status points at ("" when none)."""
    spec = next((t for t in (stream or {}).get("spec", {}).get("tags") or [] if t.get("name") == tag), None)
    status: Obj = next(
        (t for t in (stream or {}).get("status", {}).get("tags") or [] if t.get("tag") == tag), {}
    )
    item = (status.get("items") or [{}])[0]
    return {
        "spec": copy.deepcopy(spec),
        "image": str(item.get("image", "")),
        "reference": str(item.get("dockerImageReference", "")),
    }


def with_tag_restored(stream: Obj, tag: str, previous: Obj) -> Obj:
    """``stream`` with ``tag`` back where ``previous`` (a `previous_tag`) says it was (pure).

    A tag that had a spec item gets it back; one that was only in status is pointed at the image it
    held (as `oc tag stream@image stream:tag` would); one that did not exist is removed.
    """
    new = copy.deepcopy(stream)
    tags = [t for t in new.setdefault("spec", {}).get("tags") or [] if t.get("name") != tag]
    name = new.get("metadata", {}).get("name", "")
    if previous.get("spec"):
        tags.append(copy.deepcopy(previous["spec"]))
    elif previous.get("image"):
        tags.append(
            {
                "name": tag,
                "from": {"kind": "ImageStreamImage", "name": f"{name}@{previous['image']}"},
                "referencePolicy": {"type": "Source"},
            }
        )
    new["spec"]["tags"] = tags
    return new


def as_restored(stream: Obj | None, tag: str, previous: Obj) -> Obj | None:
    """``stream`` as it reads once ``tag`` is restored (pure): for judging, before the restore, which
    triggers a revert's restored workloads would fire."""
    if stream is None:
        return None
    new = with_tag_restored(stream, tag, previous)
    tags = [t for t in new.setdefault("status", {}).get("tags") or [] if t.get("tag") != tag]
    if previous.get("image"):
        item = {"image": previous["image"], "dockerImageReference": previous.get("reference", "")}
        tags.append({"tag": tag, "items": [item]})
    new["status"]["tags"] = tags
    return new


def tag_restored(stream: Obj | None, tag: str, previous: Obj) -> bool:
    """True once ``stream``'s status shows ``tag`` back on the image ``previous`` (a `previous_tag`)
    names (pure); a tag that pointed at no image has nothing to wait for."""
    image = previous.get("image")
    if not image:
        return True
    status: Obj = next(
        (t for t in (stream or {}).get("status", {}).get("tags") or [] if t.get("tag") == tag), {}
    )
    items = status.get("items") or []
    return bool(items) and items[0].get("image") == image


def without_promotion_effects(live: Obj, snapshot: Obj, refs: dict[str, str]) -> Obj:
    """``live`` with what the platform's image triggers wrote for a promotion put back as in ``snapshot``
    (pure): a container of ``refs`` (container -> the promoted tag's resolved reference) that runs that
    reference, and a DC trigger of it whose ``lastTriggeredImage`` is it.

    The tag copy moves the tag the group's automatic triggers follow, so the trigger controller may
    rewrite a workload before rollguard's own write (openshift-controller-manager pkg/image/trigger/
    deploymentconfigs/deploymentconfigs.go, UpdateDeploymentConfigImages; library-go pkg/image/trigger
    for annotated kinds): that is the promotion itself, not someone else's edit. Anything else that
    differs still does.
    """
    out = copy.deepcopy(live)
    old_spec = (snapshot.get("spec") or {}).get("template", {}).get("spec") or {}
    new_spec = (out.get("spec") or {}).get("template", {}).get("spec") or {}
    for key in ("initContainers", "containers"):
        before = {c.get("name"): c.get("image") for c in old_spec.get(key) or []}
        for c in new_spec.get(key) or []:
            name = c.get("name")
            if name in refs and name in before and c.get("image") == refs[name]:
                c["image"] = before[name]
    untrigger_promotion(out, snapshot, refs)
    return out
