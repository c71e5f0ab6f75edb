"""Fixed, real-shaped cluster data and an in-memory client, for snapshots, tests and the benchmark.

Fed to `tests.helpers.fakecluster.FakeCluster`, the whole stack (backend, state model, screens) runs without a
cluster and always shows the same thing. Times are fixed relative to `NOW`.
"""

from __future__ import annotations

import copy
import datetime as dt
import json
import uuid
from typing import Any

from rollguard.cluster.journal import (
    DATA_KEY,
    JOURNAL_LABEL,
    MANAGED_BY,
    SELECTOR_ANNOTATION,
    Journal,
    WorkloadEntry,
    group_name,
)
from rollguard.core.resources import CONFIG_MAPS, DEPLOYMENT_CONFIGS, REPLICATION_CONTROLLERS
from rollguard.core.structs import EntryPhase, RunState, VerifiedState
from tests.helpers.fakecluster import Allow, FakeCluster, allow_all

Obj = dict[str, Any]
NOW = dt.datetime(2024, 5, 2, 10, 0, 0, tzinfo=dt.UTC)
REGISTRY = "registry.example.com/shop"


def ts(minutes_ago: float) -> str:
    return (NOW - dt.timedelta(minutes=minutes_ago)).strftime("%Y-%m-%dT%H:%M:%SZ")


def uid(*parts: str) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_URL, "/".join(parts)))


def template(name: str, image: str) -> Obj:
    return {"metadata": {"labels": {"name": name}}, "spec": {"containers": [{"name": "app", "image": image}]}}


def _meta(kind: str, ns: str, name: str, created: float, **extra: Any) -> Obj:
    return {"name": name, "namespace": ns, "uid": uid(ns, kind, name), "resourceVersion": "1",
            "generation": 1, "creationTimestamp": ts(created), **extra}  # fmt: skip


def _owner(kind: str, api: str, obj: Obj) -> list[Obj]:
    return [{"apiVersion": api, "kind": kind, "name": obj["metadata"]["name"],
             "uid": obj["metadata"]["uid"], "controller": True}]  # fmt: skip


def pods_for(
    owner: Obj, owner_kind: str, count: int, *, image: str, created: float, crash: bool = False
) -> list[Obj]:
    ns, name = owner["metadata"]["namespace"], owner["metadata"]["name"]
    pods = []
    for i in range(count):
        pod_name = f"{name}-{uuid.uuid5(uuid.NAMESPACE_DNS, f'{ns}/{name}/{i}').hex[:5]}"
        state = (
            {"waiting": {"reason": "CrashLoopBackOff", "message": "back-off 40s"}}
            if crash
            else {"running": {}}
        )
        pods.append({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {**_meta("Pod", ns, pod_name, created), "ownerReferences": _owner(owner_kind, "v1" if owner_kind == "ReplicationController" else "apps/v1", owner)},
            "spec": {"nodeName": "fake-node", "containers": [{"name": "app", "image": image}]},
            "status": {"phase": "Running", "podIP": f"10.0.0.{i + 10}", "containerStatuses": [
                {"name": "app", "ready": not crash, "restartCount": 4 if crash else 0, "state": state, "image": image,
                 "imageID": image}]},
        })  # fmt: skip
    return pods


