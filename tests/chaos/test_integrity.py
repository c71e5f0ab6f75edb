"""Issue 14, points 3 to 8, on the live sandbox: the journal, Ctrl-C, the user's edit, drift, report paths.

Each case is an accident users meet: a group too big for the old journal, a final journal write that
fails, Ctrl-C, a hotfix set by hand while rollguard watches, a one-off run on a narrower selector, a
report path that is a symlink, a device or a FIFO, and a workload deleted mid-run. Each test ends on
live state (images, paused, completion, the journal as read back) and on what the run reported.
Unmarked, so `make test` runs them; `make chaos` renders their ledger into docs/RELIABILITY.md.
"""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import threading

import pytest

from rollguard.cluster.journal import Journal, JournalStore
from rollguard.core.resources import CONFIG_MAPS, DEPLOYMENTS
from tests.helpers import chaos as h
from tests.helpers.cluster import (
    DC,
    DEPLOYMENT,
    NEWER_CRASH,
    create_group,
    dc_body,
    deployment_body,
    journal_reaches,
    make_group,
    resource_versions,
    rollguard,
    view,
)
from tests.helpers.proxy import FaultPlan
from tests.helpers.scenarios import set_image

SLOW = "registry.local/shop/api:v2-slow30"  # a watch long enough to act during it
HOTFIX = "registry.local/shop/api:v1-hotfix"


def load_journal(client, namespace: str, selector: str = h.SELECTOR) -> Journal | None:
    return JournalStore(client, namespace=namespace, selector=selector).load()


