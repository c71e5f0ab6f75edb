"""What a group's journal keeps across runs, on the live sandbox (found trying main as a platform team would).

A rollout replaces a finished run's workload entries, but three things belong to the group, not to one
run: the history (the audit trail), the last success (the reference of the ``drifted`` finding) and a
kept migration (what ``migrate --finish``/``--revert`` and ``status`` read). Before, every rollout of a
group whose journal was final started from an empty journal, so:

- after a failed (reverted) run, nothing was ``drifted`` any more: a hotfix on a member went unseen by
  the nightly ``drift-check`` (exit 0), and the history held only the last run;
- after ``migrate`` kept the DCs at 0, the team's next ``rollout`` erased the migration: ``migrate
  --revert`` and ``--finish`` were refused ("no finished migration"), the way back gone.
"""

from __future__ import annotations

from rollguard.cluster.journal import JournalStore
from rollguard.core.resources import DEPLOYMENT_CONFIGS, DEPLOYMENTS
from tests.helpers.cluster import (
    CRASH,
    NEW,
    NEWER,
    OLD,
    SELECTOR,
    create_group,
    dc_body,
    rolled_out,
    rollguard,
)
from tests.helpers.migration import wait_gone
from tests.helpers.scenarios import edit


def test_a_failed_run_keeps_the_history_and_the_drift_reference(sandbox, namespace, client):
    create_group(client, namespace, [dc_body("dc1", OLD), dc_body("dc2", OLD)])
    good = rollguard(
        sandbox.kubeconfig, "rollout", "-n", namespace, "-l", SELECTOR, "--image", f"dc/dc1={NEW}"
    )
    assert good.code == 0, good.stdout + good.stderr
    bad = rollguard(
        sandbox.kubeconfig, "rollout", "-n", namespace, "-l", SELECTOR, "--image", f"dc/dc2={CRASH}"
    )
    assert bad.code == 1, bad.stdout + bad.stderr

    loaded = JournalStore(client, namespace=namespace, selector=SELECTOR).load()
    assert loaded is not None
    assert [h["state"] for h in loaded.history] == ["succeeded", "reverted"], loaded.history
    assert sorted(loaded.last_success.get("templates") or {}) == ["dc/dc1", "dc/dc2"], loaded.last_success

    def set_image(obj):  # a colleague's `oc set image dc/dc1 app=...` after the runs
        obj["spec"]["template"]["spec"]["containers"][0]["image"] = NEWER

    edit(client, DEPLOYMENT_CONFIGS, namespace, "dc1", set_image)
    rolled_out(client, "DeploymentConfig", namespace, "dc1")
    drift = rollguard(sandbox.kubeconfig, "drift-check", "-n", namespace)
    assert drift.code == 1, drift.stdout + drift.stderr
    assert "drifted" in drift.stdout and NEWER in drift.stdout, drift.stdout


def test_a_rollout_of_a_migrated_group_keeps_the_way_back(sandbox, namespace, client):
    create_group(client, namespace, [dc_body("api", OLD)])
    migrated = rollguard(sandbox.kubeconfig, "migrate", "-n", namespace, "-l", SELECTOR)
    assert migrated.code == 0, migrated.stdout + migrated.stderr
    release = rollguard(sandbox.kubeconfig, "rollout", "-n", namespace, "-l", SELECTOR,
                        "--image", f"deployment/api={NEW}")  # fmt: skip
    assert release.code == 0, release.stdout + release.stderr
    status = rollguard(sandbox.kubeconfig, "status", "-n", namespace)
    assert "migrated to Deployments" in status.stdout, status.stdout

    back = rollguard(sandbox.kubeconfig, "migrate", "-n", namespace, "-l", SELECTOR, "--revert")
    assert back.code == 0, back.stdout + back.stderr
    assert rolled_out(client, "DeploymentConfig", namespace, "api")["spec"]["replicas"] == 1

    wait_gone(client, DEPLOYMENTS, namespace, "api")