def dc_objects(
    ns: str,
    name: str,
    history: list[tuple[str, str]],
    *,
    labels: dict[str, str],
    image: str | None = None,
    paused: bool = False,
    replicas: int = 2,
    created: float = 60 * 24 * 30,
) -> list[Obj]:
    """A DC whose rollouts were ``history`` [(image, RC phase)], oldest first; ``image``: its template now."""
    version = len(history)
    current = image or history[-1][0]
    dc: Obj = {
        "apiVersion": "apps.openshift.io/v1", "kind": "DeploymentConfig",
        "metadata": {**_meta("DeploymentConfig", ns, name, created, generation=version + 2), "labels": labels},
        "spec": {"replicas": replicas, "selector": {"name": name}, "paused": paused,
                 "strategy": {"type": "Rolling", "rollingParams": {"timeoutSeconds": 600}},
                 "triggers": [{"type": "ConfigChange"}], "template": template(name, current)},
    }  # fmt: skip
    active = max((i for i, (_img, phase) in enumerate(history) if phase == "Complete"), default=-1)
    objs: list[Obj] = [dc]
    latest_phase = history[-1][1]
    for i, (img, phase) in enumerate(history):
        n = i + 1
        encoded = {
            "kind": "DeploymentConfig",
            "metadata": {"name": name},
            "spec": {"template": template(name, img)},
        }
        rc_replicas = replicas if i == active else 0
        rc: Obj = {
            "apiVersion": "v1", "kind": "ReplicationController",
            "metadata": {**_meta("ReplicationController", ns, f"{name}-{n}", 60 * 24 * (version - n) + 60),
                         "labels": {**labels, "openshift.io/deployment-config.name": name},
                         "annotations": {"openshift.io/deployment.phase": phase,
                                         "openshift.io/deployment-config.latest-version": str(n),
                                         "openshift.io/deployment-config.name": name,
                                         "openshift.io/encoded-deployment-config": json.dumps(encoded)},
                         "ownerReferences": _owner("DeploymentConfig", "apps.openshift.io/v1", dc)},
            "spec": {"replicas": rc_replicas, "template": template(name, img)},
            "status": {"replicas": rc_replicas, "readyReplicas": rc_replicas, "availableReplicas": rc_replicas},
        }  # fmt: skip
        objs.append(rc)
        if rc_replicas:
            objs += pods_for(
                rc, "ReplicationController", rc_replicas, image=img, created=60 * (version - n) + 30
            )
    ready = replicas if active >= 0 else 0
    progressing = {
        "Complete": ("True", "NewReplicationControllerAvailable", f'replication controller "{name}-{version}" successfully rolled out'),
        "Failed": ("False", "ProgressDeadlineExceeded", f'replication controller "{name}-{version}" has failed progressing'),
    }.get(latest_phase, ("True", "ReplicationControllerUpdated", f'replication controller "{name}-{version}" is progressing'))  # fmt: skip
    conditions = [
        {"type": "Available", "status": "True" if ready else "False", "lastUpdateTime": ts(90),
         "message": "Deployment config has minimum availability." if ready else "Deployment config does not have minimum availability."},
        {"type": "Progressing", "status": progressing[0], "reason": progressing[1], "message": progressing[2], "lastUpdateTime": ts(50)},
    ]  # fmt: skip
    if paused:
        conditions[1] = {"type": "Progressing", "status": "Unknown", "reason": "DeploymentConfigPaused",
                         "message": f"deployment config {name!r} is paused", "lastUpdateTime": ts(50)}  # fmt: skip
    dc["status"] = {"latestVersion": version, "observedGeneration": version + 2, "replicas": replicas,
                    "updatedReplicas": replicas if latest_phase == "Complete" else 0, "readyReplicas": ready,
                    "availableReplicas": ready, "conditions": conditions}  # fmt: skip
    return objs


def deployment_objects(
    ns: str,
    name: str,
    images: list[str],
    *,
    labels: dict[str, str],
    replicas: int = 2,
    paused: bool = False,
    failed: bool = False,
    created: float = 60 * 24 * 12,
) -> list[Obj]:
    """A Deployment whose revisions ran ``images`` (oldest first); ``failed``: the last never became ready."""
    revision = len(images)
    dep: Obj = {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {**_meta("Deployment", ns, name, created, generation=revision), "labels": labels,
                     "annotations": {"deployment.kubernetes.io/revision": str(revision)}},
        "spec": {"replicas": replicas, "paused": paused, "progressDeadlineSeconds": 600,
                 "selector": {"matchLabels": {"name": name}}, "template": template(name, images[-1])},
    }  # fmt: skip
    objs: list[Obj] = [dep]
    for i, img in enumerate(images):
        n = i + 1
        newest = n == revision
        want = replicas if (newest and not failed) or (failed and n == revision - 1) else (1 if newest else 0)
        ready = 0 if (newest and failed) else want
        tmpl = template(name, img)
        tmpl["metadata"]["labels"]["pod-template-hash"] = uid(name, img)[:10]
        rs: Obj = {
            "apiVersion": "apps/v1", "kind": "ReplicaSet",
            "metadata": {**_meta("ReplicaSet", ns, f"{name}-{uid(name, img)[:10]}", 60 * 24 * (revision - n) + 45),
                         "labels": {"name": name}, "annotations": {"deployment.kubernetes.io/revision": str(n)},
                         "ownerReferences": _owner("Deployment", "apps/v1", dep)},
            "spec": {"replicas": want, "template": tmpl},
            "status": {"replicas": want, "readyReplicas": ready, "availableReplicas": ready},
        }  # fmt: skip
        objs.append(rs)
        if want:
            objs += pods_for(
                rs, "ReplicaSet", want, image=img, created=60 * (revision - n) + 20, crash=newest and failed
            )
    available = replicas
    cond = (
        "True",
        "NewReplicaSetAvailable",
        f'ReplicaSet "{objs[-1]["metadata"]["name"]}" has successfully progressed.',
    )
    if failed:
        cond = ("False", "ProgressDeadlineExceeded", f'ReplicaSet "{name}" has timed out progressing.')
    dep["status"] = {"observedGeneration": revision, "replicas": replicas + (1 if failed else 0),
                     "updatedReplicas": 1 if failed else replicas, "readyReplicas": available,
                     "availableReplicas": available, "conditions": [
                         {"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable",
                          "message": "Deployment has minimum availability.", "lastUpdateTime": ts(200)},
                         {"type": "Progressing", "status": cond[0], "reason": cond[1], "message": cond[2],
                          "lastUpdateTime": ts(40)}]}  # fmt: skip
    return objs