def big_deployment(name: str, image: str, env_bytes: int) -> dict:
    body = deployment_body(name, image)
    value = os.urandom(env_bytes // 2).hex()  # random: gzip halves it at best
    body["spec"]["template"]["spec"]["containers"][0]["env"] = [{"name": "BLOB", "value": value}]
    return body


# -- 3. a journal that always fits and is never silently stale ---------------------------------------------


def test_twelve_deployments_with_48kb_of_env_each_roll_out_and_revert_to_the_last_release(
    client, sandbox, tmp_path, namespace, ledger_entry
):
    """The old journal stored each template twice (~1.2 MB): its final save failed with 422, the run
    said 'succeeded', and the next failing run reverted to the release before last."""
    names = [f"web{i}" for i in range(12)]
    create_group(client, namespace, [big_deployment(n, h.OLD, 48 * 1024) for n in names])
    report = tmp_path / "r1.json"
    images = [a for n in names for a in ("--image", f"deploy/{n}={h.NEW}")]
    first = rollguard(
        sandbox.kubeconfig, "rollout", "-n", namespace, "-l", h.SELECTOR, *images, report=report
    )
    assert first.code == 0, first.stdout[-2000:] + first.stderr[-1000:]
    assert first.report["status"] == "succeeded" and not first.report["error"], first.report["error"]
    journal = load_journal(client, namespace)
    assert journal is not None and journal.state == "succeeded"
    assert all(journal.workloads[f"deployment/{n}"].verified.images == {"app": h.NEW} for n in names)
    cm = client.get(CONFIG_MAPS, h.JOURNAL, namespace=namespace)
    assert "journal.json.gz" in (cm.get("binaryData") or {})  # compressed: it would not fit plain twice
    status = rollguard(sandbox.kubeconfig, "status", "-n", namespace, "-l", h.SELECTOR)
    assert "half-rolled" not in status.stdout, status.stdout
    # The next run fails: the group goes back to the release just made, not the one before it.
    crash = [
        a
        for i, n in enumerate(names)
        for a in ("--image", f"deploy/{n}={NEWER_CRASH if i == 5 else h.NEWER}")
    ]
    second = rollguard(
        sandbox.kubeconfig, "rollout", "-n", namespace, "-l", h.SELECTOR, *crash, report=tmp_path / "r2.json"
    )
    assert second.code == 1, second.stdout[-2000:] + second.stderr[-1000:]
    for n in names:
        state = view(client, namespace, DEPLOYMENT, n)
        assert state.images == {"app": h.NEW} and state.complete and not state.paused, state
    ledger_entry.case(
        "12 Deployments x 48 KB env",
        faults={"big templates": 12},
        states=len(names) + 3,
        detail=f"exit 0, journal {len(json.dumps(cm)) // 1024} KB as stored; next failure back on the last release",
    )


def test_a_final_journal_write_that_fails_is_not_reported_as_success(
    client, sandbox, proxy, tmp_path, namespace, ledger_entry
):
    kubeconfig = proxy.kubeconfig(sandbox.kubeconfig, tmp_path / "kubeconfig")
    make_group(client, namespace)
    report = tmp_path / "r.json"
    run = h.start_rollout(kubeconfig, namespace, "registry.local/shop/api:v2-slow8", report=report)
    journal_reaches(client, namespace, "watching")
    # From now on every journal update fails (5xx, retried by the client, still failing).
    proxy.reset(
        FaultPlan(
            rates={"500": 1.0},
            resources=frozenset({"configmaps"}),
            verbs=frozenset({"update"}),
            max_faults=10_000,
        )
    )
    result = h.finish(run, report, timeout=120)
    assert result.code == 3, result.stdout[-2000:] + result.stderr[-1000:]
    assert result.report["status"] == "inconsistent"
    assert "still says 'watching'" in result.report["error"], result.report["error"]
    assert "succeeded" not in result.stdout.splitlines()[-1], result.stdout[-500:]
    journal = load_journal(client, namespace)
    assert journal is not None and journal.state == "watching"  # the journal's last good state, as named
    ledger_entry.case(
        "final journal write fails",
        faults=dict(proxy.faults),
        states=3,
        detail=f"exit 3: {result.report['error'][:150]}",
    )


# -- 4. Ctrl-C -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("presses", [1, 2])
def test_ctrl_c_reverts_reports_and_a_second_one_stops_the_revert(
    client, sandbox, tmp_path, namespace, ledger_entry, presses
):
    slow_old = "registry.local/shop/api:v1-slow15"
    make_group(client, namespace, slow_old if presses == 2 else h.OLD)
    report, results = tmp_path / "r.json", tmp_path / "results"
    run = h.start(
        sandbox.kubeconfig,
        "rollout",
        "-n",
        namespace,
        "-l",
        h.SELECTOR,
        "--results-dir",
        str(results),
        *h.image_args(SLOW),
        report=report,
        env={"ROLLGUARD_TERM_GRACE": "120"},
    )
    journal_reaches(client, namespace, "watching")
    run.send_signal(signal.SIGINT)
    if presses == 2:
        journal_reaches(client, namespace, "reverting")
        run.send_signal(signal.SIGINT)
    result = h.finish(run, report, timeout=150)
    assert "Traceback" not in result.stderr and "KeyboardInterrupt" not in result.stderr, result.stderr[
        -2000:
    ]
    assert "SIGINT" in result.report["error"], result.report
    assert (results / "status").read_text() == result.report["status"]
    assert (results / "summary").read_text()
    assert not h.lease_live(client, namespace)
    if presses == 1:
        assert result.code == 1, result.stdout[-2000:] + result.stderr[-1000:]
        assert result.report["status"] == "reverted"
        verdict = h.assert_consistent(client, sandbox.kubeconfig, namespace, (h.OLD,))
        states = verdict.checks + 3
    else:
        assert result.code == 3, result.stdout[-2000:] + result.stderr[-1000:]
        assert result.report["status"] == "inconsistent"
        journal = load_journal(client, namespace)
        assert journal is not None and journal.state == "inconsistent"
        assert any(e.phase == "error" and e.note for e in journal.workloads.values())
        states = 4
    ledger_entry.case(
        f"Ctrl-C x{presses}",
        faults={"SIGINT": presses},
        states=states,
        detail=f"exit {result.code}: {result.report['error'][:120]}",
    )


# -- 5. the user's edit wins -----------------------------------------------------------------------------


def test_a_hotfix_set_by_hand_during_the_watch_is_left_as_set_and_the_rest_reverted(
    client, sandbox, tmp_path, namespace, ledger_entry
):
    """Like `kubectl set image deployment/web app=...:v1-hotfix` while rollguard watches."""
    make_group(client, namespace)
    report = tmp_path / "r.json"
    run = h.start_rollout(sandbox.kubeconfig, namespace, SLOW, report=report)
    journal_reaches(client, namespace, "watching")
    set_image(client, namespace, DEPLOYMENT, "web", HOTFIX)  # again on a conflict with the controller
    result = h.finish(run, report, timeout=150)
    assert result.code == 3, result.stdout[-2000:] + result.stderr[-1000:]
    assert result.report["status"] == "inconsistent"
    assert "deployment/web" in result.report["error"] and "someone else" in result.report["error"], (
        result.report["error"]
    )
    outcomes = {w["name"]: w["outcome"] for w in result.report["workloads"]}
    assert outcomes == {"dc1": "reverted", "dc2": "reverted", "web": "edited"}, outcomes
    for kind, name in ((DC, "dc1"), (DC, "dc2")):
        state = view(client, namespace, kind, name)
        assert state.images == {"app": h.OLD} and state.complete and not state.paused, state
    hotfixed = view(client, namespace, DEPLOYMENT, "web")
    assert hotfixed.images == {"app": HOTFIX}, hotfixed  # the human's edit stands
    journal = load_journal(client, namespace)
    assert journal is not None and journal.state == "inconsistent"
    entry = journal.workloads["deployment/web"]
    assert entry.phase == "edited" and HOTFIX in entry.note, entry
    status = rollguard(sandbox.kubeconfig, "status", "-n", namespace, "-l", h.SELECTOR)
    web_lines = [line for line in status.stdout.splitlines() if "web" in line]
    assert any("edited" in line for line in status.stdout.splitlines()), status.stdout
    ledger_entry.case(
        "hotfix by hand during the watch",
        faults={"human edit": 1},
        states=6,
        detail=f"exit 3, web left on the hotfix, the rest reverted; {web_lines[:1]}",
    )


# -- 6. drift against the last run that verified each workload -------------------------------------------


def test_a_narrower_one_off_run_does_not_take_over_drift_or_revert(
    client, sandbox, tmp_path, namespace, ledger_entry
):
    bodies = [
        dc_body("dc1", h.OLD, labels={"tier": "backend"}),
        dc_body("dc2", h.OLD),
        deployment_body("web", h.OLD),
    ]
    create_group(client, namespace, bodies)
    narrow = f"{h.SELECTOR},tier=backend"
    hotfix = rollguard(
        sandbox.kubeconfig, "rollout", "-n", namespace, "-l", narrow, "--image", f"dc/dc1={HOTFIX}"
    )
    assert hotfix.code == 0, hotfix.stdout + hotfix.stderr
    full = rollguard(sandbox.kubeconfig, "rollout", "-n", namespace, "-l", h.SELECTOR, *h.image_args(h.NEW))
    assert full.code == 0, full.stdout + full.stderr
    drift = rollguard(
        sandbox.kubeconfig, "drift-check", "-n", namespace, "--report", str(tmp_path / "d.json")
    )
    assert drift.code == 0, drift.stdout + drift.stderr
    dry = rollguard(sandbox.kubeconfig, "revert", "-n", namespace, "dc/dc1", "--dry-run")
    assert dry.code == 0, dry.stdout + dry.stderr
    assert HOTFIX not in dry.stdout and "0 of 1 workloads would change" in dry.stdout, dry.stdout
    # A later narrow run moves the reference of what it verified, and nothing else.
    again = rollguard(
        sandbox.kubeconfig, "rollout", "-n", namespace, "-l", narrow, "--image", f"dc/dc1={h.NEWER}"
    )
    assert again.code == 0, again.stdout + again.stderr
    drift = rollguard(sandbox.kubeconfig, "drift-check", "-n", namespace)
    assert drift.code == 0, drift.stdout + drift.stderr
    ledger_entry.case(
        "narrower run, then a full one",
        faults={"narrow selector": 2},
        states=4,
        detail="drift-check clean, revert --dry-run plans no change",
    )


# -- 7. report paths -------------------------------------------------------------------------------------


def test_report_paths_symlink_devices_fifo_and_unwritable(client, sandbox, tmp_path, namespace, ledger_entry):
    create_group(client, namespace, [deployment_body("web", h.OLD)])
    base = ("rollout", "-n", namespace, "-l", h.SELECTOR, "--image", f"deploy/web={h.NEW}")
    # A symlink is followed: its target written, the link kept.
    target = tmp_path / "elsewhere" / "report.json"
    target.parent.mkdir()
    target.write_text("old")
    link = tmp_path / "report.json"
    link.symlink_to(target)
    done = rollguard(sandbox.kubeconfig, *base, report=link)
    assert done.code == 0, done.stdout + done.stderr
    assert link.is_symlink() and json.loads(target.read_text())["status"] == "succeeded"
    # A device that refuses every write stays a device, and the failure is said.
    full = rollguard(sandbox.kubeconfig, "drift-check", "-n", namespace, "--report", "/dev/full")
    assert stat.S_ISCHR(os.stat("/dev/full").st_mode)
    assert "could not write the report" in full.stderr, full.stderr
    # /dev/stdout: the report comes out on standard output.
    out = rollguard(sandbox.kubeconfig, "drift-check", "-n", namespace, "--report", "/dev/stdout")
    assert out.code == 0, out.stderr
    assert '"status": "clean"' in out.stdout, out.stdout
    # A FIFO is written in place, to its reader.
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    got: list[str] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_text()))
    reader.start()
    piped = rollguard(sandbox.kubeconfig, "drift-check", "-n", namespace, "--report", str(fifo))
    reader.join(timeout=60)
    assert piped.code == 0 and stat.S_ISFIFO(os.stat(fifo).st_mode)
    assert json.loads(got[0])["status"] == "clean"
    # A directory nothing can be created in, even by root: refused before any change.
    locked = tmp_path / "locked"
    locked.mkdir()
    subprocess.run(["chattr", "+i", str(locked)], check=True)
    try:
        before = resource_versions(client, namespace)
        refused = rollguard(sandbox.kubeconfig, *base[:-1], f"deploy/web={h.NEWER}", report=locked / "r.json")
        assert refused.code == 2, refused.stdout + refused.stderr
        assert "--report" in refused.stderr and "no file can be created" in refused.stderr, refused.stderr
        drift_refused = rollguard(
            sandbox.kubeconfig, "drift-check", "-n", namespace, "--report", str(locked / "d.json")
        )
        assert drift_refused.code == 2, drift_refused.stderr
        assert resource_versions(client, namespace) == before
    finally:
        subprocess.run(["chattr", "-i", str(locked)], check=False)
    ledger_entry.case(
        "report paths",
        faults={"symlink": 1, "/dev/full": 1, "/dev/stdout": 1, "FIFO": 1, "immutable dir": 2},
        states=7,
        detail="link followed, devices and FIFO written in place, unwritable refused (exit 2)",
    )


