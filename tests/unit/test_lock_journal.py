"""Lease reading and the journal's JSON round trip: pure parts of lock.py and journal.py."""

from __future__ import annotations

import datetime as dt

from rollguard.cluster.journal import Journal, WorkloadEntry, group_name, parse_configmap
from rollguard.cluster.lock import read_lease
from rollguard.core.structs import VerifiedState

NOW = dt.datetime(2026, 11, 29, 12, 0, 0, tzinfo=dt.UTC)


def test_lease_live_and_expired() -> None:
    lease = {
        "spec": {
            "holderIdentity": "ci run 1",
            "leaseDurationSeconds": 30,
            "renewTime": "2026-11-29T11:59:50.000000Z",
        }
    }
    assert read_lease(lease, at=NOW).live and round(read_lease(lease, at=NOW).expires_in) == 20
    assert not read_lease(lease, at=NOW + dt.timedelta(seconds=21)).live
    assert not read_lease({"spec": {}}, at=NOW).live


def test_group_name_is_stable_dns_safe_and_distinct() -> None:
    a, b = group_name("app=shop-api"), group_name("app=shop-api,tier=web")
    assert a == group_name("app=shop-api") and a != b
    assert len(group_name("x" * 300)) <= 63 and group_name("A_B=c").startswith("rollguard-a-b-c-")


def test_journal_round_trip_and_history_limit() -> None:
    journal = Journal(namespace="shop", selector="app=shop", run_id="r1", state="watching")
    journal.workloads["dc/api"] = WorkloadEntry(
        kind="DeploymentConfig",
        name="api",
        verified=VerifiedState(
            template={"spec": {}}, triggers=None, revision=3, images={"app": "x"}, paused=False
        ),
        target_images={"app": "y"},
        phase="applied",
    )
    for _ in range(30):
        journal.close_run("succeeded")
    cm = {"data": {"journal.json": __import__("json").dumps(journal.to_json())}}
    back = parse_configmap(cm)
    assert back is not None and back.workloads["dc/api"].verified.revision == 3
    assert len(back.history) == 20 and back.final
    assert parse_configmap({"data": {"journal.json": "not json"}}) is None