def journal_configmap(
    ns: str, selector: str, runs: list[tuple[str, str, str, dict[str, str]]], templates: dict[str, Obj]
) -> Obj:
    """A group journal after ``runs`` [(run id, actor, final state, {workload key: image})]; the last
    successful one verified ``templates`` (workload key -> pod template)."""
    journal = Journal(namespace=ns, selector=selector)
    for i, (run_id, actor, state, targets) in enumerate(runs):
        journal.run_id, journal.command, journal.actor = run_id, "rollout", actor
        journal.started = ts(60 * 24 * (len(runs) - i) + 12)
        journal.workloads = {
            key: WorkloadEntry(kind="DeploymentConfig" if key.startswith("dc/") else "Deployment", name=key.split("/", 1)[1],
                               verified=VerifiedState(template=templates[key], triggers=None, revision=1,
                                                      images={"app": image}, paused=False),
                               target_images={"app": image}, phase="complete")
            for key, image in targets.items()
        }  # fmt: skip
        journal.error = "" if state == "succeeded" else "dc/dc2: pods crash-looping"
        journal.close_run(state)
        journal.history[-1]["finished"] = ts(60 * 24 * (len(runs) - i) + 8)
        journal.updated = journal.history[-1]["finished"]
        if state == "succeeded":
            journal.last_success = {"run_id": run_id, "finished": journal.updated, "templates": templates}
    return {
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": group_name(selector), "namespace": ns, "creationTimestamp": ts(60 * 24 * 40),
                     "labels": {MANAGED_BY: "rollguard", JOURNAL_LABEL: "true"},
                     "annotations": {SELECTOR_ANNOTATION: selector}},
        "data": {DATA_KEY: json.dumps(journal.to_json(), sort_keys=True)},
    }  # fmt: skip


def event(
    ns: str,
    kind: str,
    name: str,
    reason: str,
    message: str,
    minutes_ago: float,
    *,
    warning: bool = False,
    count: int = 1,
) -> Obj:
    return {
        "apiVersion": "v1", "kind": "Event",
        "metadata": {"name": f"{name}.{uid(reason, message)[:8]}", "namespace": ns, "creationTimestamp": ts(minutes_ago)},
        "involvedObject": {"kind": kind, "name": name, "namespace": ns},
        "reason": reason, "message": message, "type": "Warning" if warning else "Normal",
        "count": count, "lastTimestamp": ts(minutes_ago),
    }  # fmt: skip


def reference_case(ns: str = "shop-dev") -> list[Obj]:
    """Reference section 1 after the old pipeline: dc1 new, dc2 failed (rolled itself back), dc3
    paused with the new image waiting. The group had an earlier successful rollguard run on v1."""
    labels = {"app": "shop-api"}
    v1, v2, crash = f"{REGISTRY}/api:v1", f"{REGISTRY}/api:v2", f"{REGISTRY}/api:v2-crash"
    objs = dc_objects(ns, "dc1", [(v1, "Complete"), (v2, "Complete")], labels=labels)
    objs += dc_objects(ns, "dc2", [(v1, "Complete"), (crash, "Failed")], labels=labels)
    objs += dc_objects(ns, "dc3", [(v1, "Complete")], labels=labels, image=v2, paused=True)
    templates = {f"dc/dc{i}": template(f"dc{i}", v1) for i in (1, 2, 3)}
    objs.append(journal_configmap(ns, "app=shop-api", [("20240501-091500-a1b2c3", "alice@ci", "succeeded",
                                                         {k: v1 for k in templates})], templates))  # fmt: skip
    objs += [
        event(ns, "DeploymentConfig", "dc2", "DeploymentCreated", "Created new replication controller \"dc2-2\" for version 2", 58),
        event(ns, "ReplicationController", "dc2-2", "RolloutFailed", 'replication controller "dc2-2" has failed progressing', 47, warning=True),
        event(ns, "Pod", "dc2-2-x7k2p", "BackOff", "Back-off restarting failed container app", 48, warning=True, count=9),
        event(ns, "DeploymentConfig", "dc2", "DeploymentScaled", 'Scaled replication controller "dc2-1" to 2', 47),
    ]  # fmt: skip
    return objs


