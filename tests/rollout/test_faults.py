"""A rollout interrupted (SIGKILL, SIGTERM), raced, promoted, or failing fast, on the live sandbox."""

from __future__ import annotations

import json
import signal
import time
from pathlib import Path

from rollguard.cluster.client import Client
from rollguard.cluster.lock import read_lease
from rollguard.core.resources import DEPLOYMENT_CONFIGS, IMAGE_STREAMS, LEASES, NAMESPACES
from tests.helpers.cluster import (
    CRASH,
    DC,
    DEPLOYMENT,
    IMAGE,
    JOURNAL,
    NEW,
    NEWER,
    NEWER_CRASH,
    OLD,
    SELECTOR,
    all_on,
    create_group,
    dc_body,
    deployment_body,
    journal_reaches,
    make_group,
    rolled_out,
    rollguard,
    start_rollguard,
    view,
    wait_until,
)


def wait_for_lease_expiry(client: Client, namespace: str) -> None:
    """A killed run's lease expires by the clock alone: no event to wait on, so sleep until then."""
    view_ = read_lease(client.get(LEASES, JOURNAL, namespace=namespace))
    assert view_.live
    time.sleep(view_.expires_in + 0.5)
    assert not read_lease(client.get(LEASES, JOURNAL, namespace=namespace)).live


def images_args(names: list[str], image: str, crash: str | None = None) -> list[str]:
    args = []
    for name in names:
        kind = "deploy" if name.startswith("web") else "dc"
        args += ["--image", f"{kind}/{name}={crash if name == names[1] and crash else image}"]
    return args


def test_sigkill_mid_run_then_next_run_reverts_to_last_verified_state(
    sandbox, namespace, client, tmp_path: Path
):
    names = ["dc1", "dc2", "web"]
    make_group(client, namespace)
    first = start_rollguard(
        sandbox.kubeconfig,
        "rollout",
        "-n",
        namespace,
        "-l",
        SELECTOR,
        *images_args(names, f"{IMAGE}:v2-slow30"),
    )
    journal = journal_reaches(client, namespace, "watching")
    first.send_signal(signal.SIGKILL)
    first.wait(timeout=10)
    assert journal["workloads"]["dc/dc1"]["verified"]["images"] == {"app": OLD}
    # The dead run left the group half-done (new templates, pods not ready) and a non-final journal.
    assert view(client, namespace, DC, "dc1").images == {"app": f"{IMAGE}:v2-slow30"}

    bad = images_args(names, NEWER, crash=NEWER_CRASH)
    # While the dead run's lease is live, a new run is refused and names it.
    early = rollguard(sandbox.kubeconfig, "rollout", "-n", namespace, "-l", SELECTOR, *bad)
    assert early.code == 2 and "locked by" in early.stderr
    wait_for_lease_expiry(client, namespace)
    second = rollguard(
        sandbox.kubeconfig,
        "rollout",
        "-n",
        namespace,
        "-l",
        SELECTOR,
        *bad,
        report=tmp_path / "second.json",
        timeout=120,
    )
    assert second.code == 1, second.stdout + second.stderr
    assert "carried forward" in second.stdout
    all_on(client, namespace, OLD)
    final = journal_reaches(client, namespace, "reverted")
    assert final["history"][-1]["state"] == "reverted"


def test_sigterm_reverts_and_exits_1(sandbox, namespace, client, tmp_path: Path):
    names = ["dc1", "dc2", "web"]
    make_group(client, namespace)
    run = start_rollguard(
        sandbox.kubeconfig,
        "rollout",
        "-n",
        namespace,
        "-l",
        SELECTOR,
        *images_args(names, f"{IMAGE}:v2-slow60"),
        "--report",
        str(tmp_path / "r.json"),
    )
    journal_reaches(client, namespace, "watching")
    run.send_signal(signal.SIGTERM)
    out, err = run.communicate(timeout=60)
    assert run.returncode == 1, out + err
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["status"] == "reverted" and "SIGTERM" in report["error"]
    # a stop is said as a stop, not as a failure of the release
    assert "interrupted: reverting the whole group" in out, out
    all_on(client, namespace, OLD)


def test_two_runs_at_once_one_proceeds_other_names_holder(sandbox, namespace, client):
    create_group(client, namespace, [dc_body("dc1", OLD), deployment_body("web", OLD)])
    args = [
        "rollout",
        "-n",
        namespace,
        "-l",
        SELECTOR,
        "--image",
        f"dc/dc1={IMAGE}:v2-slow2",
        "--image",
        f"deploy/web={NEW}",
    ]
    runs = [start_rollguard(sandbox.kubeconfig, *args) for _ in range(2)]
    results = [(r.wait(timeout=120), *r.communicate()) for r in runs]
    codes = sorted(code for code, _, _ in results)
    assert codes == [0, 2], results
    refused = next(err for code, _, err in results if code == 2)
    assert "locked by" in refused and " run " in refused
    assert view(client, namespace, DC, "dc1").images == {"app": f"{IMAGE}:v2-slow2"}


