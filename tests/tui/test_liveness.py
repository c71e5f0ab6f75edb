"""Honest liveness (issue 19 point 1), on an in-memory cluster whose API server can be stopped.

The header says `live`, `reconnecting · stale Ns` or `disconnected · stale Ns` with a banner when not
live, "no answer from the API server for Ns" while a request waits on a hung server, `paused` behind a
dialog;
the loader reconnects by itself; a context switch clears the table until the new cluster answers; a
clock tick re-judges time-based findings without any event; -A follows namespaces that appear.
"""

from __future__ import annotations

import copy
import datetime as dt
import json
import threading
import time

from rollguard.cluster.journal import DATA_KEY
from rollguard.cluster.lock import LEASE_SECONDS
from rollguard.tui.app import RollguardApp
from rollguard.tui.backend import Backend, Options
from rollguard.tui.liveness import Link
from rollguard.tui.screens.confirm import ConfirmScreen
from rollguard.tui.widgets.workload_table import WorkloadTable
from tests.helpers.fakecluster import FakeCluster
from tests.helpers.tui import SIZE, make_app, until
from tests.helpers.tui_objects import NOW, cluster_of, neighbours, reference_case


def fast(app: RollguardApp) -> RollguardApp:
    """Probe and tick often: the test waits on conditions, these only set how soon they can hold."""
    app.PROBE_EVERY = 0.2
    app.CLOCK_TICK = 0.3
    return app


def status(app) -> str:
    return str(app.screen.query_one("#status").render())


def banner(app) -> str:
    box = app.screen.query_one("#banner")
    return str(box.render()) if box.display else ""


async def test_api_server_stopped_and_back(fake):
    app = fast(make_app(fake, live=True))
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.liveness.link is Link.LIVE and "live" in status(app), what="live")
        assert banner(app) == ""
        fake.stop_server()
        await until(pilot, lambda: app.liveness.link is Link.RECONNECTING, what="reconnecting")
        assert "reconnecting · stale" in status(app)
        assert "Reconnecting" in banner(app) and "may be wrong" in banner(app)
        await until(pilot, lambda: app.liveness.link is Link.DISCONNECTED, what="disconnected")
        assert "disconnected · stale" in status(app)
        assert table_keys(app)  # the last picture stays, marked as old
        # a change made while the TUI could not see it: shown once the server is back
        extra = copy.deepcopy(next(o for o in neighbours() if o["metadata"]["name"] == "redis"))
        extra["metadata"]["name"] = "redis-2"
        fake.start_server()
        fake.apply(extra)
        await until(pilot, lambda: app.liveness.link is Link.LIVE, timeout=20, what="live again")
        await until(pilot, lambda: "shop-dev/deployment/redis-2" in table_keys(app), what="redis-2")
        assert banner(app) == "" and "live" in status(app)


async def test_the_stale_age_counts_from_the_last_answered_probe_not_from_the_first_read(fake):
    """Found trying it out (QA of issue 30): with the API server stopped, a TUI that had been live for 4
    minutes said "reconnecting · stale 4m": the age counted from the loader's first read, not from the
    probe answered a second or two before the server stopped. What you see was confirmed at the last
    answered probe; a later failure must not date it back to the start."""
    app = fast(make_app(fake, live=True))
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.liveness.live and app.liveness.contact is not None, what="live")
        first = app.liveness.contact
        await until(pilot, lambda: app.liveness.contact - first > 1.0, what="probes answered for a while")
        answered = app.liveness.contact
        fake.stop_server()
        await until(pilot, lambda: app.liveness.link is Link.RECONNECTING, what="reconnecting")
        assert app.liveness.contact is not None and app.liveness.contact >= answered, (first, answered)


async def test_a_hung_api_server_is_said_within_seconds(fake):
    """SIGSTOP-like: nothing is refused, nothing answers. The header says so while the probe still waits
    (its read timeout, here 30 s, has not passed: no request failed), then `live` once it answers."""
    app = fast(make_app(fake, live=True))
    fake.hang_timeout = 30.0
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.liveness.live and "live" in status(app), what="live")
        fake.freeze()
        await until(pilot, lambda: "no answer from the API server for" in status(app), what="the hang said")
        assert app.liveness.link is Link.LIVE  # no request has failed: the pulse alone says it
        assert "live" not in status(app).split(" · ")[:2]
        assert "No answer from the API server" in banner(app) and "may be wrong" in banner(app)
        fake.thaw()
        await until(
            pilot, lambda: status(app).split(" · ")[1] == "live" and banner(app) == "", what="live again"
        )


