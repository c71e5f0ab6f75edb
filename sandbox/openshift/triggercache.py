"""Which objects follow which image streams: the trigger controllers' shared index.

Mirrors openshift-controller-manager pkg/image/controller/trigger/image_trigger_controller.go: one
``triggerCache`` indexed by image stream (``ByIndex("images", key)``), filled from each trigger
source's informer events (DeploymentConfigs' trigger fields, annotated Deployments), and read when an
image stream changes to queue every object that follows it. Each controller here keeps one of these.
"""

from __future__ import annotations

import threading

Key = tuple[str, str]  # (namespace, name)


class TriggerCache:
    """(namespace, stream) -> the objects whose triggers follow it, kept from their informer events."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._streams: dict[Key, set[Key]] = {}  # (namespace, image stream) -> objects it triggers
        self._watched: dict[Key, set[Key]] = {}  # object -> streams its triggers follow

    def update(self, key: Key, sources: set[Key]) -> None:
        """The object ``key`` now follows ``sources`` (none: deleted, or no triggers any more)."""
        with self._lock:
            for s in self._watched.pop(key, set()) - sources:
                self._streams.get(s, set()).discard(key)
            if sources:
                self._watched[key] = sources
                for s in sources:
                    self._streams.setdefault(s, set()).add(key)

    def followers(self, stream: Key) -> list[Key]:
        """The objects whose triggers follow ``stream`` now."""
        with self._lock:
            return list(self._streams.get(stream, ()))
