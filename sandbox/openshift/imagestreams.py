"""ImageStream controller: resolves `spec.tags` into `status.tags` as OpenShift's image API does.

- `DockerImage` `repo:tag` is "imported" once per tag generation: the sandbox registry mints (pins) a
  digest and the item's `dockerImageReference` is `repo@sha256:...`; a digest reference is taken as is.
- `ImageStreamImage` `is@sha256:...` copies that image from the (possibly other namespace's) stream.
- `ImageStreamTag` `is:tag` of the same stream follows that tag (a tracking tag, every time it moves);
  one of another stream is resolved when the spec tag is written, and does not follow the source later.
- A copy from another stream whose image lives in the integrated registry under the source stream is
  rewritten to the destination stream (`<registry>/<ns>/<stream>@sha256:...`), unless `reference: true`.
Mirrors openshift-apiserver pkg/image/apiserver/registry/imagestream/strategy.go (tagsChanged,
updateChangedTrackingTags); there the copy resolves inside the write itself, and a source stream or
image that does not exist is a 422 (the admission webhook refuses it here, see webhook.py).
A resolved image is a new item at the head of the tag's history, unless it is the image already there.
A tag that cannot be resolved gets an `ImportSuccess=False` condition and keeps its history.
"""

from __future__ import annotations

import copy
import logging
import threading
from collections.abc import Callable
from pathlib import Path

from sandbox.openshift.appsutil import IS_PATH, now
from sandbox.openshift.informer import Informer, key_of
from sandbox.openshift.kube import JSON, ApiError, Kube
from sandbox.openshift.workqueue import WorkQueue, run_workers

log = logging.getLogger(__name__)
REGISTRY_HOST = "image-registry.openshift-image-registry.svc:5000"
Key = tuple[str, str]
Listener = Callable[[str, JSON], None]


class Unresolved(Exception):
    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason, self.message = reason, message


def add_tag_event(tag: JSON, event: JSON) -> bool:
    """Put `event` at the head of a status tag's history (OpenShift's AddTagEventToImageStream)."""
    items = tag.get("items") or []
    if not items:
        tag["items"] = [event]
        return True
    prev = items[0]
    same_ref = prev.get("dockerImageReference") == event["dockerImageReference"]
    same_image = prev.get("image") == event["image"]
    same_gen = prev.get("generation") == event["generation"]
    if same_ref and same_image and same_gen:
        return False
    if same_ref and same_image:
        prev["generation"] = event["generation"]
    elif same_image and same_gen:
        prev["dockerImageReference"] = event["dockerImageReference"]
    else:
        tag["items"] = [event, *items]
    return True


def _to_destination(ref: str, image: str, source: Key, dest: Key) -> str:
    """An integrated-registry reference of the source stream, re-pointed at the destination stream."""
    prefix = f"{REGISTRY_HOST}/{source[0]}/{source[1]}"
    if source != dest and image and (ref.startswith(prefix + "@") or ref.startswith(prefix + ":")):
        return f"{REGISTRY_HOST}/{dest[0]}/{dest[1]}@{image}"
    return ref


