"""resume, revert and redeploy bring damaged groups back to healthy, on the live sandbox."""

from __future__ import annotations

from pathlib import Path

import pytest

from rollguard.cluster.client import Client
from rollguard.core.resources import DEPLOYMENT_CONFIGS, DEPLOYMENTS, LEASES
from tests.helpers.cluster import (
    CRASH,
    DC,
    DEPLOYMENT,
    JOURNAL,
    NEW,
    OLD,
    SELECTOR,
    create_group,
    dc_body,
    deployment_body,
    journal,
    make_group,
    resource_versions,
    rolled_out,
    rollguard,
    view,
)
from tests.helpers.scenarios import (
    deadline_exceeded,
    events,
    killed_run,
    pause,
    reference_state,
    set_image,
    states,
)


def assert_healthy(client: Client, namespace: str) -> None:
    found = states(client, namespace)
    assert found and all(s.healthy for s in found.values()), {k: s.findings for k, s in found.items()}


def test_revert_group_repairs_the_reference_case(sandbox, namespace, client, tmp_path: Path):
    """Reference section 1 (dc1 new, dc2 failed/old, dc3 paused with new waiting): all old, none paused."""
    reference_state(client, namespace)
    ran = {n: states(client, namespace)[f"dc/{n}"].revisions[-1].images for n in ("dc1", "dc2", "dc3")}
    result = rollguard(
        sandbox.kubeconfig, "revert", "-n", namespace, "-l", SELECTOR, report=tmp_path / "r.json"
    )
    assert result.code == 0, result.stdout + result.stderr
    for name in ("dc1", "dc2", "dc3"):
        now = view(client, namespace, DC, name)
        assert not now.paused and now.complete and now.latest_phase == "Complete", name
        assert now.images == ran[name], name  # the old image revision 1 ran
        dc = client.get(DEPLOYMENT_CONFIGS, name, namespace=namespace)
        trigger = dc["spec"]["triggers"][1]["imageChangeParams"]
        # the trigger is back as it was (on NAME:latest), but manual: the tag points at the new image now
        # (the API does not store `automatic: false`: absent means manual, openshift/api apps/v1/types.go)
        assert trigger["from"]["name"] == f"{name}:latest" and "automatic" not in trigger
    assert result.report["status"] == "succeeded"
    assert {w["outcome"] for w in result.report["workloads"]} == {"reverted"}
    assert journal(client, namespace)["run"]["state"] == "repaired"
    assert len(events(client, namespace, "RollguardRevert")) == 3
    assert_healthy(client, namespace)


def test_resume_rolls_out_what_piled_up(sandbox, namespace, client):
    make_group(client, namespace)
    pause(client, namespace, "dc2")
    set_image(client, namespace, DC, "dc2", NEW)
    client.patch(DEPLOYMENTS, "web", {"spec": {"paused": True}}, namespace=namespace)
    result = rollguard(sandbox.kubeconfig, "resume", "-n", namespace, "-l", SELECTOR)
    assert result.code == 0, result.stdout + result.stderr
    assert view(client, namespace, DC, "dc2").images == {"app": NEW}
    for kind, name in ((DC, "dc1"), (DC, "dc2"), (DEPLOYMENT, "web")):
        state = view(client, namespace, kind, name)
        assert not state.paused and state.complete, name
    assert len(events(client, namespace, "RollguardResume")) == 2  # dc1 was not paused: untouched
    assert journal(client, namespace)["run"]["state"] == "repaired"
    assert_healthy(client, namespace)


def test_resume_of_a_crashing_pending_change_reverts_it(sandbox, namespace, client, tmp_path: Path):
    create_group(client, namespace, [dc_body("dc1", OLD)])
    pause(client, namespace, "dc1")
    set_image(client, namespace, DC, "dc1", CRASH)
    result = rollguard(sandbox.kubeconfig, "resume", "dc/dc1", "-n", namespace, report=tmp_path / "r.json")
    assert result.code == 1, result.stdout + result.stderr
    assert "CrashLoopBackOff" in result.report["error"]
    now = view(client, namespace, DC, "dc1")
    assert now.images == {"app": OLD} and not now.paused and now.complete