def test_promote_pins_digest_and_trigger_to_the_tag(sandbox, namespace, client, tmp_path: Path):
    cd = f"{namespace[:50]}-cd"
    client.create(NAMESPACES, {"metadata": {"name": cd}})
    try:

        def stream(tags: list[dict]) -> dict:
            return {
                "apiVersion": "image.openshift.io/v1",
                "kind": "ImageStream",
                "metadata": {"name": "api"},
                "spec": {"tags": tags},
            }

        client.create(
            IMAGE_STREAMS,
            stream([{"name": "abc123", "from": {"kind": "DockerImage", "name": NEW}}]),
            namespace=cd,
        )
        client.create(
            IMAGE_STREAMS,
            stream([{"name": "latest", "from": {"kind": "DockerImage", "name": OLD}}]),
            namespace=namespace,
        )
        trigger = [
            {"type": "ConfigChange"},
            {
                "type": "ImageChange",
                "imageChangeParams": {
                    "automatic": True,
                    "containerNames": ["app"],
                    "from": {"kind": "ImageStreamTag", "name": "api:latest"},
                },
            },
        ]
        client.create(DEPLOYMENT_CONFIGS, dc_body("dc1", " ", triggers=trigger), namespace=namespace)
        wait_until(
            client,
            DEPLOYMENT_CONFIGS,
            namespace,
            "dc1",
            lambda o: "@sha256:" in o["spec"]["template"]["spec"]["containers"][0]["image"],
            what="image trigger to fill the image",
        )
        rolled_out(client, DC, namespace, "dc1")  # a run refuses a DC that never completed a rollout
        before = view(client, namespace, DC, "dc1")
        result = rollguard(
            sandbox.kubeconfig,
            "rollout",
            "-n",
            namespace,
            "-l",
            SELECTOR,
            "--promote-from",
            cd,
            "--tag",
            "abc123",
            report=tmp_path / "r.json",
        )
        assert result.code == 0, result.stdout + result.stderr
        after = view(client, namespace, DC, "dc1")
        assert after.complete and after.images != before.images and "@sha256:" in after.images["app"]
        dc = client.get(DEPLOYMENT_CONFIGS, "dc1", namespace=namespace)
        params = dc["spec"]["triggers"][1]["imageChangeParams"]
        assert params["from"]["name"] == "api:abc123" and params["lastTriggeredImage"] == after.images["app"]
        source = client.get(IMAGE_STREAMS, "api", namespace=cd)
        digest = source["status"]["tags"][0]["items"][0]["image"]
        assert after.images["app"].endswith(digest)
    finally:
        client.delete(NAMESPACES, cd)


def test_fail_fast_reverts_long_before_the_600s_deadline(sandbox, namespace, client, tmp_path: Path):
    """Issue 9: deadlines left at 600 s; one crash-looping image; the group is back within a minute."""
    make_group(client, namespace)
    result = rollguard(
        sandbox.kubeconfig,
        "rollout",
        "-n",
        namespace,
        "-l",
        SELECTOR,
        *images_args(["dc1", "dc2", "web"], NEW, crash=CRASH),
        report=tmp_path / "r.json",
        timeout=60,
    )
    assert result.code == 1, result.stdout + result.stderr
    error = result.report["error"]
    assert "dc/dc2" in error and "pod dc2-2-" in error and "CrashLoopBackOff" in error
    for kind, name in ((DC, "dc1"), (DC, "dc2"), (DEPLOYMENT, "web")):
        state = view(client, namespace, kind, name)
        assert state.images == {"app": OLD} and state.complete, name


def test_slow_pods_are_not_failed_early(sandbox, namespace, client, tmp_path: Path):
    create_group(client, namespace, [dc_body("dc1", OLD), deployment_body("web", OLD)])
    slow = f"{IMAGE}:v2-slow20"
    result = rollguard(
        sandbox.kubeconfig,
        "rollout",
        "-n",
        namespace,
        "-l",
        SELECTOR,
        "--image",
        f"dc/dc1={slow}",
        "--image",
        f"deploy/web={slow}",
        report=tmp_path / "r.json",
    )
    assert result.code == 0, result.stdout + result.stderr
    assert {w["outcome"] for w in result.report["workloads"]} == {"rolled-out"}
    assert view(client, namespace, DC, "dc1").images == {"app": slow}
