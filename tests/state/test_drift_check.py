"""`rollguard drift-check` on the live sandbox: exit codes, report, events, request count, its RBAC."""

from __future__ import annotations

import base64
import json
import secrets
from pathlib import Path

import pytest
import yaml

from rollguard.core.resources import NAMESPACES, Resource
from sandbox.cluster import write_kubeconfig
from tests.helpers.cluster import (
    OLD,
    create_group,
    dc_body,
    deployment_body,
    make_group,
    resource_versions,
    rollguard,
    wait_until,
)
from tests.helpers.proxy import FaultProxy
from tests.helpers.scenarios import events, pause

CRONJOB = Path(__file__).resolve().parents[2] / "tekton" / "drift-check-cronjob.yaml"
SECRETS = Resource("", "v1", "secrets", "Secret")
ACCOUNTS = Resource("", "v1", "serviceaccounts", "ServiceAccount")
RBAC = {
    kind: Resource("rbac.authorization.k8s.io", "v1", plural, kind, namespaced=kind != "ClusterRole")
    for kind, plural in (("ClusterRole", "clusterroles"), ("RoleBinding", "rolebindings"))
}


@pytest.fixture
def extra_namespace(client):
    """A second namespace for one test, deleted after it."""
    name = f"drift-extra-{secrets.token_hex(3)}"
    client.create(NAMESPACES, {"metadata": {"name": name}})
    yield name
    client.delete(NAMESPACES, name)


def drift_check(sandbox, *args: str, tmp_path: Path, kubeconfig=None):
    return rollguard(kubeconfig or sandbox.kubeconfig, "drift-check", *args, report=tmp_path / "drift.json")


def test_exit_codes_report_and_read_only(sandbox, namespace, client, tmp_path):
    make_group(client, namespace)
    clean = drift_check(sandbox, "-n", namespace, tmp_path=tmp_path)
    assert clean.code == 0, clean.stdout + clean.stderr
    assert clean.report["status"] == "clean" and clean.report["workloads"] == 3
    assert "nothing selected by --fail-on found" in clean.stdout

    pause(client, namespace, "dc2")
    before = resource_versions(client, namespace)
    found = drift_check(sandbox, "-n", namespace, tmp_path=tmp_path)
    assert found.code == 1, found.stdout + found.stderr
    assert found.report["status"] == "findings"
    assert found.report["failing"] == [{
        "namespace": namespace, "kind": "DeploymentConfig", "name": "dc2", "group": None,
        "findings": [{"name": "paused", "reason": "DeploymentConfig is paused: no rollout happens until it is resumed"}],
    }]  # fmt: skip
    assert "dc2" in found.stdout and "dc1" not in found.stdout  # the short table: only what failed
    assert resource_versions(client, namespace) == before and not events(
        client, namespace, "RollguardDriftCheck"
    )

    # a finding outside --fail-on does not fail the check; one inside does
    assert drift_check(sandbox, "-n", namespace, "--fail-on", "failed,stuck", tmp_path=tmp_path).code == 0
    assert drift_check(sandbox, "-n", namespace, "--fail-on", "paused", tmp_path=tmp_path).code == 1


def test_emit_events_records_a_warning_on_each_damaged_workload(sandbox, namespace, client, tmp_path):
    create_group(client, namespace, [dc_body("dc1", OLD), dc_body("dc2", OLD)])
    pause(client, namespace, "dc1")
    result = drift_check(sandbox, "-n", namespace, "--emit-events", tmp_path=tmp_path)
    assert result.code == 1 and result.report["events"] == 1, result.stdout + result.stderr
    (event,) = events(client, namespace, "RollguardDriftCheck")
    assert event["type"] == "Warning" and event["involvedObject"]["name"] == "dc1"
    assert event["involvedObject"]["uid"] and "paused" in event["message"]


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--fail-on", "paused,bogus"], "unknown finding bogus"),
        (["-n", "Not_A_Namespace"], "not a valid namespace name"),
        (["-l", "app in (("], "malformed"),
    ],
)
def test_bad_input_exits_2(sandbox, args, words, tmp_path):
    result = drift_check(sandbox, *args, tmp_path=tmp_path)
    assert result.code == 2 and words in result.stderr, result.stderr
    assert result.report["status"] == "error" and words in result.report["error"]


def test_unreachable_cluster_exits_2(tmp_path):
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:9"}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
    }))  # fmt: skip
    result = rollguard(kubeconfig, "drift-check", "-n", "x", report=tmp_path / "r.json")
    assert result.code == 2 and "cannot reach the API server" in result.stderr, result.stderr


