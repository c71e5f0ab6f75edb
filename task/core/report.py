"""The run's outcome as data, its JSON report and its Tekton results.

``status`` is a `ExitStatus` and each workload's ``outcome`` a `WorkloadOutcome`: StrEnums, so the JSON and
the Tekton results carry exactly the words pipelines test (``succeeded|reverted|refused|inconsistent|superseded``,
and ``dry-run`` for a ``--dry-run``, exit 0 like a success but never called one: nothing was done).
"""

from __future__ import annotations

import contextlib
import enum
import json
import os
import stat
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from rollguard.core.errors import EXIT_INCONSISTENT, EXIT_OK, EXIT_REFUSED, EXIT_REVERTED
from rollguard.core.structs import ExitStatus, Obj, WorkloadOutcome

EXIT_BY_STATUS = {
    ExitStatus.SUCCEEDED: EXIT_OK,
    ExitStatus.REVERTED: EXIT_REVERTED,
    ExitStatus.REFUSED: EXIT_REFUSED,
    ExitStatus.INCONSISTENT: EXIT_INCONSISTENT,
    ExitStatus.SUPERSEDED: EXIT_INCONSISTENT,
    ExitStatus.DRY_RUN: EXIT_OK,
}
TEKTON_RESULTS = "/tekton/results"
SUMMARY_LIMIT = 400


@dataclass
class WorkloadResult:
    kind: str
    name: str
    revision_before: int = 0
    revision_after: int = 0
    images_before: dict[str, str] = field(default_factory=dict)
    images_after: dict[str, str] = field(default_factory=dict)
    outcome: WorkloadOutcome = WorkloadOutcome.UNCHANGED
    paused: bool = False
    paused_before: bool = False
    notes: list[str] = field(default_factory=list)
    error: str = ""
    pods: list[Obj] = field(default_factory=list)
    revert_changes: list[str] = field(default_factory=list)  # every field its revert changed, old -> new


class CheckOutcome(enum.StrEnum):
    """How a post-rollout check (``--verify``, ``--bake``) ended: the report's ``checks[].outcome``."""

    PASSED = "passed"
    FAILED = "failed"
    NOT_RUN = "not-run"  # the run failed (or was stopped) before its checks started
    STOPPED = "stopped"  # cut short: another check failed first, or the run was asked to stop
    VALIDATED = "validated"  # --dry-run: parsed, and checked against the server, never run


@dataclass
class CheckResult:
    """One check of the run: the report's ``checks`` entries. ``duration`` in seconds; ``evidence``: what
    it saw (statuses and answers, the Job's conditions and its pods' log tail, the query's values)."""

    name: str
    kind: str  # http, job, prometheus, bake
    outcome: CheckOutcome = CheckOutcome.NOT_RUN
    duration: float = 0.0
    evidence: str = ""


@dataclass
class Report:
    status: ExitStatus
    command: str
    namespace: str = ""
    namespace_from: str = ""  # why this namespace: -n, the context's, the pod's, or the default
    selector: str = ""
    run_id: str = ""
    error: str = ""
    errors: list[str] = field(default_factory=list)
    workloads: list[WorkloadResult] = field(default_factory=list)
    journal: str = ""
    # Group members the verdict names besides the counts: left as someone else set them, accepted
    # unhealthy, rolled out to no pod. The summary carries them too.
    members: list[str] = field(default_factory=list)
    checks: list[CheckResult] = field(default_factory=list)  # --verify and --bake, in the file's order

    @property
    def exit_code(self) -> int:
        return EXIT_BY_STATUS[self.status]

    def to_json(self) -> Obj:
        data: dict[str, Any] = asdict(self)
        data["exit_code"] = self.exit_code
        return data

    def summary(self) -> str:
        """One line for humans and the Tekton `summary` result (well under 1 KiB)."""
        counts: dict[str, int] = {}
        for w in self.workloads:
            counts[w.outcome] = counts.get(w.outcome, 0) + 1
        parts = ", ".join(f"{n} {k}" for k, n in sorted(counts.items()))
        text = f"{self.status}: {parts or 'no workloads'}"
        for line in self.members:
            text += f"; {line}"
        if self.checks:
            verdicts: dict[str, int] = {}
            for c in self.checks:
                verdicts[c.outcome] = verdicts.get(c.outcome, 0) + 1
            text += "; checks: " + ", ".join(f"{n} {k}" for k, n in sorted(verdicts.items()))
        if self.error:  # a success has no cause: what went wrong besides is a warning
            text += f"; {'warning' if self.status is ExitStatus.SUCCEEDED else 'cause'}: {self.error}"
        return text if len(text) <= SUMMARY_LIMIT else text[: SUMMARY_LIMIT - 3] + "..."


