"""A workload that completes, then crash-loops while the rest of its group still rolls out, fails the run.

Found trying main as a platform team would: ``dc/fast`` given an image that is ready at once and dies a
few seconds later (the stand-in kubelet's ``-dies<N>``: ready, then crash-looping), ``dc/slow`` given one
that takes half a minute to be ready. ``dc/fast`` completed first and was never looked at again, so the
run printed ``succeeded`` (exit 0) half a minute later beside a member with no pod available: the
promise that exit 0 is never printed beside a member that is not healthy was broken without ``--bake``.
Now what the run wrote is judged on (as fail-fast judges new pods) until the last workload completes.
"""

from __future__ import annotations

from tests.helpers.cluster import DC, IMAGE, OLD, SELECTOR, create_group, dc_body, rollguard, view


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
