"""A revert of an `inconsistent` group names the edit it discards (issue 30 point 5), on the live sandbox.

A colleague's hotfix during a rollout wins: the run leaves it as they set it, reverts the rest and ends
`inconsistent` (exit 3), its journal entry `edited`. `rollguard revert -l` then sends that workload back to
the journal's verified state, throwing the hotfix away: before, nothing said so (the diff showed images
only, the run printed nothing of theirs). Now the plan's note names the workload and each field with its
old value and theirs, in `--dry-run`'s diff, the run's lines and the report's notes (the TUI's dialog
shows the same plan note: tests/tui/test_views.py).
"""

from __future__ import annotations

from pathlib import Path

from rollguard.core.resources import DEPLOYMENT_CONFIGS
from tests.helpers.cluster import (
    DC,
    IMAGE,
    OLD,
    SELECTOR,
    create_group,
    dc_body,
    journal_reaches,
    rollguard,
    start_rollguard,
    view,
)

HOTFIX = f"{IMAGE}:v9-hotfix"


def test_the_revert_of_an_inconsistent_group_names_the_hotfix_it_discards(
    sandbox, namespace, client, tmp_path: Path
):
    create_group(client, namespace, [dc_body("dc1", OLD), dc_body("dc2", OLD)])
    slow = f"{IMAGE}:v2-slow20"
    run = start_rollguard(
        sandbox.kubeconfig, "rollout", "-n", namespace, "-l", SELECTOR,
        "--image", f"dc/dc1={slow}", "--image", f"dc/dc2={slow}",
    )  # fmt: skip
    journal_reaches(client, namespace, "watching")
    patch = {"spec": {"template": {"spec": {"containers": [{"name": "app", "image": HOTFIX}]}}}}
    client.patch(DEPLOYMENT_CONFIGS, "dc2", patch, namespace=namespace)  # `oc set image dc/dc2 app=...`
    out, err = run.communicate(timeout=240)
    assert run.returncode == 3, out + err
    journal = journal_reaches(client, namespace, "inconsistent")
    assert journal["workloads"]["dc/dc2"]["phase"] == "edited", journal["workloads"]
    run_id = journal["run"]["id"]

    words = (
        f"discards the edit someone else made during run {run_id}, recorded and left as they set it "
        f"(old -> theirs): containers[app].image: {OLD} -> {HOTFIX}"
    )
    dry = rollguard(sandbox.kubeconfig, "revert", "-n", namespace, "-l", SELECTOR, "--dry-run")
    assert dry.code == 0, dry.stdout + dry.stderr
    assert f"# {words}" in dry.stdout, dry.stdout
    assert view(client, namespace, DC, "dc2").images == {"app": HOTFIX}  # a dry run changes nothing

    done = rollguard(
        sandbox.kubeconfig, "revert", "-n", namespace, "-l", SELECTOR, report=tmp_path / "revert.json"
    )
    assert done.code == 0, done.stdout + done.stderr
    assert words in done.stdout, done.stdout
    notes = {w["name"]: w["notes"] for w in done.report["workloads"]}
    assert words in notes["dc2"], notes
    assert not any(n.startswith("discards") for n in notes["dc1"]), notes  # dc1 had nothing of theirs
    assert view(client, namespace, DC, "dc2").images == {"app": OLD}