def pod_record(pod: Obj, *, revision: str) -> Obj:
    """The per-pod data the old pipeline stage returned, for release documentation."""
    meta, status = pod.get("metadata", {}), pod.get("status", {})
    return {
        "name": meta.get("name"),
        "namespace": meta.get("namespace"),
        "created": meta.get("creationTimestamp"),
        "deployment": revision,
        "node": pod.get("spec", {}).get("nodeName"),
        "ip": status.get("podIP"),
        "phase": status.get("phase"),
        "start_time": status.get("startTime"),
        "containers": [
            {"name": c.get("name"), "image": c.get("image"), "image_id": c.get("imageID")}
            for c in status.get("containerStatuses", []) or []
        ],
    }


def write_report(outcome: Report, path: str) -> None:
    write_json(outcome.to_json(), path)


# A report goes into workspaces shared with other tools' pods (OpenDevStack's `.ods/artifacts/`, whose
# next run's ods-start deletes it as UID 1001): they share the group (0, and the pod's fsGroup) but not
# the UID, so what rollguard creates there is group-writable, whatever the umask: the file and every
# directory it had to create (docs/opendevstack.md, "Files in the shared workspace").
REPORT_FILE_MODE = 0o664
GROUP_RWX = 0o070


def make_shared_dirs(directory: Path) -> None:
    """Create ``directory`` and its missing parents, each group-writable (g+rwx added to the umask's
    bits; a set-group-ID bit inherited from the parent stays). Directories that exist are left alone."""
    missing = []
    while not directory.exists():
        missing.append(directory)
        if directory.parent == directory:
            break
        directory = directory.parent
    for made in reversed(missing):
        try:
            made.mkdir()
        except FileExistsError:  # created meanwhile by someone else: theirs
            continue
        os.chmod(made, stat.S_IMODE(made.stat().st_mode) | GROUP_RWX)


def write_json(data: Any, path: str) -> None:
    """Write JSON to ``path`` as `rollguard.commands.common.check_report_path` judged it in preflight.

    A symlink is followed (its target written, the link kept); a character device or FIFO
    (``/dev/stdout``, a pipe) is written in place, so it stays what it is and a failed write (``/dev/full``)
    raises; anything else is a regular file replaced atomically: a reader never sees half a report. The
    file is ``REPORT_FILE_MODE`` (0664) and the directories created for it group-writable, so the next
    run of a pipeline sharing the workspace under another UID can delete them.
    """
    given = Path(path).expanduser()

    def emit(stream: Any) -> None:
        # streamed: json.dumps with indent first builds the whole text from millions of small pieces
        # (tens of MB for a cluster-wide drift-check report, the largest allocation of a big run)
        json.dump(data, stream, indent=2, sort_keys=True)
        stream.write("\n")

    try:
        mode = given.stat().st_mode  # through symlinks, /dev/stdout's included
    except FileNotFoundError:
        mode = 0
    if stat.S_ISCHR(mode) or stat.S_ISFIFO(mode):
        with open(given, "w") as stream:  # by the name given: /dev/stdout resolves to no openable path
            emit(stream)
        return
    target = Path(os.path.realpath(given))
    make_shared_dirs(target.parent)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as stream:
            emit(stream)
            stream.flush()
            os.fsync(stream.fileno())
        os.chmod(tmp, REPORT_FILE_MODE)  # not mkstemp's 0600: group-writable, see above
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def default_results_dir() -> str | None:
    return TEKTON_RESULTS if os.path.isdir(TEKTON_RESULTS) else None


def write_results(outcome: Report, directory: str) -> None:
    """Tekton results: ``status`` (one word) and ``summary`` (one line), without trailing newlines."""
    base = Path(directory)
    base.mkdir(parents=True, exist_ok=True)
    (base / "status").write_text(outcome.status)
    (base / "summary").write_text(outcome.summary())
