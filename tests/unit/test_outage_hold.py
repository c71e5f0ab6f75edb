"""Holding through an API outage (issue 24 point 6), without a cluster: the client's retries, the probe
that tells a silent API server from a request failing alone, the pulse that times the silence, and a
timeout on every request (tests/chaos/test_outage.py stops the real API server)."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from rollguard.cluster import client as client_module
from rollguard.cluster.client import Client, hold_through_outages
from rollguard.cluster.pulse import Pulse, next_report
from rollguard.cluster.transport import send
from rollguard.core.errors import Unreachable
from rollguard.core.resources import CONFIG_MAPS


class Answer:
    data = b'{"kind": "ConfigMap"}'

    def read(self) -> bytes:
        return self.data

    def release_conn(self) -> None:
        pass


class Cluster:
    """A transport double: nothing answers while ``down`` (as a stopped API server), or only the paths
    in ``failing`` get no answer (a request failing alone while the server answers others)."""

    def __init__(self, *, down: int = 0, failing: tuple[str, ...] = ()) -> None:
        self.down = down  # requests (probes included) that get no answer before it answers again
        self.failing = failing
        self.calls: list[str] = []
        self.timeouts: list[Any] = []
        self.user_agent = ""

    def call_api(self, path: str, method: str, **kwargs: Any) -> Answer:
        self.calls.append(f"{method} {path}")
        self.timeouts.append(kwargs["_request_timeout"])
        if self.down > 0:
            self.down -= 1
            raise TimeoutError("read timed out")
        if any(path.endswith(f) for f in self.failing):
            raise ConnectionResetError("reset by peer")
        return Answer()


@pytest.fixture(autouse=True)
def quick(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(client_module, "HOLD_BACKOFF", (0.0,))
    monkeypatch.setattr(client_module.time, "sleep", lambda _s: None)


def holding(cluster: Cluster, stop: threading.Event | None = None) -> tuple[Client, list[str]]:
    client = Client(cluster)
    said: list[str] = []
    hold_through_outages(client, stop=stop or threading.Event(), say=said.append)
    return client, said


def test_a_read_is_held_while_the_api_server_answers_nothing() -> None:
    cluster = Cluster(down=12)  # more than the 5 attempts of a request, probes included
    client, _said = holding(cluster)
    assert client.get(CONFIG_MAPS, "j", namespace="shop") == {"kind": "ConfigMap"}
    assert "GET /version" in cluster.calls  # each unanswered attempt asked whether anything answers
    client.pulse.release()


def test_without_a_hold_a_silent_api_server_fails_the_request_after_its_attempts() -> None:
    client = Client(Cluster(down=12))  # a preflight or a read-only command: an unreachable cluster is refused
    with pytest.raises(Unreachable):
        client.get(CONFIG_MAPS, "j", namespace="shop")


def test_a_request_failing_alone_keeps_its_few_attempts() -> None:
    """The API server answers the probe: the lease renewals cut off by a partition are not an outage."""
    cluster = Cluster(failing=("/leases/j",))
    client, _said = holding(cluster)
    with pytest.raises(Unreachable):
        client.replace(client_module.Resource("coordination.k8s.io", "v1", "leases", "Lease"),
                       {"metadata": {"name": "j"}}, namespace="shop")  # fmt: skip
    assert sum(c.startswith("PUT") for c in cluster.calls) == 5
    client.pulse.release()


def test_every_held_write_is_fenced_again() -> None:
    proofs: list[int] = []
    cluster = Cluster(down=6)
    client, _said = holding(cluster)
    fenced = client.guarded(lambda: proofs.append(1))
    fenced.replace(CONFIG_MAPS, {"metadata": {"name": "j"}}, namespace="shop")
    writes = sum(c.startswith("PUT") for c in cluster.calls)
    assert writes >= 2 and len(proofs) == writes  # the lock proves the group ours before each attempt
    client.pulse.release()


def test_the_hold_ends_when_the_run_may_wait_no_longer() -> None:
    stop = threading.Event()
    stop.set()  # the SIGTERM grace is over
    cluster = Cluster(down=1000)
    client, _said = holding(cluster, stop)
    with pytest.raises(Unreachable):
        client.get(CONFIG_MAPS, "j", namespace="shop")
    assert cluster.calls == ["GET /api/v1/namespaces/shop/configmaps/j"]  # no more attempts, no probe
    client.pulse.release()


def test_every_request_has_a_timeout() -> None:
    """The official client applies a single timeout only when it is an int: a float (a log follow's
    3600.0) went out with none at all."""
    cluster = Cluster()
    for stream, timeout in ((True, 3600.0), (True, 250), (False, 30.0)):
        send(cluster, "GET", "/api/v1/namespaces/shop/pods/p/log", stream=stream, timeout=timeout)
    for given in cluster.timeouts:
        assert isinstance(given, tuple) and len(given) == 2 and all(t > 0 for t in given), given


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_the_pulse_times_the_silence_from_the_last_answer() -> None:
    clock = Clock()
    pulse = Pulse(clock=clock)
    assert pulse.silent_for() == 0
    first = pulse.sent()
    clock.now += 3
    pulse.unanswered(first)
    clock.now += 9
    assert pulse.silent_for() == 12  # since the request that got no answer went out
    pulse.answered(pulse.sent())
    assert pulse.silent_for() == 0
    waiting = pulse.sent()
    clock.now += 4
    assert pulse.silent_for() == 4
    pulse.answered(waiting)
    assert [next_report(0), next_report(10), next_report(20)] == [10, 20, 40]


def test_a_holding_run_says_while_nothing_answers_and_when_it_answers_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from rollguard.cluster import pulse as pulse_module

    monkeypatch.setattr(pulse_module, "FIRST_REPORT", 0.05)
    pulse = Pulse()
    said: list[str] = []
    spoke = threading.Condition()

    def say(line: str) -> None:
        with spoke:
            said.append(line)
            spoke.notify_all()

    def heard(start: str) -> bool:
        with spoke:
            return spoke.wait_for(lambda: any(line.startswith(start) for line in said), timeout=5)

    recovered = threading.Event()
    pulse.hold(stop=threading.Event(), say=say, on_recovery=recovered.set)
    waiting = pulse.sent()
    assert heard("no answer from the API server for "), said
    assert said[0].endswith("s, retrying") and not recovered.is_set()
    pulse.answered(waiting)
    assert heard("the API server answers again after "), said
    assert recovered.wait(5)  # the client then re-establishes its watches (Client.cut_watches)
    pulse.release()


def test_a_run_out_of_time_sends_nothing_more_while_nothing_answers() -> None:
    """SIGTERM's grace is over during an outage: a request would only wait out its timeout, past the
    platform's SIGKILL; it is not sent, and the run ends with what it knows (exit 3)."""
    clock = Clock()
    cluster = Cluster()
    client = Client(cluster)
    client.pulse = Pulse(clock=clock)
    stop = threading.Event()
    hold_through_outages(client, stop=stop, say=lambda _line: None)
    client.pulse.sent()  # a request that gets no answer
    clock.now += 12
    stop.set()
    with pytest.raises(Unreachable, match="not sent: no answer from the API server for 12s"):
        client.get(CONFIG_MAPS, "j", namespace="shop")
    assert cluster.calls == []
    client.pulse.release()


def test_the_transport_leaves_retries_to_the_client() -> None:
    """urllib3's own 3 retries counted each timeout four times over and resent writes unseen."""
    from rollguard.cluster import k8s
    from rollguard.cluster.transport import Transport

    configuration = k8s.module("client.configuration").Configuration()
    configuration.host = "https://127.0.0.1:1"
    transport = Transport(configuration)
    assert transport.rest_client.pool_manager.connection_pool_kw["retries"].total == 0
