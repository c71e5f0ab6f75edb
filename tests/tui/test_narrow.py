"""80 columns (issue 30 point 4): a row shows every finding in its short form, or as many as fit and `+N`
for the rest, and the columns after the findings stay in view (they were pushed off the screen with -A).
"""

from __future__ import annotations

import re

from rollguard.tui.views import Finding
from rollguard.tui.widgets.badges import badges
from rollguard.tui.widgets.workload_table import WorkloadTable
from tests.helpers.tui import make_app, settle
from tests.helpers.tui_objects import cluster_of, neighbours, reference_case


def test_badges_count_what_does_not_fit():
    three = [Finding("stuck"), Finding("paused"), Finding("drifted")]
    assert badges(three, short=True).plain == " stuck   pause   drift "
    assert badges(three, short=True, room=0).plain == " stuck   pause   drift "  # 0: no limit
    assert badges(three, short=True, room=23).plain == " stuck   pause   drift "
    assert badges(three, short=True, room=22).plain == " stuck   pause  +1"
    assert badges(three, short=True, room=20).plain == " stuck   pause  +1"
    assert badges(three, short=True, room=10).plain == " stuck  +2"
    assert badges(three, short=True, room=3).plain == "+3"
    for room in range(3, 30):
        assert badges(three, short=True, room=room).cell_len <= room


def shown_text(app) -> list[str]:
    table = app.screen.query_one(WorkloadTable)
    return [" ".join(str(cell) for cell in table.get_row_at(i)) for i in range(table.row_count)]


async def test_80_columns_with_three_findings_on_a_row_and_all_namespaces():
    fake = cluster_of(
        reference_case("payments-staging") + neighbours("web-frontend-prod") + reference_case("shop-dev")
    )
    app = make_app(fake, namespace=None, all_namespaces=True)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        table = app.screen.query_one(WorkloadTable)
        rows = {ln.key: i for i, ln in enumerate(table.lines)}
        dc3 = str(table.get_row_at(rows["shop-dev/dc/dc3"])[1])
        # stuck, paused, drifted: every one in short form, or the first ones and +N
        assert re.fullmatch(r" stuck \s+( pause \s+( drift )?)?(\+\d)?", dc3) or "drift" in dc3, dc3
        count = len(re.findall(r"stuck|pause|drift", dc3)) + int((re.search(r"\+(\d)", dc3) or [0, 0])[1])
        assert count == 3, dc3
        # the columns after the findings fit in the 80 columns
        widths = table._width
        assert sum(widths[c] + 2 for c in table._shown) <= 80 - 2, widths
    fake.close()


async def test_the_findings_column_is_refitted_when_the_terminal_widens_and_narrows_again():
    """Found trying it out in tmux (QA of issue 30): started at 80 columns, then widened to 120, the rows
    took the long finding words in the findings column measured for the short ones ("half-ro").
    Each change between short and long words measures the columns again: no finding is cut."""
    fake = cluster_of(reference_case("shop-dev"))
    app = make_app(fake)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        table = app.screen.query_one(WorkloadTable)
        findings = 1  # the index of the findings column in COLUMNS
        for size in ((130, 36), (80, 24), (130, 36)):
            await pilot.resize_terminal(*size)
            await settle(app, pilot)
            cells = [ln.cells.widths(app.console)[findings] for ln in table.lines]
            assert max(cells) <= table._width[findings], (size, cells, table._width)
            assert ("drifted" in " ".join(shown_text(app))) == (size[0] >= 120), shown_text(app)
        await pilot.resize_terminal(80, 24)
        await settle(app, pilot)
        assert sum(table._width[c] + 2 for c in table._shown) <= 80 - 2, table._width
    fake.close()
