"""A stand-in kubelet: one node, `fake-node`, that binds every unscheduled pod and "runs" it.

`python -m sandbox.kubelet --kubeconfig K --registry R --ready-file F`

What each container does comes from its image (`sandbox.registry`); the status it gets over time is in
`sandbox.podstatus`. Pod deletions are finalized (grace period 0). A pod whose process is emulated
elsewhere (the deployer pods of the OpenShift emulation) ends when that process "exits": annotation
`sandbox.rollguard.io/exit` = `<code>[:<termination message>]` on the pod, which the kubelet reports
as the container's termination, as it would report a real process's exit; what that process prints is
annotation `sandbox.rollguard.io/output` (a JSON list of `[epoch, line]`), which the log endpoint serves
as the pod's first container's log instead of what the image would print.

Container logs: an HTTPS endpoint on 127.0.0.1 (a free port, the sandbox CA's `kubelet.crt`) serves the
kubelet's `/containerLogs` route (`sandbox.kubelet_logs`); the Node reports it as a kubelet does, in
`status.daemonEndpoints.kubeletEndpoint.Port` with an InternalIP address of 127.0.0.1, which is where the
API server proxies `pods/log` to.

Design: one watch on all pods (resumed from its resourceVersion, re-listed on 410 Gone) feeds a few
worker threads, each owning the pods whose UID hashes to it, so a pod's updates stay in order without
locks. A pod's status is a pure function of its containers' behaviours and the time since it started;
a single timer thread wakes a worker at the pod's next transition, which patches the status only if it
changed: one PATCH per transition, whatever the number of pods.
"""

from __future__ import annotations

import argparse
import heapq
import itertools
import json
import logging
import os
import queue
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from kubernetes import client, config
from kubernetes.client.rest import ApiException

from sandbox import kubelet_logs, registry
from sandbox.podstatus import NODE_IP, Container, PodRun, ts

NODE = "fake-node"
EXIT_ANNOTATION = "sandbox.rollguard.io/exit"
OUTPUT_ANNOTATION = "sandbox.rollguard.io/output"
WORKERS = 8
RETRY = 1.0
WATCH_TIMEOUT = 300
log = logging.getLogger("sandbox.kubelet")
Pod = dict[str, Any]


@dataclass(order=True)
class _Timer:
    at: float
    seq: int
    shard: int = field(compare=False)
    task: tuple[str, Any] = field(compare=False)


