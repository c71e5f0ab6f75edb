"""The platforms rollguard claims (the Task's `tekton.dev/platforms`, the release workflow's builds) are
exactly those requirements.lock has a wheel of every package for.

The image installs the lock with --only-binary=:all: --require-hashes: on a platform where one locked
package has no wheel (PyYAML 6.0.4 has none for ppc64le) the build fails, so claiming it would send a
team to a build that cannot succeed. tests/tekton/lock-wheels.txt (make lock: one pip download per
platform) says which wheel each platform gets; this test checks it is current with the lock, that each
wheel's tags fit the platform and UBI 9, and that the claims match it.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from packaging.tags import Tag
from packaging.utils import canonicalize_name, parse_wheel_filename

from tests.tekton import lock_wheels
from tests.tekton.manifests import ROOT, parse_lock, task

RELEASE = ROOT / ".github" / "workflows" / "release.yaml"


def recorded(text: str | None = None) -> dict[str, dict[str, tuple[str, str, str]]]:
    """platform -> name -> (version, wheel file or "-", sha256 or "no-wheel")."""
    text = lock_wheels.RECORD.read_text() if text is None else text
    out: dict[str, dict[str, tuple[str, str, str]]] = {}
    for line in text.splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        platform, pin, wheel, digest = line.split()
        name, _, version = pin.partition("==")
        out.setdefault(platform, {})[str(canonicalize_name(name))] = (
            version,
            wheel,
            digest.removeprefix("sha256:"),
        )
    return out


def complete(platforms: dict[str, dict[str, tuple[str, str, str]]], lock_text: str | None = None) -> set[str]:
    """The platforms with a wheel of every locked package, checked against the lock (versions, hashes)."""
    lock = parse_lock(lock_wheels.LOCK.read_text() if lock_text is None else lock_text)
    assert set(platforms) == set(lock_wheels.ARCH), "every UBI 9 platform is looked up: run make lock"
    ok = set()
    for platform, packages in platforms.items():
        if any(digest == "no-wheel" for _, _, digest in packages.values()):
            for name, (version, _, _) in packages.items():
                assert name in lock and lock[name][0] == version, (
                    f"{platform}: {name}=={version} is not the lock's: run make lock"
                )
            continue
        assert set(packages) == set(lock), (
            f"{platform}: {set(packages) ^ set(lock)} differ from the lock: run make lock"
        )
        for name, (version, wheel, digest) in packages.items():
            assert lock[name][0] == version, (
                f"{platform}: {name}=={version}, the lock has {lock[name][0]}: run make lock"
            )
            assert digest in lock[name][1], f"{platform}: {wheel}'s hash is not in the lock: run make lock"
            assert all(fits(tag, platform) for tag in parse_wheel_filename(wheel)[3]), (
                f"{wheel} does not fit {platform}"
            )
        ok.add(platform)
    return ok


def fits(tag: Tag, platform: str) -> bool:
    """A wheel tag the image's pip accepts: CPython 3.11 (or pure Python), and `any` or a manylinux of
    the platform's architecture no newer than UBI 9's glibc."""
    if tag.interpreter not in ("cp311", "py3", "py2", "cp3") or tag.abi not in ("cp311", "abi3", "none"):
        return False
    if tag.platform == "any":
        return True
    arch = lock_wheels.ARCH[platform]
    m = re.fullmatch(rf"manylinux(?:_(\d+)_(\d+)|(1|2010|2014))_{arch}", tag.platform)
    if not m:
        return False
    legacy = {"1": (2, 5), "2010": (2, 12), "2014": (2, 17)}
    glibc = legacy[m[3]] if m[3] else (int(m[1]), int(m[2]))
    return glibc <= lock_wheels.GLIBC


def claimed_by_the_task() -> set[str]:
    return set(task()["metadata"]["annotations"]["tekton.dev/platforms"].split(","))


def built_by_the_release() -> set[str]:
    workflow = yaml.safe_load(RELEASE.read_text())
    platforms: set[str] = set()
    for job in workflow["jobs"].values():
        matrix = (job.get("strategy") or {}).get("matrix") or {}
        for entry in matrix.get("include", []):
            if "platform" in entry:
                platforms.add(entry["platform"])
    return platforms


def test_the_task_claims_exactly_the_platforms_the_lock_resolves_for() -> None:
    ok = complete(recorded())
    assert ok, "no platform has a wheel of every locked package"
    assert claimed_by_the_task() == ok, (
        f"tekton.dev/platforms claims {sorted(claimed_by_the_task())}; the lock has wheels for {sorted(ok)}"
    )


def test_the_release_builds_each_claimed_platform() -> None:
    assert built_by_the_release() == claimed_by_the_task()


def test_the_docs_name_the_claimed_platforms() -> None:
    text = (ROOT / "docs" / "tekton.md").read_text()
    for platform in lock_wheels.ARCH:
        arch = platform.removeprefix("linux/")
        said = re.search(rf"built for [^.]*\b{arch}\b", text, re.I)
        assert bool(said) == (platform in claimed_by_the_task()), f"docs/tekton.md on {arch}"


@pytest.mark.parametrize("change", ["claim-ppc64le", "stale-record", "foreign-hash"])
def test_the_check_catches(change: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The checks above can fail: a claim the lock cannot build, a record older than the lock, a wheel
    whose hash the lock does not hold."""
    text = lock_wheels.RECORD.read_text()
    lock_text = lock_wheels.LOCK.read_text()
    if change == "claim-ppc64le":
        with pytest.raises(AssertionError):
            assert claimed_by_the_task() | {"linux/ppc64le"} == complete(recorded())
        return
    if change == "stale-record":
        lock_text = re.sub(r"(?m)^pyyaml==\S+", "pyyaml==6.0.9", lock_text)
    else:
        text = re.sub(r"(linux/amd64 six==\S+ \S+ sha256:)[0-9a-f]{64}", r"\g<1>" + "0" * 64, text)
    with pytest.raises(AssertionError):
        complete(recorded(text), lock_text)


def test_the_release_pushes_by_digest_with_an_sbom_and_a_signature() -> None:
    """The release recipe, read statically: on a version tag, each platform built with the labels' build
    args and pushed by digest, an SPDX SBOM attested to it, the index signed by digest (keyless cosign)."""
    workflow = yaml.safe_load(RELEASE.read_text())
    assert workflow[True]["push"]["tags"] == ["v*"]  # YAML 1.1 reads the key `on` as True
    scripts = "\n".join(s.get("run", "") for job in workflow["jobs"].values() for s in job["steps"])
    for arg in ("VERSION", "REVISION", "CREATED"):
        assert f"--build-arg {arg}=" in scripts, arg
    assert "push-by-digest=true" in scripts and '--platform "$PLATFORM"' in scripts
    assert "syft scan" in scripts and "cosign attest --yes --type spdxjson" in scripts
    assert re.search(r'cosign sign --yes --recursive "\$ref"', scripts) and 'ref="$image@$digest"' in scripts
    for job in workflow["jobs"].values():
        if "cosign" in json_dump(job):
            assert job["permissions"]["id-token"] == "write", "keyless signing needs the OIDC token"


def json_dump(node: object) -> str:
    import json

    return json.dumps(node)
