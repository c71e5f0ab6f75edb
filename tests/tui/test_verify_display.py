"""The TUI on a group verifying its rollout, and on one whose last run failed a check (issue 25): the
group's journal view says `verifying` while the checks run, and the failed check's evidence (the run's
first error) once it ended."""

from __future__ import annotations

from rollguard.cluster.journal import Journal
from rollguard.core.structs import RunState
from rollguard.state.model import Group
from rollguard.tui.data import group_view
from rollguard.tui.screens.detail import journal_text


def group(journal: Journal, *, holder: str = "") -> Group:
    return Group(
        name="rollguard-app-shop-1a2b3c", namespace="shop", selector="app=shop", state=journal.state,
        run_id=journal.run_id, command=journal.command, actor=journal.actor, updated=journal.updated,
        error=journal.error, lock_holder=holder, lock_live=bool(holder), journal=journal,
    )  # fmt: skip


def test_a_verifying_run_shows_as_such() -> None:
    journal = Journal(namespace="shop", selector="app=shop")
    journal.open_run(run_id="r1", command="rollout", actor="tekton shop-cd/x", state=RunState.APPLYING)
    journal.state = RunState.VERIFYING
    view = group_view(group(journal, holder="tekton shop-cd/x run r1"))
    assert view.last_run is not None and view.last_run.state == "verifying"
    assert "[b]outcome[/] verifying" in journal_text(view)


def test_a_failed_checks_evidence_shows_on_its_group() -> None:
    journal = Journal(namespace="shop", selector="app=shop")
    journal.open_run(run_id="r2", command="rollout", actor="tekton shop-cd/x", state=RunState.APPLYING)
    journal.error = ("check 'health' (http) failed: timed out after 60s: 0/3 consecutive at best in 58 "
                     "request(s); last: 500 Internal Server Error, expected 200")  # fmt: skip
    journal.close_run(RunState.REVERTED)
    text = journal_text(group_view(group(journal)))
    assert "[b]outcome[/] reverted" in text
    assert "[b]error[/] check 'health' (http) failed: timed out after 60s" in text and "500 Internal" in text