class Kubelet:
    """The node: a pod watch, workers that own shards of the pods, and one timer thread."""

    def __init__(self, api: client.ApiClient, registry_dir: Path, pki: Path | None = None) -> None:
        self.core = client.CoreV1Api(api)
        self.registry_dir = registry_dir
        self.queues: list[queue.SimpleQueue[tuple[str, Any]]] = [queue.SimpleQueue() for _ in range(WORKERS)]
        self.runs: list[dict[str, PodRun]] = [{} for _ in range(WORKERS)]  # uid -> run, per shard
        self.timers: list[_Timer] = []
        self.timer_cv = threading.Condition()
        self.seq = itertools.count()
        self.ips = itertools.count()
        self.ips_lock = threading.Lock()
        self.pki = pki
        self.port = 0  # of the log endpoint, once it listens

    # -- threads --------------------------------------------------------------------------------------

    def run(self, ready_file: Path | None) -> None:
        if self.pki is not None:
            server = kubelet_logs.serve(find=self.find, registry_dir=self.registry_dir, pki=self.pki)
            self.port = server.server_address[1]
            log.info("serving container logs on https://127.0.0.1:%d", self.port)
        for i in range(WORKERS):
            threading.Thread(target=self._worker, args=(i,), name=f"worker-{i}", daemon=True).start()
        threading.Thread(target=self._timer_loop, name="timers", daemon=True).start()
        while True:
            try:
                self._register_node()
                rv = self._relist()
                if ready_file and not ready_file.exists():
                    ready_file.write_text(f"{os.getpid()}\n")
                    log.info("ready: node %s registered, watching pods", NODE)
                while rv:
                    rv = self._watch(rv)
            except Exception as e:  # stay alive: the API server may restart, a watch may break
                log.warning("pod watch failed, re-listing: %r", e)
                time.sleep(RETRY)

    def _relist(self) -> str:
        resp = self.core.list_pod_for_all_namespaces(_preload_content=False, _request_timeout=60)
        pods = json.loads(resp.data)  # plain JSON: much cheaper than the client's models for many pods
        present: list[set[str]] = [set() for _ in range(WORKERS)]
        for pod in pods["items"]:
            present[self._shard(pod["metadata"]["uid"])].add(pod["metadata"]["uid"])
            self._dispatch(pod)
        for i, uids in enumerate(present):
            self.queues[i].put(("forget-except", uids))  # pods deleted while we were not watching
        return str(pods["metadata"]["resourceVersion"])

    def _watch(self, rv: str) -> str:
        """Follow the pod watch from `rv`; return the resourceVersion to resume from, "" to re-list."""
        try:
            resp = self.core.list_pod_for_all_namespaces(
                watch=True, resource_version=rv, allow_watch_bookmarks=True, timeout_seconds=WATCH_TIMEOUT,
                _preload_content=False, _request_timeout=(10, WATCH_TIMEOUT + 30),
            )  # fmt: skip
        except ApiException as e:
            if e.status == 410:
                return ""
            raise
        try:
            for event in _lines(resp):
                obj = event["object"]
                if event["type"] == "ERROR":
                    if obj.get("code") == 410:
                        return ""
                    raise RuntimeError(f"watch error: {obj.get('message')}")
                rv = obj["metadata"]["resourceVersion"]
                if event["type"] == "DELETED":
                    self.queues[self._shard(obj["metadata"]["uid"])].put(("forget", obj["metadata"]["uid"]))
                elif event["type"] != "BOOKMARK":
                    self._dispatch(obj)
        finally:
            resp.release_conn()
        return rv

    def _dispatch(self, pod: Pod) -> None:
        self.queues[self._shard(pod["metadata"]["uid"])].put(("pod", pod))

    def find(self, namespace: str, name: str) -> PodRun | None:
        """The pod `namespace/name` this node runs now (for the log endpoint's threads)."""
        for runs in self.runs:
            for _ in range(3):
                try:
                    hit = next(
                        (r for r in list(runs.values()) if r.name == name and r.namespace == namespace), None
                    )
                    break
                except RuntimeError:  # changed size while copied by a worker thread: look again
                    continue
            else:
                hit = None
            if hit is not None:
                return hit
        return None

    def _shard(self, uid: str) -> int:
        return int(uid.replace("-", "")[-8:], 16) % WORKERS

    def _worker(self, i: int) -> None:
        runs = self.runs[i]
        while True:
            kind, arg = self.queues[i].get()
            try:
                if kind == "pod":
                    self._on_pod(i, arg)
                elif kind == "sync":
                    run = runs.get(arg)
                    if run is not None and run.next_at is not None and run.next_at <= time.time():
                        self._sync(i, run)  # else forgotten, or an outdated timer
                elif kind == "forget":
                    runs.pop(arg, None)
                elif kind == "forget-except":
                    for uid in set(runs) - arg:
                        del runs[uid]
            except Exception as e:  # one pod's trouble must not stop the others: retry it later
                if kind not in ("pod", "sync"):
                    log.exception("%s", kind)
                    continue
                pod_uid = arg["metadata"]["uid"] if kind == "pod" else arg
                log.warning("%s %s: %r; retrying", kind, pod_uid, e)
                if pod_uid in runs:
                    self._schedule(i, runs[pod_uid], time.time() + RETRY)
                elif kind == "pod":
                    self._later(i, time.time() + RETRY, (kind, arg))

    def _timer_loop(self) -> None:
        while True:
            with self.timer_cv:
                while not self.timers or self.timers[0].at > time.time():
                    self.timer_cv.wait(self.timers[0].at - time.time() if self.timers else None)
                t = heapq.heappop(self.timers)
            self.queues[t.shard].put(t.task)

    def _later(self, shard: int, at: float, task: tuple[str, Any]) -> None:
        with self.timer_cv:
            heapq.heappush(self.timers, _Timer(at, next(self.seq), shard, task))
            self.timer_cv.notify()

    def _schedule(self, shard: int, run: PodRun, at: float | None) -> None:
        """Sync `run` again at `at` (wall clock), instead of any time set before."""
        run.next_at = at
        if at is not None:
            self._later(shard, at, ("sync", run.uid))

    # -- pods -----------------------------------------------------------------------------------------

    def _on_pod(self, shard: int, pod: Pod) -> None:
        meta, spec = pod["metadata"], pod["spec"]
        uid, ns, name = meta["uid"], meta["namespace"], meta["name"]
        runs = self.runs[shard]
        if meta.get("deletionTimestamp"):
            if runs.pop(uid, None) is not None or spec.get("nodeName") in (None, NODE):
                self._finalize(ns, name, uid)
        elif not spec.get("nodeName"):
            self._bind(ns, name, uid)
        elif spec["nodeName"] == NODE and uid not in runs:
            runs[uid] = run = self._start(pod)
            self._sync(shard, run)
        elif uid in runs:
            run = runs[uid]
            run.output = _output_of(pod) or run.output  # before the exit: its last lines come with it
            if run.exit is None and _exit_of(pod) is not None:
                run.exit = _exit_of(pod)
                self._sync(shard, run)

    def _start(self, pod: Pod) -> PodRun:
        meta, spec, status = pod["metadata"], pod["spec"], pod.get("status") or {}
        started = time.time()
        if status.get("startTime"):  # a pod this kubelet ran before it restarted: keep its clock
            started = (
                datetime.strptime(status["startTime"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC).timestamp()
            )
        ip = status.get("podIP") or self._next_ip()
        return PodRun(
            uid=meta["uid"], namespace=meta["namespace"], name=meta["name"],
            containers=[self._container(c) for c in spec["containers"]],
            init_containers=[self._container(c) for c in spec.get("initContainers") or []],
            restart_policy=spec.get("restartPolicy", "Always"), started=started, ip=ip,
            active_deadline=spec.get("activeDeadlineSeconds"), exit=_exit_of(pod), output=_output_of(pod),
        )  # fmt: skip

    def _container(self, c: dict[str, Any]) -> Container:
        image = c.get("image", "")
        behaviour = registry.behaviour(
            self.registry_dir, image, [*(c.get("command") or []), *(c.get("args") or [])]
        )
        image_id = ""
        if behaviour[0] != "pull-error":
            _repo, _tag, digest = registry.split_ref(image)
            if not digest:  # the registry knows the digest of every tag it serves
                registry.pin(self.registry_dir, image)
            image_id = registry.image_id(self.registry_dir, image) or ""
        return Container(c["name"], image, behaviour, image_id)

    def _next_ip(self) -> str:
        with self.ips_lock:
            n = next(self.ips)
        return f"10.128.{n // 254 % 256}.{n % 254 + 1}"

    def _sync(self, shard: int, run: PodRun) -> None:
        status, next_at = run.status(time.time())
        if status != run.sent:
            body = {"metadata": {"uid": run.uid}, "status": status}  # a dict goes as a strategic merge patch
            if not self._send(self.core.patch_namespaced_pod_status, run.name, run.namespace, body):
                self.runs[shard].pop(run.uid, None)  # gone, or replaced by a pod of the same name
                return
            run.sent = status
        self._schedule(shard, run, next_at)

    def _bind(self, ns: str, name: str, uid: str) -> None:
        body = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": name, "uid": uid},
                "target": {"apiVersion": "v1", "kind": "Node", "name": NODE}}  # fmt: skip
        self._send(self.core.create_namespaced_binding, ns, body)  # 404, 409: gone, or bound already

    def _finalize(self, ns: str, name: str, uid: str) -> None:
        body = {"gracePeriodSeconds": 0, "preconditions": {"uid": uid}}
        self._send(self.core.delete_namespaced_pod, name, ns, body=body, grace_period_seconds=0)

    def _register_node(self) -> None:
        now = ts(time.time())
        conditions = [
            {"type": t, "status": "False" if t != "Ready" else "True", "reason": r, "message": m,
             "lastHeartbeatTime": now, "lastTransitionTime": now}
            for t, r, m in (
                ("MemoryPressure", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
                ("DiskPressure", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
                ("PIDPressure", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
                ("Ready", "KubeletReady", "kubelet is posting ready status"),
            )
        ]  # fmt: skip
        resources = {"cpu": "64", "memory": "256Gi", "pods": "20000"}
        status = {
            "conditions": conditions, "capacity": resources, "allocatable": resources,
            "addresses": [{"type": "InternalIP", "address": NODE_IP}, {"type": "Hostname", "address": NODE}],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": self.port}},
            "nodeInfo": {"kubeletVersion": "v1.20.2", "kubeProxyVersion": "v1.20.2",
                         "operatingSystem": "linux", "architecture": "amd64",
                         "containerRuntimeVersion": "cri-o://1.20.0",
                         "osImage": "rollguard sandbox", "kernelVersion": os.uname().release, "machineID": "",
                         "systemUUID": "", "bootID": ""},
        }  # fmt: skip
        labels = {"kubernetes.io/hostname": NODE, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
                  "node-role.kubernetes.io/worker": ""}  # fmt: skip
        self._send(
            self.core.create_node, {"metadata": {"name": NODE, "labels": labels}}
        )  # 409: there already
        self._send(self.core.patch_node_status, NODE, {"status": status})

    @staticmethod
    def _send(request: Callable[..., Any], *args: Any, **kwargs: Any) -> bool:
        """Make a request whose answer is not needed; False if it failed with 404 or 409 Conflict."""
        try:
            resp = request(*args, _preload_content=False, **kwargs)
        except ApiException as e:
            if e.status in (404, 409):
                return False
            raise
        # Unread, the response would keep its connection out of the pool: a new TLS handshake per request.
        resp.read()
        resp.release_conn()
        return True


def _exit_of(pod: Pod) -> tuple[int, str, float] | None:
    """The exit of the pod's emulated process, from its annotation (None while it runs)."""
    raw = (pod["metadata"].get("annotations") or {}).get(EXIT_ANNOTATION)
    if raw is None:
        return None
    code, _, message = raw.partition(":")
    try:
        return int(code), message, time.time()
    except ValueError:
        return 1, raw, time.time()


def _output_of(pod: Pod) -> tuple[tuple[float, str], ...] | None:
    """What the pod's emulated process printed so far, from its annotation (None: not an emulated one)."""
    raw = (pod["metadata"].get("annotations") or {}).get(OUTPUT_ANNOTATION)
    if raw is None:
        return None
    try:
        return tuple((float(t), str(text)) for t, text in json.loads(raw))
    except (ValueError, TypeError):
        return ((time.time(), raw),)


def _lines(resp: Any) -> Iterator[dict[str, Any]]:
    """JSON watch events from a streamed HTTP response, one per line."""
    buf = b""
    for chunk in resp.stream(None, decode_content=False):
        buf += chunk
        while b"\n" in buf:
            line, buf = buf.split(b"\n", 1)
            if line.strip():
                yield json.loads(line)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m sandbox.kubelet", description=__doc__.splitlines()[0])
    parser.add_argument("--kubeconfig", required=True)
    parser.add_argument("--registry", required=True, type=Path, help="the sandbox registry directory")
    parser.add_argument("--pki", type=Path, help="the sandbox pki directory: serve container logs with it")
    parser.add_argument(
        "--ready-file", type=Path, help="touched once the node is registered and pods watched"
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(threadName)s %(levelname)s %(message)s")
    cfg = client.Configuration()
    config.load_kube_config(config_file=args.kubeconfig, client_configuration=cfg)
    cfg.connection_pool_maxsize = WORKERS + 4  # workers patch in parallel, plus the watch
    Kubelet(client.ApiClient(cfg), args.registry, args.pki).run(args.ready_file)


if __name__ == "__main__":
    main()
