"""The pure parts of promoting a tag the group's triggers follow (issue 13 point 8): what the journal
keeps of a target tag, how it is put back, and which changes the platform's triggers made for the run."""

from __future__ import annotations

from rollguard.journal import Journal
from rollguard.promote import previous_tag, with_tag_restored, without_promotion_effects

OLD_REF = "registry.local/shop/api@sha256:old"
NEW_REF = "registry.local/shop/api@sha256:new"


def stream(spec_tags: list, status_tags: list) -> dict:
    return {"metadata": {"name": "api"}, "spec": {"tags": spec_tags}, "status": {"tags": status_tags}}


def test_a_spec_tag_is_kept_and_put_back_as_it_was():
    spec = {"name": "latest", "from": {"kind": "DockerImage", "name": "registry.local/shop/api:v1"}}
    before = stream([spec], [{"tag": "latest", "items": [{"image": "sha256:old"}]}])
    prev = previous_tag(before, "latest")
    assert prev == {"spec": spec, "image": "sha256:old", "reference": ""}
    moved = stream([{"name": "latest", "from": {"kind": "ImageStreamImage", "name": "api@sha256:new"}}], [])
    assert with_tag_restored(moved, "latest", prev)["spec"]["tags"] == [spec]


def test_a_status_only_tag_is_pointed_back_at_its_image_and_a_new_one_removed():
    before = stream([], [{"tag": "latest", "items": [{"image": "sha256:old"}]}])
    moved = stream([{"name": "latest", "from": {"kind": "ImageStreamImage", "name": "api@sha256:new"}}], [])
    (tag,) = with_tag_restored(moved, "latest", previous_tag(before, "latest"))["spec"]["tags"]
    assert tag["from"] == {"kind": "ImageStreamImage", "name": "api@sha256:old"}
    assert with_tag_restored(moved, "latest", previous_tag(stream([], []), "latest"))["spec"]["tags"] == []


def dc(image: str, last: str) -> dict:
    params = {"automatic": True, "containerNames": ["app"], "lastTriggeredImage": last,
              "from": {"kind": "ImageStreamTag", "name": "api:latest"}}  # fmt: skip
    return {"spec": {"triggers": [{"type": "ImageChange", "imageChangeParams": params}],
                     "template": {"spec": {"containers": [{"name": "app", "image": image}]}}}}  # fmt: skip


def test_the_triggers_rewrite_to_the_promoted_reference_is_the_runs_own():
    assert without_promotion_effects(dc(NEW_REF, NEW_REF), dc(OLD_REF, OLD_REF), {"app": NEW_REF}) == dc(
        OLD_REF, OLD_REF
    )


def test_any_other_image_is_still_someone_elses_edit():
    hotfix = "registry.local/shop/api@sha256:hotfix"
    out = without_promotion_effects(dc(hotfix, hotfix), dc(OLD_REF, OLD_REF), {"app": NEW_REF})
    assert out == dc(hotfix, hotfix)


def test_journals_without_tags_still_read_and_tags_round_trip():
    old = Journal(namespace="n", selector="app=x").to_json()
    assert "tags" not in old and Journal.from_json(old).tags == {}
    j = Journal(namespace="n", selector="app=x", tags={"api:latest": {"spec": None, "image": "sha256:a"}})
    assert Journal.from_json(j.to_json()).tags == j.tags
