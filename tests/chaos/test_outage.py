"""The API server goes away for a while (issue 24 point 6; issue 31 point 5's last item), on the sandbox.

A control-plane upgrade or a load-balancer failover leaves the API server unresponsive for tens of
seconds. Emulated here as a hang, not a refusal: the sandbox's kube-apiserver process is stopped
(SIGSTOP) and continued (SIGCONT); its connections stay open and nothing answers. The run goes
through the fault proxy, so every request it sends is on record with the times the proxy received it
and the server answered it. Each outage lasts longer than the run's lease (``--lease-duration 10s``):
the API is continued once the run has said "no answer from the API server for 20s" (a condition, not
a sleep). Wherever the outage hits (the watch, the revert, the final journal write), the run must
hold: say it has no answer, retry, prove it still holds the group before it writes again (a renew of
its Lease answered after the outage precedes every later write; or stop as ``superseded``), and end
with the true exit code and a consistent group once the API answers again.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest

from rollguard.cluster.journal_codec import decode
from tests.helpers import chaos as h
from tests.helpers.cluster import CRASH, IMAGE, journal_reaches, make_group
from tests.helpers.proxy import Record

pytestmark = pytest.mark.chaos

LEASE = 10  # the run's --lease-duration: every outage here is longer
SLOW = f"{IMAGE}:v2-slow10"  # still rolling out when the API server stops
SILENT = re.compile(r"no answer from the API server for (\d+)s, retrying")
AGAIN = "the API server answers again"
PAST_THE_LEASE = 2 * LEASE  # the silence the run must have reported before the API server continues
# ... and, where writes are under way, past the 30 s a request waits for its answer: they are sent
# again, each proven again, while nothing answers
PAST_A_REQUEST = 4 * LEASE


class ApiServer:
    """The sandbox's kube-apiserver process, stopped and continued by signal (always continued at the end)."""

    def __init__(self, sandbox) -> None:
        self.pid = int((Path(sandbox.dir) / "apiserver.pid").read_text().strip())
        self.stopped_at = 0.0
        self.continued_at = 0.0

    def stop(self, _record: object = None) -> None:
        os.kill(self.pid, signal.SIGSTOP)
        self.stopped_at = time.monotonic()

    def cont(self) -> None:
        os.kill(self.pid, signal.SIGCONT)
        if self.stopped_at and not self.continued_at:
            self.continued_at = time.monotonic()


class Run:
    """A rollguard subprocess whose output is read as it comes, so a test can wait for a line."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.proc = proc
        self.out: list[str] = []
        self.err: list[str] = []
        self._said = threading.Condition()
        self._readers = [
            threading.Thread(target=self._read, args=(proc.stdout, self.out), daemon=True),
            threading.Thread(target=self._read, args=(proc.stderr, self.err), daemon=True),
        ]
        for reader in self._readers:
            reader.start()

    def _read(self, stream, into: list[str]) -> None:
        for line in stream:
            with self._said:
                into.append(line)
                self._said.notify_all()
        with self._said:
            self._said.notify_all()

    def wait_silent(self, seconds: int, *, timeout: float = 120) -> None:
        """Until the run said it had no answer for at least ``seconds`` (it holds, and says so)."""

        def said() -> bool:
            return any(int(m.group(1)) >= seconds for line in self.out if (m := SILENT.search(line)))

        with self._said:
            ok = self._said.wait_for(lambda: said() or self.proc.poll() is not None, timeout=timeout)
        assert ok and said(), (
            f"the run never said 'no answer from the API server for {seconds}s' (exit {self.proc.poll()}):\n"
            + "".join(self.out[-30:])
            + "".join(self.err[-20:])
        )

    def finish(self, report: Path, timeout: float = 180) -> h.Result:
        self.proc.wait(timeout=timeout)
        for reader in self._readers:
            reader.join(timeout=10)
        data = json.loads(report.read_text()) if report.exists() else {}
        return h.Result(self.proc.returncode, "".join(self.out), "".join(self.err), data)


def group_renewal(record: Record) -> bool:
    return record.method == "PUT" and record.resource == "leases" and record.path.endswith(f"/{h.JOURNAL}")


def unproven_writes(records: list[Record], api: ApiServer) -> list[str]:
    """Mutating requests sent after the API server continued with no renew of the group's Lease answered
    (200) after it continued and before they were sent: writes that did not prove the group still theirs."""
    proofs = [
        r.answered for r in records if group_renewal(r) and r.status == 200 and r.answered >= api.continued_at
    ]
    return [
        f"{r.method} {r.path}"
        for r in records
        if r.mutating
        and not group_renewal(r)
        and r.at >= api.continued_at
        and not any(p <= r.at for p in proofs)
    ]


def resumed_watches(records: list[Record], api: ApiServer) -> int:
    """Watches re-established once the API server answered again, each from the resourceVersion its
    stream had reached (or a new list, on 410 Gone); how many."""
    checked = 0
    for path in sorted({r.path for r in records if r.verb == "watch" and r.at >= api.continued_at}):
        streams = [r for r in records if r.verb == "watch" and r.path == path]
        before = [r for r in streams if r.at < api.stopped_at]
        after = [r for r in streams if r.at >= api.continued_at]
        if not before:
            continue
        prev, resumed = before[-1], after[0]
        if any(r.verb == "list" and r.path == path and prev.at < r.at < resumed.at for r in records):
            checked += 1  # listed again (410 Gone)
            continue
        reached = int(prev.last_rv or prev.resumed_from or 0)
        assert int(prev.resumed_from or 0) <= int(resumed.resumed_from or -1) <= reached, (
            f"watch {path} had reached {reached} (from {prev.resumed_from}); resumed from {resumed.resumed_from!r}"
        )
        checked += 1
    return checked


def outage_case(
    proxy, api: ApiServer, run: Run, report: Path, silence: int = PAST_THE_LEASE
) -> tuple[h.Result, list[str], float]:
    """Hold the API server stopped until the run said it had no answer for ``silence`` seconds; continue
    it; the run's result, its unproven writes and how long after the API server continued the run ended."""
    try:
        run.wait_silent(silence)
    finally:
        api.cont()
    result = run.finish(report)
    ended = time.monotonic() - api.continued_at
    assert not proxy.hook_errors, proxy.hook_errors
    assert "Traceback" not in result.stderr, result.stderr[-3000:]
    assert AGAIN in result.stdout, result.stdout[-3000:]
    return result, unproven_writes(list(proxy.records), api), ended


