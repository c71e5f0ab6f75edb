"""Issue 19 point 4 on the live sandbox: on the reference case's failed dc2 (no rollguard run yet, so
no journal), `=` says there is no verified template and `D` on revision 1 diffs the live template (new
image, left by the failed rollout) against that revision's RC template (old image)."""

from __future__ import annotations

from rollguard.core.resources import DEPLOYMENT_CONFIGS
from rollguard.tui.screens.diff import DiffScreen
from tests.helpers.scenarios import reference_state
from tests.helpers.tui import SIZE, make_app, until


async def test_diff_against_no_journal_and_against_revision_1(sandbox, namespace, client):
    reference_state(client, namespace)
    app = make_app(client, namespace=namespace, live=True)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.inventory is not None and any(
            r.name == "dc2" and any(f.code == "failed" for f in r.findings) for r in app.inventory.rows),
            timeout=60, what="dc2 failed")  # fmt: skip
        await pilot.press("down", "down", "d")
        await until(pilot, lambda: type(app.screen).__name__ == "DetailScreen", timeout=30, what="detail")
        assert app.screen.row.name == "dc2"
        await pilot.press("equals_sign")
        await until(pilot, lambda: isinstance(app.screen, DiffScreen) and app.screen.diff is not None,
                    timeout=30, what="the diff")  # fmt: skip
        assert app.screen.diff.missing and app.screen.diff.left.startswith("no verified template")
        await pilot.press("escape")
        await until(pilot, lambda: type(app.screen).__name__ == "DetailScreen", timeout=30, what="detail")
        await until(pilot, lambda: app.screen.chosen_revision() is not None, timeout=30, what="revisions")
        await pilot.press("end", "D")
        await until(pilot, lambda: isinstance(app.screen, DiffScreen) and app.screen.diff is not None,
                    timeout=30, what="the diff")  # fmt: skip
        diff = app.screen.diff
        live = client.get(DEPLOYMENT_CONFIGS, "dc2", namespace=namespace)["spec"]["template"]
        image = live["spec"]["containers"][0]["image"]
        assert diff.left == "revision 1", diff.left
        added = [line.text for line in diff.lines if line.style == "add"]
        removed = [line.text for line in diff.lines if line.style == "remove"]
        assert any(image in text for text in added), added
        assert any("image:" in text and image not in text for text in removed), removed
