"""`Client.pod_log`'s request: the PodLogOptions query of `GET pods/P/log` (kubernetes
staging/src/k8s.io/api/core/v1 PodLogOptions: container, follow, previous, tailLines)."""

from rollguard.client import pod_log_query


def test_a_crash_loops_previous_container_followed() -> None:
    assert pod_log_query(container="app", follow=True, previous=True, tail_lines=100) == [
        ("container", "app"), ("follow", "true"), ("previous", "true"), ("tailLines", "100"),
    ]  # fmt: skip


def test_defaults_ask_only_for_the_container() -> None:
    assert pod_log_query(container="app") == [("container", "app")]
