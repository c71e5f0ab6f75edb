"""Issue 19 point 2: `l` shows the newest pod's logs, a crash loop's previous container first, followed
live; and point 6: a key whose action is not offered says why. On the fake cluster (logs written by the
test); against the sandbox's kubelet: tests/tui/test_live_logs.py."""

from __future__ import annotations

import pytest

from rollguard.core.resources import PODS, REPLICATION_CONTROLLERS
from rollguard.tui.logs import Heading, Note
from rollguard.tui.screens.detail import DetailScreen
from rollguard.tui.screens.logs import LogsScreen
from rollguard.tui.screens.workloads import WorkloadsScreen
from tests.helpers.snapshot import SVGScreenshot
from tests.helpers.tui import make_app, settle, until

NS = "shop-dev"
FATAL = "FATAL api v2-crash: cannot start: dial tcp 10.0.0.12:5432: connect: connection refused"


def crash_loop(fake, pod_name: str = "dc1-2-fd571") -> str:
    """Make one of dc1's pods the newest, crash-looping, with its previous container's log."""
    pod = fake.get(PODS, pod_name, namespace=NS)
    pod["metadata"]["creationTimestamp"] = "2024-05-02T09:45:00Z"
    pod["status"]["containerStatuses"][0] |= {
        "ready": False, "restartCount": 5,
        "state": {"waiting": {"reason": "CrashLoopBackOff", "message": "back-off 1m20s restarting failed container"}},
        "lastState": {"terminated": {"exitCode": 1, "reason": "Error", "finishedAt": "2024-05-02T09:58:10Z",
                                     "containerID": "cri-o://abc"}},
    }  # fmt: skip
    fake.apply(pod)
    fake.set_log(NS, pod_name, "app", ["INFO starting api v2-crash", "INFO connecting to the database", FATAL],
                 previous=True)  # fmt: skip
    return pod_name


async def open_logs(app, pilot, *keys: str) -> LogsScreen:
    await settle(app, pilot)
    await pilot.press("down", *keys)  # the first group's first workload: dc1
    screen = app.screen
    assert isinstance(screen, LogsScreen)
    return screen


async def test_l_on_a_crash_looping_workload_shows_the_previous_containers_error(fake):
    pod = crash_loop(fake)
    app = make_app(fake)
    async with app.run_test(size=(120, 35)) as pilot:
        screen = await open_logs(app, pilot, "l")
        await until(pilot, lambda: FATAL in screen.lines, what="the previous container's FATAL line")
        headings = [e.text for e in screen.events if isinstance(e, Heading)]
        assert headings[0] == "previous container (restart 5): exited 1 (Error) at 2024-05-02T09:58:10Z"
        assert headings[1].startswith("current container: CrashLoopBackOff: back-off 1m20s")
        notes = [e.text for e in screen.events if isinstance(e, Note)]
        assert notes[0] == f"pod {pod}, container app (newest of 2 pods)"
        assert "it has not started again yet: the log above is its last run" in notes
        shown = [
            strip.text for strip in app.screen.query_one("#page-box").lines
        ]  # on screen, not only in the model
        assert shown[1].startswith("── previous container") and shown[4] == FATAL
        await pilot.press("escape")
        assert isinstance(app.screen, WorkloadsScreen)


async def test_follow_shows_a_line_written_later_and_stops_when_closed(fake):
    fake.set_log(NS, "dc1-2-fd571", "app", ["INFO starting api v2", "INFO api v2 ready"], running=True)
    fake.set_log(NS, "dc1-2-9df89", "app", ["INFO the older pod"], running=True)
    app = make_app(fake)
    async with app.run_test(size=(120, 35)) as pilot:
        screen = await open_logs(app, pilot, "l")
        await until(pilot, lambda: "INFO api v2 ready" in screen.lines, what="the first lines")
        assert "INFO the older pod" not in screen.lines  # the newest pod only (equal times: by name)
        headings = [e.text for e in screen.events if isinstance(e, Heading)]
        assert headings == ["current container: running since ?"]  # no previous container: no such part
        fake.add_log(NS, "dc1-2-fd571", "app", 'INFO "GET /healthz" 200')
        await until(pilot, lambda: 'INFO "GET /healthz" 200' in screen.lines, what="the line written later")
        workers = [w for w in app.workers if w.group == "logs"]
        assert workers and workers[0].is_running
        await pilot.press("escape")
        await until(pilot, lambda: all(w.is_finished for w in workers), what="the log worker to end")