def neighbours(ns: str = "shop-dev") -> list[Obj]:
    """A healthy group of Deployments, one on a moving tag, and an ungrouped workload."""
    web = {"app": "shop-web"}
    objs = deployment_objects(ns, "web", [f"{REGISTRY}/web:1.4.0", f"{REGISTRY}/web:1.5.0"], labels=web)
    objs += deployment_objects(ns, "web-worker", [f"{REGISTRY}/worker:latest"], labels=web, replicas=1)
    objs += deployment_objects(
        ns, "redis", ["docker.io/library/redis:7.2.4"], labels={}, replicas=1, created=60 * 24 * 90
    )
    return objs


def namespace(name: str) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": name, "creationTimestamp": ts(60 * 24 * 100)},
    }


def rollout_from_another_shell(
    fake: FakeCluster, *, phase: str | None = None, ns: str = "shop-dev", change_cause: str | None = None
) -> None:
    """A DC rollout no rollguard run made, in `reference_case`: dc2's revision 3, a copy of dc2-2 (its
    phase too, unless ``phase``), newer than every other revision. ``change_cause``: the DC's
    ``kubernetes.io/change-cause`` when the RC was made, encoded in it as OpenShift's MakeDeployment
    encodes the whole DC (a rollguard run's mark: the rollout is that run's after all)."""
    rc = copy.deepcopy(fake.get(REPLICATION_CONTROLLERS, "dc2-2", namespace=ns))
    rc["metadata"]["name"] = "dc2-3"
    rc["metadata"]["annotations"]["openshift.io/deployment-config.latest-version"] = "3"
    if change_cause is not None:
        encoded = json.loads(rc["metadata"]["annotations"]["openshift.io/encoded-deployment-config"])
        encoded.setdefault("metadata", {}).setdefault("annotations", {})["kubernetes.io/change-cause"] = (
            change_cause
        )
        rc["metadata"]["annotations"]["openshift.io/encoded-deployment-config"] = json.dumps(encoded)
    if phase is not None:
        rc["metadata"]["annotations"]["openshift.io/deployment.phase"] = phase
    rc["metadata"]["creationTimestamp"] = "2030-01-01T00:00:00Z"
    rc["metadata"]["uid"] = "uid-dc2-3"
    fake.apply(rc)
    dc = fake.get(DEPLOYMENT_CONFIGS, "dc2", namespace=ns)
    dc["status"]["latestVersion"] = 3
    fake.apply(dc)


def cluster_of(objects: list[Obj], *, allow: Allow = allow_all, latency: float = 0.0) -> FakeCluster:
    """A FakeCluster holding ``objects`` and the namespaces they live in."""
    names = sorted({o["metadata"]["namespace"] for o in objects if o["metadata"].get("namespace")})
    return FakeCluster([*(namespace(n) for n in names), *objects], allow=allow, latency=latency)


def demo_cluster(*, allow: Allow = allow_all) -> FakeCluster:
    """The snapshot scene: the reference case beside a healthy group."""
    return cluster_of(reference_case() + neighbours(), allow=allow)


def many(workloads: int = 300, namespaces: int = 10) -> list[Obj]:
    """``workloads`` DCs and Deployments in groups of three over ``namespaces`` namespaces, some broken."""
    objs: list[Obj] = []
    for i in range(workloads):
        ns, group = f"team-{i % namespaces:02d}", f"svc-{i // (3 * namespaces):03d}"
        name, labels = f"{group}-{i % 3}", {"app": group}
        images = [f"{REGISTRY}/{group}:1.{n}" for n in range(1 + i % 3)]
        if i % 2:
            history = [(img, "Complete") for img in images]
            if i % 17 == 0:
                history[-1] = (history[-1][0] + "-crash", "Failed")
            objs += dc_objects(ns, name, history, labels=labels, paused=i % 23 == 0)
        else:
            objs += deployment_objects(
                ns, name, images, labels=labels, failed=i % 19 == 0 and len(images) > 1
            )
    return objs


def hotfix_left_by_the_last_run(fake: FakeCluster, *, ns: str = "shop-dev", key: str = "dc/dc1") -> None:
    """`reference_case`'s group as a run leaves it that met a colleague's edit of ``key`` (a hotfix it left
    as they set it): the journal's run `inconsistent`, the workload's entry `edited`, its verified state
    still v1 while it runs v2."""
    name = group_name("app=shop-api")
    cm = fake.get(CONFIG_MAPS, name, namespace=ns)
    journal = Journal.from_json(json.loads(cm["data"][DATA_KEY]))
    journal.state = RunState.INCONSISTENT
    journal.workloads[key].phase = EntryPhase.EDITED
    cm["data"][DATA_KEY] = json.dumps(journal.to_json(), sort_keys=True)
    fake.apply(cm)
