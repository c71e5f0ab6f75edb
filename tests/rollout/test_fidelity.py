"""rollguard on what a real OpenShift does that the old emulation did not (issue 13), on the live sandbox.

Each test meets one behaviour of OpenShift's own code (named in its docstring, emulated in
sandbox/openshift/ and tested there by tests/sandbox/test_openshift.py) that rollguard once got wrong:
the failure's cause, deployer pods, what the API normalises, and no-progress deadlines.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from rollguard.cluster.client import Client
from rollguard.core.resources import (
    CONFIG_MAPS,
    DEPLOYMENT_CONFIGS,
    IMAGE_STREAMS,
    NAMESPACES,
    PODS,
)
from tests.helpers.cluster import (
    DC,
    DEPLOYMENT,
    SELECTOR,
    create_group,
    dc_body,
    deployment_body,
    rollguard,
    view,
    wait_until,
)
from tests.helpers.proxy import FaultPlan, FaultProxy
from tests.helpers.scenarios import OCM, deployer_image_format, image_stream, latest_dc, triggered_dc
from tests.helpers.triggers import annotated_web, trigger_entries

OLD = "registry.local/shop/api:v1"
NEW = "registry.local/shop/api:v2"
CRASH = "registry.local/shop/api:v2-crash"
SLOW = "registry.local/shop/api:v2-slow4"


def test_failed_dc_error_says_how_it_failed_not_its_cause(sandbox, namespace, client, tmp_path: Path):
    """openshift-controller-manager pkg/apps/deployer/deployer_controller.go writes only the phase of a
    failed RC; its status-reason stays the cause set by library-go pkg/apps/appsutil/util.go MakeDeployment
    ("config change"). How it failed: the DC's Progressing condition (deploymentconfig_controller.go
    updateConditions) and the deployer pod's exit (oc pkg/cli/deployer/strategy/rolling/rolling_updater.go)."""
    create_group(client, namespace, [dc_body("api", OLD, timeout=4)])
    result = rollguard(
        sandbox.kubeconfig, "rollout", "-n", namespace, "-l", SELECTOR, "--image", f"dc/api={CRASH}",
        "--no-fail-fast", report=tmp_path / "report.json",
    )  # fmt: skip
    assert result.code == 1, result.stdout + result.stderr
    error = result.report["error"]
    assert error.startswith("dc/api: "), error
    assert 'replication controller "api-2" has failed progressing' in error, error
    assert "deployer pod api-2-deploy: error: timed out waiting for any update progress to be made" in error
    assert "config change" not in error and "image change" not in error
    assert view(client, namespace, DC, "api").images == {"app": OLD}


def test_report_pods_are_the_revisions_not_its_deployer_pods(sandbox, namespace, client, tmp_path: Path):
    """Deployer pods `<rc>-deploy` are owned by the RC but not controlled by it, and kept after the
    rollout (openshift-controller-manager pkg/apps/deployer/deployer_controller.go makeDeployerPod):
    the report's pods (release documentation) are the application's only."""
    create_group(client, namespace, [dc_body("api", OLD, replicas=2)])
    result = rollguard(
        sandbox.kubeconfig, "rollout", "-n", namespace, "-l", SELECTOR, "--image", f"dc/api={NEW}",
        report=tmp_path / "report.json",
    )  # fmt: skip
    assert result.code == 0, result.stdout + result.stderr
    deployer = client.get(PODS, "api-2-deploy", namespace=namespace)
    assert deployer["metadata"]["labels"] == {"openshift.io/deployer-pod-for.name": "api-2"}
    (workload,) = result.report["workloads"]
    names = [p["name"] for p in workload["pods"]]
    assert len(names) == 2 and all(n.startswith("api-2-") and not n.endswith("-deploy") for n in names), names
    assert all(p["deployment"] == "api-2" for p in workload["pods"])