async def test_l_in_the_detail_reads_the_chosen_revisions_pods(fake):
    app = make_app(fake)
    async with app.run_test(size=(120, 35)) as pilot:
        await settle(app, pilot)
        await pilot.press("down", "down", "d")  # dc2: revisions dc2-2 (Failed, no pods), dc2-1
        await settle(app, pilot)
        assert isinstance(app.screen, DetailScreen)
        await pilot.press("l")
        screen = app.screen
        assert isinstance(screen, LogsScreen) and screen.revision == 2
        await until(pilot, lambda: bool(screen.events), what="the page's first words")
        # no pods, and no deployer pod left (this fake cluster has none): nothing to show, and why
        assert screen.events[0] == Note(
            "no pod to show the logs of: the revision has no pods, and its deployer pod dc2-2-deploy is gone",
            warning=True,
        )
        await pilot.press("escape", "j", "l")  # revision 1 runs two pods; no log written: the kubelet's no
        screen = app.screen
        assert isinstance(screen, LogsScreen) and screen.revision == 1
        await until(pilot, lambda: any("waiting to start" in e.text for e in screen.events), what="a refusal")


ROLLOUT_ERROR = "error: timed out waiting for any update progress to be made"


def failed_deployer_pod(fake, rc_name: str = "dc2-2") -> str:
    """The deployer pod OpenShift keeps for a failed rollout: `<rc>-deploy`, owned (not controlled) by
    the RC, its container exited 1 with the strategy's error, and the deployer's log."""
    rc = fake.get(REPLICATION_CONTROLLERS, rc_name, namespace=NS)
    rc["metadata"]["annotations"]["openshift.io/deployer-pod.name"] = f"{rc_name}-deploy"
    fake.apply(rc)
    name = f"{rc_name}-deploy"
    done = {"exitCode": 1, "reason": "Error", "message": ROLLOUT_ERROR, "finishedAt": "2024-05-02T09:50:00Z",
            "startedAt": "2024-05-02T09:39:00Z", "containerID": "cri-o://d2"}  # fmt: skip
    fake.apply({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": NS, "uid": f"uid-{name}", "resourceVersion": "1",
                     "creationTimestamp": "2024-05-02T09:39:00Z",
                     "labels": {"openshift.io/deployer-pod-for.name": rc_name},
                     "annotations": {"openshift.io/deployment.name": rc_name,
                                     "openshift.io/deployment-config.name": "dc2"},
                     "ownerReferences": [{"apiVersion": "v1", "kind": "ReplicationController", "name": rc_name,
                                          "uid": rc["metadata"]["uid"]}]},
        "spec": {"restartPolicy": "Never", "containers": [{"name": "deployment", "image": "origin-deployer"}]},
        "status": {"phase": "Failed", "containerStatuses": [
            {"name": "deployment", "ready": False, "restartCount": 0, "state": {"terminated": done}}]},
    })  # fmt: skip
    fake.set_log(NS, name, "deployment", [
        "--> Scaling up dc2-2 from 0 to 2, scaling down dc2-1 from 2 to 0 (keep 2 pods available, don't exceed 3 pods)",
        "    Scaling dc2-2 up to 1",
        ROLLOUT_ERROR,
    ])  # fmt: skip
    return name


