"""The logs page's choice of container (tui/logs.py, pure): the one whose log says why the pod is not
ready, else the first; `c` steps through the pod's containers in order."""

from __future__ import annotations

from rollguard.tui.logs import Shown, container_to_show, next_container


def pod(*statuses: dict) -> dict:
    return {
        "metadata": {"name": "p"},
        "spec": {"containers": [{"name": s["name"]} for s in statuses]},
        "status": {"containerStatuses": list(statuses)},
    }


RUNNING = {"state": {"running": {}}, "ready": True}
BACKOFF = {"state": {"waiting": {"reason": "CrashLoopBackOff"}}, "ready": False}
EXITED = {"state": {"terminated": {"exitCode": 1}}, "ready": False}
STARTING = {"state": {"running": {}}, "ready": False}  # running, readiness probe not passed yet


def test_all_ready_shows_the_first():
    assert container_to_show(pod({"name": "app", **RUNNING}, {"name": "proxy", **RUNNING})) == "app"


def test_the_one_in_back_off_or_exited_is_shown_first():
    assert container_to_show(pod({"name": "app", **RUNNING}, {"name": "proxy", **BACKOFF})) == "proxy"
    assert container_to_show(pod({"name": "app", **STARTING}, {"name": "job", **EXITED})) == "job"


def test_a_container_that_only_waits_for_readiness_does_not_take_the_page():
    assert container_to_show(pod({"name": "app", **RUNNING}, {"name": "proxy", **STARTING})) == "app"


def test_the_chosen_one_wins_when_the_pod_has_it():
    both = pod({"name": "app", **RUNNING}, {"name": "proxy", **BACKOFF})
    assert container_to_show(both, "app") == "app"
    assert container_to_show(both, "gone") == "proxy"  # not in this pod: chosen as if none was


def test_no_status_yet_shows_the_first():
    assert container_to_show({"spec": {"containers": [{"name": "a"}, {"name": "b"}]}}) == "a"


def test_next_goes_round():
    shown = Shown("p", "b", ("a", "b", "c"))
    assert next_container(shown) == "c"
    assert next_container(Shown("p", "c", ("a", "b", "c"))) == "a"
