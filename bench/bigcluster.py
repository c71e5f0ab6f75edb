"""The big cluster of the scale benchmark, written straight into the sandbox's etcd.

10,000 workloads over 100 namespaces (half DCs, half Deployments), five revision objects each (50,000
RCs and ReplicaSets) and three pods each (30,000, most Pending: bound to nodes nobody serves, their
containers waiting in ContainerCreating), one journal ConfigMap per namespace (one in ten drifted).
Objects are shaped as a real cluster holds them, managedFields and last-applied annotations
included, a few KB each (`sizes` reports them).

Why etcd and not the API: 90,000 creates plus 90,000 status writes take the API server tens of
minutes on a shared 2-core machine; etcd's own API takes a hundred objects per transaction, and the
API server decodes JSON it finds there like its own (defaults applied on read). The controllers are
stopped first (`bench.big`), so nothing re-syncs or runs what is written: the cluster stays exactly
as built, which also keeps the measured reads apart from controller traffic. Building is not
measured and is part of no test.
"""

from __future__ import annotations

import base64
import hashlib
import json
import urllib.request
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from rollguard.cluster.journal import DATA_KEY, JOURNAL_LABEL, MANAGED_BY, SELECTOR_ANNOTATION, group_name
from rollguard.kinds.deployment import RS_REVISION_ANNOTATION
from rollguard.kinds.deploymentconfig import DC_VERSION_ANNOTATION, ENCODED_DC_ANNOTATION, PHASE_ANNOTATION

Obj = dict[str, Any]
NAMESPACES, PER_NAMESPACE, REVISIONS, REPLICAS = 100, 100, 5, 3
PREFIX = "big-"
REPO = "image-registry.openshift-image-registry.svc:5000/big"
CREATED = "2026-11-01T08:00:00Z"
_TXN_OPS, _TXN_BYTES = 100, 900_000  # etcd: 128 operations and 1.5 MiB per request by default


def namespace(i: int) -> str:
    return f"{PREFIX}{i:03d}"


def _uid(*parts: object) -> str:
    h = hashlib.sha1("/".join(map(str, parts)).encode()).hexdigest()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"


def _fields(value: Any) -> Any:
    """A managedFields ``fieldsV1`` tree for ``value``, as server-side apply records it."""
    if isinstance(value, dict):
        return {f"f:{k}": _fields(v) for k, v in value.items()}
    if isinstance(value, list):
        return {f'k:{{"name":"{v.get("name", i)}"}}' if isinstance(v, dict) else f"v:{v}": _fields(v)
                for i, v in enumerate(value)}  # fmt: skip
    return {}


def _managed(manager: str, api: str, spec: Obj, status: Obj | None = None) -> list[Obj]:
    entries = [{"manager": manager, "operation": "Update", "apiVersion": api, "time": CREATED,
                "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": _fields(spec)}}]  # fmt: skip
    if status:
        entries.append({"manager": "kube-controller-manager", "operation": "Update", "apiVersion": api,
                        "time": CREATED, "fieldsType": "FieldsV1", "fieldsV1": {"f:status": _fields(status)}})  # fmt: skip
    return entries


def template(name: str, revision: int, labels: Obj) -> Obj:
    """A pod template like an OpenShift service's: env, probes, resources, volumes."""
    probe = {"httpGet": {"path": "/health", "port": 8080, "scheme": "HTTP"}, "initialDelaySeconds": 10,
             "timeoutSeconds": 1, "periodSeconds": 10, "successThreshold": 1, "failureThreshold": 3}  # fmt: skip
    env = [{"name": f"APP_SETTING_{k}", "value": f"{name}-setting-{k}-value"} for k in range(6)]
    env += [{"name": "POD_NAME", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}}},
            {"name": "DB_PASSWORD", "valueFrom": {"secretKeyRef": {"name": f"{name}-db", "key": "password"}}}]  # fmt: skip
    return {
        "metadata": {"labels": dict(labels), "annotations": {"prometheus.io/scrape": "true", "prometheus.io/port": "8080"}},
        "spec": {
            "containers": [{
                "name": "app", "image": f"{REPO}/{name}@sha256:{hashlib.sha256(f'{name}{revision}'.encode()).hexdigest()}",
                "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"}], "env": env,
                "resources": {"limits": {"cpu": "500m", "memory": "512Mi"}, "requests": {"cpu": "100m", "memory": "256Mi"}},
                "readinessProbe": probe, "livenessProbe": probe,
                "volumeMounts": [{"name": "config", "mountPath": "/etc/app"}, {"name": "tmp", "mountPath": "/tmp"}],
                "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File",
                "imagePullPolicy": "IfNotPresent",
            }],
            "volumes": [{"name": "config", "configMap": {"name": f"{name}-config", "defaultMode": 420}},
                        {"name": "tmp", "emptyDir": {}}],
            "restartPolicy": "Always", "terminationGracePeriodSeconds": 30, "dnsPolicy": "ClusterFirst",
            "securityContext": {}, "schedulerName": "default-scheduler",
        },
    }  # fmt: skip