async def test_the_table_behind_a_dialog_says_paused(fake):
    app = fast(make_app(fake, live=True))
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.liveness.live and status(app).split(" · ")[1] == "live", what="live")
        await pilot.press("question_mark")  # any dialog: the table behind it is not refreshed
        workloads = app.screen_stack[-2]
        await until(pilot, lambda: str(workloads.query_one("#status").render()).split(" · ")[1].startswith("paused"),
                    what="paused")  # fmt: skip
        await pilot.press("escape")
        await until(pilot, lambda: status(app).split(" · ")[1] == "live", what="live again")


async def test_a_dialog_waiting_on_a_hung_server_says_so_and_esc_cancels_it(fake):
    """A redeploy's confirmation opened while the server hangs: its dry run waits; the dialog says the
    server does not answer and that esc cancels; esc closes it, and nothing was written."""
    app = fast(make_app(fake, live=True))
    fake.hang_timeout = 30.0
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.liveness.live and app.permissions_known, what="live")
        await pilot.press("down")  # a workload's row
        fake.freeze()
        await until(pilot, lambda: "no answer from the API server for" in status(app), what="the hang said")
        written = fake._rv
        await pilot.press("r")
        dialog = app.screen
        assert isinstance(dialog, ConfirmScreen), app.screen_stack

        def said() -> str:
            return str(dialog.query_one("#summary").render())

        await until(pilot, lambda: "No answer from the API server for" in said(), what="the wait said")
        assert "esc cancels (nothing was changed)" in said() and dialog.state == "planning"
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, ConfirmScreen), what="the dialog closed")
        fake.thaw()
        await until(pilot, lambda: status(app).split(" · ")[1] == "live", what="live again")
        assert fake._rv == written and not app.repairs  # nothing was written, no repair started


async def test_a_dry_run_that_gets_no_answer_is_not_called_a_refusal(fake):
    """The dry run of a confirmation opened during a hang times out: the dialog says it could not work
    out what would change and that nothing was changed; it used to say "Refused, nothing would change"
    with urllib3's whole "Max retries exceeded ... ReadTimeoutError" (found trying the TUI in tmux)."""
    app = fast(make_app(fake, live=True))
    fake.hang_timeout = 1.0
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.liveness.live and app.permissions_known, what="live")
        await pilot.press("down")  # a workload's row
        written = fake._rv
        fake.freeze()
        await pilot.press("r")
        dialog = app.screen
        assert isinstance(dialog, ConfirmScreen), app.screen_stack
        await until(pilot, lambda: dialog.state != "planning", what="the dry run given up")
        said = str(dialog.query_one("#summary").render())
        assert dialog.state == "unplanned" and said.startswith("Could not work out what would change"), said
        assert "Refused" not in said and "nothing was changed" in said
        assert not dialog.query_one("#confirm").display
        await pilot.press("tab", "enter", "y")  # nothing to confirm
        fake.thaw()
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, ConfirmScreen), what="the dialog closed")
        assert fake._rv == written and not app.repairs


def table_keys(app) -> list[str]:
    return [ln.key for ln in app.screen.query_one(WorkloadTable).lines]


async def test_context_switch_clears_the_table_until_the_new_cluster_answers(fake, tmp_path):
    contexts = [
        {"name": n, "context": {"cluster": "c", "user": "u", "namespace": "shop-dev"}}
        for n in ("dev", "prod")
    ]
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "dev", "contexts": contexts,
        "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:1"}}], "users": [{"name": "u", "user": {}}],
    }))  # fmt: skip
    prod = cluster_of(neighbours("shop-dev"))
    prod.stop_server()
    app = fast(make_app(fake, kubeconfig=str(kubeconfig), live=True))
    app.backend._factory = lambda _kubeconfig, context: prod if context == "prod" else fake
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.liveness.live and len(table_keys(app)) == 9, what="dev")
        await pilot.press("colon", *"ctx prod", "enter")
        # reconnecting, or already disconnected after its quick first retries on a loaded machine
        await until(
            pilot,
            lambda: app.liveness.link in (Link.RECONNECTING, Link.DISCONNECTED),
            what="prod unreachable",
        )
        assert table_keys(app) == [] and app.inventory is None  # never dev's rows under prod's name
        assert status(app).startswith("prod") and "no data yet" in status(app)
        prod.start_server()
        await until(pilot, lambda: app.liveness.live and bool(table_keys(app)), timeout=20, what="prod")
        assert {r.name for r in app.inventory.rows} == {
            o["metadata"]["name"] for o in neighbours() if o["kind"] in ("Deployment", "DeploymentConfig")
        }
    prod.close()


