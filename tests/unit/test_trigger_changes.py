"""Side effects on image triggers said in words, and container lookup across init and regular containers (pure)."""

from __future__ import annotations

from rollguard.kinds import ContainerNames
from rollguard.kinds.triggers import ImageTrigger, changes


def trigger(name: str, *, automatic: bool = True, containers: tuple[str, ...] = ("app",)) -> ImageTrigger:
    return ImageTrigger(
        containers=containers, from_kind="ImageStreamTag", name=name, namespace="", automatic=automatic
    )


def test_each_side_effect_has_its_line():
    key = "dc/api"
    assert changes([trigger("api:latest")], [trigger("api:latest")], key=key) == []
    manual = changes([trigger("api:latest")], [trigger("api:latest", automatic=False)], key=key,
                     reasons={"app": "why"})  # fmt: skip
    assert manual == [
        "image trigger of app on api:latest made manual (why): later pushes to api:latest no longer roll out "
        "dc/api (re-enable: oc set triggers dc/api --auto)"
    ]
    assert changes([trigger("api:latest")], [trigger("api:abc123")], key=key) == [
        "image trigger of app pinned to api:abc123 (was api:latest)"
    ]
    assert changes([trigger("api:v1", automatic=False)], [trigger("api:v1")], key=key) == [
        "image trigger of app on api:v1 made automatic again"
    ]
    gone_and_new = changes([trigger("a:x")], [trigger("b:y", containers=("side",))], key=key)
    assert gone_and_new == ["image trigger of app (a:x) removed", "image trigger of side (b:y) added"]


def test_container_names_find_init_containers_and_list_both():
    names = ContainerNames.of(
        {"spec": {"initContainers": [{"name": "migrate"}], "containers": [{"name": "app"}]}}
    )
    assert names.find(None) == "app" and names.find("migrate") == "migrate" and names.find("nope") is None
    assert names.listing() == "app; init containers: migrate"
    two = ContainerNames.of({"spec": {"containers": [{"name": "a"}, {"name": "b"}]}})
    assert two.find(None) is None and two.listing() == "a, b"


def test_the_tag_followed_is_after_the_first_colon_and_latest_when_empty():
    """library-go pkg/image/imageutil SplitImageStreamTag, as OpenShift's validation and trigger use it."""
    assert (trigger("api:v2").stream, trigger("api:v2").tag) == ("api", "v2")
    assert (trigger("api:").stream, trigger("api:").tag) == ("api", "latest")
    assert (trigger("api").stream, trigger("api").tag) == ("api", "latest")


def test_a_trigger_that_loses_only_the_namespace_the_api_wrote_in_is_not_pinned_elsewhere():
    """A promotion pins the trigger to the very tag it follows, without `from.namespace` (the API writes
    the workload's back in): no "pinned to api:latest (was api:latest)" line."""
    defaulted = ImageTrigger(containers=("app",), from_kind="ImageStreamTag", name="api:latest", namespace="shop",
                             automatic=True)  # fmt: skip
    assert changes([defaulted], [trigger("api:latest")], key="dc/api", namespace="shop") == []
    other = ImageTrigger(containers=("app",), from_kind="ImageStreamTag", name="api:latest", namespace="cd",
                         automatic=True)  # fmt: skip
    assert changes([other], [trigger("api:latest")], key="dc/api", namespace="shop") == [
        "image trigger of app pinned to api:latest (was cd/api:latest)"
    ]
