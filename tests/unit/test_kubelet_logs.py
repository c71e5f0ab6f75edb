"""The stand-in kubelet's container logs as pure functions: which instance (kubernetes
pkg/kubelet/kubelet_pods.go `validateContainerLogStatus`), its lines, and PodLogOptions as the kubelet reads
them (pkg/kubelet/server/server.go `getContainerLogs`). Through the API server: tests/sandbox/test_kubelet_logs.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from sandbox.kubelet_logs import (
    LINE_EVERY,
    Instance,
    LogError,
    LogOptions,
    first_lines,
    lines,
    parse_options,
    pick,
    unsent,
)
from sandbox.podstatus import Container, PodRun

APP = "registry.local/team/app"


def run_of(tag: str, behaviour: tuple[str, ...], started: float = 1000.0) -> PodRun:
    return PodRun(uid="u-1", namespace="ns", name="p", containers=[Container("app", f"{APP}:{tag}", behaviour, "")],  # type: ignore[arg-type]
                  init_containers=[], restart_policy="Always", started=started, ip="10.128.0.2")  # fmt: skip


def test_a_ready_image_starts_then_logs_health_checks(tmp_path: Path) -> None:
    inst = pick(
        run_of("v2", ("ready",)),
        "app",
        previous=False,
        now=1000.0 + 3 * LINE_EVERY + 0.5,
        registry_dir=tmp_path,
    )
    assert inst.end is None
    text = [t for _at, t in lines(inst, 1000.0 + 3 * LINE_EVERY + 0.5)]
    assert text[0] == f"INFO starting app v2 (image {APP}:v2)"
    assert text[3] == "INFO app v2 ready"
    assert sum("GET /healthz" in t for t in text) == 3


def test_previous_without_a_terminated_instance_is_refused(tmp_path: Path) -> None:
    with pytest.raises(LogError) as err:
        pick(run_of("v2", ("ready",)), "app", previous=True, now=1005.0, registry_dir=tmp_path)
    assert err.value.status == 400
    assert str(err.value) == 'previous terminated container "app" in pod "p" not found'


def test_a_crash_loop_logs_its_fatal_error_and_keeps_it(tmp_path: Path) -> None:
    run = run_of("v3-crash", ("crash",))
    running = pick(run, "app", previous=False, now=1000.5, registry_dir=tmp_path)
    assert running.end is None and not any("FATAL" in t for _a, t in lines(running, 1000.5))
    previous = pick(run, "app", previous=True, now=1030.0, registry_dir=tmp_path)
    assert previous.end is not None and previous.start >= 1000.0
    assert lines(previous, 1030.0)[-1][1].startswith("FATAL app v3-crash: cannot start")
    # in back-off, the plain log is the last terminated instance's (the kubelet's rule)
    assert pick(run, "app", previous=False, now=1030.0, registry_dir=tmp_path) == previous


def test_a_pull_error_is_waiting_to_start(tmp_path: Path) -> None:
    with pytest.raises(LogError, match="is waiting to start: image can't be pulled"):
        pick(
            run_of("v1", ("pull-error", "ErrImagePull")),
            "app",
            previous=False,
            now=1000.5,
            registry_dir=tmp_path,
        )


def test_tail_and_since() -> None:
    inst = Instance(f"{APP}:v1", ("ready",), 1000.0, None)
    now = 1000.0 + 10 * LINE_EVERY
    assert first_lines(inst, LogOptions(tail_lines=2), now) == lines(inst, now)[-2:]
    assert first_lines(inst, LogOptions(tail_lines=0), now) == []
    since = first_lines(inst, LogOptions(since_seconds=int(3 * LINE_EVERY)), now)
    assert since and all(at >= now - 3 * LINE_EVERY for at, _t in since)


def test_the_query_is_read_as_the_kubelet_reads_it() -> None:
    assert parse_options("follow=true&tailLines=5&timestamps=true") == LogOptions(
        follow=True, timestamps=True, tail_lines=5
    )
    assert parse_options("tail=all") == LogOptions()
    with pytest.raises(LogError) as err:
        parse_options("tailLines=x")
    assert err.value.status == 400
    with pytest.raises(LogError) as err:
        parse_options("tailLines=-1")
    assert err.value.status == 422


def test_an_emulated_processs_output_is_the_log_and_a_follow_counts_its_lines() -> None:
    """A deployer pod's process is emulated (sandbox/openshift/deployer.py): its log is what it printed,
    nothing of its image; lines that reach the kubelet late (their time already passed) still follow."""
    run = run_of("v4.14", ("ready",))
    run.output = ((1000.5, "--> Scaling web-1 to 1"),)
    inst = pick(run, "app", previous=False, now=1001.0, registry_dir=Path("/nonexistent"))
    assert lines(inst, 1001.0) == [(1000.5, "--> Scaling web-1 to 1")]
    later = Instance(
        inst.image, inst.behaviour, inst.start, None, output=(*run.output, (1000.6, "--> Success"))
    )
    assert unsent(later, 1001.2, since=1001.0, sent=1) == [(1000.6, "--> Success")]  # older than `since`
    plain = run_of("v1", ("ready",))
    plain_inst = pick(plain, "app", previous=False, now=1001.0, registry_dir=Path("/nonexistent"))
    assert plain_inst.output is None and lines(plain_inst, 1001.0)[0][1].startswith("INFO starting app v1")