async def test_l_on_a_failed_revision_without_pods_shows_its_deployer_pods_error(fake):
    """As `oc logs dc/dc2` on OpenShift (openshift-apiserver pkg/apps/apiserver/registry/deploylog/rest.go:
    a Failed RC's log is its deployer pod's): the rollout's error, not "none runs now"."""
    deployer = failed_deployer_pod(fake)
    app = make_app(fake)
    async with app.run_test(size=(120, 35)) as pilot:
        await settle(app, pilot)
        await pilot.press("down", "down", "d")  # dc2: revisions dc2-2 (Failed, no pods), dc2-1
        await settle(app, pilot)
        await pilot.press("l")
        screen = app.screen
        assert isinstance(screen, LogsScreen) and screen.revision == 2
        await until(pilot, lambda: ROLLOUT_ERROR in screen.lines, what="the deployer's error")
        assert screen.events[0] == Note(f"deployer pod {deployer}: the revision has no pods")
        headings = [e.text for e in screen.events if isinstance(e, Heading)]
        assert headings == ["current container: exited 1 (Error) at 2024-05-02T09:50:00Z"]
        assert screen.lines[0].startswith("--> Scaling up dc2-2 from 0 to 2")
        await pilot.press("escape", "j", "l")  # revision 1 has pods: they are what `l` shows
        screen = app.screen
        assert isinstance(screen, LogsScreen) and screen.revision == 1
        await until(pilot, lambda: bool(screen.events), what="the page's first words")
        assert screen.events[0].text.startswith("pod dc2-1-")
        await pilot.press("escape", "escape")
        await settle(app, pilot)
        await pilot.press("l")  # the workload: its newest revision is the failed one, as for `oc logs dc/dc2`
        screen = app.screen
        assert isinstance(screen, LogsScreen) and screen.revision is None
        await until(pilot, lambda: ROLLOUT_ERROR in screen.lines, what="the deployer's error")
        assert screen.events[0] == Note(f"deployer pod {deployer}: the revision has no pods")


async def test_a_key_that_is_not_offered_says_why(fake):
    app = make_app(fake, read_only=True)
    async with app.run_test(size=(120, 35)) as pilot:
        await settle(app, pilot)
        assert app.screen.table.current.row is None  # the cursor starts on a group row
        await pilot.press("l")
        assert isinstance(app.screen, WorkloadsScreen)
        await pilot.press("down", "r")
        messages = [n.message for n in app._notifications]
        assert messages[0] == "logs: the cursor is on a group; choose one of its workloads"
        assert messages[1] == "Redeploy: read-only (started with --read-only)"
        await pilot.press("escape")  # silent keys stay silent: nothing to clear
        assert len(app._notifications) == 2


async def test_resume_on_a_workload_that_is_not_paused_says_so(fake):
    app = make_app(fake)
    async with app.run_test(size=(120, 35)) as pilot:
        await settle(app, pilot)
        await pilot.press("down", "u")
        assert [n.message for n in app._notifications] == ["Resume: nothing to resume: not paused"]


@pytest.fixture
def svg(snapshot):
    return snapshot.use_extension(SVGScreenshot)


async def test_80x24_crash_loop_logs(fake, svg):
    crash_loop(fake)
    app = make_app(fake)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_logs(app, pilot, "l")
        await until(
            pilot, lambda: any(isinstance(e, Note) and "not started" in e.text for e in screen.events)
        )
        await pilot.pause(0.2)
        assert app.export_screenshot() == svg


async def test_l_on_a_pod_row_of_the_detail_shows_that_pod(fake):
    fake.set_log(NS, "dc1-2-9df89", "app", ["INFO the first pod"])
    fake.set_log(NS, "dc1-2-fd571", "app", ["INFO the second pod"])
    app = make_app(fake)
    async with app.run_test(size=(120, 35)) as pilot:
        await settle(app, pilot)
        await pilot.press("down", "d")  # dc1
        await settle(app, pilot)
        detail = app.screen
        assert isinstance(detail, DetailScreen)
        await pilot.press("tab")  # from the revisions to the pods
        assert detail.focused is detail.query_one("#pods")
        await pilot.press("l")
        screen = app.screen
        assert isinstance(screen, LogsScreen) and screen.pod == "dc1-2-9df89"
        await until(pilot, lambda: "INFO the first pod" in screen.lines, what="the first pod's log")
        await pilot.press("escape", "j", "l")
        screen = app.screen
        assert isinstance(screen, LogsScreen) and screen.pod == "dc1-2-fd571"
        await until(pilot, lambda: "INFO the second pod" in screen.lines, what="the second pod's log")


