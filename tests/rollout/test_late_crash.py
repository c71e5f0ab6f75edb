"""A member that completes, then fails or is edited while the rest of its group still rolls out, fails the run.

Found trying main as a platform team would: ``dc/fast`` given an image that is ready at once and dies a
few seconds later (the stand-in kubelet's ``-dies<N>``: ready, then crash-looping), ``dc/slow`` given one
that takes half a minute to be ready. ``dc/fast`` completed first and was never looked at again, so the
run printed ``succeeded`` (exit 0) half a minute later beside a member with no pod available: the
promise that exit 0 is never printed beside a member that is not healthy was broken without ``--bake``.
Now what the run wrote is judged on (as fail-fast judges new pods) until the last workload completes.

Likewise a colleague's ``oc set image`` of a member the run does not target (complete at once, so never
looked at again) to a crashing hotfix: the run said ``dc/c unchanged, healthy`` and exit 0 beside it.
Now it is someone else's edit during the run, as for a target: named in the first error, left as they
set it, the rest reverted, exit 3 (the group is not what its journal verified).
"""

from __future__ import annotations

import json

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
from tests.helpers.scenarios import edit


def test_a_member_that_crash_loops_after_completing_fails_the_run(sandbox, namespace, client, tmp_path):
    create_group(client, namespace, [dc_body("fast", OLD), dc_body("slow", OLD)])
    result = rollguard(sandbox.kubeconfig, "rollout", "-n", namespace, "-l", SELECTOR,
                       "--image", f"dc/fast={IMAGE}:v2-dies3", "--image", f"dc/slow={IMAGE}:v2-slow40",
                       report=tmp_path / "r.json")  # fmt: skip
    assert result.code == 1, result.stdout + result.stderr
    assert "dc/fast: complete" in result.stdout, result.stdout  # it was ready first
    report = result.report
    assert report["status"] == "reverted", report
    assert report["error"].startswith("dc/fast: pod fast-2-"), report["error"]
    assert "(after its rollout completed)" in report["error"], report["error"]
    for name in ("fast", "slow"):
        state = view(client, namespace, DC, name)
        assert state.images == {"app": OLD} and state.complete and not state.paused, state


def test_a_hotfix_of_a_member_not_targeted_during_the_run_is_no_success(sandbox, namespace, client, tmp_path):
    create_group(client, namespace, [dc_body("a", OLD), dc_body("c", OLD)])
    report = tmp_path / "r.json"
    run = start_rollguard(sandbox.kubeconfig, "rollout", "-n", namespace, "-l", SELECTOR,
                          "--image", f"dc/a={IMAGE}:v2-slow40", report=report)  # fmt: skip
    journal_reaches(client, namespace, "watching")  # written: dc/c was judged complete at once
    hotfix = f"{IMAGE}:hot7-crash"

    def set_image(obj):  # `oc set image dc/c app=...` by a colleague
        obj["spec"]["template"]["spec"]["containers"][0]["image"] = hotfix

    edit(client, DEPLOYMENT_CONFIGS, namespace, "c", set_image)
    out, err = run.communicate(timeout=240)
    assert run.returncode == 3, out + err
    data = json.loads(report.read_text())
    assert data["status"] == "inconsistent", data
    assert data["error"].startswith("dc/c was changed by someone else during the run"), data["error"]
    outcomes = {w["name"]: w["outcome"] for w in data["workloads"]}
    assert outcomes == {"a": "reverted", "c": "edited"}, outcomes
    assert view(client, namespace, DC, "a").images == {"app": OLD}
    assert view(client, namespace, DC, "c").images == {"app": hotfix}  # left as the colleague set it