def start(kubeconfig: Path, namespace: str, report: Path, *images: str) -> Run:
    return Run(
        h.start(
            kubeconfig,
            "rollout",
            "-n",
            namespace,
            "-l",
            h.SELECTOR,
            *images,
            "--lease-duration",
            f"{LEASE}s",
            report=report,
        )
    )


def test_api_server_stopped_mid_watch_past_the_lease(
    client, sandbox, proxy, tmp_path, namespace, ledger_entry
):
    kubeconfig = proxy.kubeconfig(sandbox.kubeconfig, tmp_path / "kubeconfig")
    make_group(client, namespace)
    report = tmp_path / "r.json"
    api = ApiServer(sandbox)
    try:
        run = start(kubeconfig, namespace, report, *h.image_args(SLOW))
        journal_reaches(client, namespace, "watching")
        api.stop()
        result, unproven, ended = outage_case(proxy, api, run, report)
    finally:
        api.cont()
    assert result.code == 0, result.stdout[-3000:] + result.stderr[-1500:]
    assert result.report["status"] == "succeeded", result.report
    assert unproven == [], unproven
    resumed = resumed_watches(list(proxy.records), api)
    assert resumed >= 3, resumed  # the kinds, their revisions, the pods
    verdict = h.assert_consistent(client, sandbox.kubeconfig, namespace, (SLOW,))
    ledger_entry.case(
        "API server stopped mid-watch",
        faults={"SIGSTOP kube-apiserver": 1},
        states=verdict.checks + 2 + resumed,
        detail=f"stopped {api.continued_at - api.stopped_at:.0f}s (lease {LEASE}s) while watching; "
        f"'no answer' said, exit 0 {ended:.0f}s after SIGCONT, every later write proven, "
        f"{resumed} watches resumed from their last resourceVersion",
    )


def test_api_server_stopped_mid_revert(client, sandbox, proxy, tmp_path, namespace, ledger_entry):
    """dc2 crash-loops, the run reverts; the API server stops right after the first revert write landed."""
    kubeconfig = proxy.kubeconfig(sandbox.kubeconfig, tmp_path / "kubeconfig")
    make_group(client, namespace)
    report = tmp_path / "r.json"
    api = ApiServer(sandbox)
    puts: dict[str, int] = {}

    def first_revert_write(record: Record) -> bool:  # a workload's second write: its revert
        if record.method != "PUT" or not re.search(r"/(deploymentconfigs|deployments)/[^/]+$", record.path):
            return False
        puts[record.path] = puts.get(record.path, 0) + 1
        return puts[record.path] == 2

    proxy.after_mutation_matching(first_revert_write, api.stop)
    try:
        run = start(kubeconfig, namespace, report, *h.image_args(h.NEW, crash_second=CRASH))
        result, unproven, ended = outage_case(proxy, api, run, report, PAST_A_REQUEST)
    finally:
        api.cont()
    assert api.stopped_at, "the API server was never stopped: no revert write seen"
    assert result.code == 1, result.stdout[-3000:] + result.stderr[-1500:]
    assert result.report["status"] == "reverted", result.report
    assert "dc/dc2" in result.report["error"], result.report["error"]
    assert unproven == [], unproven
    verdict = h.assert_consistent(client, sandbox.kubeconfig, namespace, (h.OLD,))
    ledger_entry.case(
        "API server stopped mid-revert",
        faults={"SIGSTOP kube-apiserver": 1},
        states=verdict.checks + 2,
        detail=f"stopped {api.continued_at - api.stopped_at:.0f}s (lease {LEASE}s) after the first "
        f"revert write; exit 1 reverted {ended:.0f}s after SIGCONT, every later write proven",
    )


