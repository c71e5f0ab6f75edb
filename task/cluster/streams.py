"""Reading the ImageStreams that image triggers follow, to judge whether a trigger would fire (I/O).

OpenShift's trigger controller rewrites a workload's container image whenever an *automatic* trigger's
tag points at another image, paused or not (openshift-controller-manager pkg/image/trigger/). Any write
that restores an older template (a repair's revert, a rollout's group revert) must first ask whether a
restored trigger would fire at once and undo it: the rules are pure (`rollguard.kinds.triggers`), the
stream reads are here, shared by both.
"""

from __future__ import annotations

from collections.abc import Iterable

from rollguard.cluster.api import Api
from rollguard.core.errors import ApiError, NotFound
from rollguard.core.resources import IMAGE_STREAMS
from rollguard.core.structs import Obj
from rollguard.kinds import Kind, images_of, triggers
from rollguard.kinds.triggers import StreamKey, Streams


def read_streams(client: Api, keys: Iterable[StreamKey]) -> Streams:
    """The ImageStreams at ``keys``: None where absent, unreadable where the read fails (e.g. forbidden)."""
    found: dict[StreamKey, Obj | None] = {}
    unreadable: set[StreamKey] = set()
    for key in sorted(set(keys)):
        try:
            found[key] = client.get(IMAGE_STREAMS, key[1], namespace=key[0])
        except NotFound:
            found[key] = None
        except ApiError:  # e.g. forbidden: the trigger cannot be judged, so it counts as firing
            unreadable.add(key)
    return Streams(found=found, unreadable=frozenset(unreadable))


def firing_now(client: Api, kind: Kind, namespace: str, body: Obj) -> dict[str, str]:
    """Containers whose automatic image trigger would at once overwrite ``body``'s image -> that image."""
    found = kind.image_triggers(body)
    streams = read_streams(client, triggers.watched_streams(found, namespace=namespace))
    images = images_of(body.get("spec", {}).get("template", {}))
    return triggers.firing(found, images=images, streams=streams, namespace=namespace)