# -- 8. a workload deleted mid-run -----------------------------------------------------------------------


def test_a_workload_deleted_during_the_watch_is_reported_and_the_rest_reverted(
    client, sandbox, tmp_path, namespace, ledger_entry
):
    make_group(client, namespace)
    report = tmp_path / "r.json"
    run = h.start_rollout(sandbox.kubeconfig, namespace, SLOW, report=report)
    journal_reaches(client, namespace, "watching")
    client.delete(DEPLOYMENTS, "web", namespace=namespace)
    result = h.finish(run, report, timeout=150)
    assert result.code == 1, result.stdout[-2000:] + result.stderr[-1000:]
    assert result.report["status"] == "reverted"
    assert "deployment/web was deleted" in result.report["error"], result.report["error"]
    assert "404" not in result.report["error"] and not any("404" in e for e in result.report["errors"]), (
        result.report
    )
    outcomes = {w["name"]: w["outcome"] for w in result.report["workloads"]}
    assert outcomes == {"dc1": "reverted", "dc2": "reverted", "web": "deleted"}, outcomes
    for kind, name in ((DC, "dc1"), (DC, "dc2")):
        state = view(client, namespace, kind, name)
        assert state.images == {"app": h.OLD} and state.complete and not state.paused, state
    journal = load_journal(client, namespace)
    assert journal is not None and journal.state == "reverted"
    assert journal.workloads["deployment/web"].phase == "deleted"
    ledger_entry.case(
        "workload deleted mid-watch",
        faults={"deletion": 1},
        states=5,
        detail=f"exit 1: {result.report['error'][:120]}",
    )


