"""The members of a group that a rollout does not write, judged before its first write (pure, no I/O).

A run's verdict covers its whole group, not only its targets (README "What a run judges in its group"):
exit 0 is never printed beside a member that is not healthy on its verified state. So, for every member
the run does not change, from what the preflight read:

- **left unverified by a killed run of this group** (the journal is not final and the member's template
  is not its verified one): when it runs what that run set it to (the journal's targets, or a written
  entry), this run *finishes* it: watches it to completion with its own changes, and a failure returns it
  to its verified state with the rest (``finish``; one failing already when the run is about to write
  fails it before its first write: `rollguard.run.rollout.Rollout._failing_before_writes`). Anything else (a run that was reverting, a template
  nobody's journal names) refuses the run (exit 2), naming it and the command that finishes it.
- **failing** (its last rollout failed) or **never completed**: refuses the run (exit 2) unless
  ``--allow-failing`` / ``--allow-never-completed``; accepted, it is left as it is and named in the
  report and the summary (``accepted``).
- anything else, **healthy or rolling out by someone else's doing** (a colleague's hotfix): watched
  alongside the run's own changes, never written (``observe``): a success is claimed only once it is
  complete, and a revert leaves it as its owner set it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from rollguard.cluster.journal import Journal
from rollguard.core.errors import RefusedError
from rollguard.core.structs import EntryPhase, Obj, RolloutPhase
from rollguard.kinds import Kind
from rollguard.kinds.templates import same_template

if TYPE_CHECKING:  # the plans are rollout_decide's, which decides with this module
    from rollguard.plan.rollout_decide import WorkloadPlan

# A killed run's entry in these phases had its change written and not yet judged: finished by watching.
WRITTEN = frozenset({EntryPhase.PENDING, EntryPhase.APPLIED, EntryPhase.COMPLETE})


def never_completed(kind: Kind, obj: Obj, revisions: list[Obj]) -> bool:
    """Neither the current template nor any revision ever ran complete: nothing to revert to."""
    if kind.progress(obj, revisions).phase is RolloutPhase.COMPLETE:
        return False
    current = kind.new_revision(obj, revisions)
    return not any(
        kind.is_complete_revision(rev) or (rev is not current and kind.was_complete(rev)) for rev in revisions
    )


def _images(images: dict[str, str]) -> str:
    return ", ".join(f"{c}={i}" for c, i in sorted(images.items())) or "no images"


def judge_members(
    workloads: Iterable[WorkloadPlan],
    *,
    journal: Journal | None,
    carried: bool,
    namespace: str,
    selector: str,
    allow_never_completed: bool,
    allow_failing: bool,
) -> None:
    """Mark every member the run does not write as finished, observed or accepted; raise `RefusedError`
    for one the run cannot be judged beside (the first, in the group's order)."""
    for plan in workloads:
        if plan.needs_change:
            continue
        entry = journal.workloads.get(plan.key) if carried and journal is not None else None
        live = plan.snapshot.template
        if (
            entry is not None
            and entry.phase not in (EntryPhase.EDITED, EntryPhase.DELETED)
            and not same_template(live, entry.verified.template)
        ):
            assert journal is not None
            _finish_or_refuse(plan, journal=journal, namespace=namespace, selector=selector)
            continue
        progress = plan.kind.progress(plan.snapshot.raw, plan.revisions)
        if (
            not plan.remove_on_revert
            and entry is None
            and never_completed(plan.kind, plan.snapshot.raw, plan.revisions)
        ):
            if not allow_never_completed:
                raise RefusedError(
                    f"{plan.key} never completed a rollout and this run does not change it: it could not be "
                    "judged healthy beside the run's changes",
                    fix=f"get it to roll out once (oc rollout status {plan.key}), give it a new image in this "
                    f"run (--image {plan.key}=REF), or pass --allow-never-completed to roll out the rest "
                    "beside it (the report and the summary then name it)",
                )
            plan.accepted = "never completed a rollout, accepted with --allow-never-completed"
        elif progress.phase is RolloutPhase.FAILED and not plan.remove_on_revert:
            if not allow_failing:
                raise RefusedError(
                    f"{plan.key} is failing and this run does not change it: {progress.message}",
                    fix=f"repair it first (rollguard revert -n {namespace} {plan.key}), give it a new image in "
                    f"this run (--image {plan.key}=REF), or pass --allow-failing to roll out the rest beside "
                    "it (the report and the summary then name it)",
                )
            plan.accepted = f"failing ({progress.message}), accepted with --allow-failing"
        else:
            plan.observe = True
            continue
        plan.notes.append(f"{plan.accepted}: left as it is, not verified by this run")


def _finish_or_refuse(plan: WorkloadPlan, *, journal: Journal, namespace: str, selector: str) -> None:
    """A member a killed run of this group left on a change nobody verified: finish it, or refuse."""
    entry = journal.workloads[plan.key]
    live = plan.snapshot.images
    verified = entry.verified.images
    targets = entry.target_images
    matches = bool(targets) and all(live.get(c) == i for c, i in targets.items())
    written = entry.created or matches or (not targets and entry.phase is not EntryPhase.PENDING)
    if entry.phase in WRITTEN and written:
        plan.finish = True
        plan.notes.append(
            f"left by run {journal.run_id} (journal '{journal.state}') on a change nobody verified "
            f"({_images(live)}): finished by this run, watched to completion; a failure returns it to its "
            f"verified state ({_images(verified)})"
        )
        return
    raise RefusedError(
        f"{plan.key} is on a change no run verified: run {journal.run_id} of this group ended "
        f"'{journal.state}' with it on {_images(live)} (its verified state: {_images(verified)})",
        fix=f"finish that run first: rollguard revert -n {namespace} -l '{selector}' returns the group to its "
        f"verified state; or give {plan.key} its image in this run (--image {plan.key}=REF)",
    )
