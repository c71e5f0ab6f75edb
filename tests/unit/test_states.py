"""The run states' wire words: report JSON, Tekton results and journals keep exactly the strings they had.

Pipelines test the report's ``status`` and the Tekton result; journals outlive the version that wrote
them. The enums are StrEnums so that nothing on the wire changes: these tests write a report and a
journal and read them back as the plain JSON an earlier (or later) rollguard reads.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rollguard.cluster.journal import DATA_KEY, Journal, WorkloadEntry, parse_configmap
from rollguard.core.errors import EXIT_INCONSISTENT, EXIT_OK, EXIT_REFUSED, EXIT_REVERTED
from rollguard.core.report import EXIT_BY_STATUS, Report, WorkloadResult, write_report, write_results
from rollguard.core.structs import EntryPhase, ExitStatus, RunState, VerifiedState, WorkloadOutcome

# The words as the versions before the enums spelled them (engine.py, repair.py, journal.py, report.py).
OLD_RUN_STATES = ["new", "applying", "watching", "repairing", "reverting", "succeeded", "repaired",
                  "reverted", "inconsistent"]  # fmt: skip
OLD_FINAL = {"new", "succeeded", "reverted", "repaired"}
# Added since (issue 25): a rollout whose group rolled out and whose --verify checks (or --bake) run; not
# final, so a run killed then is finished as one killed mid-watch (an older version reads it as
# 'inconsistent', also not final: the same outcome, carried forward).
NEW_RUN_STATES = ["verifying"]
OLD_PHASES = ["pending", "unchanged", "applied", "complete", "resumed", "redeployed", "failed",
              "reverting", "reverted", "error"]  # fmt: skip
# Added since (issue 14): someone else's edit or deletion during a run, as phase and outcome alike.
NEW_PHASES = ["edited", "deleted"]


def old_outcome(phase: str) -> str:
    """How the report named a workload's outcome before `WorkloadPhase.outcome` (group.py)."""
    return {"complete": "rolled-out", "pending": "unchanged", "error": "inconsistent"}.get(phase, phase)


def test_status_words_and_exit_codes_are_the_documented_ones() -> None:
    # superseded (issue 14): the run lost its group's lock to another run and stopped writing.
    # dry-run: a --dry-run's report (exit 0) never says succeeded, as nothing was rolled out.
    assert [s.value for s in ExitStatus] == [
        "succeeded",
        "reverted",
        "refused",
        "inconsistent",
        "superseded",
        "dry-run",
    ]
    assert EXIT_BY_STATUS == {
        "dry-run": EXIT_OK,
        "succeeded": EXIT_OK,
        "reverted": EXIT_REVERTED,
        "refused": EXIT_REFUSED,
        "inconsistent": EXIT_INCONSISTENT,
        "superseded": EXIT_INCONSISTENT,
    }


def test_run_states_and_their_finality_are_the_old_words() -> None:
    assert sorted(s.value for s in RunState) == sorted(OLD_RUN_STATES + NEW_RUN_STATES)
    assert {s.value for s in RunState if s.final} == OLD_FINAL


def test_workload_phases_map_to_the_old_outcome_words() -> None:
    phases = OLD_PHASES + NEW_PHASES
    assert sorted(p.value for p in EntryPhase) == sorted(phases)
    assert {p.value: p.outcome.value for p in EntryPhase} == {p: old_outcome(p) for p in phases}
    # planned: a dry run's workload that the run would change (no phase: a dry run keeps no journal);
    # not verified (0 replicas): a complete rollout to no pod (no phase of its own: judged when reported)
    # kept at 0 replicas, removed: `rollguard migrate`'s DCs kept, and what --finish/--revert deleted
    extra = {"planned", "not verified (0 replicas)", "kept at 0 replicas", "removed"}
    assert {o.value for o in WorkloadOutcome} == {old_outcome(p) for p in phases} | extra
    assert {p.value for p in EntryPhase if not p.touched} == {"pending", "unchanged"}


def test_a_report_reads_back_as_the_plain_words(tmp_path: Path) -> None:
    outcome = Report(
        status=ExitStatus.REVERTED,
        command="rollout",
        namespace="shop",
        selector="app=shop",
        run_id="r1",
        error="dc/dc2: boom",
        workloads=[
            WorkloadResult(kind="DeploymentConfig", name="dc1", outcome=EntryPhase.REVERTED.outcome),
            WorkloadResult(kind="DeploymentConfig", name="dc2", outcome=EntryPhase.ERROR.outcome),
            WorkloadResult(kind="Deployment", name="web"),
        ],
    )
    write_report(outcome, str(tmp_path / "report.json"))
    text = (tmp_path / "report.json").read_text()
    data = json.loads(text)
    assert data["status"] == "reverted" and data["exit_code"] == 1
    assert [w["outcome"] for w in data["workloads"]] == ["reverted", "inconsistent", "unchanged"]
    assert "Status." not in text and "WorkloadOutcome." not in text
    write_results(outcome, str(tmp_path / "results"))
    assert (tmp_path / "results" / "status").read_text() == "reverted"
    assert (tmp_path / "results" / "summary").read_text() == (
        "reverted: 1 inconsistent, 1 reverted, 1 unchanged; cause: dc/dc2: boom"
    )


