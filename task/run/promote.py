"""Promotion (the OpenDevStack flow): copy a built tag into the group's ImageStreams, like `oc tag`.

The writes and the waits; what each tag becomes is decided in `rollguard.plan.tags` (pure).
"""

from __future__ import annotations

import time
from collections.abc import Callable

from rollguard.cluster.api import Api
from rollguard.core.errors import ApiError, Conflict, RolloutFailed
from rollguard.core.resources import IMAGE_STREAMS
from rollguard.core.structs import Obj
from rollguard.plan.rollout_decide import Promotion
from rollguard.plan.tags import tag_restored, with_tag_copy, with_tag_restored

RESTORE_WAIT = 30.0  # for a restored tag's status to follow its spec (a DockerImage tag is imported again)


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


def restore_tags(client: Api, *, namespace: str, tags: dict[str, Obj]) -> list[str]:
    """Put every journaled tag (``"stream:tag"`` -> `previous_tag`) back; the errors, one line each."""
    errors = []
    for key, previous in sorted(tags.items()):
        name, _, tag = key.rpartition(":")
        for _ in range(5):
            try:
                stream = client.get(IMAGE_STREAMS, name, namespace=namespace)
                client.replace(IMAGE_STREAMS, with_tag_restored(stream, tag, previous), namespace=namespace)
                break
            except Conflict:
                continue
            except ApiError as exc:
                errors.append(f"imagestream {name}: could not restore tag {tag}: {exc}")
                break
        else:
            errors.append(f"imagestream {name}: could not restore tag {tag}: too many write conflicts")
    return errors


def wait_restored(
    client: Api, *, namespace: str, tags: dict[str, Obj], seconds: float, stopped: Callable[[], bool]
) -> list[str]:
    """Wait at most ``seconds`` until each restored tag (``"stream:tag"`` -> `previous_tag`) reads as
    restored in its stream's status; the keys that still do not.

    A restored spec tag is not resolved in the write everywhere (a ``DockerImage`` tag is imported
    again, asynchronously): until the status follows, the trigger controller still sees the promoted
    image, and so would the revert's check of which restored automatic triggers fire. Judged on the
    stale status, a revert would make those triggers manual for nothing; written while it is stale, the
    trigger controller would rewrite the restored workloads to the promoted image again.
    """
    deadline = time.monotonic() + seconds
    pending = dict(tags)
    while True:
        for key, previous in list(pending.items()):
            name, _, tag = key.rpartition(":")
            try:
                stream: Obj | None = client.get(IMAGE_STREAMS, name, namespace=namespace)
            except ApiError:  # gone, or not readable now: still pending (a gone stream stays so)
                stream = None
            if tag_restored(stream, tag, previous):
                del pending[key]
        if not pending or time.monotonic() >= deadline or stopped():
            return sorted(pending)
        time.sleep(0.2)  # a poll: a revert may have no watch on the group's streams