class ImageStreamController:
    """Watches all ImageStreams and keeps their status tags resolved."""

    def __init__(self, kube: Kube, registry_dir: Path, workers: int = 2) -> None:
        self.kube, self.registry_dir, self.workers = kube, registry_dir, workers
        self.informer = Informer(kube, f"{IS_PATH}/imagestreams", self._on_event)
        self.queue = WorkQueue("imagestreams")
        self.listeners: list[Listener] = []
        self._lock = threading.Lock()
        self._sources: dict[Key, set[Key]] = {}  # stream -> streams it reads from
        self._dependents: dict[Key, set[Key]] = {}  # stream -> streams that read from it
        self._pins: dict[str, str] = {}

    def start(self) -> None:
        self.informer.start()
        self.informer.synced.wait()
        run_workers(self.queue, self.sync, self.workers)

    # -- lookups for other controllers -----------------------------------------------------------------

    def tag_image(self, namespace: str, stream: str, tag: str) -> str | None:
        """The image reference a tag resolves to now (its newest item), None if unresolved.

        With `referencePolicy: Local` that is the integrated registry's pull-through reference
        (`<status.dockerImageRepository>@sha256:...`), else the item's dockerImageReference.
        """
        obj = self.informer.get(namespace, stream) or {}
        for t in obj.get("status", {}).get("tags") or []:
            if t.get("tag") == tag and t.get("items"):
                item = t["items"][0]
                spec: JSON = next(
                    (s for s in obj.get("spec", {}).get("tags") or [] if s.get("name") == tag), {}
                )
                repo = obj["status"].get("dockerImageRepository")
                if (spec.get("referencePolicy") or {}).get("type") == "Local" and repo and item.get("image"):
                    return f"{repo}@{item['image']}"
                ref = item.get("dockerImageReference")
                return str(ref) if ref else None
        return None

    # -- events -----------------------------------------------------------------------------------------

    def _on_event(self, etype: str, obj: JSON) -> None:
        key = key_of(obj)
        self.queue.add(key)
        self._notify(etype, obj)

    def _notify(self, etype: str, obj: JSON) -> None:
        """Tell streams that read from `obj` and the listeners (the DC controller) that it changed."""
        with self._lock:
            dependents = list(self._dependents.get(key_of(obj), ()))
        for d in dependents:
            self.queue.add(d)
        for listener in self.listeners:
            listener(etype, obj)

    # -- reconcile --------------------------------------------------------------------------------------

    def sync(self, key: Key) -> None:
        stream = self.informer.get(*key)
        if stream is None:
            self._set_sources(key, set())
            return
        status, sources = self._desired_status(stream)
        self._set_sources(key, sources)
        if status == stream.get("status"):
            return
        body = {**stream, "status": status}
        ns, name = key
        try:
            updated = self.kube.request("PUT", f"{IS_PATH}/namespaces/{ns}/imagestreams/{name}/status", body)
        except ApiError as e:
            if e.status == 404:
                return
            if e.status == 409:  # someone wrote the stream since we read it: read it again
                fresh = self.kube.get(f"{IS_PATH}/namespaces/{ns}/imagestreams/{name}")
                self.informer.store(fresh)
            raise
        self.informer.store(updated)
        self._notify("MODIFIED", updated)

    def _set_sources(self, key: Key, sources: set[Key]) -> None:
        with self._lock:
            for old in self._sources.pop(key, set()) - sources:
                deps = self._dependents.get(old)
                if deps:
                    deps.discard(key)
                    if not deps:
                        del self._dependents[old]
            if sources:
                self._sources[key] = sources
                for s in sources:
                    self._dependents.setdefault(s, set()).add(key)

    def _desired_status(self, stream: JSON) -> tuple[JSON, set[Key]]:
        ns, name = key_of(stream)
        status = copy.deepcopy(stream.get("status") or {})
        status["dockerImageRepository"] = f"{REGISTRY_HOST}/{ns}/{name}"
        sources: set[Key] = set()
        # same-stream references may depend on tags resolved in the same pass: iterate to a fixed point
        for _ in range(3):
            tags, sources = self._resolve_tags(stream, status)
            before = status.get("tags")
            if tags:
                status["tags"] = tags
            else:
                status.pop("tags", None)
            if status.get("tags") == before:
                break
        return status, sources

    def _resolve_tags(self, stream: JSON, status: JSON) -> tuple[list[JSON], set[Key]]:
        ns, name = key_of(stream)
        generation = int(stream.get("metadata", {}).get("generation") or 1)
        current = {t.get("tag"): t for t in status.get("tags") or []}
        sources: set[Key] = set()
        out: list[JSON] = []
        for spec_tag in stream.get("spec", {}).get("tags") or []:
            tname = spec_tag.get("name")
            tag = copy.deepcopy(current.get(tname) or {"tag": tname, "items": None})
            src = spec_tag.get("from") or {}
            kind, ref_name = src.get("kind"), src.get("name") or ""
            tgen = int(spec_tag.get("generation") or generation)
            src_ns = src.get("namespace") or ns
            if kind in ("ImageStreamTag", "ImageStreamImage"):
                src_stream = ref_name.partition("@" if kind == "ImageStreamImage" else ":")[0]
                if kind == "ImageStreamTag" and ":" not in ref_name:
                    src_stream = name
                sources.add((src_ns, src_stream))
            items = tag.get("items") or []
            stale = not items or int(items[0].get("generation") or 0) < tgen or bool(tag.get("conditions"))
            other_stream = kind == "ImageStreamTag" and ":" in ref_name and (src_ns, src_stream) != (ns, name)
            if (kind in ("DockerImage", "ImageStreamImage") or other_stream) and not stale:
                out.append(tag)
                continue
            if kind == "DockerImage" and spec_tag.get("reference") and ref_name:
                # strategy.go tagsChanged: a reference tag is not imported; its status item is the name
                # alone, with no image (tagReferenceToTagEvent)
                tag.pop("conditions", None)
                add_tag_event(
                    tag, {"created": now(), "dockerImageReference": ref_name, "image": "", "generation": tgen}
                )
                out.append(tag)
                continue
            try:
                if kind == "DockerImage":
                    ref, image = self._docker_image(ref_name)
                elif kind == "ImageStreamImage":
                    ref, image = self._stream_image(src_ns, ref_name)
                elif kind == "ImageStreamTag":
                    ref, image = self._stream_tag(src_ns, ref_name, (ns, name), status)
                else:
                    if tname in current:
                        out.append(tag)
                    continue
            except Unresolved as u:
                cond = {
                    "type": "ImportSuccess",
                    "status": "False",
                    "lastTransitionTime": now(),
                    "reason": u.reason,
                    "message": u.message,
                    "generation": tgen,
                }
                old = (tag.get("conditions") or [{}])[0]
                if {**old, "lastTransitionTime": None} != {**cond, "lastTransitionTime": None}:
                    tag["conditions"] = [cond]
                out.append(tag)
                continue
            tag.pop("conditions", None)
            if kind in ("ImageStreamImage", "ImageStreamTag") and not spec_tag.get("reference"):
                ref = _to_destination(ref, image, (src_ns, src_stream), (ns, name))
            add_tag_event(
                tag, {"created": now(), "dockerImageReference": ref, "image": image, "generation": tgen}
            )
            out.append(tag)
        return sorted(out, key=lambda t: t.get("tag") or ""), sources

    def _docker_image(self, name: str) -> tuple[str, str]:
        if "@sha256:" in name:
            return name, name.rsplit("@", 1)[1]
        ref = self._pins.get(name)
        if ref is None:
            from sandbox import registry

            try:
                ref = registry.pin(self.registry_dir, name)
            except ValueError as e:
                raise Unresolved("InternalError", f"Internal error occurred: {e}") from e
            self._pins[name] = ref
        return ref, ref.rsplit("@", 1)[1]

    def _stream_image(self, ns: str, name: str) -> tuple[str, str]:
        stream_name, _, digest = name.partition("@")
        src = self.informer.get(ns, stream_name)
        for t in (src or {}).get("status", {}).get("tags") or []:
            for item in t.get("items") or []:
                if item.get("image") == digest:
                    return item["dockerImageReference"], digest
        raise Unresolved("NotFound", f'imagestreamimage.image.openshift.io "{name}" not found')

    def _stream_tag(self, ns: str, name: str, own: Key, own_status: JSON) -> tuple[str, str]:
        stream_name, _, tag = name.rpartition(":")
        stream_name = stream_name or own[1]
        if (ns, stream_name) == own:
            tags = own_status.get("tags") or []
        else:
            tags = ((self.informer.get(ns, stream_name) or {}).get("status") or {}).get("tags") or []
        for t in tags:
            if t.get("tag") == tag and t.get("items"):
                item = t["items"][0]
                return item["dockerImageReference"], item["image"]
        shown = f"{stream_name}:{tag}"
        raise Unresolved("NotFound", f'imagestreamtag.image.openshift.io "{shown}" not found')