def _pod(ns: str, name: str, owner: Obj, labels: Obj, tmpl: Obj, running: bool, node: str) -> Obj:
    meta = owner["metadata"]
    container = tmpl["spec"]["containers"][0]
    state: Obj = (
        {"running": {"startedAt": CREATED}} if running else {"waiting": {"reason": "ContainerCreating"}}
    )
    status = {
        "phase": "Running" if running else "Pending", "hostIP": "10.0.3.7", "startTime": CREATED,
        "qosClass": "Burstable", "podIP": "10.128.4.17" if running else None,
        "conditions": [{"type": t, "status": "True" if running or t in ("PodScheduled", "Initialized") else "False",
                        "lastProbeTime": None, "lastTransitionTime": CREATED} for t in ("Initialized", "Ready", "ContainersReady", "PodScheduled")],
        "containerStatuses": [{"name": "app", "state": state, "lastState": {}, "ready": running, "restartCount": 0,
                               "image": container["image"], "imageID": container["image"] if running else "",
                               "started": running}],
    }  # fmt: skip
    spec = {**tmpl["spec"], "nodeName": node, "serviceAccountName": "default", "priority": 0,
            "tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}]}  # fmt: skip
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": ns, "uid": _uid(ns, "pod", name), "creationTimestamp": CREATED,
                     "labels": labels, "annotations": {"openshift.io/scc": "restricted"},
                     "ownerReferences": [{"apiVersion": meta["_api"], "kind": meta["_kind"], "name": meta["name"],
                                          "uid": meta["uid"], "controller": True, "blockOwnerDeletion": True}],
                     "managedFields": _managed("kubelet", "v1", {}, status)},
        "spec": spec, "status": status,
    }  # fmt: skip