def test_api_server_stopped_under_the_final_journal_write(
    client, sandbox, proxy, tmp_path, namespace, ledger_entry
):
    """The rollout is verified; the API server stops as the journal write that records it goes out."""
    kubeconfig = proxy.kubeconfig(sandbox.kubeconfig, tmp_path / "kubeconfig")
    make_group(client, namespace)
    report = tmp_path / "r.json"
    api = ApiServer(sandbox)

    def final_journal_write(record: Record, body: bytes) -> bool:
        if record.method != "PUT" or not record.path.endswith(f"/configmaps/{h.JOURNAL}"):
            return False
        return (decode(json.loads(body)) or {}).get("run", {}).get("state") == "succeeded"

    proxy.before_mutation_matching(final_journal_write, api.stop)
    try:
        run = start(kubeconfig, namespace, report, *h.image_args(h.NEW))
        result, unproven, ended = outage_case(proxy, api, run, report, PAST_A_REQUEST)
    finally:
        api.cont()
    assert api.stopped_at, "the API server was never stopped: no final journal write seen"
    assert result.code == 0, result.stdout[-3000:] + result.stderr[-1500:]
    assert result.report["status"] == "succeeded", result.report
    assert unproven == [], unproven
    verdict = h.assert_consistent(client, sandbox.kubeconfig, namespace, (h.NEW,))
    assert verdict.journal_state == "succeeded"
    ledger_entry.case(
        "API server stopped under the final journal write",
        faults={"SIGSTOP kube-apiserver": 1},
        states=verdict.checks + 2,
        detail=f"stopped {api.continued_at - api.stopped_at:.0f}s (lease {LEASE}s) as the journal "
        f"recorded success; exit 0 {ended:.0f}s after SIGCONT, journal succeeded",
    )


TERM_GRACE = 5  # ROLLGUARD_TERM_GRACE of the SIGTERM case: far shorter than the outage


def test_sigterm_during_an_outage_ends_within_its_grace(
    client, sandbox, proxy, tmp_path, namespace, ledger_entry
):
    """The API server stops mid-watch and Tekton's timeout SIGTERMs the run while nothing answers. It
    cannot revert; once its grace is over it must end at once with exit 3 and its report, while the API
    server is still stopped, not be SIGKILLed by the platform half-way (before, the requests in flight
    waited out their timeouts, urllib3 retried each three times unseen, and the run ended 73 s after a
    grace of 8 s). Once the API server answers again, `revert -l` finishes the group from the journal."""
    kubeconfig = proxy.kubeconfig(sandbox.kubeconfig, tmp_path / "kubeconfig")
    make_group(client, namespace)
    report = tmp_path / "r.json"
    api = ApiServer(sandbox)
    try:
        run = Run(h.start_rollout(kubeconfig, namespace, SLOW, "--lease-duration", f"{LEASE}s", report=report,
                                  env={"ROLLGUARD_TERM_GRACE": str(TERM_GRACE)}))  # fmt: skip
        journal_reaches(client, namespace, "watching")
        api.stop()
        run.wait_silent(10)
        run.proc.send_signal(signal.SIGTERM)
        sent = time.monotonic()
        run.proc.wait(timeout=90)  # the API server is still stopped
        took = time.monotonic() - sent
    finally:
        api.cont()
    result = run.finish(report)
    assert result.code == 3, result.stdout[-3000:] + result.stderr[-1500:]
    assert took < TERM_GRACE + 10, f"ended {took:.0f}s after SIGTERM (grace {TERM_GRACE}s)"
    assert result.report["status"] in ("superseded", "inconsistent"), result.report
    assert "Traceback" not in result.stderr, result.stderr[-3000:]
    h.expire_lease(client, namespace)  # the run could not give its lease back
    repaired = h.finish(h.start(kubeconfig, "revert", "-n", namespace, "-l", h.SELECTOR), timeout=150)
    assert repaired.code == 0, repaired.stdout[-2000:] + repaired.stderr
    verdict = h.assert_consistent(client, sandbox.kubeconfig, namespace, (h.OLD,))
    ledger_entry.case(
        "SIGTERM during an outage",
        faults={"SIGSTOP kube-apiserver": 1, "SIGTERM": 1},
        states=verdict.checks + 2,
        detail=f"SIGTERM after 10s without an answer; exit 3 ({result.report['status']}) "
        f"{took:.0f}s later (grace {TERM_GRACE}s), API still stopped; revert -l repaired",
    )
