"""The sandbox registry: digests, pins and fault-injection rules (no cluster needed)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from sandbox import registry

APP = "registry.local/team/app"


def test_digest_is_sha256_of_the_reference() -> None:
    ref = f"{APP}:v2-crash"
    assert registry.digest_of(ref) == "sha256:" + hashlib.sha256(ref.encode()).hexdigest()
    assert registry.digest_of(ref) == registry.digest_of(ref)


def test_pin_records_the_tag_and_returns_a_digest_reference(tmp_path: Path) -> None:
    reg = tmp_path / "registry"  # created on demand
    pinned = registry.pin(reg, f"{APP}:v2-crash")
    digest = registry.digest_of(f"{APP}:v2-crash")
    assert pinned == f"{APP}@{digest}"
    assert (reg / digest.removeprefix("sha256:")).read_text() == f"{APP}:v2-crash"
    assert registry.pin(reg, pinned) == pinned


def test_pin_keeps_a_registry_port_in_the_repository(tmp_path: Path) -> None:
    pinned = registry.pin(tmp_path, "localhost:5000/app:v1")
    assert pinned.startswith("localhost:5000/app@sha256:")
    assert registry.pin(tmp_path, "app").startswith("app@sha256:")  # no tag: the reference as is


def test_resolve(tmp_path: Path) -> None:
    pinned = registry.pin(tmp_path, f"{APP}:v1")
    assert registry.resolve(tmp_path, pinned) == f"{APP}:v1"
    assert registry.resolve(tmp_path, f"{APP}:v1") == f"{APP}:v1"
    assert registry.resolve(tmp_path, f"{APP}@sha256:{'0' * 64}") is None


@pytest.mark.parametrize(
    ("ref", "expected"),
    [
        (f"{APP}:v1", ("ready",)),
        (f"{APP}:v2-crash", ("crash",)),
        (f"{APP}:v2-slow3", ("slow", 3)),
        (f"{APP}:v2-slow12-x", ("slow", 12)),
        (f"{APP}:v2-exit1", ("exit", 1, 1)),
        (f"{APP}:v2-exit0-slow30", ("exit", 0, 30)),
        (f"{APP}:v2-flakypull", ("flaky-pull",)),
        (f"{APP}:V1", ("ready",)),  # tags may be upper case
        ("nginx", ("ready",)),
        (f"{APP}@sha256:{'0' * 64}", ("pull-error", "ErrImagePull")),
        ("", ("pull-error", "InvalidImageName")),
        (" ", ("pull-error", "InvalidImageName")),
        (f"{APP}:v1 ", ("pull-error", "InvalidImageName")),
        ("registry.local/Team/app:v1", ("pull-error", "InvalidImageName")),
        ("Nginx", ("pull-error", "InvalidImageName")),
        (f"{APP}@sha256:abc", ("pull-error", "InvalidImageName")),
        (f"{APP}:bad:tag", ("pull-error", "InvalidImageName")),
    ],
)
def test_behaviour(tmp_path: Path, ref: str, expected: registry.Behaviour) -> None:
    assert registry.behaviour(tmp_path, ref) == expected


def test_behaviour_follows_a_pinned_digest_to_its_tag(tmp_path: Path) -> None:
    assert registry.behaviour(tmp_path, registry.pin(tmp_path, f"{APP}:v2-crash")) == ("crash",)
    assert registry.behaviour(tmp_path, registry.pin(tmp_path, f"{APP}:v2-slow5")) == ("slow", 5)
    assert registry.behaviour(tmp_path, registry.pin(tmp_path, f"{APP}:v3")) == ("ready",)


def test_the_command_says_what_a_hook_does_with_its_applications_image(tmp_path: Path) -> None:
    """A hook pod runs its container's image with the hook's command (oc pkg/cli/deployer/strategy/
    support/lifecycle.go createHookPodManifest): the rules read the command too."""
    assert registry.behaviour(tmp_path, f"{APP}:v1", ["/bin/migrate-slow120"]) == ("slow", 120)
    assert registry.behaviour(tmp_path, f"{APP}:v1", ["sh", "-c", "migrate-exit1"]) == ("exit", 1, 1)
    assert registry.behaviour(tmp_path, f"{APP}:v2-slow5", ["migrate"]) == ("slow", 5)
    assert registry.behaviour(tmp_path, f"{APP}@sha256:{'0' * 64}", ["x-exit0"]) == (
        "pull-error",
        "ErrImagePull",
    )


def test_image_id_is_the_digest_of_the_pulled_tag(tmp_path: Path) -> None:
    assert registry.image_id(tmp_path, f"{APP}:v1") == f"{APP}@{registry.digest_of(f'{APP}:v1')}"
    pinned = registry.pin(tmp_path, f"{APP}:v2")
    assert registry.image_id(tmp_path, pinned) == pinned
    assert registry.image_id(tmp_path, f"{APP}@sha256:{'1' * 64}") is None
