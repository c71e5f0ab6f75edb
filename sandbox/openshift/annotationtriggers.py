"""The image trigger controller for annotated workloads: Deployments with `image.openshift.io/triggers`.

Mirrors openshift-controller-manager pkg/image/trigger/annotations/annotations.go (Index),
pkg/image/controller/trigger/cache.go (triggerCacheIndexer), image_trigger_controller.go (tagRetriever,
syncResource) and library-go pkg/image/trigger/annotations.go (UpdateObjectFromImages,
parseContainerReference, findContainerBySelector) with pkg/image/referencemutator/pods.go
(GetContainerByName, GetContainerByIndex): the annotation holds a JSON list of `{"from": {"kind":
"ImageStreamTag", "name": "is:tag", "namespace": ...}, "fieldPath":
"spec.template.spec.containers[?(@.name==\"app\")].image", "paused": true|false}` (what `oc new-app` and
`oc set triggers deploy/x --from-image` write; `paused` is a JSON bool).

- **Which entries a tag move fires** (the cache indexed by image stream): only those whose `from.kind`
  is exactly `ImageStreamTag` (an absent kind is not: nothing defaults the annotation), that set no
  `from.apiVersion`, are not paused, and whose name splits as `stream:tag` at the first colon.
- **When the object itself is queued**: when it appears with triggers, when its triggers change, or when
  the image of a container a (not paused) entry names changed. Its sync then resolves *every* entry not
  paused by name as an ImageStreamTag, whatever its kind or apiVersion (UpdateObjectFromImages checks
  neither): such an entry does not follow its tag, but a write to the container's image is undone.
- **Which container a field path names**: `containers[...]` or `initContainers[...]`; an index counts in
  the list the prefix names, but a name (`?(@.name=="x")`) is looked up in the init containers first,
  then the regular ones, whatever the prefix says.

For every entry so resolved, the container named gets the tag's image (with the tag's reference policy,
as for DCs); a container already on it is left alone. An annotation that does not parse, has two
entries for one field path, or an entry naming no such container or an invalid path leaves the whole
object alone, as OpenShift does (it logs the error). Only Deployments are emulated (OpenShift also drives
StatefulSets, DaemonSets, CronJobs and more the same way).
"""

from __future__ import annotations

import copy
import json
import logging
from typing import Any

from sandbox.openshift.imagestreams import ImageStreamController
from sandbox.openshift.informer import Informer, key_of
from sandbox.openshift.kube import JSON, ApiError, Kube
from sandbox.openshift.triggercache import TriggerCache
from sandbox.openshift.workqueue import WorkQueue, run_workers

log = logging.getLogger(__name__)
ANNOTATION = "image.openshift.io/triggers"
BASE_PATH = "spec.template.spec."
Key = tuple[str, str]


def parse(obj: JSON) -> list[JSON] | None:
    """The object's trigger entries; None when it has none or they are invalid (then nothing happens)."""
    raw = (obj.get("metadata", {}).get("annotations") or {}).get(ANNOTATION)
    if raw is None:
        return None
    try:
        triggers = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(triggers, list) or not all(isinstance(t, dict) for t in triggers):
        return None
    paths = [t.get("fieldPath") for t in triggers]
    if len(set(paths)) != len(paths):  # hasDuplicateTriggers
        return None
    if any(not isinstance(t.get("paused", False), bool) for t in triggers):
        return None  # json.Unmarshal of a non-bool into `Paused bool` fails: the annotation is invalid
    return triggers


def split_stream_tag(name: str) -> tuple[str, str, bool]:
    """library-go pkg/image/imageutil SplitImageStreamTag: stream before the first colon, an empty tag is
    ``latest``; ok only when there is a colon."""
    stream, colon, tag = name.partition(":")
    return stream, tag or "latest", bool(colon)


def _container(spec: JSON, field_path: str) -> JSON | str | None:
    """The container a field path names; "" when the path is not one of ours (another base path), None
    when it is invalid or names no container."""
    if not field_path.startswith(BASE_PATH):
        return ""
    path = field_path[len(BASE_PATH) :]
    for key in ("containers", "initContainers"):
        if path.startswith(key + "["):
            rest = path[len(key) + 1 :]
            end = rest.find("]")
            if end < 0 or rest[end + 1 :].removeprefix(".") != "image":
                return None
            selector = rest[:end]
            if selector.isdigit():  # GetContainerByIndex: in the list the prefix names
                containers = spec.get(key) or []
                index = int(selector)
                return containers[index] if index < len(containers) else None
            prefix, suffix = '?(@.name=="', '")'
            if selector.startswith(prefix) and selector.endswith(suffix):
                name = selector[len(prefix) : -len(suffix)]
                # GetContainerByName: init containers first, whatever the prefix says
                every = [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]
                return next((c for c in every if c.get("name") == name), None)
            return None
    return None


