"""The group is the unit (issue 31): no success beside a broken member, no revert of what the run never changed.

On the live sandbox, one test per situation a new user met (each failed before: exit 0 beside a
crash-looping member, or a colleague's hotfix silently reverted):

- a run killed right after writing a crashing image to ``dc/a``, then a run of ``dc/b`` only: the
  killed run's change is finished (watched) with the run's own, found crash-looping, and the whole group
  is reverted (exit 1 naming ``dc/a``), never ``succeeded`` beside it;
- a never-completed, crash-looping member the run does not target: refused (exit 2, nothing changed)
  unless ``--allow-never-completed``, which the report and the summary then name;
- a DC at 0 replicas given a crashing image: ``not verified (0 replicas)``, never ``rolled-out``;
- a colleague's env hotfix still rolling out on ``dc/a`` while the run's ``dc/b`` crashes: ``dc/a`` keeps
  the hotfix, named in the report and the summary; the revert of ``dc/b`` shows every field it changes
  (env, labels, not only the image);
- a hotfix an earlier run left in place (exit 3, journal ``inconsistent``, ``dc/a`` ``edited``): the next
  run that fails on ``dc/b`` leaves it too.
"""

from __future__ import annotations

import copy
import datetime as dt
import signal
from pathlib import Path

import yaml

from rollguard.core.errors import Conflict
from rollguard.core.resources import DEPLOYMENT_CONFIGS, LEASES
from rollguard.core.structs import Obj
from tests.helpers.cluster import (
    CRASH,
    DC,
    IMAGE,
    JOURNAL,
    NEW,
    OLD,
    SELECTOR,
    crash_looping,
    create_group,
    dc_body,
    journal,
    journal_reaches,
    resource_versions,
    rolled_out,
    rollguard,
    start_rollguard,
    view,
    wait_for_pod,
)

HOTFIX_ENV = [{"name": "MODE", "value": "hotfix"}]


def template(client, namespace: str, name: str) -> Obj:
    obj: Obj = client.get(DEPLOYMENT_CONFIGS, name, namespace=namespace)["spec"]["template"]
    return obj


def hotfix(client, namespace: str, name: str, *, image: str | None = None) -> None:
    """What `oc set env dc/NAME MODE=hotfix` does (and `oc set image`, given ``image``): read, change, write,
    read again on a 409 (a controller wrote the DC's status meanwhile)."""
    for _ in range(10):
        obj = client.get(DEPLOYMENT_CONFIGS, name, namespace=namespace)
        container = obj["spec"]["template"]["spec"]["containers"][0]
        container["env"] = HOTFIX_ENV
        if image is not None:
            container["image"] = image
        try:
            client.replace(DEPLOYMENT_CONFIGS, obj, namespace=namespace)
            return
        except Conflict:
            continue
    raise AssertionError(f"dc/{name}: too many conflicts")


