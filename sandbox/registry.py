"""The sandbox's image "registry": digests for tags, and fault injection by image reference.

There is no real registry. A digest is minted deterministically from the tagged reference it stands for,
and `pin` records which tag each minted digest came from (one small file per digest), so that an image
pinned by digest keeps the behaviour of its tag: a promoted `v2-crash` still crashes.

Behaviour rules, applied to the tagged reference (after resolving a digest), then to the container's
command and args (a hook pod runs its application's image with the hook's command, so the command says
what the hook does: `command: [migrate-slow120-exit0]`):
  - contains `-crash`    -> the container crashes (CrashLoopBackOff)
  - contains `-slow<N>`  -> ready N seconds after start
  - contains `-exit<N>`  -> a batch process (a Job's test image, a hook): runs 1 s, or S s with
                            `-slow<S>` too, then exits with code N
  - contains `-flakypull` -> its first pull fails (ErrImagePull, then ImagePullBackOff), the kubelet's
                            retry 3 s after start pulls it, then it is ready
  - contains `-dies<N>`  -> ready at once, then the process dies after N seconds and crash-loops (a
                            release that passes its rollout and breaks later: what --bake catches)
  - anything else        -> ready at once
In a pod that runs to completion (restartPolicy Never or OnFailure, no process emulated in it: hook pods,
a Custom strategy's own deployer image), a process that does not exit by these rules completes (exit 0)
when it would be ready: after 1 s, or N s with `-slow<N>` (`sandbox.podstatus`).
A malformed reference gives InvalidImageName; a digest this registry never minted gives ErrImagePull.
"""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
from pathlib import Path

# Grammar of github.com/distribution/reference, which the kubelet uses to parse image names.
_DOMAIN_COMPONENT = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
_DOMAIN = re.compile(rf"{_DOMAIN_COMPONENT}(?:\.{_DOMAIN_COMPONENT})*(?::[0-9]+)?")
_PATH_COMPONENT = re.compile(r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*")
_TAG = re.compile(r"[\w][\w.-]{0,127}")
_DIGEST = re.compile(r"sha256:([0-9a-f]{64})")
_SLOW = re.compile(r"-slow(\d+)")
_EXIT = re.compile(r"-exit(\d+)")
_DIES = re.compile(r"-dies(\d+)")
_NAME_MAX = 255

Behaviour = tuple[str] | tuple[str, int] | tuple[str, str] | tuple[str, int, int]


def digest_of(ref: str) -> str:
    """The digest the sandbox registry mints for a reference: sha256 of the reference text."""
    return "sha256:" + hashlib.sha256(ref.encode()).hexdigest()


def split_ref(ref: str) -> tuple[str, str | None, str | None]:
    """Split `repo[:tag][@sha256:hex]` into (repo, tag, digest); raise ValueError when malformed."""
    if not ref or ref != ref.strip() or any(c.isspace() for c in ref):
        raise ValueError(f"invalid reference format: {ref!r}")
    rest, _, digest = ref.partition("@")
    if digest and not _DIGEST.fullmatch(digest):
        raise ValueError(f"invalid digest in {ref!r}")
    repo, tag = rest, None
    slash = rest.rfind("/")
    colon = rest.rfind(":")
    if colon > slash:  # a colon before the last slash is a registry port, not a tag
        repo, tag = rest[:colon], rest[colon + 1 :]
        if not _TAG.fullmatch(tag):
            raise ValueError(f"invalid tag in {ref!r}")
    if not repo or len(repo) > _NAME_MAX:
        raise ValueError(f"invalid repository name in {ref!r}")
    parts = repo.split("/")
    # Docker's rule: the first component is a registry host only if it looks like one.
    if len(parts) > 1 and ("." in parts[0] or ":" in parts[0] or parts[0] == "localhost"):
        if not _DOMAIN.fullmatch(parts[0]):
            raise ValueError(f"invalid registry host in {ref!r}")
        parts = parts[1:]
    if not all(_PATH_COMPONENT.fullmatch(p) for p in parts):
        raise ValueError(f"repository name must be lowercase alphanumerics and separators: {ref!r}")
    return repo, tag, digest or None


def pin(registry_dir: Path | str, ref: str) -> str:
    """Mint (and record) the digest of a tagged reference; return `<repo>@sha256:<hex>`."""
    repo, _tag, digest = split_ref(ref)
    if digest:  # already pinned: nothing to mint
        return f"{repo}@{digest}"
    minted = digest_of(ref)
    _write_atomic(Path(registry_dir) / minted.removeprefix("sha256:"), ref)
    return f"{repo}@{minted}"


def resolve(registry_dir: Path | str, ref: str) -> str | None:
    """The tagged reference a digest reference was minted from (None if unknown); a tag ref as is."""
    _repo, _tag, digest = split_ref(ref)
    if not digest:
        return ref
    try:
        return (Path(registry_dir) / digest.removeprefix("sha256:")).read_text()
    except FileNotFoundError:
        return None


def image_id(registry_dir: Path | str, ref: str) -> str | None:
    """What a kubelet reports as `imageID`: `<repo>@<digest of the pulled tag>`, None if unpullable."""
    tagged = resolve(registry_dir, ref)
    if tagged is None:
        return None
    repo, _tag, digest = split_ref(ref)
    return f"{repo}@{digest or digest_of(tagged)}"


def behaviour(registry_dir: Path | str, ref: str, command: list[str] | None = None) -> Behaviour:
    """What the kubelet does with an image (run with ``command``, its command and args): ("crash",),
    ("slow", N), ("exit", N, after), ("dies", N), ("flaky-pull",), ("ready",) or ("pull-error", reason)."""
    try:
        tagged = resolve(registry_dir, ref)
    except ValueError:
        return ("pull-error", "InvalidImageName")
    if tagged is None:
        return ("pull-error", "ErrImagePull")
    text = " ".join([tagged, *(command or [])])
    if "-crash" in text:
        return ("crash",)
    dies = _DIES.search(text)
    if dies:
        return ("dies", max(int(dies.group(1)), 2))
    slow = _SLOW.search(text)
    exits = _EXIT.search(text)
    if exits:
        return ("exit", int(exits.group(1)) % 256, int(slow.group(1)) if slow else 1)
    if slow:
        return ("slow", int(slow.group(1)))
    if "-flakypull" in text:
        return ("flaky-pull",)
    return ("ready",)


def _write_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise
