"""The fence (GroupLock.prove), the guarded client and the claim rules, against an in-memory Lease store.

Pure logic beside the live tests in tests/chaos/test_fencing.py: a fake clock drives the lease's age,
a dict plays the API server's resourceVersion preconditions.
"""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

import pytest

from rollguard.cluster.claims import (
    CLAIMS_ANNOTATION,
    ClaimView,
    Contest,
    RunClaims,
    claim_live,
    claims_of,
    contest,
    overlapping,
    read_register,
)
from rollguard.cluster.client import Client
from rollguard.cluster.lock import GroupLock, fence_margin, renew_every
from rollguard.core.errors import Conflict, NotFound, ServerError, Superseded
from rollguard.core.resources import LEASES, Resource


class Store:
    """Leases by name with resourceVersion preconditions, as the API server keeps them."""

    def __init__(self) -> None:
        self.objects: dict[str, dict[str, Any]] = {}
        self.rv = 0
        self.fail_updates = 0  # the next N updates answer 500

    def _stamp(self, body: dict[str, Any]) -> dict[str, Any]:
        self.rv += 1
        body = {**body, "metadata": {**body["metadata"], "resourceVersion": str(self.rv)}}
        self.objects[body["metadata"]["name"]] = body
        return body

    def get(self, res: Resource, name: str, *, namespace: str | None = None) -> dict[str, Any]:
        if name not in self.objects:
            raise NotFound(name, status=404)
        return self.objects[name]

    def create(self, res: Resource, body: dict[str, Any], *, namespace: str | None = None) -> dict[str, Any]:
        if body["metadata"]["name"] in self.objects:
            raise Conflict("exists", status=409)
        return self._stamp(body)

    def replace(self, res: Resource, body: dict[str, Any], *, namespace: str | None = None) -> dict[str, Any]:
        if self.fail_updates:
            self.fail_updates -= 1
            raise ServerError("injected", status=500)
        name = body["metadata"]["name"]
        if name not in self.objects:
            raise NotFound(name, status=404)
        if body["metadata"].get("resourceVersion") != self.objects[name]["metadata"]["resourceVersion"]:
            raise Conflict("stale", status=409)
        return self._stamp(body)

    def delete(self, res: Resource, name: str, **_: Any) -> dict[str, Any]:
        return self.objects.pop(name)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def lock(store: Store, clock: Clock, holder: str = "ci run A", duration: int = 30) -> GroupLock:
    lost: list[str] = []
    gl = GroupLock(
        store,
        namespace="ns",
        name="g",
        holder=holder,
        duration=duration,  # type: ignore[arg-type]
        clock=clock,
        on_lost=lambda: lost.append("woken"),
    )
    gl.woken = lost  # type: ignore[attr-defined]
    return gl


def take_over(store: Store, holder: str) -> None:
    """Another run takes the (expired) lease over."""
    lease = dict(store.objects["g"])
    lease["spec"] = {
        **lease["spec"],
        "holderIdentity": holder,
        "renewTime": dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
    }
    store.replace(LEASES, lease)


def test_young_renew_proves_without_a_request() -> None:
    store, clock = Store(), Clock()
    gl = lock(store, clock)
    gl.acquire()
    gl._stop.set()  # no renewer thread in a unit test: renews are driven by hand
    rv = store.rv
    clock.now += 30 - fence_margin(30) - 0.1
    gl.prove()
    assert store.rv == rv  # no renew was needed


def test_past_the_margin_a_renew_decides_and_keeps_the_group_if_nobody_took_it() -> None:
    store, clock = Store(), Clock()
    gl = lock(store, clock)
    gl.acquire()
    gl._stop.set()
    clock.now += 120  # frozen far past the lease, but nobody took it over: the precondition holds
    gl.prove()
    assert not gl.lost and gl.safe_for > 0 and store.objects["g"]["spec"]["holderIdentity"] == "ci run A"


def test_taken_over_while_frozen_is_superseded_naming_the_new_holder_for_good() -> None:
    store, clock = Store(), Clock()
    gl = lock(store, clock)
    gl.acquire()
    gl._stop.set()
    clock.now += 60
    take_over(store, "ci run B")
    with pytest.raises(Superseded) as caught:
        gl.prove()
    assert "held now by ci run B" in str(caught.value) and caught.value.holder == "ci run B"
    assert gl.woken == ["woken"]  # type: ignore[attr-defined]
    rv = store.rv
    with pytest.raises(Superseded):  # latched: no later request is even tried
        gl.prove()
    assert store.rv == rv
    gl.release()
    assert store.objects["g"]["spec"]["holderIdentity"] == "ci run B"  # B's lease left alone


def test_deleted_lease_is_lost() -> None:
    store, clock = Store(), Clock()
    gl = lock(store, clock)
    gl.acquire()
    gl._stop.set()
    del store.objects["g"]
    clock.now += 60
    with pytest.raises(Superseded, match=r"lease was deleted.*no run holds it now"):
        gl.prove()


def test_failing_renewals_lose_the_group_only_when_the_last_good_renew_proves_nothing() -> None:
    store, clock = Store(), Clock()
    gl = lock(store, clock)
    gl.acquire()
    gl._stop.set()
    store.fail_updates = 1
    clock.now += renew_every(30)
    with pytest.raises(ServerError):
        gl.renew()  # a transient error: the renewer retries, the group is still held
    gl.prove()
    assert not gl.lost
    store.fail_updates = 100
    clock.now += 30
    with pytest.raises(Superseded, match="could not be renewed in time"):
        gl.prove()


