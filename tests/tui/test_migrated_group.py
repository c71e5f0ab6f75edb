"""A group `rollguard migrate` migrated shows as such in the TUI's group view (its DCs kept at 0 are the
way back, with the commands that finish or revert it), never as damage (issue 26 point 4)."""

from __future__ import annotations

from rollguard.cluster.journal import Journal
from rollguard.tui.screens.detail import journal_text
from rollguard.tui.views import GroupView


def test_kept_dcs_come_from_a_kept_migration_only() -> None:
    journal = Journal(namespace="shop", selector="app=shop", command="migrate", state="succeeded")
    assert journal.kept_dcs == []
    journal.migration = {"state": "kept", "replicas": {"worker": 1, "api": 2}}
    assert journal.kept_dcs == ["api", "worker"]
    journal.migration["state"] = "finished"
    assert journal.kept_dcs == []


def test_the_group_view_says_migrated_and_how_to_finish_or_revert() -> None:
    group = GroupView(
        namespace="shop", selector="app=shop", journal="rollguard-app-shop-1", kept_dcs=("api",)
    )
    text = journal_text(group)
    assert "[b]migrated[/] to Deployments; dc/api kept at 0 replicas" in text
    assert "rollguard migrate -l 'app=shop' --finish deletes them, --revert returns to them" in text
    assert "migrated" not in journal_text(GroupView(namespace="shop", selector="app=shop", journal="j"))
