"""Start, stop and inspect a local sandbox cluster, by PID.

A sandbox lives in one directory (default `.sandbox/default`) and owns four ports: the API server's
PORT, etcd's PORT+10000 (client) and PORT+10001 (peer), and the controller manager's PORT+4000.
`up` starts etcd, kube-apiserver, kube-controller-manager, the stand-in kubelet and the OpenShift
emulation, each in its own process group, and records their PIDs in DIR/<name>.pid; `down` ends exactly
those process groups. Logs go to DIR/<name>.log.

Tokens for extra users (`TOKEN,USER,UID[,GROUPS]` in DIR/pki/tokens.csv) are read by the API server at
start only: pass them to `up(extra_tokens=...)`, then `Sandbox.user_kubeconfig(user)` gives a kubeconfig.
"""

from __future__ import annotations

import contextlib
import csv
import fcntl
import importlib.util
import io
import json
import os
import random
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import yaml

from sandbox import pki, procs, registry

DEFAULT_DIR = ".sandbox/default"
DEFAULT_PORT = 6443
ADMIN_TOKEN = "admin-token"
# Stop order: clients first, etcd last.
COMPONENTS = ("openshift", "kubelet", "kcm", "apiserver", "etcd")
READY_TIMEOUT = 90.0
_PACKAGE_DIR = Path(__file__).resolve().parent


class SandboxError(RuntimeError):
    """A sandbox could not be started (port taken, a component died, ...)."""


class PortInUse(SandboxError):
    """A port the sandbox needs is taken."""


def cache_dir() -> Path:
    return Path(os.environ.get("ROLLGUARD_CACHE") or Path.home() / ".cache" / "rollguard")


def bin_dir() -> Path:
    return cache_dir() / "k8s" / "bin"


def ports_of(port: int) -> dict[str, int]:
    """Every port a sandbox on API server port `port` listens on."""
    return {
        "kube-apiserver": port,
        "etcd client": port + 10000,
        "etcd peer": port + 10001,
        "kcm": port + 4000,
    }