def test_guarded_client_calls_the_guard_before_each_mutating_attempt_only() -> None:
    calls: list[str] = []

    class Api:
        user_agent = ""

        def call_api(self, *args: Any, **kwargs: Any) -> Any:
            calls.append(args[1])
            return type("R", (), {"data": b"{}"})()

    def guard() -> None:
        calls.append("guard")

    client = Client(Api()).guarded(guard)
    client.get(LEASES, "x", namespace="ns")
    client.replace(LEASES, {"metadata": {"name": "x"}}, namespace="ns")
    client.delete(LEASES, "x", namespace="ns")
    assert calls == ["GET", "guard", "PUT", "guard", "DELETE"]

    def refuse() -> None:
        raise Superseded("lost")

    with pytest.raises(Superseded):
        Client(Api()).guarded(refuse).create(LEASES, {"metadata": {"name": "x"}}, namespace="ns")
    assert calls[-1] == "DELETE"  # the refused request was never sent


def test_claim_lives_with_its_runs_group_lease() -> None:
    stamp = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    lease = {"spec": {"holderIdentity": "ci run A", "leaseDurationSeconds": 30, "renewTime": stamp}}
    claim = ClaimView(holder="ci run A", group_lease="g", selector="app=shop")
    assert claim_live(claim, lease)
    assert not claim_live(claim, None)  # the run released its lock
    assert not claim_live(ClaimView(holder="ci run B", group_lease="g", selector="x"), lease)  # taken over
    expired = {"spec": {**lease["spec"], "renewTime": "2020-01-01T00:00:00.000000Z"}}
    assert not claim_live(claim, expired)  # the run died


def _register(runs: dict[str, dict]) -> dict:
    return {"metadata": {"annotations": {CLAIMS_ANNOTATION: json.dumps(runs)}}}


MINE = RunClaims(
    holder="ci run B", group_lease="g-backend", selector="tier=backend", workloads=("dc/a", "dc/c")
)
SHOP = {"ci run A": {"lease": "g-shop", "selector": "app=shop", "workloads": ["dc/a", "dc/b"]}}


def test_the_register_reads_per_workload_and_tolerates_what_it_cannot_read() -> None:
    assert claims_of(_register(SHOP)) == {
        "dc/a": ClaimView("ci run A", "g-shop", "app=shop"),
        "dc/b": ClaimView("ci run A", "g-shop", "app=shop"),
    }
    assert claims_of(None) == {} and claims_of({"metadata": {"annotations": {CLAIMS_ANNOTATION: "{"}}}) == {}
    assert read_register(_register({"x": {"workloads": "dc/a"}}))["x"].workloads == ()


def test_a_live_overlapping_run_refuses_naming_the_first_shared_workload() -> None:
    runs = read_register(_register(SHOP))
    assert list(overlapping(runs, mine=MINE)) == ["ci run A"]
    found = contest(runs, mine=MINE, live={"ci run A": True})
    assert found.held == ("dc/a", ClaimView("ci run A", "g-shop", "app=shop"))


def test_a_dead_overlapping_run_is_dropped_whole_and_others_are_kept() -> None:
    other = {"ci run C": {"lease": "g-web", "selector": "app=web", "workloads": ["deployment/web"]}}
    runs = read_register(_register({**SHOP, **other}))
    assert list(overlapping(runs, mine=MINE)) == ["ci run A"]  # the web group shares nothing: not read
    found = contest(runs, mine=MINE, live={"ci run A": False})
    assert found.held is None and list(found.kept) == ["ci run C"]


def test_our_groups_earlier_run_is_dead_without_asking_and_our_own_entry_is_rewritten() -> None:
    earlier = {"ci run Z": {"lease": "g-backend", "selector": "tier=backend", "workloads": ["dc/a"]}}
    ours = {"ci run B": {"lease": "g-backend", "selector": "tier=backend", "workloads": ["dc/a"]}}
    runs = read_register(_register({**earlier, **ours}))
    assert overlapping(runs, mine=MINE) == {}
    assert contest(runs, mine=MINE, live={}) == Contest(kept={}, held=None)


class HeldStore(Store):
    """The next update is held through an API outage: it lands, but only ``held`` seconds later."""

    def __init__(self, clock: Clock, held: float) -> None:
        super().__init__()
        self.clock, self.held = clock, held

    def replace(self, res: Resource, body: dict[str, Any], *, namespace: str | None = None) -> dict[str, Any]:
        saved = super().replace(res, body, namespace=namespace)
        self.clock.now += self.held
        self.held = 0.0
        return saved


def test_a_renew_held_through_an_outage_past_the_lease_is_renewed_again_and_proves_the_group() -> None:
    """Issue 24 point 6: the renew the proof sends waits out a 60 s outage (lease 30 s); it lands, but with
    the renewTime it was sent with, which proves nothing by then. A fresh renew follows at once and the
    group is still ours (nobody took it over): the write goes ahead instead of the run stopping."""
    clock = Clock()
    store = HeldStore(clock, held=0.0)
    gl = lock(store, clock)
    gl.acquire()
    gl._stop.set()
    clock.now += 30  # the last renew is too old to prove anything: the next write needs a renew
    store.held = 60.0
    rv = store.rv
    gl.prove()
    assert not gl.lost and gl.safe_for > 0
    assert store.rv == rv + 2  # the held renew, then a fresh one
