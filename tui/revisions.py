"""What the journal says about each revision of a workload (issue 19 point 6), and the rollback warning.

Like the OpenShift console's revision history, but with what only rollguard knows: which revision a
run verified, which one a run rolled out and saw fail, and which came after every revision the journal
knows of, i.e. was made by hand (`oc rollout latest`, an edit, another tool), unless its cause names a
rollguard run (`rollguard.kinds.revision_causes`: the change-cause rollguard writes with each rollout it
starts, so a killed run's revision or a running repair's is theirs). A revision older than all
the journal remembers gets no mark: the journal keeps the last verified state, not all history, so
"never verified" there would be a guess. The kind's own word (Failed, Cancelled from the RC's
openshift.io/deployment.phase and .cancelled, the Deployment's progress) comes first.
Pure: the detail screen shows `revision_marks`; the confirm dialog shows `rollback_warning`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from rollguard.cluster.journal import Journal
from rollguard.core.structs import EntryPhase
from rollguard.kinds.causes import Cause, RevisionCause

VERIFIED_PHASES = (
    EntryPhase.COMPLETE,
    EntryPhase.RESUMED,
    EntryPhase.REDEPLOYED,
    EntryPhase.UNCHANGED,
)
BAD_STATUS = {"Failed": "failed", "Cancelled": "cancelled"}


def revision_marks(
    revisions: Iterable[tuple[int, str]],
    journal: Journal | None,
    key: str,
    *,
    causes: Mapping[int, RevisionCause] | None = None,
) -> dict[int, str]:
    """Revision number -> its mark, from (number, status word) pairs and the group's journal.

    ``key`` is the workload's journal key (``dc/NAME``, ``deployment/NAME``). ``causes``: each revision's
    cause (`rollguard.kinds.revision_causes`): a revision newer than the journal knows that a rollguard run
    made (its change-cause names the run: a killed run's, a repair still running) is that run's, not one
    made by hand.
    """
    causes = causes or {}
    entry = journal.workloads.get(key) if journal is not None else None
    known: dict[int, str] = {}
    if journal is not None and entry is not None:
        success = journal.last_success
        if entry.verified.revision:
            in_success = key in (success.get("templates") or {})
            run = success.get("run_id") if in_success else ""
            known[entry.verified.revision] = f"verified by run {run}" if run else "verified"
        if entry.revision_after:
            run = journal.run_id or "?"
            if entry.phase in VERIFIED_PHASES:
                known[entry.revision_after] = f"verified by run {run}"
            elif entry.phase is EntryPhase.FAILED:
                known[entry.revision_after] = f"failed in run {run}"
            else:
                known.setdefault(entry.revision_after, f"rolled out by run {run}, not verified")
    newest_known = max(known, default=0)
    marks: dict[int, str] = {}
    for number, status in revisions:
        words = [BAD_STATUS[status]] if status in BAD_STATUS else []
        if number in known:
            words.append(known[number])
        elif entry is not None and number > newest_known:
            words.append(_unknown_to_the_journal(causes.get(number)))
        marks[number] = ", ".join(words)
    return marks


def _unknown_to_the_journal(cause: RevisionCause | None) -> str:
    """The mark of a revision newer than the journal knows: whose it is, by its cause."""
    if cause is None or cause.cause is not Cause.ROLLGUARD:
        return "made by hand"
    if not cause.run_id:
        return f"made by a rollguard {cause.command}, not verified"
    how = "reverted" if cause.reverting else "rolled out"
    return f"{how} by run {cause.run_id}, not verified"


def rollback_warning(number: int, status: str, mark: str) -> str:
    """The confirm dialog's warning before rolling back to ``number`` ("" when it was verified)."""
    if status in BAD_STATUS or mark.startswith(tuple(BAD_STATUS.values())) or "failed in run" in mark:
        return f"revision {number} {status.lower() if status in BAD_STATUS else 'failed'}: rolling back to it brings back a rollout that did not complete"
    if "verified by run" in mark or mark == "verified":
        return ""
    how = f" ({mark})" if mark else ""
    return f"revision {number} was never verified by a rollguard run the journal remembers{how}"
