"""The Task's step budget on the live sandbox: the step's script, rendered as Tekton renders it, runs the
real `rollguard`, which refuses a `timeout` param whose rollout plus revert cannot end before the step's
SIGKILL (exit 2, the numbers in the message and the `summary` result, nothing changed on the cluster),
and accepts the largest `timeout` that fits (the rollout runs and succeeds).

Tekton's step timeout is enforced by its entrypoint with Go's exec.CommandContext, which kills the step
with SIGKILL (tektoncd/pipeline cmd/entrypoint/runner.go, pkg/entrypoint/entrypointer.go): a revert still
running then is cut off mid-way. Hence a refusal before any change rather than a run that might not fit.
"""

from __future__ import annotations

import pytest

from rollguard.cluster.client import Client
from rollguard.plan.inputs import STEP_OVERHEAD, format_duration
from tests.helpers.cluster import (
    DC,
    NEW,
    OLD,
    SELECTOR,
    create_group,
    dc_body,
    deployment_body,
    resource_versions,
    view,
)
from tests.tekton.manifests import go_duration, run_task, step, task

IMAGE = "image-registry.openshift-image-registry.svc:5000/shop-cd/rollguard@sha256:" + "4e" * 32


@pytest.fixture
def group(client, namespace) -> Client:
    create_group(client, namespace, [dc_body("dc1", OLD), deployment_body("web", OLD)])
    return client


def test_a_timeout_that_cannot_fit_is_refused_without_change(sandbox, namespace, group, tmp_path) -> None:
    task_obj = task()
    step_timeout = go_duration(step(task_obj)["timeout"])
    too_long = (step_timeout - STEP_OVERHEAD) // 2 + 60  # one minute over the largest that fits
    before = resource_versions(group, namespace)
    params = {
        "namespace": namespace,
        "selector": SELECTOR,
        "image": IMAGE,
        "timeout": format_duration(too_long),
    }
    proc, results = run_task(task_obj, sandbox.kubeconfig, tmp_path, params, [f"dc/dc1={NEW}"])

    assert proc.returncode == 2, proc.stdout + proc.stderr
    message = proc.stderr.strip().splitlines()[-1]
    worst = format_duration(2 * too_long + STEP_OVERHEAD)
    for number in (format_duration(too_long), format_duration(step_timeout), worst,
                   format_duration((step_timeout - STEP_OVERHEAD) // 2)):  # fmt: skip
        assert number in message, message
    assert message.startswith("rollguard: refused: ") and "--timeout" in message
    assert results["status"] == "refused" and format_duration(step_timeout) in results["summary"]
    assert resource_versions(group, namespace) == before
    assert view(group, namespace, DC, "dc1").images == {"app": OLD}


def test_the_largest_timeout_that_fits_rolls_out(sandbox, namespace, group, tmp_path) -> None:
    task_obj = task()
    step_timeout = go_duration(step(task_obj)["timeout"])
    fits = (step_timeout - STEP_OVERHEAD) // 2
    params = {"namespace": namespace, "selector": SELECTOR, "image": IMAGE, "timeout": format_duration(fits)}
    proc, results = run_task(
        task_obj, sandbox.kubeconfig, tmp_path, params, [f"dc/dc1={NEW}", f"deployment/web={NEW}"]
    )

    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert results["status"] == "succeeded"
    assert view(group, namespace, DC, "dc1").images == {"app": NEW}
    assert (tmp_path / "workspace" / "report" / "rollguard-report.json").exists()


# -- the arithmetic, pure ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("seconds", "text"), [(90, "1m30s"), (1500, "25m"), (5400, "1h30m"), (3600, "1h"), (7, "7s")]
)
def test_durations_print_as_timeout_takes_them(seconds: int, text: str) -> None:
    from rollguard.plan.inputs import parse_duration

    assert format_duration(seconds) == text and parse_duration(text) == seconds


def test_the_budget_boundary() -> None:
    from rollguard.core.errors import RefusedError
    from rollguard.plan.inputs import check_step_budget

    check_step_budget(timeout=600, step_timeout=2 * 600 + STEP_OVERHEAD)
    with pytest.raises(RefusedError, match="no --timeout fits"):
        check_step_budget(timeout=1, step_timeout=STEP_OVERHEAD)
    with pytest.raises(RefusedError, match=r"use --timeout 10m or less"):
        check_step_budget(timeout=601, step_timeout=2 * 600 + STEP_OVERHEAD)


@pytest.mark.parametrize(("value", "words"), [("nonsense", "is not a duration"), ("0s", "out of range")])
def test_a_bad_step_timeout_is_refused_without_change(
    sandbox, namespace, group, value: str, words: str
) -> None:
    from tests.helpers.cluster import rollguard

    before = resource_versions(group, namespace)
    result = rollguard(sandbox.kubeconfig, "rollout", "-n", namespace, "-l", SELECTOR, "--image", f"dc/dc1={NEW}",
                       "--step-timeout", value)  # fmt: skip
    assert result.code == 2, result.stdout + result.stderr
    message = result.stderr.strip().splitlines()[-1]
    assert message.startswith("rollguard: refused: --step-timeout") and words in message, message
    assert resource_versions(group, namespace) == before
