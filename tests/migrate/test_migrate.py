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

import yaml

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
    dc_body,
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
    wait_gone,
)
from tests.helpers.scenarios import events, image_stream, pause
from tests.helpers.tui_live import BINDINGS, ROLES, grant

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
    outcomes = {f"{w['kind']}/{w['name']}": w["outcome"] for w in result.report["workloads"]}
    assert outcomes == {"DeploymentConfig/api": "kept at 0 replicas", "DeploymentConfig/worker": "kept at 0 replicas",
                        "Deployment/api": "rolled-out", "Deployment/worker": "rolled-out"}  # fmt: skip
    migrated = {
        (e["involvedObject"]["kind"], e["involvedObject"]["name"])
        for e in events(client, namespace, "RollguardMigrated")
    }
    assert migrated == {(k, n) for k in ("DeploymentConfig", "Deployment") for n in ("api", "worker")}
    # status shows the migrated group (the DCs at 0 are the way back), drift-check finds nothing wrong
    status = rollguard(sandbox.kubeconfig, "status", "-n", namespace, "-l", SELECTOR)
    assert "migrated to Deployments; dc/api, dc/worker kept at 0 replicas" in status.stdout, status.stdout
    assert "--finish deletes them, --revert returns to them" in status.stdout
    drift = rollguard(sandbox.kubeconfig, "drift-check", "-n", namespace)
    assert drift.code == 0, drift.stdout + drift.stderr
    record = migration(client, namespace)
    assert (record["state"], record["command"]) == ("succeeded", "migrate")
    assert (record["replicas"], record["hpas"]["api"]["kind"]) == (
        {"api": 2, "worker": 1},
        "DeploymentConfig",
    )


def test_failing_deployment_reverted_with_the_dcs_serving(sandbox, namespace, client, tmp_path):
    recorder = shop(client, namespace, image=FLAKY)
    dc_pods = set(recorder.seen[0])
    results = tmp_path / "results"  # as the Tekton step writes them
    results.mkdir()
    result = rollguard(sandbox.kubeconfig, "migrate", "-n", namespace, "-l", SELECTOR, "--results-dir", str(results),
                       report=tmp_path / "r.json")  # fmt: skip
    assert (results / "status").read_text() == "reverted"
    assert (
        "ErrImagePull" in (results / "summary").read_text()
        or "ImagePullBackOff" in (results / "summary").read_text()
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
    hooked = dc_body("hooked", OLD)  # a pre hook, which a Deployment has no equivalent for
    hooked["spec"]["strategy"]["rollingParams"]["pre"] = {
        "failurePolicy": "Abort", "execNewPod": {"containerName": "app", "command": ["migrate-db"]}}  # fmt: skip
    create_dcs(client, namespace, [hooked])
    before = resource_versions(client, namespace)
    hook = rollguard(sandbox.kubeconfig, "migrate", "-n", namespace, "-l", SELECTOR)
    assert hook.code == 2, hook.stdout + hook.stderr
    assert (
        "dc/hooked has a pre lifecycle hook" in hook.stderr and "--pre-hook-as-init-container" in hook.stderr
    )
    assert resource_versions(client, namespace) == before
    client.delete(DEPLOYMENT_CONFIGS, "hooked", namespace=namespace)
    wait_gone(client, REPLICATION_CONTROLLERS, namespace, "hooked-1")  # collected: not under the next check
    client.create(DEPLOYMENTS, deployment_body("worker", OLD), namespace=namespace)  # not ours: a clash
    rolled_out(client, DEPLOYMENT, namespace, "worker")  # its ReplicaSet made before the fingerprint
    before = resource_versions(client, namespace)
    clash = rollguard(sandbox.kubeconfig, "migrate", "-n", namespace, "-l", SELECTOR)
    assert clash.code == 2, clash.stdout + clash.stderr
    assert "deployment/worker exists already" in clash.stderr and "rollguard.io/migrated-from" in clash.stderr
    assert resource_versions(client, namespace) == before
    client.delete(DEPLOYMENTS, "worker", namespace=namespace)
    wait_gone(client, DEPLOYMENTS, namespace, "worker")
    pause(client, namespace, "api")
    before = resource_versions(client, namespace)
    paused = rollguard(sandbox.kubeconfig, "migrate", "-n", namespace, "-l", SELECTOR)
    assert paused.code == 2, paused.stdout + paused.stderr
    assert "dc/api is paused" in paused.stderr and "rollguard resume dc/api" in paused.stderr
    assert resource_versions(client, namespace) == before
    finish = rollguard(sandbox.kubeconfig, "migrate", "-n", namespace, "-l", SELECTOR, "--finish")
    assert finish.code == 2 and "no finished migration" in finish.stderr, finish.stderr
    assert resource_versions(client, namespace) == before


def test_dry_run_and_yaml_output_change_nothing(sandbox, namespace, client, tmp_path):
    shop(client, namespace).stop()
    before = resource_versions(client, namespace)
    dry = rollguard(sandbox.kubeconfig, "migrate", "-n", namespace, "-l", SELECTOR, "--dry-run",
                    report=tmp_path / "r.json")  # fmt: skip
    assert dry.code == 0, dry.stdout + dry.stderr
    assert dry.report["status"] == "dry-run"
    assert "dc/api: 2 replicas -> deployment/api; then scaled to 0, kept" in dry.stdout
    assert "horizontalpodautoscaler api: DeploymentConfig/api -> Deployment/api" in dry.stdout
    # each Deployment as the server would store it: with the API server's defaults filled in
    stored = [d for d in yaml.safe_load_all(dry.stdout.split("(dry run)\n", 1)[1].rsplit("\ndry run:", 1)[0])]
    assert stored[0]["spec"]["template"]["spec"]["containers"][0]["terminationMessagePolicy"] == "File"
    out = tmp_path / "out"
    out.mkdir()
    written = rollguard(sandbox.kubeconfig, "migrate", "-n", namespace, "-l", SELECTOR, "-o", "yaml",
                        "--output-dir", str(out))  # fmt: skip
    assert written.code == 0, written.stdout + written.stderr
    assert sorted(p.name for p in out.iterdir()) == ["deployment-api.yaml", "deployment-worker.yaml"]
    api = yaml.safe_load((out / "deployment-api.yaml").read_text())
    assert (api["kind"], api["spec"]["replicas"], api["spec"]["selector"]) == (
        "Deployment",
        2,
        {"matchLabels": {"name": "api"}},
    )
    to_stdout = rollguard(sandbox.kubeconfig, "migrate", "-n", namespace, "-l", SELECTOR, "-o", "yaml")
    assert [d["metadata"]["name"] for d in yaml.safe_load_all(to_stdout.stdout)] == ["api", "worker"]
    assert resource_versions(client, namespace) == before


def test_missing_permissions_refused_with_nothing_changed(sandbox, namespace, client):
    shop(client, namespace).stop()
    grant(client, namespace, "alice", ["get", "list", "watch", "create", "update", "patch", "delete"])
    before = resource_versions(client, namespace)
    alice = sandbox.user_kubeconfig("alice")
    no_hpas = rollguard(alice, "migrate", "-n", namespace, "-l", SELECTOR)
    assert no_hpas.code == 2, no_hpas.stdout + no_hpas.stderr
    assert "not allowed to list horizontalpodautoscalers.autoscaling" in no_hpas.stderr
    client.create(ROLES, {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "hpa"},
                          "rules": [{"apiGroups": ["autoscaling"], "resources": ["horizontalpodautoscalers"],
                                     "verbs": ["get", "list", "watch"]}]}, namespace=namespace)  # fmt: skip
    client.create(BINDINGS, {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": "hpa"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "hpa"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "alice"}],
    }, namespace=namespace)  # fmt: skip
    no_patch = rollguard(alice, "migrate", "-n", namespace, "-l", SELECTOR)
    assert no_patch.code == 2, no_patch.stdout + no_patch.stderr
    assert "not allowed to patch horizontalpodautoscalers.autoscaling" in no_patch.stderr, no_patch.stderr
    assert resource_versions(client, namespace) == before


