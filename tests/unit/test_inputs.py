"""Parsing of selectors, targets, image references and durations: pure, every refusal explains itself."""

from __future__ import annotations

import pytest

from rollguard.core.errors import RefusedError
from rollguard.core.structs import DC, DEPLOYMENT, WorkloadRef
from rollguard.plan.inputs import (
    parse_duration,
    parse_image_ref,
    parse_image_target,
    parse_namespace,
    parse_selector,
)

DIGEST = "sha256:" + "0123456789abcdef" * 4


@pytest.mark.parametrize(
    ("selector", "normalized"),
    [
        ("app=shop", "app=shop"),
        (" app = shop , tier!=db", "app=shop,tier!=db"),
        ("app==shop", "app=shop"),
        ("tier in (b, a),app", "app,tier in (a,b)"),
        ("!legacy,example.com/team=x", "!legacy,example.com/team=x"),
        ("app=", "app="),
        # One group, one spelling (issue 14): the same workloads selected give one lock and one journal.
        ("app in (rp)", "app=rp"),
        ("app in ( rp , rp )", "app=rp"),
        ("app notin (rp)", "app!=rp"),
        ("tier=b, app=rp,app=rp", "app=rp,tier=b"),
        ("tier in (b,a,b)", "tier in (a,b)"),
    ],
)
def test_selector_normalized(selector: str, normalized: str) -> None:
    assert parse_selector(selector) == normalized


@pytest.mark.parametrize(
    "selector",
    [
        "",
        "  ",
        "app=(x",
        "a b",
        "app=shop=x",
        "!app=x",
        "tier in ()",
        "tier in (a,,b)",
        "-bad=x",
        "app=" + "x" * 64,
        "Bad_Prefix/app=x",
        "app=$(rm -rf /)",
        "app=ü",
    ],
)
def test_selector_refused(selector: str) -> None:
    with pytest.raises(RefusedError) as err:
        parse_selector(selector)
    assert err.value.fix  # every refusal says how to fix it


@pytest.mark.parametrize(
    ("ref", "parts"),
    [
        (f"registry.local/shop/api@{DIGEST}", ("registry.local/shop/api", None, DIGEST)),
        ("registry.local:5000/shop/api:v1.2-rc", ("registry.local:5000/shop/api", "v1.2-rc", None)),
        (
            f"image-registry.openshift-image-registry.svc:5000/ns/api:t@{DIGEST}",
            ("image-registry.openshift-image-registry.svc:5000/ns/api", "t", DIGEST),
        ),
    ],
)
def test_image_refs(ref: str, parts: tuple) -> None:
    assert parse_image_ref(ref) == parts


@pytest.mark.parametrize(
    "ref",
    [
        "registry.local/Shop/api:v1",
        "registry.local/api:v 1",
        "registry.local/api@sha256:abc",
        "registry.local/api:",
        ":v1",
        "registry.local/api:v1;rm",
        "a" * 600 + ":v1",
    ],
)
def test_image_refs_refused(ref: str) -> None:
    with pytest.raises(RefusedError, match="malformed"):
        parse_image_ref(ref)


@pytest.mark.parametrize("ref", ["nginx", "registry.local:5000/shop/api", "quay.io/org/app"])
def test_reference_without_tag_or_digest_is_named_as_such(ref: str) -> None:
    with pytest.raises(RefusedError) as info:
        parse_image_ref(ref)
    assert "has no tag or digest" in str(info.value) and "malformed" not in str(info.value)
    assert f"{ref}@sha256:" in str(info.value)


def test_targets() -> None:
    t = parse_image_target(f"deploymentconfig/api/app=registry.local/api@{DIGEST}")
    assert (t.ref, t.container) == (WorkloadRef(DC, "api"), "app")
    assert parse_image_target("deploy/web=r.local/web:v2").ref == WorkloadRef(DEPLOYMENT, "web")


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("dc/api", "has no '='"),
        ("statefulset/api=r/x:v1", "unknown kind"),
        ("dc/API=r/x:v1", "not a valid object name"),
        ("dc/api/Side_Car=r/x:v1", "not a valid container name"),
        ("dc/a/b/c=r/x:v1", "malformed"),
        ("dc//app=r/x:v1", "malformed"),
    ],
)
def test_targets_refused(text: str, words: str) -> None:
    with pytest.raises(RefusedError, match=words):
        parse_image_target(text)


@pytest.mark.parametrize(("text", "seconds"), [("90s", 90), ("10m", 600), ("1h30m", 5400), ("45", 45)])
def test_durations(text: str, seconds: int) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "0s", "25h", "-5m", "10 minutes", "1d", "9" * 30])
def test_durations_refused(text: str) -> None:
    with pytest.raises(RefusedError):
        parse_duration(text)


@pytest.mark.parametrize("ns", ["", "Shop", "shop_api", "x" * 64, "-shop", "shop;ls"])
def test_namespaces_refused(ns: str) -> None:
    with pytest.raises(RefusedError, match="not a valid namespace"):
        parse_namespace(ns)