def expire_lease(client, namespace: str) -> None:
    """Move a killed run's lease renewTime into the past: what waiting its duration would do."""
    lease = client.get(LEASES, JOURNAL, namespace=namespace)
    past = (dt.datetime.now(dt.UTC) - dt.timedelta(minutes=5)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    lease["spec"]["renewTime"] = lease["spec"]["acquireTime"] = past
    client.replace(LEASES, lease, namespace=namespace)


def by_name(report: Obj) -> dict[str, Obj]:
    return {w["name"]: w for w in report["workloads"]}


def test_a_killed_runs_crashing_change_is_finished_not_called_a_success(
    sandbox, namespace, client, tmp_path: Path
):
    """Before: the next run of dc/b only said the killed run's state was carried forward and exited 0
    with `succeeded: 2 workloads on their new state` while dc/a crash-looped on the killed run's image."""
    create_group(client, namespace, [dc_body("a", OLD), dc_body("b", OLD)])
    killed = start_rollguard(sandbox.kubeconfig, "rollout", "-n", namespace, "-l", SELECTOR, "--image", f"dc/a={CRASH}",
                             "--no-fail-fast")  # fmt: skip
    journal_reaches(client, namespace, "watching")
    killed.send_signal(signal.SIGKILL)
    killed.communicate(timeout=30)
    assert view(client, namespace, DC, "a").images == {"app": CRASH}
    expire_lease(client, namespace)

    result = rollguard(sandbox.kubeconfig, "rollout", "-n", namespace, "-l", SELECTOR, "--image", f"dc/b={NEW}",
                       report=tmp_path / "r.json")  # fmt: skip
    assert result.code == 1, result.stdout + result.stderr
    assert "dc/a" in result.report["error"] and "CrashLoopBackOff" in result.report["error"]
    assert "finished by this run" in result.stdout
    for name in ("a", "b"):
        state = view(client, namespace, DC, name)
        assert state.images == {"app": OLD} and state.complete and not state.paused, name
    workloads = by_name(result.report)
    assert workloads["a"]["outcome"] == "reverted"
    assert any(f"image: {CRASH} -> {OLD}" in line for line in workloads["a"]["revert_changes"])
    assert journal(client, namespace)["run"]["state"] == "reverted"


def test_a_killed_runs_change_failing_already_fails_the_next_run_before_its_writes(
    sandbox, namespace, client, tmp_path: Path
):
    """Before: the next run of dc/b, finishing the killed run's dc/a whose new pod already crash-looped,
    wrote dc/b all the same (a rollout, b-2) only to revert it at once (b-3): two rollouts of a healthy
    workload for a verdict known before the first write. Now the run writes nothing of its own; dc/a is
    still finished by it (reverted and verified), exit 1, and dc/b's notes say why it was not written."""
    create_group(client, namespace, [dc_body("a", OLD), dc_body("b", OLD)])
    killed = start_rollguard(sandbox.kubeconfig, "rollout", "-n", namespace, "-l", SELECTOR, "--image", f"dc/a={CRASH}",
                             "--no-fail-fast")  # fmt: skip
    journal_reaches(client, namespace, "watching")
    killed.send_signal(signal.SIGKILL)
    killed.communicate(timeout=30)
    wait_for_pod(client, namespace, crash_looping("a-2-"))
    expire_lease(client, namespace)

    result = rollguard(sandbox.kubeconfig, "rollout", "-n", namespace, "-l", SELECTOR, "--image", f"dc/b={NEW}",
                       report=tmp_path / "r.json")  # fmt: skip
    assert result.code == 1, result.stdout + result.stderr
    error = result.report["error"]
    assert error.startswith("dc/a: pod a-2-") and "CrashLoopBackOff" in error, error
    assert "dc/b not written" in error, error
    b = view(client, namespace, DC, "b")
    assert b.images == {"app": OLD} and b.revision == 1 and b.complete, b  # never rolled out
    a = view(client, namespace, DC, "a")
    assert a.images == {"app": OLD} and a.complete and not a.paused, a
    workloads = by_name(result.report)
    assert workloads["a"]["outcome"] == "reverted" and workloads["b"]["outcome"] == "unchanged", workloads
    assert any(n.startswith("not written: dc/a") for n in workloads["b"]["notes"]), workloads["b"]["notes"]
    assert journal(client, namespace)["run"]["state"] == "reverted"


def test_a_never_completed_member_the_run_does_not_change_is_refused_unless_accepted(
    sandbox, namespace, client, tmp_path: Path
):
    """Before: `succeeded` beside a never-completed crash-looping member the run did not target."""
    create_group(client, namespace, [dc_body("b", OLD)])
    client.create(DEPLOYMENT_CONFIGS, dc_body("a", CRASH), namespace=namespace)

    def fingerprint() -> dict[str, str]:  # dc/a's own controllers keep writing its RC as it crash-loops
        return {
            k: v
            for k, v in resource_versions(client, namespace).items()
            if not k.startswith("replicationcontrollers/a-")
        }

    before = fingerprint()
    args = ("rollout", "-n", namespace, "-l", SELECTOR, "--image", f"dc/b={NEW}")
    refused = rollguard(sandbox.kubeconfig, *args)
    assert refused.code == 2, refused.stdout + refused.stderr
    assert "dc/a never completed a rollout and this run does not change it" in refused.stderr
    assert "--allow-never-completed" in refused.stderr
    assert fingerprint() == before

    accepted = rollguard(sandbox.kubeconfig, *args, "--allow-never-completed", report=tmp_path / "r.json")
    assert accepted.code == 0, accepted.stdout + accepted.stderr
    assert view(client, namespace, DC, "b").images == {"app": NEW}
    assert view(client, namespace, DC, "a").images == {"app": CRASH}  # left as it is
    summary = accepted.stdout.strip().splitlines()[-1]
    assert "dc/a never completed a rollout, accepted with --allow-never-completed" in summary
    assert any("dc/a never completed" in m for m in accepted.report["members"])
    assert "dc/b rolled out" in accepted.stdout and "dc/a left unhealthy (accepted)" in accepted.stdout


def test_a_member_at_zero_replicas_is_not_verified(sandbox, namespace, client, tmp_path: Path):
    """Before: a DC at 0 replicas given a crashing image was reported `rolled-out`: no pod ever ran it."""
    create_group(client, namespace, [dc_body("idle", OLD, replicas=0), dc_body("b", OLD)])
    result = rollguard(sandbox.kubeconfig, "rollout", "-n", namespace, "-l", SELECTOR,
                       "--image", f"dc/idle={CRASH}", "--image", f"dc/b={NEW}", report=tmp_path / "r.json")  # fmt: skip
    assert result.code == 0, result.stdout + result.stderr
    workloads = by_name(result.report)
    assert workloads["idle"]["outcome"] == "not verified (0 replicas)"
    assert workloads["b"]["outcome"] == "rolled-out"
    assert "1 not verified (0 replicas)" in result.stdout.strip().splitlines()[-1]
    assert "dc/idle not verified (0 replicas)" in result.stdout


def test_a_colleagues_hotfix_still_rolling_out_is_left_when_the_run_fails(
    sandbox, namespace, client, tmp_path: Path
):
    """Before: the group revert sent dc/a back to its verified state and the hotfix was gone, unsaid."""
    slow = f"{IMAGE}:v1-slow8"
    create_group(client, namespace, [dc_body("a", slow), dc_body("b", OLD)])
    hotfix(client, namespace, "a")  # still rolling out (8 s) when the pipeline starts
    release = copy.deepcopy(dc_body("b", CRASH))
    release["metadata"]["labels"]["release"] = "r2"
    release["spec"]["template"]["spec"]["containers"][0]["env"] = [{"name": "FEATURE", "value": "on"}]
    manifest = tmp_path / "b.yaml"
    manifest.write_text(yaml.safe_dump(release))
    result = rollguard(sandbox.kubeconfig, "rollout", "-n", namespace, "-l", SELECTOR, "-f", str(manifest),
                       report=tmp_path / "r.json")  # fmt: skip
    assert result.code == 1, result.stdout + result.stderr
    assert "dc/b" in result.report["error"]
    a = template(client, namespace, "a")
    assert a["spec"]["containers"][0].get("env") == HOTFIX_ENV  # the hotfix stays
    rolled_out(client, DC, namespace, "a")
    b = view(client, namespace, DC, "b")
    assert b.images == {"app": OLD} and b.complete
    assert not template(client, namespace, "b")["spec"]["containers"][0].get("env")
    workloads = by_name(result.report)
    assert workloads["a"]["outcome"] == "edited"
    assert "dc/a left as someone else set it" in result.stdout.strip().splitlines()[-1]
    assert any("dc/a left as someone else set it" in m for m in result.report["members"])
    changes = workloads["b"]["revert_changes"]
    assert any(line.startswith("metadata.labels.release: r2 -> (none)") for line in changes), changes
    assert any("containers[app].env" in line for line in changes), changes
    assert any(f"containers[app].image: {CRASH} -> {OLD}" in line for line in changes), changes
    assert "containers[app].env" in result.stdout


def test_a_hotfix_an_earlier_run_left_edited_is_left_by_the_next_failing_run(
    sandbox, namespace, client, tmp_path: Path
):
    """Before: the next run that failed on another workload reverted the hotfix the earlier run had left."""
    create_group(client, namespace, [dc_body("a", OLD), dc_body("b", OLD)])
    first = start_rollguard(sandbox.kubeconfig, "rollout", "-n", namespace, "-l", SELECTOR,
                            "--image", f"dc/a={IMAGE}:v2-slow30", report=tmp_path / "first.json")  # fmt: skip
    journal_reaches(client, namespace, "watching")
    hotfix(client, namespace, "a", image=OLD)  # the on-call engineer's fix while the run watches
    out, err = first.communicate(timeout=180)
    assert first.returncode == 3, out + err
    assert journal(client, namespace)["workloads"]["dc/a"]["phase"] == "edited"
    rolled_out(client, DC, namespace, "a")

    result = rollguard(sandbox.kubeconfig, "rollout", "-n", namespace, "-l", SELECTOR, "--image", f"dc/b={CRASH}",
                       report=tmp_path / "r.json")  # fmt: skip
    assert result.code == 1, result.stdout + result.stderr
    a = template(client, namespace, "a")
    assert a["spec"]["containers"][0].get("env") == HOTFIX_ENV and a["spec"]["containers"][0]["image"] == OLD
    assert view(client, namespace, DC, "b").images == {"app": OLD}
    assert by_name(result.report)["a"]["outcome"] == "edited"
    assert "dc/a left as someone else set it" in result.stdout.strip().splitlines()[-1]


def test_a_colleagues_unverified_revision_is_not_recorded_as_verified_by_a_failed_run(
    sandbox, namespace, client, tmp_path: Path
):
    """Before: a colleague's first hotfix of dc/a (complete), their second still rolling out when a run of
    dc/b started; the run failed and left dc/a as they set it, but its journal recorded dc/a's newest
    complete revision, the colleague's intermediate one, as its last verified state: `revert -l` then
    announced `revert to revision 2 ... the journal's last verified state` (a state no run verified,
    neither rollguard's nor the colleague's final) while `status` measured drift against revision 1. Now the
    journal keeps revision 1, what the last successful run verified, for both."""
    create_group(client, namespace, [dc_body("a", OLD), dc_body("b", OLD)])
    first = rollguard(
        sandbox.kubeconfig, "rollout", "-n", namespace, "-l", SELECTOR, "--image", f"dc/b={NEW}"
    )
    assert first.code == 0, first.stdout + first.stderr
    hotfix(client, namespace, "a")
    rolled_out(client, DC, namespace, "a")  # revision 2: the colleague's first hotfix, complete
    hotfix(client, namespace, "a", image=f"{IMAGE}:v1-slow8")  # revision 3, still rolling out

    result = rollguard(sandbox.kubeconfig, "rollout", "-n", namespace, "-l", SELECTOR, "--image", f"dc/b={CRASH}",
                       report=tmp_path / "r.json")  # fmt: skip
    assert result.code == 1, result.stdout + result.stderr
    assert by_name(result.report)["a"]["outcome"] == "edited"
    assert view(client, namespace, DC, "a").images == {"app": f"{IMAGE}:v1-slow8"}  # left as they set it
    entry = journal(client, namespace)["workloads"]["dc/a"]
    assert entry["verified"]["revision"] == 1 and entry["verified"]["images"] == {"app": OLD}, entry[
        "verified"
    ]
    assert not entry["verified"]["template"]["spec"]["containers"][0].get("env"), entry["verified"]
    preview = rollguard(sandbox.kubeconfig, "revert", "-n", namespace, "-l", SELECTOR, "--dry-run")
    assert preview.code == 0, preview.stdout + preview.stderr
    assert f"{namespace}/dc/a: revert to revision 1" in preview.stdout, preview.stdout
