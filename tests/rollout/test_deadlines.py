"""Deadlines honoured (issue 31 point 4), on the live sandbox.

``--timeout 8s`` on a DC whose new pod is slow (its deployer pod still running) ended after 13 s with
5 s of CPU burnt: the deployer-evidence grace was applied to rollguard's own timeout, and the wait was
asked for a time already past, so the loop spun through the grace. The run must end at its timeout
(the fake-clock tests in tests/unit/test_wait_deadlines.py show when; no wall-clock assertion here) and
cost next to no CPU while it waits: the child's own CPU time (its ``/proc`` stat while it watches, and
``wait4``'s rusage at its end) is what is asserted.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.helpers.cluster import DC, IMAGE, OLD, SELECTOR, create_group, dc_body, journal_reaches, view

SLOW = f"{IMAGE}:v2-slow300"  # its pod is ready only long after the timeout: the deployer pod runs on
WAITING_CPU_LIMIT = 1.0  # seconds of CPU while watching and reverting (an idle wait costs ~0.1 s)


def cpu_seconds(pid: int) -> float:
    """utime + stime of a live process, from /proc (no psutil)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def test_timeout_ends_the_wait_without_burning_cpu(sandbox, namespace, client, tmp_path: Path):
    create_group(client, namespace, [dc_body("api", OLD)])
    report = tmp_path / "r.json"
    out, err = tmp_path / "out", tmp_path / "err"
    cmd = [sys.executable, "-m", "rollguard.cli", "rollout", "-n", namespace, "-l", SELECTOR,
           "--image", f"dc/api={SLOW}", "--timeout", "8s", "--report", str(report),
           "--kubeconfig", str(sandbox.kubeconfig)]  # fmt: skip
    with out.open("w") as stdout, err.open("w") as stderr:
        proc = subprocess.Popen(cmd, stdout=stdout, stderr=stderr, env=os.environ.copy())
    try:
        journal_reaches(client, namespace, "watching")
        watching = cpu_seconds(proc.pid)
    finally:
        _, status, usage = os.wait4(proc.pid, 0)  # reaped here, so that its rusage is ours to read
    proc.returncode = os.waitstatus_to_exitcode(status)
    total = usage.ru_utime + usage.ru_stime
    said = out.read_text() + err.read_text()
    assert proc.returncode == 1, said
    data = json.loads(report.read_text())
    assert data["status"] == "reverted", data
    assert data["error"].startswith("dc/api: not complete within --timeout 8s"), data["error"]
    assert total - watching < WAITING_CPU_LIMIT, (
        f"{total - watching:.2f}s of CPU while waiting ({total:.2f}s in all)\n{said}"
    )
    state = view(client, namespace, DC, "api")
    assert state.images == {"app": OLD} and state.complete and not state.paused, state