# A journal exactly as the version before the enums saved it (JournalStore.save's compact form).
EARLIER_JOURNAL = {
    "history": [{"actor": "ci", "command": "rollout", "error": "", "finished": "2026-11-29T10:00:09Z",
                 "run_id": "r0", "started": "2026-11-29T10:00:00Z", "state": "succeeded",
                 "targets": {"dc/api": {"app": "img:1"}}}],
    "last_success": {"finished": "2026-11-29T10:00:09Z", "run_id": "r0", "templates": {"dc/api": {}}},
    "namespace": "shop",
    "run": {"actor": "ci", "command": "rollout", "error": "dc/web: boom", "errors": [], "id": "r1",
            "started": "2026-11-29T11:00:00Z", "state": "reverting", "updated": "2026-11-29T11:00:05Z"},
    "selector": "app=shop",
    "version": 1,
    "workloads": {
        "dc/api": {"kind": "DeploymentConfig", "name": "api", "note": "", "phase": "reverted",
                   "revision_after": 4, "target_images": {"app": "img:2"},
                   "verified": {"images": {"app": "img:1"}, "paused": False, "revision": 3,
                                "template": {}, "triggers": None}},
        "deployment/web": {"kind": "Deployment", "name": "web", "note": "boom", "phase": "error",
                           "revision_after": 0, "target_images": {"app": "img:2"},
                           "verified": {"images": {"app": "img:1"}, "paused": False, "revision": 2,
                                        "template": {}, "triggers": None}},
    },
}  # fmt: skip


def compact(data: object) -> str:
    return json.dumps(data, sort_keys=True, separators=(",", ":"))


def test_an_earlier_journal_reads_as_enums_and_saves_byte_for_byte() -> None:
    journal = parse_configmap({"data": {DATA_KEY: compact(EARLIER_JOURNAL)}})
    assert journal is not None
    assert journal.state is RunState.REVERTING and not journal.final
    assert journal.workloads["dc/api"].phase is EntryPhase.REVERTED
    assert journal.workloads["deployment/web"].phase is EntryPhase.ERROR
    # Saved again, the one change is that a template is stored once (issue 14): the last success's
    # copy of a template equal to the verified one is a mark, read back as that template.
    saved = json.loads(compact(EARLIER_JOURNAL))
    saved["last_success"]["templates"]["dc/api"] = "=verified"
    assert compact(journal.to_json()) == compact(saved)
    back = parse_configmap({"data": {DATA_KEY: compact(journal.to_json())}})
    assert back is not None and back.last_success == EARLIER_JOURNAL["last_success"]


def test_a_closed_run_is_written_with_the_plain_words() -> None:
    journal = Journal(namespace="shop", selector="app=shop", run_id="r2", state=RunState.REPAIRING)
    journal.workloads["dc/api"] = WorkloadEntry(
        kind="DeploymentConfig",
        name="api",
        verified=VerifiedState(template={}, triggers=None, revision=3, images={}, paused=False),
        phase=EntryPhase.RESUMED,
    )
    journal.close_run(RunState.REPAIRED)
    text = compact(journal.to_json())
    data = json.loads(text)
    assert data["run"]["state"] == "repaired" and data["history"][-1]["state"] == "repaired"
    assert data["workloads"]["dc/api"]["phase"] == "resumed"
    assert "RunState." not in text and "WorkloadPhase." not in text
    back = parse_configmap({"data": {DATA_KEY: text}})
    assert back is not None and back.final and back.workloads["dc/api"].phase is EntryPhase.RESUMED


def test_words_this_version_does_not_know_read_as_not_restored() -> None:
    """A newer rollguard's state is never taken for a finished run (the group shows as half-rolled)."""
    data = json.loads(compact(EARLIER_JOURNAL))
    data["run"]["state"] = "rebalancing"
    data["workloads"]["dc/api"]["phase"] = "migrated"
    journal = parse_configmap({"data": {DATA_KEY: compact(data)}})
    assert journal is not None and journal.state is RunState.INCONSISTENT and not journal.final
    assert journal.workloads["dc/api"].phase is EntryPhase.ERROR


def test_the_words_are_accepted_in_code_but_a_typo_is_not() -> None:
    assert Journal(namespace="", selector="", state="watching").state is RunState.WATCHING  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        Journal(namespace="", selector="", state="wathcing")  # type: ignore[arg-type]
