"""The image trigger controller for annotated workloads: Deployments with `image.openshift.io/triggers`.

Mirrors openshift-controller-manager pkg/image/trigger/annotations/ and library-go
pkg/image/trigger/annotations.go (UpdateObjectFromImages): the annotation holds a JSON list of
`{"from": {"kind": "ImageStreamTag", "name": "is:tag", "namespace": ...}, "fieldPath":
"spec.template.spec.containers[?(@.name==\"app\")].image", "paused": true|false}` (what `oc new-app` and
`oc set triggers deploy/x --from-image` write; `paused` is a JSON bool). For every entry not paused whose
tag resolves (with the tag's reference policy, as for DCs), the container named by the field path gets
the tag's image; a container already on it is left alone. An annotation that does not parse, has two
entries for one field path, or names no such container leaves the whole object alone, as OpenShift
does (it logs the error). Only Deployments are emulated (OpenShift also drives StatefulSets, DaemonSets,
CronJobs and more the same way).
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


def _container(spec: JSON, field_path: str) -> JSON | str | None:
    """The container a field path names; "" when the path is not one of ours (another base path)."""
    if not field_path.startswith(BASE_PATH):
        return ""
    path = field_path[len(BASE_PATH) :]
    for key in ("containers", "initContainers"):
        if path.startswith(key + "["):
            rest = path[len(key) + 1 :]
            end = rest.find("]")
            if end < 0 or rest[end + 1 :] != ".image":
                return None
            selector, containers = rest[:end], spec.get(key) or []
            if selector.isdigit():
                index = int(selector)
                return containers[index] if index < len(containers) else None
            prefix, suffix = '?(@.name=="', '")'
            if selector.startswith(prefix) and selector.endswith(suffix):
                name = selector[len(prefix) : -len(suffix)]
                return next((c for c in containers if c.get("name") == name), None)
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
        src = t.get("from") or {}
        stream, _, tag = str(src.get("name") or "").rpartition(":")
        if src.get("kind", "ImageStreamTag") != "ImageStreamTag" or not stream:
            continue
        ref = tag_image(src.get("namespace") or ns, stream, tag)
        if not ref:
            continue  # no pending image
        container = _container(spec, str(t.get("fieldPath") or ""))
        if container == "":
            continue
        if not isinstance(container, dict):
            return None  # "no such container" / "field path is not valid": the object is left alone
        if container.get("image") != ref:
            container["image"] = ref
            changed = True
    return new if changed else None


def sources(obj: JSON) -> set[Key]:
    ns = obj.get("metadata", {}).get("namespace", "")
    found = set()
    for t in parse(obj) or []:
        src = t.get("from") or {}
        stream = str(src.get("name") or "").rpartition(":")[0]
        if stream:
            found.add((src.get("namespace") or ns, stream))
    return found


class AnnotationTriggerController:
    """Keeps annotated Deployments on the images of the tags they follow."""

    def __init__(self, kube: Kube, images: ImageStreamController, workers: int = 2) -> None:
        self.kube, self.images, self.workers = kube, images, workers
        self.deployments = Informer(kube, "/apis/apps/v1/deployments", self._on_deployment)
        self.queue = WorkQueue("annotation-triggers")
        self.triggers = TriggerCache()
        images.listeners.append(self._on_stream)

    def start(self) -> None:
        self.deployments.start()
        self.deployments.synced.wait()
        run_workers(self.queue, self.sync, self.workers)

    def _on_deployment(self, etype: str, obj: JSON) -> None:
        key = key_of(obj)
        found = set() if etype == "DELETED" else sources(obj)
        self.triggers.update(key, found)
        if found:
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
