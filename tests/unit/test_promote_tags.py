"""The pure parts of promoting a tag the group's triggers follow (issue 13 point 8): what the journal
keeps of a target tag, how it is put back, and which changes the platform's triggers made for the run."""

from __future__ import annotations

from rollguard.cluster.journal import Journal
from rollguard.plan.tags import previous_tag, tag_restored, with_tag_restored, without_promotion_effects
from rollguard.run.promote import wait_restored

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


def test_a_restored_tag_counts_as_restored_once_its_status_names_the_earlier_image():
    prev = {"spec": None, "image": "sha256:old", "reference": OLD_REF}
    stale = stream([], [{"tag": "latest", "items": [{"image": "sha256:new"}, {"image": "sha256:old"}]}])
    caught_up = stream([], [{"tag": "latest", "items": [{"image": "sha256:old"}, {"image": "sha256:new"}]}])
    assert not tag_restored(stale, "latest", prev)
    assert not tag_restored(None, "latest", prev)
    assert tag_restored(caught_up, "latest", prev)
    assert tag_restored(stale, "latest", {"spec": None, "image": "", "reference": ""})  # had no image


class CatchingUp:
    """An API whose stream status follows a restored spec tag only on the third read (the emulation's
    stream controller writes it just after the spec; a DockerImage tag is imported again on OpenShift)."""

    def __init__(self) -> None:
        self.reads = 0

    def get(self, res: object, name: str, *, namespace: str | None = None) -> dict:
        self.reads += 1
        image = "sha256:old" if self.reads >= 3 else "sha256:new"
        return stream([], [{"tag": "latest", "items": [{"image": image}]}])


def test_a_revert_waits_for_the_restored_tag_and_names_one_that_never_resolves():
    tags = {"api:latest": {"spec": None, "image": "sha256:old", "reference": OLD_REF}}
    api = CatchingUp()
    assert wait_restored(api, namespace="shop", tags=tags, seconds=10, stopped=lambda: False) == []  # type: ignore[arg-type]
    assert api.reads == 3
    never = {"api:latest": {"spec": None, "image": "sha256:other", "reference": ""}}
    assert wait_restored(api, namespace="shop", tags=never, seconds=0, stopped=lambda: False) == [
        "api:latest"
    ]  # type: ignore[arg-type]