def test_killed_migration_reverted_by_rollguard_revert(sandbox, namespace, client, tmp_path):
    recorder = shop(client, namespace)
    proc = start_rollguard(
        sandbox.kubeconfig, "migrate", "-n", namespace, "-l", SELECTOR, "--lease-duration", "5s"
    )
    try:
        wait_until(
            client, DEPLOYMENT_CONFIGS, namespace, "worker", lambda d: d["spec"]["replicas"] == 0, timeout=120
        )
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=30)
    expire_lease(client, namespace, JOURNAL)
    result = rollguard(
        sandbox.kubeconfig, "revert", "-n", namespace, "-l", SELECTOR, report=tmp_path / "r.json"
    )
    seen = recorder.stop()
    assert result.code == 0, result.stdout + result.stderr
    assert not recorder.without_ready(), seen
    for name, replicas in (("api", 2), ("worker", 1)):
        assert client.get(DEPLOYMENT_CONFIGS, name, namespace=namespace)["spec"]["replicas"] == replicas
        wait_gone(client, DEPLOYMENTS, namespace, name)
    assert client.get(HORIZONTAL_POD_AUTOSCALERS, "api", namespace=namespace)["spec"]["scaleTargetRef"]["kind"] == (
        "DeploymentConfig")  # fmt: skip


def test_sigterm_mid_migration_reverts_with_the_dcs_serving(sandbox, namespace, client, tmp_path):
    recorder = shop(
        client, namespace, image=f"{IMAGE}:v1-slow8"
    )  # the Deployment's pods take 8 s to be ready
    dc_pods = set(recorder.seen[0])
    proc = start_rollguard(
        sandbox.kubeconfig, "migrate", "-n", namespace, "-l", SELECTOR, report=tmp_path / "r.json"
    )
    try:
        wait_until(client, DEPLOYMENTS, namespace, "api", lambda d: True, timeout=120, what="to be created")
    finally:
        proc.send_signal(signal.SIGTERM)  # the Tekton step's timeout, a pod evicted
        out, err = proc.communicate(timeout=180)
    seen = recorder.stop()
    assert proc.returncode == 1, out + err
    assert json.loads((tmp_path / "r.json").read_text())["status"] == "reverted"
    assert "interrupted by SIGTERM" in out + err
    assert "migration interrupted: putting the DeploymentConfigs back" in out + err, out + err
    assert not recorder.without_ready(), seen
    assert set(seen[-1]) == dc_pods, seen
    for name in ("api", "worker"):
        wait_gone(client, DEPLOYMENTS, namespace, name)
    assert client.get(DEPLOYMENT_CONFIGS, "api", namespace=namespace)["spec"]["replicas"] == 2
    assert client.get(HORIZONTAL_POD_AUTOSCALERS, "api", namespace=namespace)["spec"]["scaleTargetRef"]["kind"] == (
        "DeploymentConfig")  # fmt: skip
