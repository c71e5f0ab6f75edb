"""Entry point: `python -m sandbox.openshift --kubeconfig K --registry R --ready-file F`.

Applies the CRDs, starts the admission webhook (API-server defaults), the ImageStream and
DeploymentConfig controllers, then touches the ready file and runs until SIGTERM/SIGINT.
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
import time
from pathlib import Path

from sandbox.openshift import crds, podtemplate
from sandbox.openshift.annotationtriggers import AnnotationTriggerController
from sandbox.openshift.deploymentconfigs import DeploymentConfigController
from sandbox.openshift.imagestreams import ImageStreamController
from sandbox.openshift.kube import ApiError, Kube
from sandbox.openshift.serviceaccounts import ServiceAccountsController
from sandbox.openshift.webhook import Webhook

log = logging.getLogger("sandbox.openshift")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m sandbox.openshift", description=__doc__.splitlines()[0])
    p.add_argument("--kubeconfig", required=True, help="kubeconfig of the sandbox's API server")
    p.add_argument(
        "--registry", required=True, type=Path, help="the sandbox registry directory (digest pins)"
    )
    p.add_argument("--ready-file", type=Path, help="touched once everything runs")
    p.add_argument("--workers", type=int, default=8, help="DeploymentConfig worker threads (default 8)")
    p.add_argument("--no-webhook", action="store_true", help="default objects from the controller only")
    p.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    return p.parse_args(argv)


def _stats(
    kube: Kube, images: ImageStreamController, dcs: DeploymentConfigController, stop: threading.Event
) -> None:
    """Every 10 s while busy: queue depths and API request rate, to see where time goes under load."""
    last_n, last_s = 0, 0.0
    while not stop.wait(10):
        n, s = kube.requests, kube.request_seconds
        if n != last_n or len(dcs.queue) or len(images.queue):
            avg = (s - last_s) / (n - last_n) * 1000 if n != last_n else 0.0
            log.info(
                "queues: deploymentconfigs %d, imagestreams %d; API requests %.1f/s, %.0f ms average",
                len(dcs.queue),
                len(images.queue),
                (n - last_n) / 10,
                avg,
            )
        last_n, last_s = n, s


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(
        stream=sys.stderr,
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    logging.getLogger("urllib3").setLevel(logging.WARNING)
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())

    t0 = time.monotonic()
    kube = Kube(args.kubeconfig)
    crds.apply(kube)
    webhook = None
    if not args.no_webhook:

        def stream(namespace: str, name: str) -> dict | None:
            try:
                return kube.get(f"/apis/image.openshift.io/v1/namespaces/{namespace}/imagestreams/{name}")
            except ApiError as e:
                if e.status == 404:
                    return None
                raise

        webhook = Webhook(lookup=stream, template_check=lambda dc: podtemplate.check(kube, dc))
        webhook.start()
        webhook.register(kube)
    images = ImageStreamController(kube, args.registry)
    dcs = DeploymentConfigController(kube, images, workers=args.workers)
    ServiceAccountsController(kube).start()
    images.start()
    dcs.start()
    AnnotationTriggerController(kube, images).start()
    if args.ready_file:
        args.ready_file.parent.mkdir(parents=True, exist_ok=True)
        args.ready_file.touch()
    log.info(
        "OpenShift emulation ready in %.1fs (webhook %s)",
        time.monotonic() - t0,
        f"on 127.0.0.1:{webhook.port}" if webhook else "off",
    )
    threading.Thread(target=_stats, args=(kube, images, dcs, stop), name="stats", daemon=True).start()
    stop.wait()
    log.info("stopping")
    if webhook:
        webhook.close()
    return 0
