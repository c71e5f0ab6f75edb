"""The emulation's trigger index (sandbox/openshift/triggercache.py) against OpenShift's: the
``triggerCache`` of openshift-controller-manager pkg/image/controller/trigger/image_trigger_controller.go,
indexed by image stream and updated from each source's informer events, so that an image stream's change
queues exactly the objects whose triggers follow it now. Pure: no cluster."""

from __future__ import annotations

from sandbox.openshift.triggercache import TriggerCache

API = ("shop", "api")
WEB = ("shop", "web")
OTHER_NS_API = ("other", "api")


def test_an_object_is_found_from_every_stream_it_follows_and_only_in_its_namespace():
    cache = TriggerCache()
    cache.update(("shop", "dc1"), {API, WEB})
    cache.update(("shop", "dc2"), {API})
    cache.update(("other", "dc1"), {OTHER_NS_API})
    assert sorted(cache.followers(API)) == [("shop", "dc1"), ("shop", "dc2")]
    assert cache.followers(WEB) == [("shop", "dc1")]
    assert cache.followers(OTHER_NS_API) == [("other", "dc1")]


def test_a_changed_trigger_moves_the_object_and_a_deleted_one_leaves_every_stream():
    cache = TriggerCache()
    cache.update(("shop", "dc1"), {API, WEB})
    cache.update(("shop", "dc1"), {WEB})  # its trigger on api removed (oc set triggers --remove)
    assert cache.followers(API) == [] and cache.followers(WEB) == [("shop", "dc1")]
    cache.update(("shop", "dc1"), set())  # deleted, or no triggers left
    assert cache.followers(WEB) == [] and cache.followers(API) == []