def running_group(renewed: dt.datetime) -> list[dict]:
    """The reference case with its journal mid-run and the run's lease renewed at ``renewed``."""
    objects = reference_case()
    journal = next(o for o in objects if o["kind"] == "ConfigMap")
    body = json.loads(journal["data"][DATA_KEY])
    body["run"]["state"] = "watching"
    body["run"]["id"] = "20240601-120000-dead01"
    journal["data"][DATA_KEY] = json.dumps(body)
    meta = journal["metadata"]
    lease = {
        "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": meta["name"], "namespace": meta["namespace"], "labels": dict(meta["labels"])},
        "spec": {"holderIdentity": "20240601-120000-dead01", "leaseDurationSeconds": LEASE_SECONDS,
                 "renewTime": renewed.strftime("%Y-%m-%dT%H:%M:%S.%fZ")},
    }  # fmt: skip
    return [*objects, lease]


async def test_a_lease_expiring_with_no_event_shows_half_rolled():
    """The run died (nobody renews its lease): nothing changes in the API, yet after the lease's
    duration the group is half-rolled, as `rollguard status` says."""
    now = [NOW]
    cluster = FakeCluster(running_group(NOW - dt.timedelta(seconds=5)))
    backend = Backend(Options(namespace="shop-dev", context="demo"), factory=lambda _k, _c: cluster,
                      now=lambda: now[0])  # fmt: skip
    app = fast(RollguardApp(backend, now=lambda: now[0], live=True, static=True))

    def codes() -> set[str]:
        return (
            {f.code for r in app.inventory.rows if r.name == "dc1" for f in r.findings}
            if app.inventory
            else set()
        )

    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.liveness.live and bool(codes()), what="the running group")
        assert "half-rolled" not in codes()
        assert app.inventory.groups["group:shop-dev/app=shop-api"].lock_holder == "20240601-120000-dead01"
        lines = app.screen.query_one(WorkloadTable).lines
        assert "running now" in str(lines[0].cells[4])
        watches = cluster.requests["watch"]
        now[0] = NOW + dt.timedelta(seconds=LEASE_SECONDS + 10)  # time passes; no object changes
        await until(pilot, lambda: "half-rolled" in codes(), what="half-rolled without an event")
        assert "running now" not in str(app.screen.query_one(WorkloadTable).lines[0].cells[4])
        assert cluster.requests["watch"] == watches  # judged again from the same caches, no new read
    cluster.close()


async def test_all_namespaces_with_a_selector_follows_a_new_namespace():
    cluster = cluster_of(reference_case("shop-dev"))
    app = fast(make_app(cluster, namespace=None, all_namespaces=True, selector="app=shop-api", live=True))
    async with app.run_test(size=SIZE) as pilot:
        await until(
            pilot, lambda: app.liveness.live and bool(app.inventory and app.inventory.rows), what="live"
        )
        assert {r.namespace for r in app.inventory.rows} == {"shop-dev"}
        for obj in reference_case("shop-new"):
            cluster.apply(obj)
        await until(pilot, lambda: "shop-new" in {r.namespace for r in app.inventory.rows}, what="shop-new")
        await pilot.pause(1.0)  # several live refreshes later it is still there
        assert "shop-new" in {r.namespace for r in app.inventory.rows}
    cluster.close()


async def test_no_watch_thread_outlives_its_app(fake):
    """The app's live caches stop, and their watch threads end, when the app ends (it used to be only
    `rollguard tui` that stopped them, after `run`): a test's app left seven watch threads behind, which
    re-watched in a loop once the cluster was closed and starved the tests after them (issue 30)."""
    before = set(threading.enumerate())
    app = fast(make_app(fake, live=True))
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.liveness.live and app.backend.live, what="live")
        await pilot.press("colon", *"ns shop-prod", "enter")  # a switch: the old caches stop too
        await until(
            pilot, lambda: app.liveness.live and app.backend.namespace == "shop-prod", what="switched"
        )
    left = [t for t in threading.enumerate() if t not in before and t.name.startswith("watch-")]
    deadline = time.monotonic() + 10
    while left and time.monotonic() < deadline:
        left[0].join(0.1)
        left = [t for t in left if t.is_alive()]
    assert not left, [t.name for t in left]
