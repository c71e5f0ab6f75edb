"""Deadlines honoured by the wait loop (issue 31 point 4), on a fake clock.

`wait_for` sleeps on the cache until the next deadline; here the cache's `wait` moves a fake clock by
what it was asked, so the test sees every wait the loop asked for and when it gave its verdict.
A DC whose deployer pod is still running (its rollout goes on) must end at ``--timeout``: the
deployer-evidence grace is for the platform's own failure verdict only, and no wait is ever asked for
a time already past (which spun the CPU for the whole grace: ``--timeout 8s`` ended after 13 s).
"""

from __future__ import annotations

import threading
import types

import pytest

from rollguard.cluster.cache import NamespaceCache
from rollguard.core.resources import DEPLOYMENT_CONFIGS, PODS, REPLICATION_CONTROLLERS
from rollguard.core.structs import DC, Obj, RolloutPhase, WorkloadRef
from rollguard.run import wait as watch
from rollguard.run.wait import EVIDENCE_GRACE, Watched, wait_for
from tests.helpers.dc_objects import FAILED_CONDITION, dc, deployer_pod, rc


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now


class FakeCache(NamespaceCache):
    """The namespace's objects as given; `wait` advances the clock by what it is asked and records it."""

    def __init__(self, clock: Clock, objs: dict[object, list[Obj]]) -> None:
        super().__init__(None, "shop", [DEPLOYMENT_CONFIGS, REPLICATION_CONTROLLERS, PODS])  # type: ignore[arg-type]
        for res, items in objs.items():
            self.seed(res, items, "1")  # type: ignore[arg-type]
        self.clock = clock
        self.asked: list[float] = []

    def wait(self, timeout: float) -> bool:
        self.asked.append(timeout)
        assert len(self.asked) < 1000, f"spinning: {self.asked[-5:]}"
        self.clock.now += max(timeout, 0.0)
        return False


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    fake = Clock()
    monkeypatch.setattr(watch, "time", types.SimpleNamespace(monotonic=fake.monotonic))
    return fake


def watched(clock: Clock, timeout: float, *, reason: str = "not complete within --timeout {t}s") -> Watched:
    item = Watched(
        ref=WorkloadRef(DC, "api"),
        expected_images={"app": "x:v2"},
        deadline=clock.now + timeout,
        deadline_reason=reason.replace("{t}", str(int(timeout))),
        stall_seconds=600.0,
        stall_reason="no progress within its own deadline of 600s",
    )
    item.started = clock.now  # the write, on the fake clock
    return item


def run(cache: FakeCache, item: Watched) -> list[str]:
    said: list[str] = []
    wait_for(cache, [item], fail_fast=True, crash_restarts=3, stop_on_failure=True,
             cancel=threading.Event(), out=said.append)  # fmt: skip
    return said


def test_timeout_ends_the_wait_at_its_time_while_the_deployer_pod_runs(clock: Clock) -> None:
    cache = FakeCache(clock, {
        DEPLOYMENT_CONFIGS: [dc()], REPLICATION_CONTROLLERS: [rc("Running")],
        PODS: [deployer_pod({"phase": "Running"})],
    })  # fmt: skip
    item = watched(clock, 8)
    run(cache, item)
    assert item.verdict is not None and item.verdict.phase is RolloutPhase.FAILED
    assert "not complete within --timeout 8s" in item.verdict.message, item.verdict.message
    assert clock.now - item.started < 8.5, f"ended {clock.now - item.started:.2f}s after the write"
    assert all(t > 0 for t in cache.asked), cache.asked  # never a wait for a time already past


def test_the_platforms_failure_waits_for_the_deployer_pods_word_at_most_the_grace(clock: Clock) -> None:
    cache = FakeCache(clock, {
        DEPLOYMENT_CONFIGS: [dc(conditions=[FAILED_CONDITION])], REPLICATION_CONTROLLERS: [rc("Failed")],
        PODS: [deployer_pod({"phase": "Running"})],  # its Failed event has not arrived yet
    })  # fmt: skip
    item = watched(clock, 60)
    run(cache, item)
    assert item.verdict is not None and 'replication controller "api-2" has failed' in item.verdict.message
    assert EVIDENCE_GRACE <= clock.now - item.started < EVIDENCE_GRACE + 0.5
    assert all(t > 0 for t in cache.asked), cache.asked


def test_the_grace_never_outlasts_the_timeout(clock: Clock) -> None:
    cache = FakeCache(clock, {
        DEPLOYMENT_CONFIGS: [dc(conditions=[FAILED_CONDITION])], REPLICATION_CONTROLLERS: [rc("Failed")],
        PODS: [deployer_pod({"phase": "Running"})],
    })  # fmt: skip
    item = watched(clock, 2)
    run(cache, item)
    assert item.verdict is not None and item.verdict.phase is RolloutPhase.FAILED
    assert clock.now - item.started < 2.5
    assert all(t > 0 for t in cache.asked), cache.asked


def test_a_revert_says_how_long_it_really_waited(clock: Clock) -> None:
    cache = FakeCache(clock, {
        DEPLOYMENT_CONFIGS: [dc()], REPLICATION_CONTROLLERS: [rc("Running")],
        PODS: [deployer_pod({"phase": "Running"})],
    })  # fmt: skip
    item = watched(clock, 13, reason="revert not complete after {waited}")
    run(cache, item)
    assert item.verdict is not None
    assert item.verdict.message.startswith("dc/api: revert not complete after 13s ("), item.verdict.message
