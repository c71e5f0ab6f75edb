"""`rollguard migrate` on the live sandbox (issue 26): DCs become Deployments with ready endpoints throughout.

A group as `oc new-app` leaves it (a Rolling DC with an automatic image trigger, an HPA and a Service
selecting ``deploymentconfig=api``; a Recreate DC whose trigger was made manual) is migrated: the
Deployments run, scaled as the DCs were, the DCs are kept at 0, the HPA scales the Deployment, and the
Service's Endpoints (filled by the real endpoints controller from the pods the stand-in kubelet reports
ready) list a ready address in every version seen from before the run to after it. A migration whose
Deployment cannot start is reverted with the DCs serving; a killed one is finished by the next run;
``--revert`` and ``--finish`` end a kept migration; bad input is refused with nothing changed.
"""

from __future__ import annotations

import json
import signal

from rollguard.cluster.journal import JournalStore
from rollguard.core.errors import NotFound
from rollguard.core.resources import (
    DEPLOYMENT_CONFIGS,
    DEPLOYMENTS,
    HORIZONTAL_POD_AUTOSCALERS,
    PODS,
    REPLICATION_CONTROLLERS,
)
from rollguard.core.structs import Obj
from rollguard.kinds.conversion import MIGRATED_FROM
from rollguard.kinds.triggers import TRIGGERS_ANNOTATION
from tests.helpers.cluster import (
    DEPLOYMENT,
    IMAGE,
    JOURNAL,
    OLD,
    SELECTOR,
    deployment_body,
    resource_versions,
    rolled_out,
    rollguard,
    start_rollguard,
    wait_until,
)
from tests.helpers.migration import (
    EndpointsRecorder,
    create_dcs,
    expire_lease,
    hpa_on_dc,
    manual_trigger,
    recreate_dc,
    rolling_dc,
    service,
)
from tests.helpers.scenarios import image_stream, pause

FLAKY = f"{IMAGE}:v1-flakypull"  # the first pull of each new pod fails (ErrImagePull), then it runs


def migration(client, namespace: str) -> Obj:
    """The journal's run state and command, and its migration record (whose own state is ``migration``)."""
    journal = JournalStore(client, namespace=namespace, selector=SELECTOR).load()
    assert journal is not None
    return {**journal.migration, "migration": journal.migration.get("state"), "state": journal.state,
            "command": journal.command}  # fmt: skip


def app_pods(client, namespace: str) -> list[Obj]:
    pods = client.list(PODS, namespace=namespace)["items"]
    return [p for p in pods if "openshift.io/deployer-pod-for.name" not in (p["metadata"].get("annotations") or {})
            and not p["metadata"]["name"].endswith("-deploy")]  # fmt: skip


def shop(client, namespace: str, image: str = OLD) -> EndpointsRecorder:
    """The group: dc/api (Rolling, automatic trigger, 2 replicas, HPA, Service) and dc/worker (Recreate,
    manual trigger, 1 replica, Service); the recorder of api's Endpoints, started."""
    image_stream(client, namespace, "api", {"v1": image})
    create_dcs(
        client,
        namespace,
        [rolling_dc("api", "api:v1", replicas=2), recreate_dc("worker", "api:v1", replicas=1)],
    )
    manual_trigger(client, namespace, "worker")
    hpa_on_dc(client, namespace, "api", low=1, high=3)
    service(client, namespace, "api", {"deploymentconfig": "api"})
    service(client, namespace, "worker", {"deploymentconfig": "worker"})
    return EndpointsRecorder(client, namespace, "api").start()