@dataclass(frozen=True)
class Sandbox:
    """A sandbox directory and the API server port it runs on."""

    dir: Path
    port: int

    @property
    def kubeconfig(self) -> Path:
        return self.dir / "kubeconfig"

    @property
    def registry_dir(self) -> Path:
        return self.dir / "registry"

    @property
    def ca(self) -> Path:
        return self.dir / "pki" / "ca.crt"

    @property
    def server(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    def pin(self, ref: str) -> str:
        """Pin a tagged image reference by digest in this sandbox's registry."""
        return registry.pin(self.registry_dir, ref)

    def user_kubeconfig(self, user: str, namespace: str = "default") -> Path:
        """Write (and return) DIR/kubeconfig-<user> for a token user given to `up(extra_tokens=...)`."""
        for row in _read_tokens(self.dir):
            if row[1] == user:
                return write_kubeconfig(self.dir / f"kubeconfig-{user}", self, row[0], user, namespace)
        raise KeyError(f"no token for user {user!r} in {self.dir / 'pki' / 'tokens.csv'}")


def load(dir: Path | str = DEFAULT_DIR) -> Sandbox:
    """The sandbox recorded in `dir` by a previous `up` (it may have stopped since)."""
    d = Path(dir).resolve()
    state = json.loads((d / "sandbox.json").read_text())
    return Sandbox(d, int(state["port"]))


def free_port(lo: int = 7000, hi: int = 20000) -> int:
    """A port P such that every port a sandbox on P needs is free now."""
    for _ in range(500):
        p = random.randrange(lo, hi)
        if not _taken_ports(p):
            return p
    raise SandboxError(f"no free sandbox port found in [{lo}, {hi})")


def up(
    dir: Path | str = DEFAULT_DIR,
    port: int = DEFAULT_PORT,
    *,
    extra_tokens: Iterable[Sequence[str]] = (),
    openshift: bool = True,
    apiserver_args: Sequence[str] = (),
    log: Callable[[str], None] = lambda _msg: None,
) -> Sandbox:
    """Start a sandbox in `dir` on `port` and return when every component is ready.

    `extra_tokens`: (token, user, uid[, group, ...]) rows for token users. `openshift=False` (or a
    missing `sandbox.openshift` module) leaves the OpenShift emulation out. On failure everything
    started so far is stopped again and SandboxError is raised. `apiserver_args`: extra kube-apiserver
    flags (the big-cluster benchmark turns its watch cache off).
    """
    d = Path(dir).resolve()
    sb = Sandbox(d, port)
    if (d / "sandbox.json").exists():
        if all(alive for _n, _pid, alive in status(d)):
            if load(d).port != port:
                raise SandboxError(f"a sandbox is already running in {d} on port {load(d).port}")
            log(f"sandbox already running in {d}")
            return sb
        down(d)  # leftovers of a sandbox that half-died
    taken = _taken_ports(port)
    if taken:
        raise PortInUse(
            "port(s) already in use on 127.0.0.1: "
            + ", ".join(f"{p} ({what})" for what, p in taken.items())
            + "; pick another API server port with --port"
        )
    ensure_built(log)
    d.mkdir(parents=True, exist_ok=True)
    pki.ensure(d / "pki", log)
    _write_tokens(d, extra_tokens)
    write_kubeconfig(sb.kubeconfig, sb, ADMIN_TOKEN, "admin")
    sb.registry_dir.mkdir(exist_ok=True)
    shutil.rmtree(d / "etcd-data", ignore_errors=True)
    for f in ("kubelet.ready", "openshift.ready"):
        (d / f).unlink(missing_ok=True)
    if openshift and importlib.util.find_spec("sandbox.openshift.__main__") is None:
        log("warning: sandbox.openshift is not there yet; starting without the OpenShift emulation")
        openshift = False
    components = [c for c in COMPONENTS if openshift or c != "openshift"]
    (d / "sandbox.json").write_text(json.dumps({"port": port, "components": components, "pids": {}}))
    try:
        _start_all(sb, openshift, log, apiserver_args)
    except BaseException:
        down(d)
        raise
    return sb


def down(
    dir: Path | str = DEFAULT_DIR,
    log: Callable[[str], None] = lambda _msg: None,
    *,
    only: Iterable[str] | None = None,
) -> None:
    """End the process groups `up` recorded in `dir` and wait for them; safe to call again.

    ``only``: just these components (e.g. the controllers, leaving etcd and the API server up); the
    sandbox stays recorded, and a later `down` stops the rest.
    """
    d = Path(dir).resolve()
    groups = {name: pid for name, pid in _recorded(d).items() if _ours(d, name, pid)}
    if only is not None:
        wanted = set(only)
        groups = {name: pid for name, pid in groups.items() if name in wanted}
    for name, pid in groups.items():
        log(f"stopping {name} (pid {pid})")
        procs.signal_group(pid, signal.SIGTERM)
    deadline = time.monotonic() + 10
    for pid in groups.values():
        procs.wait_exit(pid, deadline)
    for pid in groups.values():
        if procs.group_members(pid):  # what ignored SIGTERM, or stragglers left after their leader exited
            procs.signal_group(pid, signal.SIGKILL)
            procs.wait_exit(pid, time.monotonic() + 5)
        deadline = time.monotonic() + 5
        while procs.group_members(pid) and time.monotonic() < deadline:
            time.sleep(0.02)  # members of a group are not our children: nothing to wait on but to look
    for name in COMPONENTS if only is None else groups:
        (d / f"{name}.pid").unlink(missing_ok=True)
        (d / f"{name}.ready").unlink(missing_ok=True)
    if only is None:
        shutil.rmtree(d / "etcd-data", ignore_errors=True)


def status(dir: Path | str = DEFAULT_DIR) -> list[tuple[str, int | None, bool]]:
    """(component, pid, alive) for every component `up` started in `dir`."""
    d = Path(dir).resolve()
    try:
        started = json.loads((d / "sandbox.json").read_text()).get("components", list(COMPONENTS))
    except FileNotFoundError:
        started = list(COMPONENTS)
    pids = _recorded(d)
    rows: list[tuple[str, int | None, bool]] = []
    for name in reversed(COMPONENTS):
        if name in started:
            pid = pids.get(name)
            rows.append((name, pid, pid is not None and procs.alive(pid) and _same_process(d, name, pid)))
    return rows


def ensure_built(log: Callable[[str], None] = lambda _msg: None) -> Path:
    """Build the control plane binaries unless they are there; one build at a time per cache."""
    b = bin_dir()
    names = ("etcd", "kube-apiserver", "kube-controller-manager")
    if all(os.access(b / n, os.X_OK) for n in names):
        return b
    cache_dir().mkdir(parents=True, exist_ok=True)
    with open(cache_dir() / "build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not all(os.access(b / n, os.X_OK) for n in names):
            log("building the control plane (once, about 5 minutes)...")
            env = {**os.environ, "ROLLGUARD_CACHE": str(cache_dir())}
            script = _PACKAGE_DIR / "scripts" / "build-control-plane.sh"
            subprocess.run(["bash", str(script)], check=True, env=env)
    return b


def write_kubeconfig(path: Path, sb: Sandbox, token: str, user: str, namespace: str = "default") -> Path:
    """A kubeconfig for `user` (authenticated by `token`) on sandbox `sb`, with absolute paths."""
    cfg = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {"name": "sandbox", "cluster": {"server": sb.server, "certificate-authority": str(sb.ca)}}
        ],
        "users": [{"name": user, "user": {"token": token}}],
        "contexts": [{"name": user, "context": {"cluster": "sandbox", "user": user, "namespace": namespace}}],
        "current-context": user,
    }
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(yaml.safe_dump(cfg, sort_keys=False))
    os.replace(tmp, path)
    return path


