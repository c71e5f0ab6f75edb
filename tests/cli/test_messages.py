"""Messages and output as kubectl users expect them, on the live sandbox: a closed pipe, an expired token,
Events counted up like the event recorder does (client-go tools/record/events_cache.go)."""

from __future__ import annotations

import datetime as dt
import subprocess
import sys

from rollguard.core.report import Report
from rollguard.core.structs import ExitStatus
from sandbox.cluster import write_kubeconfig
from tests.helpers.cluster import NEW, OLD, SELECTOR, create_group, dc_body, rollguard, view
from tests.helpers.scenarios import events, pause


def cli(kubeconfig, *args: str) -> list[str]:
    return [sys.executable, "-m", "rollguard.cli", *args, "--kubeconfig", str(kubeconfig)]


def test_status_into_a_pipe_closed_early_ends_quietly_with_sigpipe_status(sandbox, namespace, client):
    create_group(client, namespace, [dc_body("dc1", OLD)])
    # the reader is gone before rollguard writes: its first write meets EPIPE, every time
    proc = subprocess.Popen(cli(sandbox.kubeconfig, "status", "-n", namespace),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)  # fmt: skip
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()
    stderr = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == 141, stderr
    assert stderr == "", stderr  # no traceback, no "Exception ignored" at exit

    # the same through a shell pipe into head, as typed
    shell = subprocess.run(
        ["bash", "-c", " ".join(cli(sandbox.kubeconfig, "status", "-A")) + " | head -n 1; exit ${PIPESTATUS[0]}"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert shell.returncode in (0, 141) and shell.stderr == "", shell.stderr
    assert shell.stdout.startswith("rollguard status: all namespaces")


def test_rollout_into_head_still_finishes_and_tells_the_truth(sandbox, namespace, client):
    """A progress reader that goes away must not stop a run half-way (the group would be left mixed)."""
    create_group(client, namespace, [dc_body("dc1", OLD), dc_body("dc2", OLD)])
    proc = subprocess.Popen(
        cli(sandbox.kubeconfig, "rollout", "-n", namespace, "-l", SELECTOR,
            "--image", f"dc/dc1={NEW}", "--image", f"dc/dc2={NEW}"),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert proc.stdout is not None and proc.stderr is not None
    first = proc.stdout.readline()
    proc.stdout.close()  # like head -n 1
    stderr = proc.stderr.read()
    assert proc.wait(timeout=240) == 0, stderr
    assert first.startswith(f"rollguard rollout: namespace {namespace} (--namespace)")
    assert "Traceback" not in stderr
    assert all(view(client, namespace, "DeploymentConfig", n).images == {"app": NEW} for n in ("dc1", "dc2"))


def test_a_rejected_token_says_to_log_in_again(sandbox, namespace, tmp_path):
    stale = write_kubeconfig(tmp_path / "stale", sandbox, "expired-token", "me", namespace)
    status = rollguard(stale, "status")
    assert status.code == 2 and "401" in status.stderr and "oc login" in status.stderr, status.stderr
    rollout = rollguard(stale, "rollout", "-l", SELECTOR, "--image", f"dc/dc1={NEW}")
    assert rollout.code == 2 and "oc login" in rollout.stderr, rollout.stderr
    assert "refresh the kubeconfig" in rollout.stderr and "Traceback" not in rollout.stderr


def test_repeated_drift_checks_count_up_one_event(sandbox, namespace, client, tmp_path):
    create_group(client, namespace, [dc_body("dc1", OLD), dc_body("dc2", OLD)])
    pause(client, namespace, "dc1")
    for _ in range(3):
        result = rollguard(sandbox.kubeconfig, "drift-check", "-n", namespace, "--emit-events",
                           report=tmp_path / "drift.json")  # fmt: skip
        assert result.code == 1 and result.report["events"] == 1 and not result.report["errors"], (
            result.stderr
        )
    # a reader gone before the output (drift-check | head -c 0): the verdict still comes as the exit code
    proc = subprocess.Popen(cli(sandbox.kubeconfig, "drift-check", "-n", namespace, "--emit-events"),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)  # fmt: skip
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()
    stderr = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == 1 and stderr == "", stderr
    (event,) = events(client, namespace, "RollguardDriftCheck")
    assert event["count"] == 4 and event["involvedObject"]["name"] == "dc1"
    assert event["lastTimestamp"] >= event["firstTimestamp"]
    # another finding text is another event, as for the recorder
    pause(client, namespace, "dc2")
    rollguard(sandbox.kubeconfig, "drift-check", "-n", namespace, "--emit-events")
    found = {
        e["involvedObject"]["name"]: e["count"] for e in events(client, namespace, "RollguardDriftCheck")
    }
    assert found == {"dc1": 5, "dc2": 1}


def test_a_success_line_never_carries_a_cause():
    done = Report(status=ExitStatus.SUCCEEDED, command="rollout", error="could not update the journal x: 500")
    assert "cause" not in done.summary() and "warning: could not update the journal" in done.summary()
    failed = Report(status=ExitStatus.REVERTED, command="rollout", error="dc/x: crash-looping")
    assert failed.summary().endswith("; cause: dc/x: crash-looping")


def test_event_counted_up_is_pure():
    from rollguard.core.structs import DC, WorkloadRef
    from rollguard.run.events import counted, event_body

    at = dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.UTC)
    obj = {"metadata": {"namespace": "ns", "uid": "u1", "resourceVersion": "7"}}
    one = event_body(WorkloadRef(DC, "dc1"), obj, reason="R", message="m", at=at)
    same = event_body(WorkloadRef(DC, "dc1"), {**obj, "metadata": {**obj["metadata"], "resourceVersion": "9"}},
                      reason="R", message="m")  # fmt: skip
    other = event_body(WorkloadRef(DC, "dc1"), obj, reason="R", message="m2")
    assert one["metadata"]["name"] == same["metadata"]["name"] != other["metadata"]["name"]
    later = counted({**one, "count": 2}, at=at + dt.timedelta(hours=1))
    assert later["count"] == 3 and later["lastTimestamp"] == "2026-01-02T04:04:05Z"
    assert later["firstTimestamp"] == "2026-01-02T03:04:05Z"
