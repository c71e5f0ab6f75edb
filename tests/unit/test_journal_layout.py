"""The journal's layout in ConfigMaps (issue 14, point 3) and the drift reference (point 6): pure logic.

A journal must hold whatever the API can hold as workloads: plain JSON while small (as every earlier
version wrote it, and read back from that old form), gzip in ``binaryData`` when big, and parts when
even that exceeds one ConfigMap. Each template is stored once. The live-sandbox side (12 Deployments
with 48 KB of env each) is tests/rollout/test_integrity.py.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import os

from rollguard.cluster.journal import Journal, WorkloadEntry, parse_configmap, precise_now, stamp_order
from rollguard.cluster.journal_codec import DATA_KEY, PACKED_KEY, PART_LIMIT, PLAIN_LIMIT, decode, encode
from rollguard.core.structs import RunState, VerifiedState, WorkloadRef
from rollguard.state.assessment import drift_reference, group_for, read_groups

CM_LIMIT = 1024 * 1024


def template(env_bytes: int, *, image: str = "img:1", seed: int = 0) -> dict[str, object]:
    value = (os.urandom(env_bytes // 2).hex() if seed < 0 else f"{seed}-" + "x" * env_bytes)[:env_bytes]
    return {
        "spec": {"containers": [{"name": "app", "image": image, "env": [{"name": "BIG", "value": value}]}]}
    }


def journal_of(
    templates: dict[str, dict[str, object]], *, selector: str = "app=shop", finished: str = ""
) -> Journal:
    journal = Journal(namespace="shop", selector=selector, run_id="r1", state=RunState.SUCCEEDED)
    for key, tpl in templates.items():
        journal.workloads[key] = WorkloadEntry(
            kind="Deployment",
            name=key.split("/")[1],
            verified=VerifiedState(
                template=tpl, triggers=None, revision=2, images={"app": "img:1"}, paused=False
            ),
        )
    journal.last_success = {
        "run_id": "r1",
        "finished": finished or "2026-12-01T10:00:00Z",
        "templates": templates,
    }
    journal.updated = finished
    return journal


def configmap(
    journal: Journal, name: str = "rollguard-app-shop-1"
) -> tuple[dict[str, object], dict[str, dict[str, object]]]:
    layout = encode(journal.to_json(), name=name)
    cm = {
        "metadata": {"name": name, "annotations": {"rollguard.io/journal-parts": layout.parts_annotation}},
        "data": layout.data,
        "binaryData": layout.binary,
    }
    parts = {n: {"metadata": {"name": n}, "binaryData": {"journal.part": c}} for n, c in layout.parts.items()}
    return cm, parts


def test_a_small_journal_stays_plain_json_as_earlier_versions_wrote_it() -> None:
    journal = journal_of({"deployment/web": template(100)})
    layout = encode(journal.to_json(), name="j")
    assert set(layout.data) == {DATA_KEY} and not layout.binary and not layout.parts


def test_twelve_workloads_with_48_kb_of_env_fit_one_configmap_with_each_template_once() -> None:
    templates = {
        f"deployment/w{i}": template(48 * 1024, seed=-1) for i in range(12)
    }  # random hex: half compressible
    journal = journal_of(templates)
    text = json.dumps(journal.to_json())
    assert len(text) < 12 * 48 * 1024 * 1.2  # once each, not twice (the last success's copy is a mark)
    assert json.loads(text)["last_success"]["templates"]["deployment/w0"] == "=verified"
    layout = encode(journal.to_json(), name="j")
    assert set(layout.binary) == {PACKED_KEY} and not layout.data and not layout.parts
    assert layout.size < CM_LIMIT
    cm, _ = configmap(journal)
    back = parse_configmap(cm)
    assert back is not None and back.last_success["templates"] == templates
    assert back.workloads["deployment/w3"].verified.template == templates["deployment/w3"]


def test_a_journal_bigger_than_one_configmap_goes_into_parts_checked_by_digest() -> None:
    templates = {f"deployment/w{i}": template(400 * 1024, seed=-1) for i in range(6)}  # ~1.3 MB of gzip
    journal = journal_of(templates)
    cm, parts = configmap(journal)
    assert len(parts) >= 2 and not cm["data"] and not cm["binaryData"]
    assert all(len(base64.b64decode(p["binaryData"]["journal.part"])) <= PART_LIMIT for p in parts.values())
    back = parse_configmap(cm, part=parts.get)
    assert back is not None and back.last_success["templates"] == templates
    assert parse_configmap(cm) is None  # without its parts: no journal, never a wrong one
    first = next(iter(parts))
    missing = {n: p for n, p in parts.items() if n != first}
    assert parse_configmap(cm, part=missing.get) is None
    swapped = dict(parts)
    swapped[first] = {"binaryData": {"journal.part": base64.b64encode(b"\0" * 10).decode()}}
    assert decode(cm, part=swapped.get) is None


def test_the_previous_versions_journal_with_templates_stored_twice_still_reads() -> None:
    tpl = template(10)
    old = journal_of({"deployment/web": tpl}).to_json()
    old["last_success"]["templates"]["deployment/web"] = tpl  # as the previous version saved it
    journal = parse_configmap({"data": {DATA_KEY: json.dumps(old)}})
    assert journal is not None and journal.last_success["templates"]["deployment/web"] == tpl
    assert PLAIN_LIMIT < CM_LIMIT


def group(journal: Journal, name: str) -> list:  # type: ignore[type-arg]
    cm, _ = configmap(journal, name)
    cm["metadata"]["annotations"]["rollguard.io/selector"] = journal.selector  # type: ignore[index]
    return [cm]


def test_drift_is_measured_against_the_last_run_that_verified_each_workload_whatever_its_selector() -> None:
    """A hotfix run on app=shop,tier=backend, then a full run on app=shop: dc/a's reference is the full run's."""
    hotfix, release = template(10, image="img:hotfix"), template(10, image="img:2")
    narrow = journal_of(
        {"deployment/a": hotfix}, selector="app=shop,tier=backend", finished="2026-12-01T10:00:00Z"
    )
    narrow.last_success["run_id"] = "hotfix"
    full = journal_of(
        {"deployment/a": release, "deployment/b": release},
        selector="app=shop",
        finished="2026-12-01T11:00:00Z",
    )
    full.last_success["run_id"] = "release"
    cms = group(narrow, "rollguard-narrow") + group(full, "rollguard-full")
    groups = read_groups("shop", cms, [], now=dt.datetime.now(dt.UTC))
    labels = {"app": "shop", "tier": "backend"}
    assert drift_reference("deployment/a", labels, groups) == (release, "release")
    picked = group_for(WorkloadRef("Deployment", "a"), labels, groups)
    assert picked is not None and picked.name == "rollguard-full"  # revert plans from the later run
    # A later narrow run updates the reference of the workload it verified, and nothing else.
    hotfix2 = template(10, image="img:hotfix2")
    narrow2 = journal_of(
        {"deployment/a": hotfix2}, selector="app=shop,tier=backend", finished="2026-12-01T12:00:00Z"
    )
    narrow2.last_success["run_id"] = "hotfix2"
    groups = read_groups(
        "shop",
        group(narrow2, "rollguard-narrow") + group(full, "rollguard-full"),
        [],
        now=dt.datetime.now(dt.UTC),
    )
    assert drift_reference("deployment/a", labels, groups) == (hotfix2, "hotfix2")
    assert drift_reference("deployment/b", {"app": "shop"}, groups) == (release, "release")


def test_of_two_runs_that_verified_a_workload_within_one_second_the_later_is_the_reference() -> None:
    """A slow run's success, then at once a fast run of an overlapping group: the fast run's template is
    the reference and its group the one repairs plan from, whichever group is listed first. With stamps
    to the second they tied and the first listed won (CI's test_overlapping_groups_at_once_one_is_refused
    saw dc/a drifted from the slow run's template)."""
    slow, fast = template(10, image="img:slow"), template(10, image="img:fast")
    earlier = precise_now()
    later = precise_now()
    while later == earlier:  # the clock's resolution, not the stamp's, may make them equal
        later = precise_now()
    first = journal_of({"deployment/a": slow}, selector="app=shop", finished=earlier)
    first.last_success["run_id"] = "slow"
    second = journal_of({"deployment/a": fast}, selector="tier=backend", finished=later)
    second.last_success["run_id"] = "fast"
    first.updated = second.updated = earlier[:19] + "Z"  # both journals written within one second
    labels = {"app": "shop", "tier": "backend"}
    for cms in (
        group(first, "rollguard-a") + group(second, "rollguard-b"),
        group(second, "rollguard-b") + group(first, "rollguard-a"),
    ):
        groups = read_groups("shop", cms, [], now=dt.datetime.now(dt.UTC))
        assert drift_reference("deployment/a", labels, groups) == (fast, "fast")
        picked = group_for(WorkloadRef("Deployment", "a"), labels, groups)
        assert picked is not None and picked.name == "rollguard-b"


def test_a_stamp_with_microseconds_is_later_than_the_same_second_written_without() -> None:
    """Journals written before the stamps had microseconds say "...:01Z"; as strings it sorts after
    "...:01.5Z", parsed it is the earlier."""
    assert stamp_order("2026-12-01T10:00:01.500000Z") > stamp_order("2026-12-01T10:00:01Z")
    assert stamp_order("2026-12-01T10:00:02Z") > stamp_order("2026-12-01T10:00:01.999999Z")
    assert stamp_order("") < stamp_order("2026-12-01T10:00:01Z")
