"""The image policy admission's local name resolution (`image.openshift.io/ImagePolicy`), for pod templates.

Mirrors openshift/kubernetes openshift-kube-apiserver/admission/imagepolicy (imagepolicy.go:
resolveImageReference, resolveImageStreamTag, resolutionConfig.RewriteImagePullSpec) with its default
configuration (apis/imagepolicy/v1/defaults.go: `resolveImages: Attempt` and `localNames: true` rules
for, among others, `apps/deployments` and `apps.openshift.io/deploymentconfigs`), and the reference an
ImageStreamTag reports (openshift-apiserver pkg/image/apiserver/registry/imagestreamtag/rest.go newISTag,
pkg/image/apiserver/internal/imageutil/helpers.go ResolveReferenceForTagEvent):

- a container image that is a single-segment name (`api`, `api:v2`: no registry, no namespace, no
  digest) is looked up as the ImageStreamTag `NAME:TAG` (`latest` when untagged) of the object's
  namespace;
- when that stream has `lookupPolicy.local: true` and the tag resolves, the image is rewritten to the
  tag's reference (under `referencePolicy: Local` the stream's `status.dockerImageRepository`) with the
  tag dropped and the image's digest: `image-registry.openshift-image-registry.svc:5000/ns/api@sha256:...`;
- a local stream whose tag does not exist yet rewrites to `status.dockerImageRepository:TAG`;
- anything else (a stream without `lookupPolicy.local`, no such stream, a full reference) is left as
  it is: resolution is only attempted, never required.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from sandbox.openshift.kube import JSON

StreamLookup = Callable[[str, str], JSON | None]


def _short_name(image: str) -> tuple[str, str] | None:
    """(name, tag) of a single-segment image reference, else None."""
    image = image.strip()
    if not image or "/" in image or "@" in image or any(c.isspace() for c in image):
        return None
    name, _, tag = image.partition(":")
    return (name, tag or "latest") if name else None


def _resolved(stream: JSON, tag: str) -> str | None:
    """The pull spec the admission writes for ``tag`` of a local-lookup ``stream``, or None."""
    status = stream.get("status") or {}
    local = str(status.get("dockerImageRepository") or "")
    entry = next((t for t in status.get("tags") or [] if t.get("tag") == tag), None)
    items = (entry or {}).get("items") or []
    if not items:
        return f"{local}:{tag}" if local else None  # the stream resolves names, the tag is not there yet
    item = items[0]
    image = str(item.get("image") or "")
    spec_tag = next((t for t in (stream.get("spec") or {}).get("tags") or [] if t.get("name") == tag), {})
    ref = str(item.get("dockerImageReference") or "")
    if (spec_tag.get("referencePolicy") or {}).get("type") == "Local" and local and image:
        ref = local
    if not image or not ref:
        return None
    repository = ref.split("@", 1)[0]
    last = repository.rsplit("/", 1)
    if ":" in last[-1]:  # drop a tag (a colon before the last slash is a registry port)
        repository = repository[: repository.rindex(":")]
    return f"{repository}@{image}"


def resolve_local_names(obj: JSON, template: Any, lookup: StreamLookup | None) -> Any:
    """A copy of the pod ``template`` of ``obj`` with its local names rewritten (see the module
    docstring); the template itself when nothing is rewritten."""
    if lookup is None or not isinstance(template, dict) or not isinstance(template.get("spec"), dict):
        return template
    namespace = str((obj.get("metadata") or {}).get("namespace") or "")
    out = copy.deepcopy(template)
    changed = False
    for key in ("initContainers", "containers"):
        for container in out["spec"].get(key) or []:
            if not isinstance(container, dict):
                continue
            short = _short_name(str(container.get("image") or ""))
            if short is None or not namespace:
                continue
            stream = lookup(namespace, short[0])
            if stream is None or not ((stream.get("spec") or {}).get("lookupPolicy") or {}).get("local"):
                continue
            resolved = _resolved(stream, short[1])
            if resolved and resolved != container.get("image"):
                container["image"] = resolved
                changed = True
    return out if changed else template