def workload(ns_index: int, i: int) -> list[tuple[str, Obj]]:
    """(etcd key, object) of one workload, its revision objects and pods."""
    ns, g = namespace(ns_index), ns_index * PER_NAMESPACE + i
    name, dc = f"svc-{i:03d}", g % 2 == 0
    labels = {"app": name, "team": f"team-{g % 7}", "shard": f"s{g % 100:02d}", "bench": "big"}
    out: list[tuple[str, Obj]] = []
    running = [(g * REPLICAS + j) % 5 == 0 for j in range(REPLICAS)]  # one pod in five runs, the rest Pending
    ready = sum(running)
    uid = _uid(ns, "dc" if dc else "deploy", name)
    tmpl = template(name, REVISIONS, {"app": name, **({"deploymentconfig": name} if dc else {})})
    if dc:
        spec = {"replicas": REPLICAS, "selector": {"app": name, "deploymentconfig": name},
                "strategy": {"type": "Rolling", "rollingParams": {"timeoutSeconds": 600, "maxSurge": "25%", "maxUnavailable": "25%"}},
                "triggers": [{"type": "ConfigChange"}], "template": tmpl, "revisionHistoryLimit": 10}  # fmt: skip
        status = {"latestVersion": REVISIONS, "observedGeneration": 1, "replicas": REPLICAS, "updatedReplicas": REPLICAS,
                  "readyReplicas": ready, "availableReplicas": ready, "unavailableReplicas": REPLICAS - ready,
                  "conditions": [{"type": "Available", "status": "True" if ready == REPLICAS else "False", "lastUpdateTime": CREATED, "lastTransitionTime": CREATED},
                                 {"type": "Progressing", "status": "True", "reason": "NewReplicationControllerAvailable", "lastUpdateTime": CREATED, "lastTransitionTime": CREATED}]}  # fmt: skip
        api, kind, key = (
            "apps.openshift.io/v1",
            "DeploymentConfig",
            f"/registry/apps.openshift.io/deploymentconfigs/{ns}/{name}",
        )
    else:
        spec = {"replicas": REPLICAS, "selector": {"matchLabels": {"app": name}}, "template": tmpl,
                "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}},
                "revisionHistoryLimit": 10, "progressDeadlineSeconds": 600}  # fmt: skip
        status = {"observedGeneration": 1, "replicas": REPLICAS, "updatedReplicas": REPLICAS, "readyReplicas": ready,
                  "availableReplicas": ready, "unavailableReplicas": REPLICAS - ready,
                  "conditions": [{"type": "Available", "status": "True" if ready == REPLICAS else "False", "reason": "MinimumReplicasAvailable", "lastUpdateTime": CREATED, "lastTransitionTime": CREATED},
                                 {"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable", "lastUpdateTime": CREATED, "lastTransitionTime": CREATED}]}  # fmt: skip
        api, kind, key = "apps/v1", "Deployment", f"/registry/deployments/{ns}/{name}"
    body = {"apiVersion": api, "kind": kind, "spec": spec, "status": status,
            "metadata": {"name": name, "namespace": ns, "uid": uid, "generation": 1, "creationTimestamp": CREATED, "labels": labels,
                         "annotations": {"kubectl.kubernetes.io/last-applied-configuration": json.dumps({"apiVersion": api, "kind": kind, "metadata": {"name": name, "labels": labels}, "spec": spec}),
                                         **({} if dc else {RS_REVISION_ANNOTATION: str(REVISIONS)})},
                         "managedFields": _managed("kubectl-client-side-apply", api, spec, status)}}  # fmt: skip
    out.append((key, body))
    for r in range(1, REVISIONS + 1):
        newest = r == REVISIONS
        rtmpl = template(name, r, tmpl["metadata"]["labels"])
        replicas = REPLICAS if newest else 0
        if dc:
            rname = f"{name}-{r}"
            rlabels = {**rtmpl["metadata"]["labels"], "deployment": rname}
            rtmpl_rc = {**rtmpl, "metadata": {**rtmpl["metadata"], "labels": rlabels}}
            encoded = json.dumps({"kind": "DeploymentConfig", "apiVersion": api, "metadata": {k: v for k, v in body["metadata"].items() if k in ("name", "namespace", "uid", "labels")},
                                  "spec": {**spec, "template": rtmpl}, "status": status})  # fmt: skip
            rbody = {"apiVersion": "v1", "kind": "ReplicationController",
                     "metadata": {"name": rname, "namespace": ns, "uid": _uid(ns, "rc", rname), "creationTimestamp": CREATED,
                                  "labels": {**labels, "openshift.io/deployment-config.name": name},
                                  "annotations": {DC_VERSION_ANNOTATION: str(r), PHASE_ANNOTATION: "Complete",
                                                  "openshift.io/deployment-config.name": name, "openshift.io/deployer-pod.name": f"{rname}-deploy",
                                                  "openshift.io/deployer-pod.started-at": CREATED, ENCODED_DC_ANNOTATION: encoded},
                                  "ownerReferences": [{"apiVersion": api, "kind": kind, "name": name, "uid": uid, "controller": True, "blockOwnerDeletion": True}]},
                     "spec": {"replicas": replicas, "selector": rlabels, "template": rtmpl_rc},
                     "status": {"replicas": replicas, "readyReplicas": ready if newest else 0, "availableReplicas": ready if newest else 0, "observedGeneration": 2}}  # fmt: skip
            rbody["metadata"]["managedFields"] = _managed(
                "openshift-controller-manager", "v1", {"replicas": 0, "selector": rlabels}, rbody["status"]
            )
            out.append((f"/registry/controllers/{ns}/{rname}", rbody))
        else:
            h = hashlib.sha1(f"{ns}{name}{r}".encode()).hexdigest()[:10]
            rname = f"{name}-{h}"
            rlabels = {**rtmpl["metadata"]["labels"], "pod-template-hash": h}
            rtmpl_rs = {**rtmpl, "metadata": {**rtmpl["metadata"], "labels": rlabels}}
            rbody = {"apiVersion": "apps/v1", "kind": "ReplicaSet",
                     "metadata": {"name": rname, "namespace": ns, "uid": _uid(ns, "rs", rname), "creationTimestamp": CREATED,
                                  "labels": rlabels, "generation": 1,
                                  "annotations": {RS_REVISION_ANNOTATION: str(r), "deployment.kubernetes.io/desired-replicas": str(REPLICAS),
                                                  "deployment.kubernetes.io/max-replicas": str(REPLICAS + 1)},
                                  "ownerReferences": [{"apiVersion": api, "kind": kind, "name": name, "uid": uid, "controller": True, "blockOwnerDeletion": True}]},
                     "spec": {"replicas": replicas, "selector": {"matchLabels": rlabels}, "template": rtmpl_rs},
                     "status": {"replicas": replicas, "readyReplicas": ready if newest else 0, "availableReplicas": ready if newest else 0,
                                "fullyLabeledReplicas": replicas, "observedGeneration": 1}}  # fmt: skip
            rbody["metadata"]["managedFields"] = _managed(
                "kube-controller-manager", "apps/v1", {"replicas": 0, "selector": rlabels}, rbody["status"]
            )
            out.append((f"/registry/replicasets/{ns}/{rname}", rbody))
        if newest:
            rev_owner = {"metadata": {"name": rname, "uid": rbody["metadata"]["uid"], "_api": "v1" if dc else "apps/v1",
                                      "_kind": rbody["kind"]}}  # fmt: skip
            for j in range(REPLICAS):
                pname = f"{rname}-{hashlib.sha1(f'{rname}{j}'.encode()).hexdigest()[:5]}"
                pod = _pod(ns, pname, rev_owner, rlabels, rtmpl, running[j], f"bench-node-{g % 20:02d}")
                out.append((f"/registry/pods/{ns}/{pname}", pod))
    return out