def updated_images(obj: JSON, tag_image: Any) -> JSON | None:
    """A copy of ``obj`` with its triggered containers' images set, or None when nothing changes."""
    triggers = parse(obj)
    if not triggers:
        return None
    ns = obj.get("metadata", {}).get("namespace", "")
    new = copy.deepcopy(obj)
    spec = new.get("spec", {}).get("template", {}).get("spec") or {}
    changed = False
    for t in triggers:
        if t.get("paused"):
            continue
        if not str(t.get("fieldPath") or "").startswith(BASE_PATH):
            continue  # another object's path ("did not match base path")
        src = t.get("from") or {}
        # resolved by name as an ImageStreamTag, whatever from.kind and from.apiVersion say
        stream, tag, ok = split_stream_tag(str(src.get("name") or ""))
        ref = tag_image(src.get("namespace") or ns, stream, tag) if ok and stream else None
        if not ref:
            continue  # no pending image
        container = _container(spec, str(t.get("fieldPath") or ""))
        if not isinstance(container, dict):
            return None  # "no such container" / "field path is not valid": the object is left alone
        if container.get("image") != ref:
            container["image"] = ref
            changed = True
    return new if changed else None


def indexed(entry: JSON) -> bool:
    """Whether a tag move fires this entry (pkg/image/controller/trigger/cache.go triggerCacheIndexer)."""
    src = entry.get("from") or {}
    return (
        src.get("kind") == "ImageStreamTag"
        and not src.get("apiVersion")
        and not entry.get("paused")
        and split_stream_tag(str(src.get("name") or ""))[2]
    )


def sources(obj: JSON) -> set[Key]:
    """The (namespace, stream) keys the object is indexed by: the tags whose moves fire it."""
    ns = obj.get("metadata", {}).get("namespace", "")
    found = set()
    for t in parse(obj) or []:
        if indexed(t):
            src = t.get("from") or {}
            found.add((src.get("namespace") or ns, split_stream_tag(str(src["name"]))[0]))
    return found


def triggered_images(obj: JSON) -> dict[str, Any]:
    """fieldPath -> the image there, for every entry not paused (ContainerImageChanged compares these)."""
    spec = obj.get("spec", {}).get("template", {}).get("spec") or {}
    out: dict[str, Any] = {}
    for t in parse(obj) or []:
        if not t.get("paused"):
            container = _container(spec, str(t.get("fieldPath") or ""))
            if isinstance(container, dict):
                out[str(t.get("fieldPath"))] = container.get("image")
    return out


class AnnotationTriggerController:
    """Keeps annotated Deployments on the images of the tags they follow."""

    def __init__(self, kube: Kube, images: ImageStreamController, workers: int = 2) -> None:
        self.kube, self.images, self.workers = kube, images, workers
        self.deployments = Informer(kube, "/apis/apps/v1/deployments", self._on_deployment)
        self.queue = WorkQueue("annotation-triggers")
        self.triggers = TriggerCache()
        self._seen: dict[Key, tuple[list[JSON] | None, dict[str, Any]]] = {}  # the last event's triggers
        images.listeners.append(self._on_stream)

    def start(self) -> None:
        self.deployments.start()
        self.deployments.synced.wait()
        run_workers(self.queue, self.sync, self.workers)

    def _on_deployment(self, etype: str, obj: JSON) -> None:
        """annotations.go Index: queue an object that appears with triggers, whose triggers changed, or
        whose triggered containers' images changed; any other update is only re-indexed."""
        key = key_of(obj)
        found = set() if etype == "DELETED" else sources(obj)
        self.triggers.update(key, found)
        triggers = None if etype == "DELETED" else parse(obj)
        old_triggers, old_images = self._seen.pop(key, (None, {}))
        if not triggers:
            return
        images = triggered_images(obj)
        self._seen[key] = (triggers, images)
        if (
            not old_triggers
            or old_triggers != triggers
            or any(old_images.get(path, image) != image for path, image in images.items())
        ):
            self.queue.add(key)

    def _on_stream(self, _etype: str, stream: JSON) -> None:
        for k in self.triggers.followers(key_of(stream)):
            self.queue.add(k)

    def sync(self, key: Key) -> None:
        obj = self.deployments.get(*key)
        if obj is None:
            return
        new = updated_images(obj, self.images.tag_image)
        if new is None:
            return
        ns, name = key
        try:
            written = self.kube.request("PUT", f"/apis/apps/v1/namespaces/{ns}/deployments/{name}", new)
        except ApiError as e:
            if e.status == 404:
                return
            if e.status == 409:  # someone wrote it since we read it: read it again and retry
                self.deployments.store(self.kube.get(f"/apis/apps/v1/namespaces/{ns}/deployments/{name}"))
            raise
        self.deployments.store(written)
        log.info("%s/%s: image trigger updated its containers", ns, name)
