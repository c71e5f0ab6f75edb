"""Annotation trigger entries read as OpenShift reads them (issue 24, point 4; pure).

library-go pkg/image/trigger/annotations.go (parseContainerReference, findContainerBySelector,
UpdateObjectFromImages), pkg/image/referencemutator/pods.go (GetContainerByName: init containers first),
openshift-controller-manager pkg/image/controller/trigger/cache.go (triggerCacheIndexer).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from rollguard.kinds.triggers import (
    Streams,
    annotation_container,
    annotation_edit,
    firing,
    moving,
    parse_annotation_triggers,
    watched_streams,
)

TEMPLATE = {
    "spec": {"initContainers": [{"name": "migrate"}], "containers": [{"name": "app"}, {"name": "side"}]}
}


@pytest.mark.parametrize(
    ("path", "container"),
    [
        ('spec.template.spec.containers[?(@.name=="app")].image', "app"),
        ('spec.template.spec.initContainers[?(@.name=="migrate")].image', "migrate"),
        ('spec.template.spec.containers[?(@.name=="migrate")].image', "migrate"),  # init first, any prefix
        ('spec.template.spec.initContainers[?(@.name=="side")].image', "side"),
        ("spec.template.spec.initContainers[0].image", "migrate"),
        ("spec.template.spec.containers[1].image", "side"),
        ("spec.template.spec.initContainers[1].image", None),  # an index counts in the prefix's list
        ('spec.template.spec.containers[?(@.name=="nope")].image', None),  # no such container
        ('spec.template.spec.containers[?(@.name=="app")].env', None),
        ('spec.jobTemplate.spec.template.spec.containers[?(@.name=="app")].image', None),
    ],
)
def test_the_container_a_field_path_names(path: str, container: str | None) -> None:
    assert annotation_container({"fieldPath": path}, TEMPLATE) == container


def workload(*entries: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": {"annotations": {"image.openshift.io/triggers": json.dumps(list(entries))}},
            "spec": {"template": TEMPLATE}}  # fmt: skip


def entry(container: str, **source: Any) -> dict[str, Any]:
    return {"from": {"name": "tool:latest", **source},
            "fieldPath": f'spec.template.spec.containers[?(@.name=="{container}")].image'}  # fmt: skip


def test_only_an_image_stream_tag_without_api_version_follows_its_tag() -> None:
    parsed = parse_annotation_triggers(workload(
        entry("app", kind="ImageStreamTag"),
        entry("side"),  # no kind: nothing defaults an annotation
        entry("migrate", kind="ImageStreamTag", apiVersion="image.openshift.io/v1"),
    ))  # fmt: skip
    assert [(t.containers, t.follows_tag, t.resolved_on_write) for t in parsed] == [
        (("app",), True, True), (("side",), False, True), (("migrate",), False, True)
    ]  # fmt: skip
    _fed, reasons = moving(parsed, moving_tags=frozenset({"latest"}))
    assert reasons == ["trigger of app follows tool:latest"]
    # a write of the object resolves every entry not paused, followed or not
    assert watched_streams(parsed, namespace="ns") == {("ns", "tool")}
    streams = Streams(found={("ns", "tool"): {"status": {"tags": [{"tag": "latest", "items": [
        {"dockerImageReference": "r/tool@sha256:1", "image": "sha256:1"}]}]}}})  # fmt: skip
    fire = firing(parsed, images={"app": "x", "side": "x", "migrate": "x"}, streams=streams, namespace="ns")
    assert fire == {"app": "r/tool@sha256:1", "side": "r/tool@sha256:1", "migrate": "r/tool@sha256:1"}


def test_a_name_without_a_colon_never_resolves() -> None:
    (parsed,) = parse_annotation_triggers(workload({**entry("app", kind="ImageStreamTag"), "from": {
        "kind": "ImageStreamTag", "name": "tool"}}))  # fmt: skip
    assert not parsed.follows_tag and not parsed.resolved_on_write


def test_an_image_set_on_an_init_container_pauses_its_entry_in_either_spelling() -> None:
    obj = workload(
        {"from": {"kind": "ImageStreamTag", "name": "tool:latest"},
         "fieldPath": 'spec.template.spec.containers[?(@.name=="migrate")].image'},
        {"from": {"kind": "ImageStreamTag", "name": "api:latest"},
         "fieldPath": 'spec.template.spec.containers[?(@.name=="app")].image'},
    )  # fmt: skip
    annotation_edit(obj, pause={"migrate"})
    first, second = json.loads(obj["metadata"]["annotations"]["image.openshift.io/triggers"])
    assert first["paused"] is True and "paused" not in second