def test_group_migrated_with_ready_endpoints_at_every_step(sandbox, namespace, client, tmp_path):
    recorder = shop(client, namespace)
    worker = EndpointsRecorder(client, namespace, "worker").start()
    dc_pods = set(recorder.seen[0])
    result = rollguard(
        sandbox.kubeconfig, "migrate", "-n", namespace, "-l", SELECTOR, report=tmp_path / "r.json"
    )
    seen, seen_worker = recorder.stop(), worker.stop()
    assert result.code == 0, result.stdout + result.stderr
    assert result.report["status"] == "succeeded"
    # traffic: a ready address in every version of the Endpoints, and at the end only the new pods
    assert not recorder.without_ready(), seen
    assert not worker.without_ready(), seen_worker
    assert set(seen[-1]).isdisjoint(dc_pods) and len(seen[-1]) == 2, seen
    # the Deployments, as converted
    api = rolled_out(client, DEPLOYMENT, namespace, "api")
    assert api["spec"]["replicas"] == 2
    assert api["spec"]["selector"] == {"matchLabels": {"name": "api"}}
    assert api["spec"]["template"]["metadata"]["labels"]["deploymentconfig"] == "api"
    assert api["spec"]["strategy"]["type"] == "RollingUpdate"
    assert api["metadata"]["annotations"][MIGRATED_FROM] == "dc/api"
    (entry,) = json.loads(api["metadata"]["annotations"][TRIGGERS_ANNOTATION])
    assert entry["from"]["name"] == "api:v1" and not entry.get("paused")
    worker_d = rolled_out(client, DEPLOYMENT, namespace, "worker")
    assert worker_d["spec"]["strategy"] == {"type": "Recreate"}
    assert json.loads(worker_d["metadata"]["annotations"][TRIGGERS_ANNOTATION])[0]["paused"] is True
    # the DCs kept at 0, their pods gone; the HPA scales the Deployment
    for name in ("api", "worker"):
        assert client.get(DEPLOYMENT_CONFIGS, name, namespace=namespace)["spec"]["replicas"] == 0
    wait_until(
        client, REPLICATION_CONTROLLERS, namespace, "api-1", lambda rc: rc["status"].get("replicas", 0) == 0
    )
    hpa = client.get(HORIZONTAL_POD_AUTOSCALERS, "api", namespace=namespace)
    assert hpa["spec"]["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment", "name": "api"}
    record = migration(client, namespace)
    assert (record["state"], record["command"]) == ("succeeded", "migrate")
    assert (record["replicas"], record["hpas"]["api"]["kind"]) == (
        {"api": 2, "worker": 1},
        "DeploymentConfig",
    )


def test_failing_deployment_reverted_with_the_dcs_serving(sandbox, namespace, client, tmp_path):
    recorder = shop(client, namespace, image=FLAKY)
    dc_pods = set(recorder.seen[0])
    result = rollguard(
        sandbox.kubeconfig, "migrate", "-n", namespace, "-l", SELECTOR, report=tmp_path / "r.json"
    )
    seen = recorder.stop()
    assert result.code == 1, result.stdout + result.stderr
    assert result.report["status"] == "reverted"
    assert "ErrImagePull" in result.report["error"] or "ImagePullBackOff" in result.report["error"], (
        result.report
    )
    assert not recorder.without_ready(), seen
    assert set(seen[-1]) == dc_pods, seen  # the DCs' own pods served throughout and serve now
    for name in ("api", "worker"):
        try:
            client.get(DEPLOYMENTS, name, namespace=namespace)
            raise AssertionError(f"deployment/{name} is left after the revert")
        except NotFound:
            pass
    assert client.get(DEPLOYMENT_CONFIGS, "api", namespace=namespace)["spec"]["replicas"] == 2
    hpa = client.get(HORIZONTAL_POD_AUTOSCALERS, "api", namespace=namespace)
    assert hpa["spec"]["scaleTargetRef"]["kind"] == "DeploymentConfig"
    assert (
        JournalStore(client, namespace=namespace, selector=SELECTOR).load().migration["state"] == "reverted"
    )


