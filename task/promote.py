"""Promotion (the OpenDevStack flow): copy a built tag into the group's ImageStreams, like `oc tag`.

The copy points at the source *image* (kind ImageStreamImage), not at the source tag: it does not move
when the source tag moves later.
"""

from __future__ import annotations

import copy

from rollguard.client import Api
from rollguard.errors import Conflict, RolloutFailed
from rollguard.kinds.triggers import tag_reference
from rollguard.resources import IMAGE_STREAMS
from rollguard.rollout_decide import Promotion
from rollguard.structs import Obj


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


def copy_tag(client: Api, *, namespace: str, promo: Promotion) -> None:
    """Write the tag copy, re-reading on conflicts (the stream's controller writes it too)."""
    for _ in range(5):
        stream = client.get(IMAGE_STREAMS, promo.stream, namespace=namespace)
        try:
            client.replace(IMAGE_STREAMS, with_tag_copy(stream, promo), namespace=namespace)
            return
        except Conflict:
            continue
    raise RolloutFailed(f"imagestream {promo.stream}: too many write conflicts", workload="imagestreams")


def resolved_reference(stream: Obj | None, promo: Promotion) -> str:
    """The reference the group's stream now gives the promoted tag, once it has resolved: what its image
    triggers write (so pinning to it fires none), `referencePolicy: Local` included."""
    return tag_reference(stream, promo.tag, image=promo.source_image)
