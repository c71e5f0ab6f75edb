"""Configuration and namespace as kubectl users expect them, on the live sandbox.

Mirrors client-go's rules (staging/src/k8s.io/client-go/tools/clientcmd/loader.go: KUBECONFIG files merged,
missing ones skipped, the first to name an entry or set current-context wins; merged_client_builder.go: the
in-cluster ServiceAccount when no kubeconfig is usable, the pod's namespace when the context sets none).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import yaml

from rollguard import cli
from rollguard.cluster import kubeconfig
from sandbox.cluster import ADMIN_TOKEN
from tests.helpers.cluster import NEW, OLD, SELECTOR, create_group, dc_body, resource_versions, view


def run(*args: str, env: dict[str, str], timeout: float = 240) -> subprocess.CompletedProcess[str]:
    """The CLI with exactly this environment's KUBECONFIG (no --kubeconfig)."""
    base = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    return subprocess.run(
        [sys.executable, "-m", "rollguard.cli", *args],
        capture_output=True, text=True, timeout=timeout, env={**base, **env},
    )  # fmt: skip


def split_kubeconfig(sandbox, tmp_path: Path, namespace: str) -> str:
    """KUBECONFIG = missing : contexts file : credentials file, as people keep them.

    The second file also names a context 'work' (pointing elsewhere) and its own current-context: both must
    lose to the first file's.
    """
    contexts = tmp_path / "contexts.yaml"
    contexts.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "work",
        "contexts": [{"name": "work", "context": {"cluster": "sandbox", "user": "me", "namespace": namespace}}],
    }))  # fmt: skip
    credentials = tmp_path / "credentials.yaml"
    credentials.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "other",
        "clusters": [{"name": "sandbox", "cluster": {"server": sandbox.server, "certificate-authority": "ca.crt"}}],
        "users": [{"name": "me", "user": {"token": ADMIN_TOKEN}}],
        "contexts": [
            {"name": "work", "context": {"cluster": "sandbox", "user": "me", "namespace": "kube-system"}},
            {"name": "other", "context": {"cluster": "sandbox", "user": "me", "namespace": "kube-public"}},
        ],
    }))  # fmt: skip
    (tmp_path / "ca.crt").write_bytes(Path(sandbox.ca).read_bytes())  # relative to credentials.yaml
    return os.pathsep.join([str(tmp_path / "missing.yaml"), str(contexts), str(credentials)])


def test_kubeconfig_list_with_a_missing_file_and_a_split_context_then_rollout_without_n(
    sandbox, namespace, client, tmp_path
):
    create_group(client, namespace, [dc_body("dc1", OLD)])
    env = {"KUBECONFIG": split_kubeconfig(sandbox, tmp_path, namespace)}

    status = run("status", env=env)
    assert status.returncode == 0, status.stderr
    first = status.stdout.splitlines()[0]
    assert f"namespace {namespace} (the namespace of context 'work')" in first, first
    assert "dc1" in status.stdout

    report = tmp_path / "report.json"
    result = run("rollout", "-l", SELECTOR, "--image", f"dc/dc1={NEW}", "--report", str(report), env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.splitlines()[0].startswith(f"rollguard rollout: namespace {namespace} ")
    data = json.loads(report.read_text())
    assert data["namespace"] == namespace and "context 'work'" in data["namespace_from"]
    assert view(client, namespace, "DeploymentConfig", "dc1").images == {"app": NEW}

    # --context picks the second file's other context, whose namespace (kube-public) has no group
    other = run("status", "--context", "other", env=env)
    assert (
        other.returncode == 0 and "namespace kube-public (the namespace of context 'other')" in other.stdout
    )


def test_repairs_take_the_context_namespace_and_name_it(sandbox, namespace, client, tmp_path):
    create_group(client, namespace, [dc_body("dc1", OLD)])
    env = {"KUBECONFIG": split_kubeconfig(sandbox, tmp_path, namespace)}
    before = resource_versions(client, namespace)
    result = run("redeploy", "dc/dc1", "--dry-run", env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.splitlines()[0].startswith(f"rollguard redeploy: namespace {namespace} ")
    assert f"{namespace}/dc/dc1: redeploy" in result.stdout
    assert resource_versions(client, namespace) == before


def test_no_usable_kubeconfig_is_refused_with_the_fix(sandbox, tmp_path):
    result = run("rollout", "-l", SELECTOR, "--image", f"dc/dc1={NEW}",
                 env={"KUBECONFIG": str(tmp_path / "a") + os.pathsep + str(tmp_path / "b")})  # fmt: skip
    assert result.returncode == 2
    assert "no kubeconfig found" in result.stderr and "oc login" in result.stderr
    assert "Traceback" not in result.stderr


def test_in_a_pod_the_serviceaccount_and_the_pods_namespace(
    sandbox, namespace, client, tmp_path, monkeypatch, capsys
):
    """No kubeconfig, KUBERNETES_SERVICE_HOST/PORT and a mounted token: what a Tekton step without the
    kubeconfig workspace gets."""
    create_group(client, namespace, [dc_body("dc1", OLD)])
    sa = tmp_path / "serviceaccount"
    sa.mkdir()
    (sa / "token").write_text(ADMIN_TOKEN)
    (sa / "ca.crt").write_bytes(Path(sandbox.ca).read_bytes())
    (sa / "namespace").write_text(namespace)
    host, port = sandbox.server.removeprefix("https://").rsplit(":", 1)
    monkeypatch.setattr(kubeconfig, "SERVICEACCOUNT_DIR", str(sa))
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "none"))
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", host)
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", port)
    monkeypatch.delenv("POD_NAMESPACE", raising=False)
    assert cli.main(["status"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0] == (
        f"rollguard status: namespace {namespace} (the pod's namespace), the pod's ServiceAccount"
    )
    assert "dc1" in out