def test_one_list_per_kind_and_namespace(sandbox, namespace, extra_namespace, client, tmp_path):
    run = {"run": namespace}  # a label only this test's workloads carry: other tests' groups never match
    for ns in (namespace, extra_namespace):
        create_group(
            client,
            ns,
            [dc_body(f"dc{i}", OLD, labels=run) for i in range(3)]
            + [deployment_body("web", OLD, labels=run)],
        )
    per_ns = drift_check(sandbox, "-n", namespace, extra_namespace, tmp_path=tmp_path)
    assert per_ns.code == 0 and per_ns.report["workloads"] == 8, per_ns.stdout + per_ns.stderr
    assert per_ns.report["api_requests"] == {"list": 7 * 2}  # never per workload
    everything = drift_check(
        sandbox, "--all-namespaces", "-l", f"app=shop-api,run={namespace}", tmp_path=tmp_path
    )
    assert everything.code == 0, everything.stdout + everything.stderr
    assert sorted(everything.report["namespaces"]) == sorted([namespace, extra_namespace])
    # the workloads, journals and leases cluster-wide by label, then, the two namespaces asked at once
    # (rollguard.state.list_plan: fewer requests than one each), the RCs by DC name, the ReplicaSets and the
    # pods by the workloads' selectors: in proportion to the match, not to the cluster or to the
    # matched namespaces (other tests' namespaces hold groups too)
    assert everything.report["api_requests"] == {"list": 4 + 3}
    whole = drift_check(sandbox, "--all-namespaces", tmp_path=tmp_path)
    assert whole.report["api_requests"] == {"list": 7}  # one (paginated) list per kind


def test_the_cronjobs_rbac_is_enough_and_read_only(sandbox, namespace, extra_namespace, client, tmp_path):
    """Apply the file's ServiceAccount, ClusterRole and a RoleBinding, then run the check as that account."""
    create_group(client, namespace, [dc_body("dc1", OLD)])
    docs = {d["kind"]: d for d in yaml.safe_load_all(CRONJOB.read_text()) if d}
    role_name = f"rollguard-drift-check-{secrets.token_hex(3)}"  # cluster-scoped: unique per test
    account = {**docs["ServiceAccount"], "metadata": {"name": "rollguard-drift-check"}}
    client.create(ACCOUNTS, account, namespace=extra_namespace)
    client.create(RBAC["ClusterRole"], {**docs["ClusterRole"], "metadata": {"name": role_name}})
    binding = docs["RoleBinding"]
    binding = {**binding, "metadata": {"name": "rollguard-drift-check"},
               "roleRef": {**binding["roleRef"], "name": role_name},
               "subjects": [{**binding["subjects"][0], "namespace": extra_namespace}]}  # fmt: skip
    client.create(RBAC["RoleBinding"], binding, namespace=namespace)
    try:
        sa = wait_until(
            client, ACCOUNTS, extra_namespace, "rollguard-drift-check", lambda a: bool(a.get("secrets"))
        )
        secret = client.get(SECRETS, sa["secrets"][0]["name"], namespace=extra_namespace)
        token = base64.b64decode(secret["data"]["token"]).decode()
        kubeconfig = write_kubeconfig(tmp_path / "sa.kubeconfig", sandbox, token, "drift-check")
        with FaultProxy(sandbox.server, sandbox.ca) as proxy:  # injects nothing: records every request
            recorded = proxy.kubeconfig(kubeconfig, tmp_path / "recorded.kubeconfig")
            allowed = drift_check(sandbox, "-n", namespace, tmp_path=tmp_path, kubeconfig=recorded)
        assert allowed.code == 0, allowed.stdout + allowed.stderr
        # every read the Role's rules allow (but whether the namespace exists: cluster-scoped, a 403 there
        # reads as "it exists"), so nothing the check reports is incomplete for want of a grant
        refused = [f"{r.verb} {r.path}" for r in proxy.records
                   if r.status == 403 and (r.verb, r.resource) != ("get", "namespaces")]  # fmt: skip
        assert not refused, refused
        pause(client, namespace, "dc1")
        assert drift_check(sandbox, "-n", namespace, tmp_path=tmp_path, kubeconfig=kubeconfig).code == 1
        denied = drift_check(sandbox, "-n", extra_namespace, tmp_path=tmp_path, kubeconfig=kubeconfig)
        assert denied.code == 2 and "not allowed to list" in denied.stderr, denied.stderr
        events_denied = drift_check(
            sandbox, "-n", namespace, "--emit-events", tmp_path=tmp_path, kubeconfig=kubeconfig
        )
        assert events_denied.code == 1 and events_denied.report["events"] == 0  # read-only: no event
        assert json.dumps(events_denied.report["errors"]).count("forbidden") >= 1
    finally:
        client.delete(RBAC["ClusterRole"], role_name)