def test_a_journal_bigger_than_one_configmap_is_saved_in_parts_and_read_back(client, namespace, ledger_entry):
    """Six templates of 400 KB of random env (~1.3 MB of gzip): parts, two alternating sets at most."""
    from rollguard.cluster.journal import WorkloadEntry
    from rollguard.cluster.journal_codec import PART_OF_LABEL
    from rollguard.core.structs import RunState, VerifiedState

    store = JournalStore(client, namespace=namespace, selector=h.SELECTOR)
    journal = Journal(namespace=namespace, selector=h.SELECTOR, run_id="r1", state=RunState.WATCHING)
    for i in range(6):
        template = {
            "spec": {
                "containers": [
                    {
                        "name": "app",
                        "image": h.OLD,
                        "env": [{"name": "B", "value": os.urandom(200 * 1024).hex()}],
                    }
                ]
            }
        }
        journal.workloads[f"deployment/w{i}"] = WorkloadEntry(
            kind="Deployment",
            name=f"w{i}",
            verified=VerifiedState(
                template=template, triggers=None, revision=1, images={"app": h.OLD}, paused=False
            ),
        )
    for state in (RunState.WATCHING, RunState.REVERTING, RunState.REVERTED):
        journal.state = state
        store.save(journal)
        back = JournalStore(client, namespace=namespace, selector=h.SELECTOR).load()
        assert back is not None and back.state == state
        assert back.workloads["deployment/w5"].verified == journal.workloads["deployment/w5"].verified
    parts = client.list(CONFIG_MAPS, namespace=namespace, selector=f"{PART_OF_LABEL}={h.JOURNAL}")["items"]
    assert 2 <= len(parts) <= 6, [p["metadata"]["name"] for p in parts]  # two slots of 2-3 parts each
    ledger_entry.case(
        "journal in parts",
        faults={"big templates": 6},
        states=4,
        detail=f"3 saves read back; {len(parts)} part ConfigMaps",
    )