# -- starting -------------------------------------------------------------------------------------------


def _start_all(
    sb: Sandbox, openshift: bool, log: Callable[[str], None], apiserver_args: Sequence[str] = ()
) -> None:
    d, port, b, p = sb.dir, sb.port, bin_dir(), sb.dir / "pki"
    etcd_client, etcd_peer = f"http://127.0.0.1:{port + 10000}", f"http://127.0.0.1:{port + 10001}"
    t0 = time.monotonic()
    _spawn(d, "etcd", [
        str(b / "etcd"), "--name", "sandbox", "--data-dir", str(d / "etcd-data"),
        "--listen-client-urls", etcd_client, "--advertise-client-urls", etcd_client,
        "--listen-peer-urls", etcd_peer, "--initial-advertise-peer-urls", etcd_peer,
        "--initial-cluster", f"sandbox={etcd_peer}", "--listen-metrics-urls", "",
    ])  # fmt: skip
    _spawn(d, "apiserver", [
        str(b / "kube-apiserver"), f"--etcd-servers={etcd_client}", "--bind-address=127.0.0.1",
        "--advertise-address=127.0.0.1", f"--secure-port={port}", "--insecure-port=0",
        f"--tls-cert-file={p}/apiserver.crt", f"--tls-private-key-file={p}/apiserver.key",
        f"--client-ca-file={p}/ca.crt", f"--token-auth-file={p}/tokens.csv", "--authorization-mode=RBAC",
        "--service-account-issuer=https://kubernetes.default.svc", f"--service-account-key-file={p}/sa.pub",
        f"--service-account-signing-key-file={p}/sa.key", "--service-cluster-ip-range=10.0.0.0/24",
        "--enable-priority-and-fairness=false", "--endpoint-reconciler-type=none",
        "--max-requests-inflight=1000", "--max-mutating-requests-inflight=500",
        # front proxy identity, so that an aggregated API server can authenticate the requests it gets
        f"--requestheader-client-ca-file={p}/front-proxy-ca.crt",
        "--requestheader-allowed-names=front-proxy-client",
        "--requestheader-username-headers=X-Remote-User", "--requestheader-group-headers=X-Remote-Group",
        "--requestheader-extra-headers-prefix=X-Remote-Extra-",
        f"--proxy-client-cert-file={p}/front-proxy-client.crt",
        f"--proxy-client-key-file={p}/front-proxy-client.key",
        # pods/log (and exec, port-forward) go to the node's kubelet: reached at its InternalIP, on the
        # port its Node status names, authenticated by this client cert, its serving cert checked
        "--kubelet-preferred-address-types=InternalIP",
        f"--kubelet-client-certificate={p}/apiserver-kubelet-client.crt",
        f"--kubelet-client-key={p}/apiserver-kubelet-client.key",
        f"--kubelet-certificate-authority={p}/ca.crt", *apiserver_args,
    ])  # fmt: skip
    _wait("kube-apiserver /readyz", sb, lambda: _https_ok(f"{sb.server}/readyz", p / "ca.crt", ADMIN_TOKEN))
    log(f"kube-apiserver ready ({time.monotonic() - t0:.1f}s)")
    _spawn(d, "kcm", [
        str(b / "kube-controller-manager"), f"--kubeconfig={sb.kubeconfig}", "--leader-elect=false",
        "--controllers=*,-nodelifecycle,-nodeipam,-cloud-node-lifecycle,-service,-route,-attachdetach,"
        "-persistentvolume-binder,-pv-protection,-pvc-protection,-persistentvolume-expander,-ttl,"
        "-bootstrapsigner,-tokencleaner",
        f"--service-account-private-key-file={p}/sa.key", f"--root-ca-file={p}/ca.crt",
        "--use-service-account-credentials=false", "--kube-api-qps=200", "--kube-api-burst=400",
        "--concurrent-deployment-syncs=10", "--concurrent-replicaset-syncs=10",
        "--bind-address=127.0.0.1", f"--secure-port={port + 4000}", "--port=0",
    ])  # fmt: skip
    common = ["--kubeconfig", str(sb.kubeconfig), "--registry", str(sb.registry_dir)]
    kubelet_ready = ["--ready-file", str(d / "kubelet.ready"), "--pki", str(p)]
    _spawn(d, "kubelet", [sys.executable, "-m", "sandbox.kubelet", *common, *kubelet_ready])
    if openshift:
        _spawn(d, "openshift", [
            sys.executable, "-m", "sandbox.openshift", *common, "--ready-file", str(d / "openshift.ready"),
        ])  # fmt: skip
    kcm_url = f"https://127.0.0.1:{port + 4000}/healthz"
    _wait("kube-controller-manager /healthz", sb, lambda: _https_ok(kcm_url, None, None))
    _wait("kubelet", sb, (d / "kubelet.ready").exists)
    if openshift:
        _wait("OpenShift emulation", sb, (d / "openshift.ready").exists)
    log(f"all components ready ({time.monotonic() - t0:.1f}s)")


