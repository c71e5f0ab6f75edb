"""`make demo`: the main job on the local sandbox.

Brings a sandbox up, creates a three-DeploymentConfig component, then runs three guarded rollouts with
the real CLI: one that succeeds, one whose second DC crash-loops, which rollguard reverts as a group,
and one that rolls out ready but fails its HTTP check (`--verify`), reverted as a group too. The
sandbox's pods are not real processes, so nothing answers at a Service's DNS name: the demo's own
server on 127.0.0.1 stands in for the release's health endpoint, answering 500 as a broken release
would. Exits 0 when all three ended as they should. The sandbox is stopped at the end unless
ROLLGUARD_DEMO_KEEP=1 (then `python -m sandbox down --dir .sandbox/demo` stops it).
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from sandbox import cluster

DIR = Path(".sandbox/demo")
NAMESPACE = "shop"
SELECTOR = "app=shop-api"
NAMES = ("orders", "payments", "catalog")
REPO = "registry.local/shop"


def rollguard(kubeconfig: Path, *args: str) -> int:
    cmd = [sys.executable, "-m", "rollguard.cli", *args, "--kubeconfig", str(kubeconfig)]
    print(f"\n$ rollguard {' '.join(args)}", flush=True)
    return subprocess.run(cmd, check=False).returncode


def create_component(kubeconfig: Path) -> None:
    from rollguard.cluster.cache import NamespaceCache
    from rollguard.cluster.client import Client
    from rollguard.core.resources import DEPLOYMENT_CONFIGS, NAMESPACES, PODS, REPLICATION_CONTROLLERS
    from rollguard.core.structs import DC, RolloutPhase, WorkloadRef
    from rollguard.run.wait import Watched, wait_for

    client = Client.connect(kubeconfig=str(kubeconfig))
    client.create(NAMESPACES, {"metadata": {"name": NAMESPACE}})
    for name in NAMES:
        client.create(
            DEPLOYMENT_CONFIGS,
            {
                "apiVersion": "apps.openshift.io/v1",
                "kind": "DeploymentConfig",
                "metadata": {"name": name, "labels": {"app": "shop-api"}},
                "spec": {
                    "replicas": 2,
                    "selector": {"name": name},
                    "template": {
                        "metadata": {"labels": {"name": name}},
                        "spec": {"containers": [{"name": "app", "image": f"{REPO}/{name}:v1"}]},
                    },
                },
            },
            namespace=NAMESPACE,
        )
    cache = NamespaceCache(client, NAMESPACE, [DEPLOYMENT_CONFIGS, REPLICATION_CONTROLLERS, PODS])
    cache.start()
    watched = [
        Watched(
            ref=WorkloadRef(DC, n),
            expected_images={"app": f"{REPO}/{n}:v1"},
            deadline=time.monotonic() + 60,
            deadline_reason="first rollout took over 60s",
        )
        for n in NAMES
    ]
    wait_for(
        cache,
        watched,
        fail_fast=False,
        crash_restarts=0,
        stop_on_failure=True,
        cancel=threading.Event(),
        out=lambda _line: None,
    )
    cache.stop()
    failed = [w.ref.key for w in watched if w.verdict is None or w.verdict.phase is not RolloutPhase.COMPLETE]
    if failed:
        raise SystemExit(f"demo: {failed} did not roll out their first version")
    print(f"created {len(NAMES)} DeploymentConfigs of component shop-api in namespace {NAMESPACE}, all on v1")


class BrokenHealth(BaseHTTPRequestHandler):
    """The release's health endpoint as the broken v3 answers it: ready pods, 500 on every request."""

    def do_GET(self) -> None:
        body = b'{"status": "DOWN", "error": "upstream connect error"}'
        self.send_response(500)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


def verified_rollout(kubeconfig: Path) -> int:
    """v3 everywhere (every pod gets ready) with an HTTP check that the release fails: reverted."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), BrokenHealth)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/health"
    checks = DIR / "checks.yaml"
    checks.write_text(
        "checks:\n  - name: health\n    timeout: 5s\n"
        f'    http: {{url: "{url}", status: [200], successes: 3}}\n'
    )
    print(f"\n{checks}: an http check of {url} (standing in for http://orders.shop.svc:8080/health)")
    print(checks.read_text(), end="", flush=True)
    try:
        images = [arg for n in NAMES for arg in ("--image", f"dc/{n}={REPO}/{n}:v3")]
        return rollguard(
            kubeconfig, "rollout", "-n", NAMESPACE, "-l", SELECTOR, *images, "--verify", str(checks)
        )
    finally:
        server.shutdown()
        server.server_close()


def main() -> int:
    port = int(os.environ.get("ROLLGUARD_DEMO_PORT", "0")) or cluster.free_port()
    print(f"starting the sandbox in {DIR} (API server on 127.0.0.1:{port})", flush=True)
    if (DIR / "sandbox.json").exists():
        cluster.down(DIR)
    sb = cluster.up(DIR, port, log=lambda m: print(m, flush=True))
    ok = False
    try:
        create_component(sb.kubeconfig)
        good = [arg for n in NAMES for arg in ("--image", f"dc/{n}={REPO}/{n}:v2")]
        first = rollguard(sb.kubeconfig, "rollout", "-n", NAMESPACE, "-l", SELECTOR, *good)
        bad = [
            arg
            for n in NAMES
            for arg in ("--image", f"dc/{n}={REPO}/{n}:v3{'-crash' if n == 'payments' else ''}")
        ]
        second = rollguard(sb.kubeconfig, "rollout", "-n", NAMESPACE, "-l", SELECTOR, *bad)
        third = verified_rollout(sb.kubeconfig)
        from rollguard.cli import SUBCOMMANDS

        if "status" in SUBCOMMANDS:
            rollguard(sb.kubeconfig, "status", "-n", NAMESPACE)
        ok = first == 0 and second == 1 and third == 1
        print(
            f"\ndemo: first rollout exit {first} (expected 0), second exit {second} (expected 1: reverted), "
            f"third exit {third} (expected 1: ready, but failed its HTTP check, reverted)"
        )
    finally:
        if os.environ.get("ROLLGUARD_DEMO_KEEP") == "1":
            print(f"sandbox left running: export KUBECONFIG={sb.kubeconfig.resolve()}")
        else:
            cluster.down(DIR)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
