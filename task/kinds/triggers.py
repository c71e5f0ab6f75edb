"""Image triggers: parsing them, the rules that read them, and the edits rollguard makes to them (pure).

A workload may take a container's image from an ImageStreamTag through an *image trigger*: OpenShift's
trigger controller then rewrites the container's image whenever the tag moves. DeploymentConfigs declare
them in ``spec.triggers`` (``type: ImageChange``, with ``imageChangeParams``); Deployments (and other
kinds) in the ``image.openshift.io/triggers`` annotation (issue 13). Both parse into the same
`ImageTrigger`, so every rule that reads triggers (which stream a container follows, whether an
automatic trigger would fire, whether it follows a moving tag) is written once, here, for every kind.
Each kind module says where its triggers live and how an edit is written back; nothing outside
`rollguard.kinds` reads or writes a trigger.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterable, Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass

from rollguard.core.structs import Obj

IMAGE_STREAM_TAG = "ImageStreamTag"
INTEGRATED_REGISTRY = "image-registry.openshift-image-registry.svc:5000"
StreamKey = tuple[str, str]  # (namespace, ImageStream name)


@dataclass(frozen=True)
class ImageTrigger:
    """One image trigger: the containers it feeds from one image source."""

    containers: tuple[str, ...]
    from_kind: str  # ImageStreamTag (the default when absent), ImageStreamImage, DockerImage
    name: str  # ``stream:tag`` for an ImageStreamTag
    namespace: str  # "" = the workload's own namespace
    # absent means manual: `automatic` is a plain bool with `omitempty` and no default in openshift/api
    # apps/v1/types.go, so the API never stores `automatic: false` (oc writes `true` when it means it)
    automatic: bool
    last_image: str = ""  # the image the trigger last set (a DC's lastTriggeredImage)
    # Whether OpenShift's trigger controller indexes it by image stream, so that a tag move fires it. An
    # annotation entry is indexed only with `from.kind` exactly ImageStreamTag (nothing defaults it) and no
    # `from.apiVersion` (openshift-controller-manager pkg/image/controller/trigger/cache.go
    # triggerCacheIndexer); a DC trigger's kind is defaulted by the API.
    indexed: bool = True
    # Whether a write of the object itself has the controller resolve it and set its container's image:
    # a DC trigger of an ImageStreamTag; every annotation entry not paused, whatever its kind or
    # apiVersion (library-go pkg/image/trigger/annotations.go UpdateObjectFromImages checks neither).
    resolved_on_write: bool = True

    @property
    def follows_tag(self) -> bool:
        """Whether a move of its tag rolls the workload out (the tag is followed)."""
        return self.from_kind == IMAGE_STREAM_TAG and self.indexed

    @property
    def stream(self) -> str:
        return self.name.partition(":")[0]

    @property
    def tag(self) -> str:
        """The tag followed: after the first colon, ``latest`` when empty (library-go imageutil
        SplitImageStreamTag, which OpenShift's validation and trigger controller use alike)."""
        return self.name.partition(":")[2] or "latest"

    def stream_key(self, namespace: str) -> StreamKey:
        """Where its stream lives, given the workload's namespace."""
        return (self.namespace or namespace, self.stream)

    def text(self) -> str:
        """A few words, e.g. ``ImageChange app <- api:v2 (auto)``."""
        mode = "auto" if self.automatic else "manual"
        return f"ImageChange {','.join(self.containers)} <- {self.name or '?'} ({mode})"


# -- DeploymentConfig spec.triggers ------------------------------------------------------------------------


def _image_change(trigger: Obj) -> Obj | None:
    """The imageChangeParams of a DC ImageChange trigger, or None for any other trigger."""
    params = trigger.get("imageChangeParams")
    return params if trigger.get("type") == "ImageChange" and isinstance(params, dict) else None


def parse_dc_triggers(triggers: Iterable[Obj] | None) -> list[ImageTrigger]:
    """The image triggers among a DC's ``spec.triggers``."""
    found = []
    for trigger in triggers or []:
        params = _image_change(trigger)
        if params is None:
            continue
        source = params.get("from") or {}
        found.append(
            ImageTrigger(
                containers=tuple(params.get("containerNames") or []),
                from_kind=str(source.get("kind") or IMAGE_STREAM_TAG),
                name=str(source.get("name") or ""),
                namespace=str(source.get("namespace") or ""),
                automatic=bool(params.get("automatic", False)),
                last_image=str(params.get("lastTriggeredImage") or ""),
                # deploymentconfigs.go: the DC trigger controller skips any other kind entirely
                resolved_on_write=str(source.get("kind") or IMAGE_STREAM_TAG) == IMAGE_STREAM_TAG,
            )
        )
    return found


def dc_api_normal(triggers: Iterable[Obj], *, namespace: str) -> list[Obj]:
    """DC triggers as the API stores them (openshift/api apps/v1/types.go `omitempty`, openshift-apiserver
    defaults.go): no ``automatic: false``, empty ``containerNames`` or ``lastTriggeredImage``; ``from`` of
    kind ImageStreamTag in the DC's namespace unless it names another."""
    out = []
    for trigger in triggers:
        trigger = copy.deepcopy(trigger)
        params = _image_change(trigger)
        if params is not None:
            for key in ("automatic", "containerNames", "lastTriggeredImage"):
                if not params.get(key):
                    params.pop(key, None)
            source = params.setdefault("from", {})
            source["kind"] = source.get("kind") or IMAGE_STREAM_TAG
            source["namespace"] = source.get("namespace") or namespace
        out.append(trigger)
    return out


def dc_trigger_texts(triggers: Iterable[Obj] | None) -> tuple[str, ...]:
    """Every DC trigger in a few words: ``ConfigChange``, ``ImageChange app <- api:v2 (auto)``."""
    texts = []
    for trigger in triggers or []:
        parsed = parse_dc_triggers([trigger])
        texts.append(parsed[0].text() if parsed else str(trigger.get("type", "?")))
    return tuple(texts)


def dc_has_config_change(triggers: Iterable[Obj]) -> bool:
    return any(t.get("type") == "ConfigChange" for t in triggers)


def dc_set_manual(triggers: Iterable[Obj], containers: set[str]) -> None:
    """In place: every image trigger feeding one of ``containers`` becomes manual."""
    for trigger in triggers:
        params = _image_change(trigger)
        if params is not None and set(params.get("containerNames") or []) & containers:
            params["automatic"] = False


def dc_pin(triggers: Iterable[Obj], images: Mapping[str, str], *, trigger_tags: Mapping[str, str]) -> None:
    """In place: the triggers of containers given new ``images`` no longer undo them.

    A container promoted to ``trigger_tags[c]`` (``stream:tag``) has its trigger pinned to that tag with
    ``lastTriggeredImage`` = the image we set, so the trigger controller sees nothing new to do; any other
    container given an image directly has its (automatic) trigger made manual.
    """
    for trigger in triggers:
        params = _image_change(trigger)
        if not params:
            continue
        covered = [c for c in params.get("containerNames", []) if c in images]
        if not covered:
            continue
        tag = next((trigger_tags[c] for c in covered if c in trigger_tags), None)
        if tag is not None:
            params["from"] = {**params.get("from", {}), "name": tag}
            params["from"].pop("namespace", None)
            params["lastTriggeredImage"] = images[covered[0]]
        else:
            params["automatic"] = False


# -- the image.openshift.io/triggers annotation (Deployments and other kinds) -------------------------------

TRIGGERS_ANNOTATION = "image.openshift.io/triggers"
_BASE_PATH = "spec.template.spec."
_LISTS = ("containers", "initContainers")


def annotation_entries(obj: Obj) -> list[Obj] | None:
    """The entries of the ``image.openshift.io/triggers`` annotation (library-go pkg/image/trigger/
    types.go ObjectFieldTrigger: ``from``, ``fieldPath``, ``paused`` a JSON bool); None when absent or
    not a JSON list, which OpenShift's trigger controller ignores too."""
    raw = (obj.get("metadata", {}).get("annotations") or {}).get(TRIGGERS_ANNOTATION)
    if raw is None:
        return None
    try:
        entries = json.loads(raw)
    except ValueError:
        return None
    return entries if isinstance(entries, list) and all(isinstance(e, dict) for e in entries) else None


def annotation_container(entry: Obj, template: Obj) -> str | None:
    """The container an entry's fieldPath names, or None (not a container's image, or no such container).

    ``spec.template.spec.containers[SELECTOR].image`` or ``...initContainers[SELECTOR].image``, as
    library-go pkg/image/trigger/annotations.go (parseContainerReference, findContainerBySelector) reads
    it: an index counts in the list the prefix names; a name (``?(@.name=="x")``) is looked up in the
    init containers first, then the regular ones, whatever the prefix (referencemutator/pods.go
    GetContainerByName), so ``containers[?(@.name=="migrate")]`` names an init container ``migrate``.
    """
    path = str(entry.get("fieldPath") or "")
    if not path.startswith(_BASE_PATH):
        return None
    rest = path[len(_BASE_PATH) :]
    key = next((k for k in _LISTS if rest.startswith(k + "[")), None)
    if key is None:
        return None
    rest = rest[len(key) + 1 :]
    end = rest.find("]")
    if end < 0 or rest[end + 1 :].removeprefix(".") != "image":
        return None
    selector, spec = rest[:end], template.get("spec") or {}
    if selector.isdigit():
        containers = spec.get(key) or []
        index = int(selector)
        return str(containers[index].get("name")) if index < len(containers) else None
    prefix, suffix = '?(@.name=="', '")'
    if not (selector.startswith(prefix) and selector.endswith(suffix)):
        return None
    name = selector[len(prefix) : -len(suffix)]
    every = [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]
    return name if any(c.get("name") == name for c in every) else None


def parse_annotation_triggers(obj: Obj) -> list[ImageTrigger]:
    template = obj.get("spec", {}).get("template") or {}
    found = []
    for entry in annotation_entries(obj) or []:
        container = annotation_container(entry, template)
        if container is None:
            continue
        source = entry.get("from") or {}
        kind = str(source.get("kind") or "")  # an annotation is a plain string: nothing defaults it
        name = str(source.get("name") or "")
        splits = ":" in name  # library-go imageutil SplitImageStreamTag's ok: else it never resolves
        found.append(
            ImageTrigger(
                containers=(container,),
                from_kind=kind,
                name=name,
                namespace=str(source.get("namespace") or ""),
                automatic=entry.get("paused") is not True,
                indexed=kind == IMAGE_STREAM_TAG and not source.get("apiVersion") and splits,
                resolved_on_write=splits,
            )
        )
    return found


def annotation_edit(
    obj: Obj,
    *,
    pause: AbstractSet[str] = frozenset(),
    pin: Mapping[str, str] | None = None,
) -> None:
    """In place: pause the entries feeding ``pause``, point those feeding ``pin`` (container ->
    ``stream:tag``) at that tag, resumed; the annotation is written back only when it changed."""
    entries = annotation_entries(obj)
    if not entries:
        return
    template = obj.get("spec", {}).get("template") or {}
    before = copy.deepcopy(entries)
    for entry in entries:
        container = annotation_container(entry, template)
        if container is None:
            continue
        if pin and container in pin:
            entry["from"] = {**(entry.get("from") or {}), "kind": IMAGE_STREAM_TAG, "name": pin[container]}
            entry["from"].pop("namespace", None)
            entry.pop("paused", None)
        elif container in pause:
            entry["paused"] = True
    if entries != before:
        set_annotation_entries(obj, entries)


def set_annotation_entries(obj: Obj, entries: list[Obj]) -> None:
    meta = obj.setdefault("metadata", {})
    meta["annotations"] = {**(meta.get("annotations") or {}), TRIGGERS_ANNOTATION: json.dumps(entries)}


# -- rules over parsed triggers (every kind) ---------------------------------------------------------------


def stream_of(triggers: Iterable[ImageTrigger], *, container: str, image: str, namespace: str) -> str | None:
    """The ImageStream of ``namespace`` a container's image comes from, if any.

    Its image trigger's tag if one feeds it from ``namespace``, else an integrated-registry reference
    ``REGISTRY/namespace/stream[:tag|@digest]``.
    """
    for trigger in triggers:
        if trigger.follows_tag and container in trigger.containers and trigger.namespace in ("", namespace):
            return trigger.stream or None
    prefix = f"{INTEGRATED_REGISTRY}/{namespace}/"
    if image.startswith(prefix):
        return re.split(r"[:@/]", image[len(prefix) :])[0] or None
    return None


def watched_streams(triggers: Iterable[ImageTrigger], *, namespace: str) -> set[StreamKey]:
    """The streams whose tags the automatic triggers resolve on a write (what `firing` must be given)."""
    return {t.stream_key(namespace) for t in triggers if t.automatic and t.resolved_on_write}


@dataclass(frozen=True)
class Streams:
    """ImageStreams as read: by (namespace, name); None = does not exist; ``unreadable`` = could not be read."""

    found: Mapping[StreamKey, Obj | None]
    unreadable: frozenset[StreamKey] = frozenset()

    def tag_reference(self, key: StreamKey, tag: str) -> str:
        """The image ``tag`` of the stream points at now ("" when unknown; "?" when unreadable)."""
        if key in self.unreadable:
            return "?"  # the trigger cannot be judged: treat it as firing
        return tag_reference(self.found.get(key), tag)


def tag_reference(stream: Obj | None, tag: str, *, image: str = "") -> str:
    """The reference a trigger writes for ``tag`` of ``stream`` ("" when it has no image yet).

    library-go pkg/image/imageutil/helpers.go (ResolveLatestTaggedImage): the newest item's
    ``dockerImageReference``, except under ``referencePolicy: Local``, where it is the stream's own
    ``status.dockerImageRepository@<image>`` (pulled through the integrated registry). ``image``: only an
    item of that image counts (a promotion waiting for its copy to resolve).
    """
    status = (stream or {}).get("status", {})
    for entry in status.get("tags") or []:
        if entry.get("tag") != tag or not entry.get("items"):
            continue
        item = entry["items"][0]
        if image and item.get("image") != image:
            return ""
        spec: Obj = next(
            (t for t in (stream or {}).get("spec", {}).get("tags") or [] if t.get("name") == tag), {}
        )
        local = status.get("dockerImageRepository")
        if (spec.get("referencePolicy") or {}).get("type") == "Local" and local and item.get("image"):
            return f"{str(local).split('@')[0]}@{item['image']}"
        return str(item.get("dockerImageReference", ""))
    return ""


def firing(
    triggers: Iterable[ImageTrigger], *, images: Mapping[str, str], streams: Streams, namespace: str
) -> dict[str, str]:
    """Containers whose automatic trigger would at once overwrite their image in ``images`` -> that image.

    A write of the workload has the controller resolve every trigger `resolved_on_write`, followed
    (indexed) or not; the name is read as ``stream:tag`` whatever the entry's kind, as OpenShift does."""
    fire: dict[str, str] = {}
    for trigger in triggers:
        if not trigger.automatic or not trigger.resolved_on_write:
            continue
        ref = streams.tag_reference(trigger.stream_key(namespace), trigger.tag)
        for container in trigger.containers:
            if ref and images.get(container) != ref:
                fire[container] = ref
    return fire


def moving(triggers: Iterable[ImageTrigger], *, moving_tags: frozenset[str]) -> tuple[set[str], list[str]]:
    """(containers fed by an automatic trigger, reasons for those following a moving tag)."""
    fed: set[str] = set()
    reasons = []
    for trigger in triggers:
        if not trigger.automatic:
            continue
        fed.update(trigger.containers)
        if trigger.follows_tag and trigger.tag in moving_tags:
            reasons.append(f"trigger of {','.join(trigger.containers) or '?'} follows {trigger.name}")
    return fed, reasons


def changes(
    before: list[ImageTrigger],
    after: list[ImageTrigger],
    *,
    key: str,
    reasons: Mapping[str, str] | None = None,
    namespace: str = "",
) -> list[str]:
    """Every side effect a write has on image triggers, one line each, for the output, the report's
    notes, the Event and the TUI's confirmation: made manual, made automatic, pinned to another tag,
    added or removed. ``reasons``: container -> why its trigger was made manual. ``namespace``: the
    workload's, which a trigger without one follows (the API writes it in: not a change of tag)."""
    why = reasons or {}
    lines: list[str] = []
    olds = {t.containers: t for t in before}
    news = {t.containers: t for t in after}
    for containers, old in olds.items():
        new = news.get(containers)
        names = ",".join(containers) or "?"
        if new is None:
            lines.append(f"image trigger of {names} ({old.name}) removed")
            continue
        if (new.from_kind, new.name, new.namespace or namespace) != (
            old.from_kind,
            old.name,
            old.namespace or namespace,
        ):
            lines.append(
                f"image trigger of {names} pinned to {_where(new, namespace)} (was {_where(old, namespace)})"
            )
        if old.automatic and not new.automatic:
            reason = next((why[c] for c in containers if c in why), "")
            lines.append(
                f"image trigger of {names} on {new.name} made manual"
                + (f" ({reason})" if reason else "")
                + f": later pushes to {new.name} no longer roll out {key} "
                f"(re-enable: oc set triggers {key} --auto)"
            )
        elif new.automatic and not old.automatic:
            lines.append(f"image trigger of {names} on {new.name} made automatic again")
    lines += [
        f"image trigger of {','.join(c) or '?'} ({t.name}) added" for c, t in news.items() if c not in olds
    ]
    return lines


def _where(trigger: ImageTrigger, namespace: str) -> str:
    """The tag a trigger follows, with its namespace when that is not the workload's."""
    other = trigger.namespace and trigger.namespace != namespace
    return f"{trigger.namespace}/{trigger.name}" if other else trigger.name


def copied(triggers: list[Obj] | None) -> list[Obj] | None:
    return copy.deepcopy(triggers) if triggers is not None else None


def untrigger_promotion(out: Obj, snapshot: Obj, refs: dict[str, str]) -> None:
    """In place: each DC ImageChange trigger of ``out`` whose ``lastTriggeredImage`` is the promoted
    reference of one of its containers (``refs``: container -> reference) gets back the value it had in
    ``snapshot`` (none there: none). What the trigger controller records for a promotion is not an edit."""
    old_triggers = (snapshot.get("spec") or {}).get("triggers") or []
    for i, t in enumerate((out.get("spec") or {}).get("triggers") or []):
        params = t.get("imageChangeParams") if isinstance(t, dict) else None
        if not params or i >= len(old_triggers):
            continue
        ours = {refs[c] for c in params.get("containerNames") or [] if c in refs}
        if params.get("lastTriggeredImage") in ours:
            was = (old_triggers[i].get("imageChangeParams") or {}).get("lastTriggeredImage")
            if was:
                params["lastTriggeredImage"] = was
            else:
                params.pop("lastTriggeredImage", None)