@pytest.fixture
def break_deployer_image(client: Client) -> Iterator[Callable[[], None]]:
    """Makes the cluster's deployer image one that cannot be pulled (a mirror registry without it, say);
    repaired after the test whatever happens."""

    unknown = "registry.local/broken/origin-${component}@sha256:" + "0" * 64
    with deployer_image_format(client, unknown) as breaks:
        yield breaks


def test_a_deployer_pod_that_cannot_start_is_named_at_once(
    sandbox, namespace, client, tmp_path: Path, break_deployer_image
):
    """A deployer pod stuck Pending keeps its RC Pending until the pod's activeDeadlineSeconds (6 h):
    openshift-controller-manager pkg/apps/deployer/deployer_controller.go only times out RCs still New.
    rollguard says so at once, naming the pod, and (as nothing can roll out, not even a revert) exits 3.
    Once the deployer image is repaired, the stuck pod keeps its image (as on OpenShift, where `oc rollout
    latest` or `retry` is the way out): `rollguard redeploy` starts a new rollout of the reverted template."""
    create_group(client, namespace, [dc_body("api", OLD)])
    break_deployer_image()
    result = rollguard(
        sandbox.kubeconfig, "rollout", "-n", namespace, "-l", SELECTOR, "--image", f"dc/api={NEW}",
        "--timeout", "60s", report=tmp_path / "report.json",
    )  # fmt: skip
    assert result.code == 3, result.stdout + result.stderr
    error = result.report["error"]
    assert error.startswith('dc/api: deployer pod "api-2-deploy" cannot start'), error
    assert "ErrImagePull" in error or "ImagePullBackOff" in error, error
    assert any("api-3-deploy" in e and "cannot start" in e for e in result.report["errors"]), result.report

    client.delete(CONFIG_MAPS, "config", namespace=OCM)
    repaired = rollguard(sandbox.kubeconfig, "redeploy", "-n", namespace, "dc/api", "--timeout", "60s")
    assert repaired.code == 0, repaired.stdout + repaired.stderr
    state = view(client, namespace, DC, "api")
    assert state.images == {"app": OLD} and state.complete and not state.paused


def test_slow_but_progressing_rollouts_are_not_failed(sandbox, namespace, client, tmp_path: Path):
    """A DC's timeoutSeconds restarts with every scale step (oc pkg/cli/deployer/strategy/rolling/
    rolling_updater.go, progressDeadline); a Deployment's progressDeadlineSeconds with every new or
    ready pod (kube-controller-manager). Four pods ready 4 s apart each take longer than either
    deadline of 6 s in all, yet never stand still that long: both platforms succeed, so must rollguard."""
    create_group(
        client,
        namespace,
        [dc_body("api", OLD, replicas=4, timeout=6), deployment_body("web", OLD, replicas=4, deadline=6)],
    )
    result = rollguard(
        sandbox.kubeconfig, "rollout", "-n", namespace, "-l", SELECTOR,
        "--image", f"dc/api={SLOW}", "--image", f"deploy/web={SLOW}", report=tmp_path / "report.json",
    )  # fmt: skip
    assert result.code == 0, result.stdout + result.stderr
    assert view(client, namespace, DC, "api").images == {"app": SLOW}
    assert view(client, namespace, DEPLOYMENT, "web").images == {"app": SLOW}


def test_a_stalled_rollout_still_fails_on_its_own_deadline(sandbox, namespace, client, tmp_path: Path):
    """The no-progress deadline still ends a rollout that stands still (a crash, with --no-fail-fast),
    well before --timeout: the platform's own verdict, named."""
    create_group(client, namespace, [deployment_body("web", OLD, deadline=4)])
    result = rollguard(
        sandbox.kubeconfig, "rollout", "-n", namespace, "-l", SELECTOR, "--image", f"deploy/web={CRASH}",
        "--no-fail-fast", "--timeout", "5m", report=tmp_path / "report.json",
    )  # fmt: skip
    assert result.code == 1, result.stdout + result.stderr
    assert result.report["error"].startswith("deployment/web: "), result.report["error"]
    assert view(client, namespace, DEPLOYMENT, "web").images == {"app": OLD}


