"""`python -m sandbox up|down|status`: lifecycle by PID, ports, two sandboxes at once, token users."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from kubernetes import client, config
from kubernetes.client.rest import ApiException

from sandbox import cluster
from sandbox.cluster import Sandbox

pytestmark = pytest.mark.cluster


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sandbox", *args], capture_output=True, text=True, timeout=120
    )


def gone(pid: int) -> bool:
    """No such process any more (a zombie counts as gone: it has exited)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except FileNotFoundError:
        return True


def test_status_of_the_running_sandbox(sandbox: Sandbox) -> None:
    res = cli("status", "--dir", str(sandbox.dir))
    assert res.returncode == 0, res.stdout + res.stderr
    for name in ("etcd", "apiserver", "kcm", "kubelet"):
        assert f"{name}" in res.stdout and "stopped" not in res.stdout


def test_status_of_a_directory_without_sandbox(tmp_path: Path) -> None:
    assert cli("status", "--dir", str(tmp_path)).returncode == 1


def test_up_refuses_a_taken_port(sandbox: Sandbox, tmp_path: Path) -> None:
    with pytest.raises(cluster.PortInUse, match=f"{sandbox.port} \\(kube-apiserver\\)"):
        cluster.up(tmp_path / "other", sandbox.port)
    assert not list((tmp_path / "other").glob("*.pid"))


def test_second_sandbox_runs_beside_the_first_and_down_leaves_nothing(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    d, port = tmp_path / "second", cluster.free_port()
    pids: dict[str, int | None] = {}
    res = cli("up", "--dir", str(d), "--port", str(port))
    try:
        assert res.returncode == 0, res.stderr
        assert res.stdout.splitlines()[-1] == f"export KUBECONFIG={d.resolve()}/kubeconfig"
        pids = {name: pid for name, pid, _alive in cluster.status(d)}
        assert all(pids.values()) and cli("status", "--dir", str(d)).returncode == 0

        # two independent clusters: a namespace made in the second is not in the first
        second = client.CoreV1Api(config.new_client_from_config(config_file=str(d / "kubeconfig")))
        first = client.CoreV1Api(config.new_client_from_config(config_file=str(sandbox.kubeconfig)))
        second.create_namespace({"metadata": {"name": "only-in-second"}})
        with pytest.raises(ApiException) as err:
            first.read_namespace("only-in-second")
        assert err.value.status == 404
        assert second.read_node("fake-node").metadata.name == "fake-node"
    finally:
        down = cli("down", "--dir", str(d))
    assert down.returncode == 0, down.stderr
    assert all(gone(pid) for pid in pids.values() if pid), pids
    assert not list(d.glob("*.pid"))
    assert cli("down", "--dir", str(d)).returncode == 0  # safe twice
    assert cli("status", "--dir", str(d)).returncode == 1
    assert cli("status", "--dir", str(sandbox.dir)).returncode == 0  # the first one is untouched


def test_token_user_kubeconfig(sandbox: Sandbox, namespace: str) -> None:
    alice = client.CoreV1Api(config.new_client_from_config(config_file=str(sandbox.user_kubeconfig("alice"))))
    with pytest.raises(ApiException) as err:
        alice.list_namespaced_pod(namespace)
    assert err.value.status == 403 and 'User "alice"' in json.loads(err.value.body)["message"]
    with pytest.raises(KeyError):
        sandbox.user_kubeconfig("mallory")
