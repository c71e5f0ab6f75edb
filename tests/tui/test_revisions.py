"""Issue 19 point 6: the revision history marks what the journal knows, and a rollback to a revision no
run verified is confirmed under a warning. Marks are pure (`rollguard.tui.revisions`); the Pilot test
reads them off the detail screen of the fake cluster's reference case. Issue 30 points 5 and 6: a revision
newer than the journal knows that a rollguard run made (its change-cause names the run: a killed run's, a
repair still running) is that run's, not "made by hand"; each revision shows its cause."""

from __future__ import annotations

from rollguard.cluster.journal import Journal, WorkloadEntry
from rollguard.core.structs import EntryPhase, VerifiedState
from rollguard.kinds.causes import Cause, RevisionCause
from rollguard.tui.revisions import revision_marks, rollback_warning
from rollguard.tui.screens.confirm import ConfirmScreen
from rollguard.tui.screens.detail import DetailScreen
from tests.helpers.tui import SIZE, make_app, settle
from tests.helpers.tui_objects import rollout_from_another_shell


def _journal(*, verified: int, after: int, phase: EntryPhase) -> Journal:
    entry = WorkloadEntry(
        kind="Deployment",
        name="api",
        verified=VerifiedState(template={}, triggers=None, revision=verified, images={}, paused=False),
        phase=phase,
        revision_after=after,
    )
    return Journal(
        namespace="ns",
        selector="app=a",
        run_id="run-2",
        workloads={"deployment/api": entry},
        last_success={"run_id": "run-1", "templates": {"deployment/api": {}}},
    )


def test_marks_from_the_journal() -> None:
    journal = _journal(verified=3, after=4, phase=EntryPhase.FAILED)
    revisions = [(6, "Complete"), (5, "Complete"), (4, "Failed"), (3, "Complete"), (2, "Complete")]
    assert revision_marks(revisions, journal, "deployment/api") == {
        6: "made by hand",
        5: "made by hand",
        4: "failed, failed in run run-2",
        3: "verified by run run-1",
        2: "",  # older than the journal remembers: no guess
    }
    ok = _journal(verified=3, after=4, phase=EntryPhase.COMPLETE)
    assert revision_marks([(4, "Complete")], ok, "deployment/api") == {4: "verified by run run-2"}
    assert revision_marks([(1, "Cancelled")], None, "deployment/api") == {1: "cancelled"}


def test_a_revision_a_rollguard_run_made_is_that_runs() -> None:
    journal = _journal(verified=3, after=0, phase=EntryPhase.APPLIED)  # killed after its write
    revisions = [(6, "Complete"), (5, "Running"), (4, "Complete"), (3, "Complete")]
    causes = {
        6: RevisionCause(Cause.CONFIG, "app env"),
        5: RevisionCause(Cause.ROLLGUARD, run_id="run-2", command="redeploy"),
        4: RevisionCause(Cause.ROLLGUARD, run_id="run-2", command="rollout", reverting=True),
    }
    assert revision_marks(revisions, journal, "deployment/api", causes=causes) == {
        6: "made by hand",
        5: "rolled out by run run-2, not verified",
        4: "reverted by run run-2, not verified",
        3: "verified by run run-1",
    }
    stamp_only = {5: RevisionCause(Cause.ROLLGUARD, command="redeploy")}  # no mark: an older rollguard
    assert revision_marks([(5, "Complete")], journal, "deployment/api", causes=stamp_only) == {
        5: "made by a rollguard redeploy, not verified"
    }
    warning = rollback_warning(5, "Complete", "rolled out by run run-2, not verified")
    assert "never verified" in warning and "run-2" in warning


def test_rollback_warning() -> None:
    assert rollback_warning(3, "Complete", "verified by run run-1") == ""
    assert "never verified" in rollback_warning(5, "Complete", "made by hand")
    assert "made by hand" in rollback_warning(5, "Complete", "made by hand")
    assert "never verified" in rollback_warning(2, "Complete", "")
    assert "failed" in rollback_warning(4, "Failed", "failed")
    assert "cancelled" in rollback_warning(4, "Cancelled", "cancelled")


async def test_a_revision_made_by_hand_is_marked_and_its_rollback_warned(fake):
    app = make_app(fake)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("down", "down", "d")  # dc2: revisions dc2-2 (Failed), dc2-1
        await settle(app, pilot)
        screen = app.screen
        assert isinstance(screen, DetailScreen)
        marks = {r.number: r.mark for r in screen.detail.revisions}
        # a DC rollout from another shell: revision 3, which no rollguard run made
        rollout_from_another_shell(fake, phase="Complete")
        await pilot.press("ctrl+r")
        await settle(app, pilot)
        marks = {r.number: r.mark for r in screen.detail.revisions}
        assert marks[3] == "made by hand", marks
        assert marks[2].startswith("failed"), marks
        assert marks[1].startswith("verified"), marks
        screen.query_one("#revisions").move_cursor(row=1)  # revision 2: failed
        await pilot.pause()
        assert screen.chosen_revision() == 2
        assert "failed" in screen.action_warning("revert", "revision")
        screen.query_one("#revisions").move_cursor(row=2)  # revision 1: verified, no warning
        await pilot.pause()
        assert screen.action_warning("revert", "revision") == ""
        screen.query_one("#revisions").move_cursor(row=0)  # revision 3: by hand (the current one)
        await pilot.pause()
        assert screen.chosen_revision() == 3
        warning = screen.action_warning("revert", "revision")
        assert "revision 3 was never verified" in warning and "made by hand" in warning, warning
        screen.query_one("#revisions").move_cursor(row=1)
        await pilot.pause()
        await pilot.press("t")  # the dialog itself carries the warning above the plan
        await settle(app, pilot)
        dialog = app.screen
        assert isinstance(dialog, ConfirmScreen) and dialog.target.to_revision == 2
        assert "revision 2 failed" in str(dialog.query_one("#warning").render())


async def test_a_killed_runs_revision_is_attributed_to_it_with_its_cause(fake):
    """dc2's revision 3 carries a run's change-cause naming revision 3 (as rollguard writes it with the
    rollout it starts): the history names that run, not "made by hand", and shows each revision's cause."""
    app = make_app(fake)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        rollout_from_another_shell(
            fake, phase="Running", change_cause="rollguard rollout run 20261203-081500-1a2b3c (revision 3)"
        )
        await pilot.press("ctrl+r")
        await settle(app, pilot)
        await pilot.press("down", "down", "d")  # dc2
        await settle(app, pilot)
        screen = app.screen
        assert isinstance(screen, DetailScreen)
        by_number = {r.number: r for r in screen.detail.revisions}
        assert by_number[3].mark == "rolled out by run 20261203-081500-1a2b3c, not verified", by_number[3]
        assert by_number[3].cause == "rollguard rollout run 20261203-081500-1a2b3c"
        assert by_number[1].cause == "created"
        table = screen.query_one("#revisions")
        assert "rollguard rollout run 20261203-081500-1a2b3c" in str(table.get_row("3"))