def test_a_lost_reply_to_a_dc_write_is_recognised_as_ours(sandbox, namespace, client, tmp_path: Path):
    """The API drops `automatic: false` and fills in `from.namespace` (openshift/api apps/v1/types.go
    omitempty; openshift-apiserver pkg/apps/apis/apps/v1/defaults.go): when the reply to rollguard's
    DC write is lost, the retry's conflict must still see the change as its own, not someone else's."""
    image_stream(client, namespace, "api", {"latest": OLD})
    create_group(client, namespace, [latest_dc("api")])
    wait_until(client, PODS, namespace, "api-1-deploy", lambda p: p["status"].get("phase") == "Succeeded")
    with FaultProxy(sandbox.server, sandbox.ca, seed=13) as proxy:
        kubeconfig = proxy.kubeconfig(sandbox.kubeconfig, tmp_path / "kubeconfig")
        proxy.reset(
            FaultPlan(
                rates={"drop_after": 1.0},
                verbs=frozenset({"update"}),
                resources=frozenset({"deploymentconfigs"}),
                max_faults=1,
            )
        )
        result = rollguard(
            kubeconfig, "rollout", "-n", namespace, "-l", SELECTOR, "--image", f"dc/api={NEW}",
            report=tmp_path / "report.json",
        )  # fmt: skip
        assert proxy.faults["drop_after"] == 1
    assert result.code == 0, result.stdout + result.stderr
    dc = client.get(DEPLOYMENT_CONFIGS, "api", namespace=namespace)
    assert view(client, namespace, DC, "api").images == {"app": NEW}
    params = dc["spec"]["triggers"][1]["imageChangeParams"]
    assert "automatic" not in params  # manual now, as the API stores it


def test_group_revert_is_not_undone_by_an_automatic_trigger(sandbox, namespace, client, tmp_path: Path):
    """OCM pkg/image/trigger/ (and the DC controller) rewrite a DC's template whenever its automatic
    trigger's tag points elsewhere, paused or not. A DC left paused while its tag moved on: reverting it
    to its last verified state with its trigger automatic again would roll it straight to an image it
    never ran. The revert keeps the image it ran before, and says that the trigger is now manual."""
    image_stream(client, namespace, "api", {"latest": OLD})
    create_group(client, namespace, [latest_dc("api")])
    ran = view(client, namespace, DC, "api").images
    client.patch(DEPLOYMENT_CONFIGS, "api", {"spec": {"paused": True}}, namespace=namespace)
    moved = "registry.local/shop/api:v3"
    client.patch(
        IMAGE_STREAMS, "api",
        {"spec": {"tags": [{"name": "latest", "from": {"kind": "DockerImage", "name": moved}}]}},
        namespace=namespace,
    )  # fmt: skip
    wait_until(  # the trigger controller rewrites the paused DC's template
        client, DEPLOYMENT_CONFIGS, namespace, "api",
        lambda d: d["spec"]["template"]["spec"]["containers"][0]["image"] != ran["app"],
    )  # fmt: skip
    result = rollguard(
        sandbox.kubeconfig, "rollout", "-n", namespace, "-l", SELECTOR, "--image", f"dc/api={CRASH}",
        report=tmp_path / "report.json",
    )  # fmt: skip
    assert result.code == 1, result.stdout + result.stderr
    state = view(client, namespace, DC, "api")
    assert state.images == ran and state.complete and not state.paused, state
    dc = client.get(DEPLOYMENT_CONFIGS, "api", namespace=namespace)
    assert "automatic" not in dc["spec"]["triggers"][1]["imageChangeParams"]  # manual: it would undo it
    (workload,) = result.report["workloads"]
    assert any("set to manual" in n for n in workload["notes"]), workload["notes"]