def _spawn(d: Path, name: str, argv: list[str]) -> None:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    # the children run `-m sandbox.*`: make this package importable wherever the caller runs from
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(_PACKAGE_DIR.parent), env.get("PYTHONPATH")]))
    pid = procs.spawn(argv, d / f"{name}.log", env)
    (d / f"{name}.pid").write_text(f"{pid}\n")
    state = json.loads((d / "sandbox.json").read_text())
    state["pids"][name] = {"pid": pid, "start": procs.start_ticks(pid)}
    (d / "sandbox.json").write_text(json.dumps(state))


def _wait(what: str, sb: Sandbox, ready: Callable[[], bool]) -> None:
    """Poll `ready` (nothing to subscribe to for an HTTP endpoint or a file) and fail fast on a dead child."""
    deadline = time.monotonic() + READY_TIMEOUT
    while not ready():
        for name, pid in _recorded(sb.dir).items():
            if not procs.alive(pid):
                tail = _tail(sb.dir / f"{name}.log")
                raise SandboxError(f"{name} exited while waiting for {what}; {name}.log ends:\n{tail}")
        if time.monotonic() > deadline:
            raise SandboxError(f"timed out after {READY_TIMEOUT:.0f}s waiting for {what} (logs in {sb.dir})")
        time.sleep(0.05)


def _https_ok(url: str, ca: Path | None, token: str | None) -> bool:
    ctx = ssl.create_default_context(cafile=str(ca) if ca else None)
    if ca is None:  # the controller manager serves a self-signed cert made at its start
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    req = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"} if token else {})
    try:
        with urllib.request.urlopen(req, context=ctx, timeout=2) as resp:
            return bool(resp.status == 200)
    except OSError:
        return False


def _taken_ports(port: int) -> dict[str, int]:
    taken = {}
    for what, p in ports_of(port).items():
        if not 0 < p < 65536:
            taken[what] = p
            continue
        with socket.socket() as s:
            # same as the Go servers, so a port in TIME_WAIT does not count as taken
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                s.bind(("127.0.0.1", p))
            except OSError:
                taken[what] = p
    return taken


# -- tokens ---------------------------------------------------------------------------------------------


def _read_tokens(d: Path) -> list[list[str]]:
    try:
        return [row for row in csv.reader((d / "pki" / "tokens.csv").read_text().splitlines()) if row]
    except FileNotFoundError:
        return []


def _write_tokens(d: Path, extra: Iterable[Sequence[str]]) -> None:
    rows = {r[0]: r for r in _read_tokens(d)}
    rows[ADMIN_TOKEN] = [ADMIN_TOKEN, "admin", "admin", "system:masters"]
    for token, user, uid, *groups in extra:
        rows[token] = [token, user, uid, ",".join(groups)] if groups else [token, user, uid]
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows(rows.values())
    (d / "pki" / "tokens.csv").write_text(out.getvalue())


# -- processes ------------------------------------------------------------------------------------------


def _recorded(d: Path) -> dict[str, int]:
    pids = {}
    for name in COMPONENTS:
        with contextlib.suppress(FileNotFoundError, ValueError):
            pids[name] = int((d / f"{name}.pid").read_text().strip())
    return pids


def _same_process(d: Path, name: str, pid: int) -> bool:
    """False when `pid` has been reused by another process since `up` recorded it."""
    try:
        recorded = json.loads((d / "sandbox.json").read_text())["pids"][name]["start"]
    except (OSError, KeyError, ValueError):
        return True  # no record to compare with: trust the pid file
    return recorded is None or recorded == procs.start_ticks(pid)


def _ours(d: Path, name: str, pid: int) -> bool:
    """Whether process group `pid` is still the one `up` started as `name` (PIDs get reused)."""
    if procs.start_ticks(pid) is None:
        return True  # leader gone: a group with its id can only hold the leader's own leftovers
    return _same_process(d, name, pid)


def _tail(path: Path, lines: int = 15) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"