def test_killed_migration_finished_by_the_next_run(sandbox, namespace, client, tmp_path):
    recorder = shop(client, namespace)
    proc = start_rollguard(
        sandbox.kubeconfig, "migrate", "-n", namespace, "-l", SELECTOR, "--lease-duration", "5s"
    )
    try:
        # killed once the DCs are being scaled down: the Deployments run, the journal says watching
        wait_until(
            client, DEPLOYMENT_CONFIGS, namespace, "worker", lambda d: d["spec"]["replicas"] == 0, timeout=120
        )
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=30)
    assert migration(client, namespace)["migration"] == "migrating"
    expire_lease(client, namespace, JOURNAL)
    result = rollguard(
        sandbox.kubeconfig, "migrate", "-n", namespace, "-l", SELECTOR, report=tmp_path / "r.json"
    )
    seen = recorder.stop()
    assert result.code == 0, result.stdout + result.stderr
    assert "this run finishes it" in result.stdout
    assert not recorder.without_ready(), seen
    assert migration(client, namespace)["replicas"] == {"api": 2, "worker": 1}
    for name, replicas in (("api", 2), ("worker", 1)):
        assert client.get(DEPLOYMENTS, name, namespace=namespace)["spec"]["replicas"] == replicas
        assert client.get(DEPLOYMENT_CONFIGS, name, namespace=namespace)["spec"]["replicas"] == 0


def test_revert_then_migrate_again_and_finish(sandbox, namespace, client, tmp_path):
    recorder = shop(client, namespace)
    assert rollguard(sandbox.kubeconfig, "migrate", "-n", namespace, "-l", SELECTOR).code == 0
    back = rollguard(sandbox.kubeconfig, "migrate", "-n", namespace, "-l", SELECTOR, "--revert")
    assert back.code == 0, back.stdout + back.stderr
    assert client.get(DEPLOYMENT_CONFIGS, "api", namespace=namespace)["spec"]["replicas"] == 2
    assert client.get(HORIZONTAL_POD_AUTOSCALERS, "api", namespace=namespace)["spec"]["scaleTargetRef"]["kind"] == (
        "DeploymentConfig")  # fmt: skip
    assert not any(
        d["metadata"]["name"] in ("api", "worker")
        for d in client.list(DEPLOYMENTS, namespace=namespace)["items"]
    )
    again = rollguard(sandbox.kubeconfig, "migrate", "-n", namespace, "-l", SELECTOR)
    assert again.code == 0, again.stdout + again.stderr
    done = rollguard(sandbox.kubeconfig, "migrate", "-n", namespace, "-l", SELECTOR, "--finish")
    seen = recorder.stop()
    assert done.code == 0, done.stdout + done.stderr
    assert not recorder.without_ready(), seen
    assert not client.list(DEPLOYMENT_CONFIGS, namespace=namespace)["items"]
    assert not [rc for rc in client.list(REPLICATION_CONTROLLERS, namespace=namespace)["items"]
                if not rc["metadata"].get("deletionTimestamp")]  # fmt: skip
    assert (
        JournalStore(client, namespace=namespace, selector=SELECTOR).load().migration["state"] == "finished"
    )
    assert rolled_out(client, DEPLOYMENT, namespace, "api")["spec"]["replicas"] == 2


def test_bad_input_refused_with_nothing_changed(sandbox, namespace, client, tmp_path):
    shop(client, namespace).stop()
    client.create(DEPLOYMENTS, deployment_body("worker", OLD), namespace=namespace)  # not ours: a clash
    before = resource_versions(client, namespace)
    clash = rollguard(sandbox.kubeconfig, "migrate", "-n", namespace, "-l", SELECTOR)
    assert clash.code == 2, clash.stdout + clash.stderr
    assert "deployment/worker exists already" in clash.stderr and "rollguard.io/migrated-from" in clash.stderr
    client.delete(DEPLOYMENTS, "worker", namespace=namespace)
    pause(client, namespace, "api")
    before = resource_versions(client, namespace)
    paused = rollguard(sandbox.kubeconfig, "migrate", "-n", namespace, "-l", SELECTOR)
    assert paused.code == 2, paused.stdout + paused.stderr
    assert "dc/api is paused" in paused.stderr and "rollguard resume dc/api" in paused.stderr
    assert resource_versions(client, namespace) == before
    finish = rollguard(sandbox.kubeconfig, "migrate", "-n", namespace, "-l", SELECTOR, "--finish")
    assert finish.code == 2 and "no finished migration" in finish.stderr, finish.stderr
    assert resource_versions(client, namespace) == before