def test_promotion_to_a_local_reference_tag_pins_what_its_trigger_writes(
    sandbox, namespace, client, tmp_path: Path, promote_source: str
):
    """library-go pkg/image/imageutil/helpers.go: under `referencePolicy: Local` a trigger writes the
    stream's own `status.dockerImageRepository@<image>`, not the item's reference. The promotion keeps the
    tag's policy and pins the container to that, so the trigger finds nothing to do."""
    cd = promote_source
    image_stream(client, namespace, "api", {"abc123": OLD}, local=True)
    create_group(client, namespace, [triggered_dc("api", "api:abc123")])
    result = rollguard(
        sandbox.kubeconfig, "rollout", "-n", namespace, "-l", SELECTOR, "--promote-from", cd, "--tag", "abc123",
        report=tmp_path / "report.json",
    )  # fmt: skip
    assert result.code == 0, result.stdout + result.stderr
    stream = client.get(IMAGE_STREAMS, "api", namespace=namespace)
    assert stream["spec"]["tags"][0]["referencePolicy"] == {"type": "Local"}
    digest = client.get(IMAGE_STREAMS, "api", namespace=cd)["status"]["tags"][0]["items"][0]["image"]
    local = f"{stream['status']['dockerImageRepository']}@{digest}"
    state = view(client, namespace, DC, "api")
    assert state.images == {"app": local} and state.complete, state
    assert state.revision == 2  # one rollout: the trigger did not start a second one


@pytest.fixture
def promote_source(client: Client, namespace: str) -> Iterator[str]:
    """A CD namespace beside ``namespace`` whose ImageStream api holds the build's tag abc123 (NEW),
    imported; deleted after the test whatever happens."""
    cd = f"{namespace[:50]}-cd"
    client.create(NAMESPACES, {"metadata": {"name": cd}})
    try:
        image_stream(client, cd, "api", {"abc123": NEW})
        wait_until(client, IMAGE_STREAMS, cd, "api", lambda s: bool((s.get("status") or {}).get("tags")))
        yield cd
    finally:
        client.delete(NAMESPACES, cd)


def test_an_image_set_directly_pauses_a_deployments_image_trigger(sandbox, namespace, client, tmp_path: Path):
    """OCM pkg/image/trigger/annotations/ rewrites an annotated Deployment's container to its tag's image
    while the entry is not paused: an image set directly must pause it, or the platform undoes it."""
    image_stream(client, namespace, "api", {"latest": OLD})
    create_group(client, namespace, [annotated_web("api:latest")])
    result = rollguard(
        sandbox.kubeconfig, "rollout", "-n", namespace, "-l", SELECTOR, "--image", f"deploy/web={NEW}",
        report=tmp_path / "report.json",
    )  # fmt: skip
    assert result.code == 0, result.stdout + result.stderr
    assert view(client, namespace, DEPLOYMENT, "web").images == {"app": NEW}
    (entry,) = trigger_entries(client, namespace)
    assert entry["paused"] is True and entry["from"]["name"] == "api:latest"


def test_promotion_pins_a_deployments_image_trigger_to_the_tag(
    sandbox, namespace, client, tmp_path: Path, promote_source: str
):
    """`--promote-from` finds the stream an annotated Deployment follows and points its trigger at the
    promoted tag (resumed), with the container on the reference the trigger writes."""
    cd = promote_source
    image_stream(client, namespace, "api", {"latest": OLD})
    create_group(client, namespace, [annotated_web("api:latest")])
    result = rollguard(
        sandbox.kubeconfig, "rollout", "-n", namespace, "-l", SELECTOR, "--promote-from", cd, "--tag", "abc123",
        report=tmp_path / "report.json",
    )  # fmt: skip
    assert result.code == 0, result.stdout + result.stderr
    (entry,) = trigger_entries(client, namespace)
    assert entry["from"]["name"] == "api:abc123" and not entry.get("paused")
    digest = client.get(IMAGE_STREAMS, "api", namespace=cd)["status"]["tags"][0]["items"][0]["image"]
    state = view(client, namespace, DEPLOYMENT, "web")
    assert state.images["app"].endswith(digest) and state.complete