def test_redeploy_after_a_killed_run(sandbox, namespace, client):
    create_group(client, namespace, [dc_body("dc1", OLD), deployment_body("web", OLD)])
    killed_run(client, namespace)
    # the killed run had changed dc1 already
    set_image(client, namespace, DC, "dc1", NEW)
    rolled_out(client, DC, namespace, "dc1")
    assert all(s.has("half-rolled") for s in states(client, namespace).values())
    revisions = {k: s.revision for k, s in states(client, namespace).items()}
    result = rollguard(sandbox.kubeconfig, "redeploy", "-n", namespace, "-l", SELECTOR)
    assert result.code == 0, result.stdout + result.stderr
    after = states(client, namespace)
    assert all(after[k].revision == revisions[k] + 1 for k in revisions), (revisions, after)
    for kind, name in ((DC, "dc1"), (DEPLOYMENT, "web")):
        obj = client.get(DEPLOYMENT_CONFIGS if kind == DC else DEPLOYMENTS, name, namespace=namespace)
        assert "rollguard.io/redeployed-at" in obj["spec"]["template"]["metadata"]["annotations"]
    data = journal(client, namespace)
    assert data["run"]["state"] == "repaired" and data["history"][-1]["command"] == "redeploy"
    assert not client.list(LEASES, namespace=namespace)["items"]  # the lock was taken over, then released
    assert_healthy(client, namespace)


def test_revert_after_a_killed_run_returns_to_the_journal_state(sandbox, namespace, client):
    create_group(client, namespace, [dc_body("dc1", OLD), dc_body("dc2", OLD)])
    killed_run(client, namespace)
    set_image(client, namespace, DC, "dc1", NEW)
    rolled_out(client, DC, namespace, "dc1")
    result = rollguard(sandbox.kubeconfig, "revert", "dc/dc1", "dc/dc2", "-n", namespace)
    assert result.code == 0, result.stdout + result.stderr
    assert view(client, namespace, DC, "dc1").images == {"app": OLD}
    assert (
        "unchanged" in result.stdout or "nothing to revert" in result.stdout
    )  # dc2 was on its verified state
    assert journal(client, namespace)["run"]["state"] == "repaired"  # both targets = the whole group
    assert_healthy(client, namespace)


def test_revert_of_a_failed_deployment_and_to_revision(sandbox, namespace, client):
    create_group(client, namespace, [deployment_body("web", OLD, deadline=10)])
    client.patch(DEPLOYMENTS, "web", {"spec": {"template": {"spec": {"containers": [
        {"name": "app", "image": CRASH}]}}}}, namespace=namespace)  # fmt: skip
    deadline_exceeded(client, namespace, "web")
    assert states(client, namespace)["deployment/web"].has("failed")
    result = rollguard(sandbox.kubeconfig, "revert", "deploy/web", "-n", namespace)
    assert result.code == 0, result.stdout + result.stderr
    assert view(client, namespace, DEPLOYMENT, "web").images == {"app": OLD}
    assert_healthy(client, namespace)
    # revision 2 is the crash: going there on purpose fails and comes back to the verified state
    result = rollguard(sandbox.kubeconfig, "revert", "deploy/web", "--to-revision", "2", "-n", namespace)
    assert result.code == 1, result.stdout + result.stderr
    now = view(client, namespace, DEPLOYMENT, "web")
    assert now.images == {"app": OLD} and now.complete


