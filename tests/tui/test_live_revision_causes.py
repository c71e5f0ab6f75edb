"""Issue 30 point 5 as the issue met it, on the live sandbox: a rollout killed (SIGKILL) while it watches
leaves a revision its journal never recorded; the TUI's revision history named it "made by hand". Now
the run's change-cause, which its write carried onto the DC and the RC encoded, attributes it: the mark
says the run rolled it out, not verified, and the Cause column names the run; the revision before it
shows how it came (created)."""

from __future__ import annotations

import signal

from rollguard.tui.screens.detail import DetailScreen
from tests.helpers.cluster import (
    IMAGE,
    OLD,
    SELECTOR,
    create_group,
    dc_body,
    journal_reaches,
    start_rollguard,
)
from tests.helpers.tui import SIZE, make_app, until


async def test_a_killed_runs_revision_is_its_own_in_the_history(sandbox, namespace, client):
    create_group(client, namespace, [dc_body("dc1", OLD)])
    run = start_rollguard(
        sandbox.kubeconfig, "rollout", "-n", namespace, "-l", SELECTOR, "--image", f"dc/dc1={IMAGE}:v2-slow60"
    )
    journal = journal_reaches(client, namespace, "watching")
    run.send_signal(signal.SIGKILL)  # no revert, no last journal write: revision 2 is unknown to it
    run.wait(timeout=30)
    run_id = journal["run"]["id"]
    app = make_app(client, namespace=namespace, live=True)
    async with app.run_test(size=SIZE) as pilot:
        await until(
            pilot, lambda: app.inventory is not None and len(app.inventory.rows) == 1, timeout=60, what="dc1"
        )
        await pilot.press("down", "d")
        await until(pilot, lambda: isinstance(app.screen, DetailScreen), what="the detail")
        screen = app.screen
        assert isinstance(screen, DetailScreen)

        def revision(number: int):
            detail = screen.detail
            return next((r for r in detail.revisions if r.number == number), None) if detail else None

        await until(pilot, lambda: revision(2) is not None, timeout=30, what="revision 2 in the history")
        second, first = revision(2), revision(1)
        assert second is not None and first is not None
        assert second.mark == f"rolled out by run {run_id}, not verified", second
        assert second.cause == f"rollguard rollout run {run_id}", second
        assert first.cause == "created", first
        assert f"rollguard rollout run {run_id}" in str(screen.query_one("#revisions").get_row("2"))
