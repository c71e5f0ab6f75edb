"""Servers the check tests start on 127.0.0.1: an HTTP endpoint (the http check's URL, a metrics
endpoint for Prometheus to scrape) and a real Prometheus server (Debian's package, installed by
sandbox/scripts/install-prometheus.sh into the rollguard cache).

Why a local server: the sandbox's pods are not real processes (the stand-in kubelet only reports their
status), so nothing answers at a Service's cluster DNS name; the test's own server stands in for the
release's endpoint, and rollguard, run here as the Tekton step would run in the cluster, asks it.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import ssl
import subprocess
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CACHE = Path(os.environ.get("ROLLGUARD_CACHE") or Path.home() / ".cache" / "rollguard")
PROMETHEUS = CACHE / "prometheus" / "bin" / "prometheus"

Answer = Callable[[str], tuple[int, bytes]]  # request path -> (status, body)


@contextlib.contextmanager
def http_server(answer: Answer, *, tls: tuple[Path, Path] | None = None) -> Iterator[str]:
    """An HTTP server on a free loopback port answering GETs with ``answer``; yields its base URL.

    ``tls``: (certificate, key) to serve HTTPS with. An answer ``(302, b"/path")`` redirects there."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            status, body = answer(self.path)
            self.send_response(status)
            if 300 <= status < 400:
                self.send_header("Location", body.decode())
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    scheme = "http"
    if tls is not None:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(str(tls[0]), str(tls[1]))
        server.socket = context.wrap_socket(server.socket, server_side=True)
        scheme = "https"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"{scheme}://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def install_prometheus() -> Path:
    """Debian's prometheus in the cache (the project's own script: instant when it is there already)."""
    if not PROMETHEUS.exists():
        subprocess.run(["bash", str(ROOT / "sandbox" / "scripts" / "install-prometheus.sh")], check=True)
    return PROMETHEUS


@contextlib.contextmanager
def prometheus(directory: Path, *, target: str, interval: str = "1s") -> Iterator[str]:
    """A real Prometheus scraping ``target`` (host:port, path /metrics) every ``interval``, on a free
    loopback port, its data in ``directory``; yields its URL once it is ready. Stopped by PID."""
    binary = install_prometheus()
    config = directory / "prometheus.yml"
    config.write_text(
        f"global: {{scrape_interval: {interval}, evaluation_interval: {interval}}}\n"
        f"scrape_configs:\n  - job_name: app\n    static_configs: [{{targets: ['{target}']}}]\n"
    )
    for _attempt in range(3):
        port = free_port()
        log = (directory / "prometheus.log").open("w")
        proc = subprocess.Popen(
            [str(binary), f"--config.file={config}", f"--storage.tsdb.path={directory / 'data'}",
             f"--web.listen-address=127.0.0.1:{port}"],
            stdout=log, stderr=subprocess.STDOUT,
        )  # fmt: skip
        url = f"http://127.0.0.1:{port}"
        try:
            if _wait_ready(url, proc):
                break
        except BaseException:
            proc.kill()
            raise
        proc.kill()
        proc.wait()
    else:
        raise AssertionError(
            f"prometheus did not start: {(directory / 'prometheus.log').read_text()[-2000:]}"
        )
    try:
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _wait_ready(url: str, proc: subprocess.Popen[bytes], timeout: float = 60) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return False  # e.g. the port was taken meanwhile: try another
        try:
            with urllib.request.urlopen(f"{url}/-/ready", timeout=2) as resp:
                if resp.status == 200:
                    return True
        except OSError:
            pass
        time.sleep(0.2)  # a process starting up: nothing to watch but its port
    return False


def query(url: str, promql: str) -> list[dict[str, object]]:
    """The result of an instant query (for the tests' own waits)."""
    with urllib.request.urlopen(
        f"{url}/api/v1/query?" + urllib.parse.urlencode({"query": promql}), timeout=5
    ) as r:
        result: list[dict[str, object]] = json.loads(r.read())["data"]["result"]
        return result


def scraped(url: str, promql: str, *, samples: int, timeout: float = 60) -> None:
    """Wait until ``promql`` (a range selector's count) has at least ``samples`` for every series."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = query(url, promql)
        if found and all(float(str(s["value"][1])) >= samples for s in found):  # type: ignore[index]
            return
        time.sleep(0.5)  # Prometheus scrapes on its own clock: nothing to watch
    raise AssertionError(f"prometheus had not scraped {samples} samples of {promql} in {timeout}s")