def test_dry_run_prints_the_diff_and_changes_nothing(sandbox, namespace, client, tmp_path: Path):
    reference_state(client, namespace)
    before = resource_versions(client, namespace)
    for action in ("revert", "resume", "redeploy"):
        result = rollguard(sandbox.kubeconfig, action, "-n", namespace, "-l", SELECTOR, "--dry-run",
                           report=tmp_path / f"{action}.json")  # fmt: skip
        assert result.code == 0, result.stdout + result.stderr
        assert "nothing was changed" in result.stdout
        # the report says a dry run, never a repair that succeeded: nothing was repaired
        assert result.report["status"] == "dry-run" and result.report["exit_code"] == 0, result.report
        outcomes = {w["name"]: w["outcome"] for w in result.report["workloads"]}
        assert set(outcomes) == {"dc1", "dc2", "dc3"} and set(outcomes.values()) <= {"planned", "unchanged"}
        assert outcomes["dc3"] == "planned", (
            outcomes
        )  # paused with a new image waiting: every action changes it
        dc3 = next(w for w in result.report["workloads"] if w["name"] == "dc3")
        assert dc3["paused_before"] is True and dc3["paused"] is False
        assert dc3["revision_after"] == dc3["revision_before"] == view(client, namespace, DC, "dc3").revision
    result = rollguard(sandbox.kubeconfig, "revert", "-n", namespace, "-l", SELECTOR, "--dry-run")
    dc3 = result.stdout.split(f"{namespace}/dc/dc3: revert")[1]
    assert "- paused: true" in dc3 and "+ paused: false" in dc3
    assert "- image app: registry.local/shop/api@sha256:" in dc3 and "(running: " in dc3
    assert "+ image app: registry.local/shop/api@sha256:" in dc3
    assert "# image trigger of app on " in dc3 and "made manual (its tag now points at" in dc3
    assert resource_versions(client, namespace) == before
    assert not events(client, namespace, "RollguardRevert")


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["revert", "dc/nope"], "dc/nope does not exist"),
        (["revert", "-l", "app="], "matches no DeploymentConfig"),
        (["revert", "-l", "app in (("], "malformed"),
        (["resume", "dc/dc1", "-l", "app=shop-api"], "not both"),
        (["resume"], "name the workloads"),
        (["revert", "dc/dc1", "--to-revision", "9"], "has no revision 9"),
        (["revert", "dc/dc1", "dc/dc2", "--to-revision", "1"], "exactly one workload"),
        (["redeploy", "dc/dc1/app"], "names a container"),
        (["resume", "pod/x"], "unknown kind"),
        (["resume", "dc/dc1", "--timeout", "0s"], "out of range"),
    ],
)
def test_bad_input_is_refused_without_change(sandbox, namespace, client, args, words):
    create_group(client, namespace, [dc_body("dc1", OLD), dc_body("dc2", OLD)])
    pause(client, namespace, "dc1")
    before = resource_versions(client, namespace)
    result = rollguard(sandbox.kubeconfig, *args, "-n", namespace)
    assert result.code == 2, result.stdout + result.stderr
    assert words in result.stderr
    assert resource_versions(client, namespace) == before


def test_lock_held_and_missing_permission_are_refused(sandbox, namespace, client):
    create_group(client, namespace, [dc_body("dc1", OLD)])
    pause(client, namespace, "dc1")
    before = resource_versions(client, namespace)
    denied = rollguard(sandbox.user_kubeconfig("alice"), "resume", "dc/dc1", "-n", namespace)
    assert denied.code == 2 and "not allowed to" in denied.stderr, denied.stderr
    from rollguard.cluster.lock import GroupLock

    lock = GroupLock(client, namespace=namespace, name=JOURNAL, holder="pipeline-7 run y")
    lock.acquire()
    try:
        held = rollguard(sandbox.kubeconfig, "resume", "-n", namespace, "-l", SELECTOR)
    finally:
        lock.release()
    assert held.code == 2 and "locked by pipeline-7 run y" in held.stderr, held.stderr
    assert resource_versions(client, namespace) == before


def test_resume_of_the_reference_case_rolls_dc3_and_leaves_dc2_failed(sandbox, namespace, client):
    """resume only resumes: dc3 rolls out its waiting image; dc2's old failure stays a finding (for revert)."""
    reference_state(client, namespace)
    waiting = view(client, namespace, DC, "dc3").images
    result = rollguard(sandbox.kubeconfig, "resume", "-n", namespace, "-l", SELECTOR)
    assert result.code == 0, result.stdout + result.stderr
    dc3 = view(client, namespace, DC, "dc3")
    assert dc3.images == waiting and not dc3.paused and dc3.complete and dc3.revision == 2
    found = states(client, namespace)
    assert found["dc/dc2"].has("failed") and not found["dc/dc3"].has("paused", "stuck")
    assert len(events(client, namespace, "RollguardResume")) == 1


