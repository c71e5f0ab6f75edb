"""Every revision a rollguard run starts names the run (issue 30 point 5), on the live sandbox.

The run's write carries ``kubernetes.io/change-cause: rollguard <command> run <id> (revision N)`` on the
workload (never in its template): the Deployment controller copies it onto the new ReplicaSet, the DC
controller encodes it into the RC (`rollguard.kinds.causes`). The revision history then attributes the
run's revisions to it, its revert's too, while a colleague's later edit, which carries the same
annotation along, is not the run's: a config or image change. Before, no revision said who made it and
the TUI marked a killed run's revision "made by hand".
"""

from __future__ import annotations

from rollguard.core.resources import DEPLOYMENT_CONFIGS, DEPLOYMENTS, REPLICA_SETS, REPLICATION_CONTROLLERS
from rollguard.kinds import kind_of
from rollguard.kinds.causes import CHANGE_CAUSE, Cause
from rollguard.kinds.revision_causes import revision_causes
from tests.helpers.cluster import (
    CRASH,
    NEW,
    NEWER,
    OLD,
    SELECTOR,
    create_group,
    dc_body,
    deployment_body,
    rolled_out,
    rollguard,
    wait_until,
)
from tests.helpers.scenarios import edit


def _causes(client, namespace, kind_name, name):
    kind = kind_of(kind_name)
    obj = client.get(kind.resource, name, namespace=namespace)
    owned = kind.owned(obj, client.list(kind.revisions, namespace=namespace)["items"])
    return obj, revision_causes(kind, owned)


def test_a_runs_revisions_name_it_and_a_later_edit_does_not(sandbox, namespace, client, tmp_path):
    create_group(client, namespace, [dc_body("dc1", OLD), deployment_body("web", OLD)])
    first = rollguard(
        sandbox.kubeconfig, "rollout", "-n", namespace, "-l", SELECTOR, "--image", f"dc/dc1={NEW}",
        "--image", f"deployment/web={NEW}", report=tmp_path / "first.json",
    )  # fmt: skip
    assert first.code == 0, first.stdout + first.stderr
    run = first.report["run_id"]
    for kind_name, name in (("DeploymentConfig", "dc1"), ("Deployment", "web")):
        obj, causes = _causes(client, namespace, kind_name, name)
        revision = kind_of(kind_name).revision(obj)
        assert (
            obj["metadata"]["annotations"][CHANGE_CAUSE]
            == f"rollguard rollout run {run} (revision {revision})"
        )
        assert CHANGE_CAUSE not in (obj["spec"]["template"]["metadata"].get("annotations") or {})
        cause = causes[revision]
        assert (cause.cause, cause.run_id, cause.command) == (Cause.ROLLGUARD, run, "rollout"), causes
        assert causes[revision - 1].cause is Cause.CREATED, causes

    # a failing run: its rollout and its own revert, each a revision of its own on the DC
    bad = rollguard(
        sandbox.kubeconfig, "rollout", "-n", namespace, "-l", SELECTOR, "--image", f"dc/dc1={CRASH}",
        report=tmp_path / "bad.json",
    )  # fmt: skip
    assert bad.code == 1, bad.stdout + bad.stderr
    failed = bad.report["run_id"]
    _obj, causes = _causes(client, namespace, "DeploymentConfig", "dc1")
    assert causes[3].text() == f"rollguard rollout run {failed}", causes
    assert causes[4].text() == f"rollguard rollout run {failed} (its revert)", causes

    # a colleague's `kubectl set image` afterwards: the Deployment still carries the run's change-cause,
    # and so does its new ReplicaSet, but the mark names another revision: an image change, not the run
    def set_image(obj):
        obj["spec"]["template"]["spec"]["containers"][0]["image"] = NEWER

    edit(client, DEPLOYMENTS, namespace, "web", set_image)
    rolled_out(client, "Deployment", namespace, "web")
    obj, causes = _causes(client, namespace, "Deployment", "web")
    newest = kind_of("Deployment").revision(obj)
    assert newest == 3, obj["metadata"]["annotations"]
    assert causes[newest].cause is Cause.IMAGE and "v3" in causes[newest].text(), causes
    assert causes[2].run_id == run


def test_a_resume_that_starts_no_rollout_leaves_no_mark(sandbox, namespace, client):
    """A write that starts no revision carries no change-cause: a later revision must not take the run's
    name (the mark would name the revision the resume never made)."""
    create_group(client, namespace, [dc_body("dc1", OLD)])
    rolled_out(client, "DeploymentConfig", namespace, "dc1")
    edit(client, DEPLOYMENT_CONFIGS, namespace, "dc1", lambda obj: obj["spec"].__setitem__("paused", True))
    resumed = rollguard(sandbox.kubeconfig, "resume", "-n", namespace, "dc/dc1")
    assert resumed.code == 0, resumed.stdout + resumed.stderr
    dc = wait_until(
        client, DEPLOYMENT_CONFIGS, namespace, "dc1", lambda d: not d["spec"].get("paused"), what="resumed"
    )
    assert CHANGE_CAUSE not in (dc["metadata"].get("annotations") or {}), dc["metadata"]
    rcs = client.list(REPLICATION_CONTROLLERS, namespace=namespace)["items"]
    assert [r["metadata"]["name"] for r in rcs] == ["dc1-1"]
    assert client.list(REPLICA_SETS, namespace=namespace)["items"] == []