def journal(ns_index: int) -> tuple[str, Obj]:
    """One group per namespace (its first workload); in one namespace in ten the verified template differs."""
    ns, name = namespace(ns_index), "svc-000"
    kind = "dc" if (ns_index * PER_NAMESPACE) % 2 == 0 else "deployment"
    labels = {"app": name, **({"deploymentconfig": name} if kind == "dc" else {})}
    verified = template(name, REVISIONS - (1 if ns_index % 10 == 3 else 0), labels)
    selector = f"app={name}"
    data = {"version": 1, "namespace": ns, "selector": selector,
            "run": {"id": "20261101-080000-big000", "command": "rollout", "actor": "tekton@pipeline", "state": "succeeded",
                    "started": CREATED, "updated": CREATED, "error": "", "errors": []},
            "workloads": {}, "history": [],
            "last_success": {"run_id": "20261101-080000-big000", "finished": CREATED, "templates": {f"{kind}/{name}": verified}}}  # fmt: skip
    cm_name = group_name(selector)
    body = {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": cm_name, "namespace": ns, "uid": _uid(ns, "cm", cm_name), "creationTimestamp": CREATED,
                         "labels": {MANAGED_BY: "rollguard", JOURNAL_LABEL: "true"}, "annotations": {SELECTOR_ANNOTATION: selector}},
            "data": {DATA_KEY: json.dumps(data, sort_keys=True, separators=(",", ":"))}}  # fmt: skip
    return f"/registry/configmaps/{ns}/{cm_name}", body


def objects(namespaces: range) -> Iterator[tuple[str, Obj]]:
    for n in namespaces:
        yield journal(n)
        for i in range(PER_NAMESPACE):
            yield from workload(n, i)


def _txn(etcd: str, batch: list[tuple[str, bytes]]) -> None:
    ops = [{"requestPut": {"key": base64.b64encode(k.encode()).decode(), "value": base64.b64encode(v).decode()}}
           for k, v in batch]  # fmt: skip
    req = urllib.request.Request(f"{etcd}/v3/kv/txn", data=json.dumps({"success": ops}).encode(),
                                 headers={"Content-Type": "application/json"})  # fmt: skip
    with urllib.request.urlopen(req, timeout=120) as resp:
        if not json.loads(resp.read()).get("succeeded", False):
            raise RuntimeError("etcd transaction failed")


def _batches(items: Iterator[tuple[str, Obj]]) -> Iterator[list[tuple[str, bytes]]]:
    batch: list[tuple[str, bytes]] = []
    size = 0
    for key, obj in items:
        data = json.dumps(obj, separators=(",", ":")).encode()
        if batch and (len(batch) >= _TXN_OPS or size + len(data) > _TXN_BYTES):
            yield batch
            batch, size = [], 0
        batch.append((key, data))
        size += len(data)
    if batch:
        yield batch


def write(etcd: str, namespaces: range, *, workers: int = 4) -> dict[str, Any]:
    """Write the namespaces' objects into etcd; returns counts and mean sizes (JSON bytes) per kind."""
    counts: dict[str, list[int]] = {}
    for _key, obj in objects(range(namespaces.start, min(namespaces.start + 1, namespaces.stop))):
        counts.setdefault(obj["kind"], []).append(len(json.dumps(obj, separators=(",", ":"))))
    with ThreadPoolExecutor(workers) as pool:
        pending: list[Future[None]] = []
        for batch in _batches(objects(namespaces)):  # a few batches in flight, not all of them in memory
            pending.append(pool.submit(_txn, etcd, batch))
            if len(pending) >= 2 * workers:
                pending.pop(0).result()
        for future in pending:
            future.result()
    return {kind: {"mean_bytes": sum(v) // len(v)} for kind, v in counts.items()}


def namespace_body(i: int) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": namespace(i), "labels": {"bench": "big"}},
    }