def test_a_named_repair_of_a_member_of_a_running_rollout_is_refused_naming_its_holder(
    sandbox, namespace, client, tmp_path: Path
):
    """A rollout holds its group's Lease and has claimed its workloads, its journal not written yet (the
    moment between taking the lock and the first journal save; a first run frozen there): `revert dc/dc1`
    finds no journal, so no group, and used to take no lock and revert dc1 under the running rollout.
    Now refused (exit 2) naming the holder, dry run included, nothing changed; then a real rollout
    watching its workloads (journal written) likewise."""
    import signal

    from rollguard.cluster.claims import Claims
    from rollguard.cluster.lock import GroupLock
    from rollguard.core.structs import WorkloadRef
    from tests.helpers.cluster import IMAGE, journal_reaches, start_rollguard

    create_group(client, namespace, [dc_body("dc1", OLD), dc_body("dc2", OLD)])
    set_image(client, namespace, DC, "dc1", NEW)
    rolled_out(client, DC, namespace, "dc1")  # revision 2: a revert has revision 1 to go back to
    before = {k: v for k, v in resource_versions(client, namespace).items() if not k.startswith("leases/")}
    lock = GroupLock(client, namespace=namespace, name=JOURNAL, holder="pipeline-9 run z")
    lock.acquire()
    claims = Claims(client, namespace=namespace, lock=lock, selector=SELECTOR)
    claims.take([WorkloadRef(DC, "dc1"), WorkloadRef(DC, "dc2")])

    def workloads_and_journals() -> dict[str, str]:  # the Leases are the rollout's (renewed meanwhile)
        return {k: v for k, v in resource_versions(client, namespace).items() if not k.startswith("leases/")}

    try:
        for args in (["revert", "dc/dc1"], ["revert", "dc/dc1", "--dry-run"], ["redeploy", "dc/dc2"]):
            result = rollguard(sandbox.kubeconfig, *args, "-n", namespace, report=tmp_path / "r.json")
            assert result.code == 2, (args, result.stdout + result.stderr)
            assert "claimed by pipeline-9 run z" in result.stderr, (args, result.stderr)
            assert f"rollout group '{SELECTOR}'" in result.stderr, result.stderr
            assert result.report["status"] == "refused"
            assert workloads_and_journals() == before, args
    finally:
        claims.release()
        lock.release()
    assert view(client, namespace, DC, "dc1").images == {"app": NEW}
    assert not events(client, namespace, "RollguardRevert") and not events(
        client, namespace, "RollguardRedeploy"
    )

    # a real rollout, watching (its dc2 pods take a minute to come up): a named revert is refused naming it
    proc = start_rollguard(sandbox.kubeconfig, "rollout", "-n", namespace, "-l", SELECTOR,
                           "--image", f"dc/dc2={IMAGE}:v2-slow60")  # fmt: skip
    try:
        record = journal_reaches(client, namespace, "watching")
        result = rollguard(sandbox.kubeconfig, "revert", "dc/dc1", "-n", namespace)
        assert result.code == 2 and record["run"]["id"] in result.stderr, result.stderr
        assert view(client, namespace, DC, "dc1").images == {"app": NEW}
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
    assert not events(client, namespace, "RollguardRevert")


def test_a_rollout_started_during_a_named_repair_is_refused_naming_the_repair(
    sandbox, namespace, client, tmp_path: Path
):
    """`resume dc/dc2` of workloads in no group (no journal yet) claims what it touches under a Lease of
    its own while it watches: a rollout of their group started meanwhile is refused (exit 2) naming the
    repair, instead of writing over the workload the repair is rolling out."""
    import signal

    from rollguard.cluster.claims import REGISTER, claims_of
    from tests.helpers.cluster import IMAGE, start_rollguard, wait_until

    create_group(client, namespace, [dc_body("dc1", OLD), dc_body("dc2", OLD)])
    pause(client, namespace, "dc2")
    set_image(client, namespace, DC, "dc2", f"{IMAGE}:v2-slow60")  # waits while paused; slow once resumed
    proc = start_rollguard(sandbox.kubeconfig, "resume", "dc/dc2", "-n", namespace)
    try:
        register = wait_until(client, LEASES, namespace, REGISTER, lambda o: "dc/dc2" in claims_of(o),
                              what="the repair's claim")  # fmt: skip
        wait_until(client, DEPLOYMENT_CONFIGS, namespace, "dc2", lambda o: not o["spec"].get("paused"),
                   what="the repair's write")  # fmt: skip
        before = resource_versions(client, namespace)
        result = rollguard(sandbox.kubeconfig, "rollout", "-n", namespace, "-l", SELECTOR,
                           "--image", f"dc/dc2={NEW}", report=tmp_path / "r.json")  # fmt: skip
        assert result.code == 2, result.stdout + result.stderr
        holder = claims_of(register)["dc/dc2"].holder
        assert f"dc/dc2 is claimed by {holder} (a repair of named workloads" in result.stderr, result.stderr
        assert result.report["status"] == "refused"
        assert view(client, namespace, DC, "dc2").images == {"app": f"{IMAGE}:v2-slow60"}
        now = resource_versions(client, namespace)
        assert {k: v for k, v in now.items() if not k.startswith(("leases/", "replicationcontrollers/"))} == {
            k: v for k, v in before.items() if not k.startswith(("leases/", "replicationcontrollers/"))
        }  # the repair's own rollout moves on (its RC scaling, its Lease renewed); nothing of the rollout's
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
    # the repair let go of its claim and of its own Lease
    assert not [n for n in (c["metadata"]["name"] for c in client.list(LEASES, namespace=namespace)["items"])
                if n.startswith(("rollguard-claim", "rollguard-repair-"))]  # fmt: skip
