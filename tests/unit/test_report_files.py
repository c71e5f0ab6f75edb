"""A report rollguard writes into a workspace shared with OpenDevStack can be deleted by the next run's
ods-start, which runs as another UID.

ODS's tasks run as UID 1001 (their images' `USER 1001`; the `pipeline` ServiceAccount's pipelines-scc
keeps it) in group 0; rollguard's step runs under restricted-v2 as the namespace's assigned UID, also in
group 0, and both pods get the namespace's fsGroup. ods-start begins every run by deleting the checkout
(cmd/start/main.go: deleteDirectoryContentsSpareCache, os.RemoveAll per entry; any error is log.Fatal,
which fails the start task and so the run). Deleting a file needs write permission on its directory:
the directories rollguard creates must be group-writable, not 0755. Each scenario forks processes with
those UIDs and groups (root needed) and a umask of 022, the containers' default.
"""

from __future__ import annotations

import os
import shutil
import stat
from collections.abc import Callable
from pathlib import Path

import pytest

from rollguard.core.report import write_json

ODS_UID = 1001  # build/images/Dockerfile.start (and every ODS task image): USER 1001
ROLLGUARD_UID = 1000770000  # restricted-v2: the first UID of the namespace's range
FS_GROUP = 1000770000  # the namespace's first supplemental group: both pods' fsGroup

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="switching UIDs needs root")


def as_user(uid: int, groups: list[int], action: Callable[[], None]) -> str:
    """Run ``action`` in a child process as ``uid`` with primary group 0; "" or the error it raised."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # child
        os.close(read)
        message = b""
        try:
            os.umask(0o022)
            os.setgroups(groups)
            os.setgid(0)
            os.setuid(uid)
            action()
        except BaseException as exc:
            message = f"{type(exc).__name__}: {exc}".encode() or b"error"
        os.write(write, message)
        os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as stream:
        out = stream.read().decode()
    os.waitpid(pid, 0)
    return out


def ods_start_cleanup(checkout: Path) -> Callable[[], None]:
    """What ods-start does first: remove every entry of the checkout (but .ods-cache)."""

    def clean() -> None:
        for entry in checkout.iterdir():
            if entry.name == ".ods-cache":
                continue
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry)
            else:
                entry.unlink()

    return clean


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    tmp_path.chmod(0o755)  # pytest makes it 0700: the other UIDs must reach the workspace below
    for parent in tmp_path.parents:
        if parent == Path("/tmp") or parent == Path("/"):
            break
        parent.chmod(parent.stat().st_mode | 0o055)  # group 0 too: the forked users run in it
    return tmp_path / "workspace"


def test_a_report_under_ods_artifacts_is_deleted_by_the_next_ods_start(checkout: Path) -> None:
    """Storage with fsGroup support (block storage, the usual PVC): the kubelet hands the volume to the
    pod's fsGroup, directories group-writable and set-group-ID. ods-start (UID 1001) created
    `.ods/artifacts`; rollguard creates `rollguard/` in it and the report; the next ods-start deletes all.
    With the directory 0755 (before) the report could not be deleted and the next run stopped."""
    artifacts = checkout / ".ods" / "artifacts"
    artifacts.mkdir(parents=True)
    for d in (checkout, checkout / ".ods", artifacts):  # what the kubelet's fsGroup pass leaves
        os.chown(d, ODS_UID, FS_GROUP)
        d.chmod(0o2775)
    report = artifacts / "rollguard" / "rollout-myproj-dev.json"

    assert as_user(ROLLGUARD_UID, [FS_GROUP], lambda: write_json({"status": "succeeded"}, str(report))) == ""
    made = report.parent.stat()
    assert made.st_uid == ROLLGUARD_UID and made.st_gid == FS_GROUP
    assert stat.S_IMODE(made.st_mode) & 0o070 == 0o070 and made.st_mode & stat.S_ISGID, oct(made.st_mode)
    assert stat.S_IMODE(report.stat().st_mode) == 0o664

    assert as_user(ODS_UID, [FS_GROUP], ods_start_cleanup(checkout)) == ""
    assert list(checkout.iterdir()) == []


def test_without_fsgroup_support_group_zero_is_the_shared_group(checkout: Path) -> None:
    """Storage without fsGroup support (NFS and the like): files keep their creator's UID and group 0, and
    ods-start's `.ods/artifacts` is 0755: the pipeline's step before the rollout (docs/opendevstack.md's
    `image-ref` task, UID 1001) creates `rollguard/` group-writable; rollguard writes the report there
    and ods-start deletes both."""
    artifacts = checkout / ".ods" / "artifacts"

    def ods_start() -> None:
        artifacts.mkdir(parents=True)  # as ods-start: MkdirAll(0755) under umask 022

    def prepare() -> None:  # docs/opendevstack.md's image-ref task does this
        (artifacts / "rollguard").mkdir()
        (artifacts / "rollguard").chmod(0o2775)

    checkout.mkdir()
    os.chown(checkout, ODS_UID, 0)
    assert as_user(ODS_UID, [], ods_start) == ""
    report = artifacts / "rollguard" / "rollout-myproj-dev.json"
    # rollguard alone could not even create its folder there: the preflight would refuse (exit 2)
    assert "PermissionError" in as_user(ROLLGUARD_UID, [], lambda: write_json({}, str(report)))
    assert as_user(ODS_UID, [], prepare) == ""
    assert as_user(ROLLGUARD_UID, [], lambda: write_json({"status": "reverted"}, str(report))) == ""
    assert report.stat().st_gid == 0 and stat.S_IMODE(report.stat().st_mode) == 0o664
    assert as_user(ODS_UID, [], ods_start_cleanup(checkout)) == ""
    assert list(checkout.iterdir()) == []


def test_existing_directories_are_left_as_they_are(tmp_path: Path) -> None:
    """Only what rollguard creates is made group-writable; a directory someone else made keeps its mode."""
    theirs = tmp_path / "theirs"
    theirs.mkdir(mode=0o750)
    theirs.chmod(0o750)
    write_json({}, str(theirs / "new" / "report.json"))
    assert stat.S_IMODE(theirs.stat().st_mode) == 0o750
    assert stat.S_IMODE((theirs / "new").stat().st_mode) & 0o070 == 0o070