def sidecar_pod(fake, pod_name: str = "dc1-2-fd571") -> str:
    """Make one of dc1's pods the newest, with a second container `proxy` in back-off (its log says why)
    while `app` runs."""
    pod = fake.get(PODS, pod_name, namespace=NS)
    pod["metadata"]["creationTimestamp"] = "2024-05-02T09:45:00Z"
    pod["spec"]["containers"].append({"name": "proxy", "image": "registry.local/proxy:1"})
    pod["status"]["containerStatuses"].append({
        "name": "proxy", "ready": False, "restartCount": 3, "image": "registry.local/proxy:1",
        "state": {"waiting": {"reason": "CrashLoopBackOff", "message": "back-off 40s"}},
        "lastState": {"terminated": {"exitCode": 2, "reason": "Error", "finishedAt": "2024-05-02T09:58:10Z"}},
    })  # fmt: skip
    fake.apply(pod)
    fake.set_log(NS, pod_name, "proxy", ["FATAL proxy: no upstream configured"], previous=True)
    fake.set_log(NS, pod_name, "app", ["INFO api v2 ready"], running=True)
    return pod_name


async def test_a_pod_with_two_containers_starts_on_the_failing_one_and_c_shows_the_other(fake):
    pod = sidecar_pod(fake)
    app = make_app(fake)
    async with app.run_test(size=(120, 35)) as pilot:
        screen = await open_logs(app, pilot, "l")
        await until(
            pilot, lambda: "FATAL proxy: no upstream configured" in screen.lines, what="proxy's last run"
        )
        notes = [e.text for e in screen.events if isinstance(e, Note)]
        assert notes[0] == f"pod {pod}, container proxy (newest of 2 pods); c for the next container (app)"
        assert "INFO api v2 ready" not in screen.lines
        await pilot.press("c")
        await until(pilot, lambda: "INFO api v2 ready" in screen.lines, what="app's log")
        assert screen.pod == pod and screen.container == "app"
        assert "FATAL proxy: no upstream configured" not in screen.lines  # the page started again
        shown = [strip.text for strip in screen.query_one("#page-box").lines]
        assert not any("proxy: no upstream" in line for line in shown), shown
        assert f"logs of pod {pod}, container app" in str(screen.query_one("#status").render())
        fake.add_log(NS, pod, "app", 'INFO "GET /healthz" 200')  # still followed after the switch
        await until(pilot, lambda: 'INFO "GET /healthz" 200' in screen.lines, what="a line written later")
        await pilot.press("c")  # round: back to proxy
        await until(pilot, lambda: "FATAL proxy: no upstream configured" in screen.lines, what="proxy again")
        assert screen.container == "proxy" and "INFO api v2 ready" not in screen.lines
        workers = [w for w in app.workers if w.group == "logs"]
        await pilot.press("escape")
        await until(pilot, lambda: all(w.is_finished for w in workers), what="every log worker to end")


async def test_c_on_a_pod_with_one_container_says_so(fake):
    fake.set_log(NS, "dc1-2-fd571", "app", ["INFO api v2 ready"])
    app = make_app(fake)
    async with app.run_test(size=(120, 35)) as pilot:
        screen = await open_logs(app, pilot, "l")
        await until(pilot, lambda: screen.shown is not None, what="the pod shown")
        await pilot.press("c")
        assert [n.message for n in app._notifications] == [
            "next container: pod dc1-2-fd571 has one container"
        ]
        assert screen.container is None and "INFO api v2 ready" in screen.lines


async def test_a_resize_wraps_the_lines_again_at_the_new_width(fake):
    crash_loop(fake)
    app = make_app(fake)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_logs(app, pilot, "l")
        await until(pilot, lambda: FATAL in screen.lines, what="the FATAL line")

        def shown() -> list[str]:
            return [strip.text.rstrip() for strip in screen.query_one("#page-box").lines]

        await until(pilot, lambda: FATAL not in shown(), what="the FATAL line wrapped at 80 columns")
        await pilot.resize_terminal(160, 30)
        await until(pilot, lambda: FATAL in shown(), what="the FATAL line on one line at 160 columns")
        await pilot.resize_terminal(80, 24)
        await until(pilot, lambda: FATAL not in shown(), what="wrapped again at 80 columns")
        assert shown().count(shown()[0]) == 1  # wrapped again, not written twice
