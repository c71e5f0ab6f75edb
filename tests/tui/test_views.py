"""Pure parts of the TUI: formatting, the table's lines, which actions make sense, the command line."""

from __future__ import annotations

import datetime as dt

from rollguard.core.images import short_image
from rollguard.tui import data
from rollguard.tui.views import (
    UNGROUPED,
    Finding,
    Inventory,
    Target,
    WorkloadRow,
    age,
    command_line,
    group_order,
    matches,
    sort_rows,
)
from rollguard.tui.widgets.workload_table import build_lines
from tests.helpers.tui_objects import NOW, demo_cluster, reference_case


def row(name: str, *codes: str, revision: int = 2, paused: bool = False, group: str = "app=a") -> WorkloadRow:
    return WorkloadRow(
        namespace="ns", kind="DeploymentConfig", name=name, group=group,
        findings=tuple(Finding(c, "why") for c in codes or ("healthy",)), revision=revision, ready=1,
        desired=1, images={"app": f"reg/x/{name}:v1"}, created=NOW - dt.timedelta(hours=3), paused=paused,
    )  # fmt: skip


def test_age_is_kubectl_like():
    assert [age(NOW - dt.timedelta(seconds=s), NOW) for s in (5, 90, 7200, 3 * 86400)] == [
        "5s",
        "1m",
        "2h",
        "3d",
    ]
    assert age(None, NOW) == "-"


def test_short_image_cuts_registry_and_digest():
    assert short_image("registry.example.com/shop/api:v1") == "api:v1"
    assert short_image("r/ns/api@sha256:" + "ab" * 32) == "api@abababababab"
    assert short_image(" ") == "(none)"
    assert short_image("registry:5000/api:v1@sha256:" + "cd" * 32) == "api:v1@cdcdcdcdcdcd"
    assert short_image("r/api@sha512:" + "ef" * 64) == "api@sha512:efefefefefef"


def test_command_line_names_targets_or_the_group():
    group = Target("shop-dev", selector="app=shop api")
    assert command_line("revert", group) == "rollguard revert -l 'app=shop api' -n shop-dev"
    one = Target("ns", refs=("dc/dc2",), to_revision=1)
    assert (
        command_line("revert", one, context="prod")
        == "rollguard revert dc/dc2 -n ns --to-revision 1 --context prod"
    )


def test_filter_and_sort():
    rows = [row("b", "failed"), row("a"), row("c", "paused", paused=True)]
    assert [r.name for r in sort_rows(rows, "name")] == ["a", "b", "c"]
    assert [r.name for r in sort_rows(rows, "findings")] == ["b", "c", "a"]
    assert [r.name for r in rows if matches(r, "pause")] == ["c"]
    assert [r.name for r in rows if matches(r, "dc x/a")] == ["a"]


def test_actions_make_sense_only_where_they_apply():
    assert data.applicable("resume", [row("a"), row("b", "paused", paused=True)])
    assert not data.applicable("resume", [row("a")])
    assert not data.applicable("redeploy", [row("a"), row("b", "paused", paused=True)])
    assert data.applicable("redeploy", [row("a")])
    assert not data.applicable("revert", [row("a", revision=1)])  # nothing to go back to
    assert data.applicable("revert", [row("a", "failed", revision=1)])
    assert not data.applicable("revert", [row("a")], to_revision=2)  # the current one
    assert data.applicable("revert", [row("a")], to_revision=1)
    assert data.applicable("revert", [row("a", "stuck", "paused", paused=True)], to_revision=2)
    assert not data.applicable("revert", [row("a", "failed", "drifted")], to_revision=2)


def test_reference_case_reads_as_expected():
    cluster = demo_cluster()
    objects: dict = {}
    for res in data.WATCHED:
        objects[res] = cluster.list(res)["items"]
    inventory, _states = data.build_inventory(objects, now=NOW)
    by_name = {r.name: {f.code for f in r.findings} for r in inventory.rows}
    assert by_name["dc1"] == {"drifted"}
    assert {"failed", "drifted"} <= by_name["dc2"]
    assert {"paused", "stuck"} <= by_name["dc3"]
    assert by_name["web"] == {"healthy"} and by_name["web-worker"] == {"mutable-image"}
    assert {r.group for r in inventory.rows} == {"app=shop-api", "app=shop-web", ""}
    group = inventory.groups["group:shop-dev/app=shop-api"]
    assert group.journal and group.last_run and group.last_run.actor == "alice@ci"


def test_lines_group_headers_then_members():
    cluster = demo_cluster()
    objects = {res: cluster.list(res)["items"] for res in data.WATCHED}
    inventory, _ = data.build_inventory(objects, now=NOW)
    lines = build_lines(inventory, text_filter="", sort="name", reverse=False, now=NOW, show_namespace=False)
    assert [ln.key for ln in lines][:4] == [
        "group:shop-dev/app=shop-api", "shop-dev/dc/dc1", "shop-dev/dc/dc2", "shop-dev/dc/dc3",
    ]  # fmt: skip
    assert lines[0].row is None and lines[1].row is not None
    only = build_lines(
        inventory, text_filter="redis", sort="name", reverse=False, now=NOW, show_namespace=False
    )
    assert [ln.key for ln in only] == ["group:shop-dev/", "shop-dev/deployment/redis"]
    assert reference_case()  # the fixture builds without a cluster


def test_a_refresh_keeps_the_cells_of_unchanged_lines_and_remakes_the_changed_ones():
    """`build_lines(previous=...)` equals a fresh build; only the lines whose inputs changed are new."""
    before = Inventory(rows=(row("a"), row("b"), row("c", group="app=c")), groups={})
    after = Inventory(rows=(row("a"), row("b", "failed", revision=3), row("c", group="app=c")), groups={})
    kw = {"text_filter": "", "sort": "name", "reverse": False, "now": NOW, "show_namespace": True}
    shown = {ln.key: ln for ln in build_lines(before, **kw)}  # type: ignore[arg-type]
    lines = build_lines(after, previous=shown, **kw)  # type: ignore[arg-type]
    fresh = build_lines(after, **kw)  # type: ignore[arg-type]
    assert [(ln.key, ln.cells, ln.row) for ln in lines] == [(ln.key, ln.cells, ln.row) for ln in fresh]
    kept = {ln.key for ln in lines if ln.cells is shown[ln.key].cells}
    assert kept == {"ns/dc/a", "group:ns/app=c", "ns/dc/c"}  # group app=a took b's failure, b its revision
    assert all(ln.row is r for ln, r in zip([ln for ln in lines if ln.row], after.rows, strict=True))
    later = build_lines(
        after, previous={ln.key: ln for ln in lines}, **{**kw, "now": NOW + dt.timedelta(hours=2)}
    )  # type: ignore[arg-type]
    assert [str(ln.cells[5]) for ln in later if ln.row] == ["5h", "5h", "5h"]  # the age counts on


def test_groups_by_findings_put_the_ungrouped_last_among_equals():
    """Sorting by findings: worst group first; on a tie, named groups before the workloads in none."""
    rows = [
        row("z", group="app=z"),
        row("u", group=UNGROUPED),
        row("a", group="app=a"),
        row("f", "failed", group="app=m"),
    ]
    inventory = Inventory(rows=tuple(rows), groups={})
    assert group_order(inventory, rows, "findings") == [
        "group:ns/app=m",
        "group:ns/app=a",
        "group:ns/app=z",
        "group:ns/",
    ]
    assert group_order(inventory, rows, "name") == [
        "group:ns/app=a",
        "group:ns/app=m",
        "group:ns/app=z",
        "group:ns/",
    ]
