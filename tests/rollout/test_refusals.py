"""Bad input and unmet preconditions: exit 2, a message naming the problem and its fix, no change."""

from __future__ import annotations

import datetime as dt

import pytest

from rollguard.cluster.client import Client
from rollguard.core.resources import DEPLOYMENT_CONFIGS, IMAGE_STREAMS, LEASES, NAMESPACES
from tests.helpers.cluster import (
    IMAGE,
    NEW,
    OLD,
    SELECTOR,
    create_group,
    dc_body,
    deployment_body,
    resource_versions,
    rollguard,
)

DIGEST = f"{IMAGE}@sha256:" + "ab" * 32


@pytest.fixture
def group(client, namespace) -> tuple[Client, str]:
    create_group(
        client,
        namespace,
        [
            dc_body("dc1", OLD),
            dc_body("dc2", OLD, containers=2),
            deployment_body("web", OLD),
        ],
    )
    return client, namespace


CASES = [
    # (id, extra args, words the message must contain)
    ("malformed-selector", ["-l", "app=(shop", "--image", f"dc/dc1={NEW}"], ["malformed"]),
    ("selector-matches-nothing", ["-l", "app=nothing-here", "--image", f"dc/dc1={NEW}"], ["matches no"]),
    ("unknown-target", ["--image", f"dc/nope={NEW}"], ["dc/nope is not in the rollout group", "dc/dc1"]),
    ("unknown-kind", ["--image", f"statefulset/dc1={NEW}"], ["unknown kind"]),
    ("ambiguous-target", ["--image", f"dc/dc2={NEW}"], ["ambiguous", "dc/dc2/CONTAINER"]),
    ("unknown-container", ["--image", f"dc/dc1/nope={NEW}"], ["no container 'nope'"]),
    ("malformed-reference", ["--image", "dc/dc1=Registry.local/UPPER:v 2"], ["malformed", "sha256"]),
    ("digest-too-short", ["--image", "dc/dc1=registry.local/x@sha256:abc"], ["malformed"]),
    ("reference-without-tag", ["--image", "deployment/web=nginx"], ["has no tag or digest", "@sha256:"]),
    ("no-images", [], ["nothing to roll out"]),
    ("bad-timeout", ["--image", f"dc/dc1={NEW}", "--timeout", "ten minutes"], ["not a duration"]),
    ("timeout-out-of-range", ["--image", f"dc/dc1={NEW}", "--timeout", "90h"], ["out of range"]),
    ("promote-without-tag", ["--promote-from", "shop-cd"], ["go together"]),
    ("promote-from-missing-namespace", ["--promote-from", "no-such-ns", "--tag", "abc"], ["does not exist"]),
    ("unknown-namespace", ["-n", "no-such-namespace", "--image", f"dc/dc1={NEW}"], ["does not exist"]),
]


@pytest.mark.parametrize(("args", "words"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_input_is_refused_without_change(sandbox, group, args, words):
    client, namespace = group
    before = resource_versions(client, namespace)
    base = ["rollout", "-n", namespace, "-l", SELECTOR]
    # later -n/-l win in argparse, so a case can override them
    result = rollguard(sandbox.kubeconfig, *base, *args)
    assert result.code == 2, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    message = result.stderr.strip().splitlines()[-1]
    assert message.startswith("rollguard: refused: ")
    for word in words:
        assert word in message, message
    assert resource_versions(client, namespace) == before


def test_promoted_tag_missing_is_refused(sandbox, group):
    client, namespace = group
    cd = f"{namespace[:50]}-cd"
    client.create(NAMESPACES, {"metadata": {"name": cd}})
    try:
        client.create(
            IMAGE_STREAMS,
            {"apiVersion": "image.openshift.io/v1", "kind": "ImageStream", "metadata": {"name": "api"}},
            namespace=namespace,
        )
        client.create(
            IMAGE_STREAMS,
            {"apiVersion": "image.openshift.io/v1", "kind": "ImageStream", "metadata": {"name": "api"}},
            namespace=cd,
        )
        client.patch(
            DEPLOYMENT_CONFIGS,
            "dc1",
            {
                "spec": {
                    "triggers": [
                        {"type": "ConfigChange"},
                        {
                            "type": "ImageChange",
                            "imageChangeParams": {
                                "automatic": True,
                                "containerNames": ["app"],
                                "from": {"kind": "ImageStreamTag", "name": "api:latest"},
                            },
                        },
                    ]
                }
            },
            namespace=namespace,
        )
        before = resource_versions(client, namespace)
        result = rollguard(
            sandbox.kubeconfig,
            "rollout",
            "-n",
            namespace,
            "-l",
            SELECTOR,
            "--promote-from",
            cd,
            "--tag",
            "0123abc",
        )
        assert result.code == 2, result.stdout + result.stderr
        assert f"tag '0123abc' does not exist in ImageStream {cd}/api" in result.stderr
        assert resource_versions(client, namespace) == before
    finally:
        client.delete(NAMESPACES, cd)


def test_lock_held_by_another_run_is_refused(sandbox, group):
    client, namespace = group
    from rollguard.cluster.journal import group_name
    from rollguard.plan.inputs import parse_selector

    stamp = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    client.create(
        LEASES,
        {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": group_name(parse_selector(SELECTOR))},
            "spec": {
                "holderIdentity": "pipeline-42 run x",
                "leaseDurationSeconds": 300,
                "acquireTime": stamp,
                "renewTime": stamp,
            },
        },
        namespace=namespace,
    )
    before = resource_versions(client, namespace)
    result = rollguard(
        sandbox.kubeconfig, "rollout", "-n", namespace, "-l", SELECTOR, "--image", f"dc/dc1={NEW}"
    )
    assert result.code == 2
    assert "locked by pipeline-42 run x" in result.stderr
    assert resource_versions(client, namespace) == before


def test_missing_permission_is_refused(sandbox, group):
    """A user who may read but not update deploymentconfigs: preflight names the verb and resource."""
    client, namespace = group
    from rollguard.core.resources import Resource

    roles = Resource("rbac.authorization.k8s.io", "v1", "roles", "Role")
    bindings = Resource("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding")
    client.create(
        roles,
        {
            "metadata": {"name": "reader"},
            "rules": [
                {
                    "apiGroups": ["apps.openshift.io", "apps"],
                    "resources": ["deploymentconfigs", "deployments"],
                    "verbs": ["get", "list", "watch"],
                },
            ],
        },
        namespace=namespace,
    )
    client.create(
        bindings,
        {
            "metadata": {"name": "reader"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "reader"},
            "subjects": [{"kind": "User", "name": "alice", "apiGroup": "rbac.authorization.k8s.io"}],
        },
        namespace=namespace,
    )
    before = resource_versions(client, namespace)
    result = rollguard(
        sandbox.user_kubeconfig("alice"),
        "rollout",
        "-n",
        namespace,
        "-l",
        SELECTOR,
        "--image",
        f"dc/dc1={NEW}",
    )
    assert result.code == 2, result.stdout + result.stderr
    assert "not allowed to update deployments.apps in namespace" in result.stderr
    assert "grant the Role verb 'update'" in result.stderr
    assert resource_versions(client, namespace) == before


def test_unreachable_cluster_is_refused(tmp_path):
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: 'https://127.0.0.1:9'}}]\n"
        "users: [{name: u, user: {token: t}}]\ncontexts: [{name: c, context: {cluster: c, user: u}}]\n"
        "current-context: c\n"
    )
    result = rollguard(kubeconfig, "rollout", "-n", "x", "-l", SELECTOR, "--image", f"dc/dc1={NEW}")
    assert result.code == 2
    assert "cannot reach the API server" in result.stderr and "Traceback" not in result.stderr


def test_missing_kubeconfig_is_refused(tmp_path):
    result = rollguard(tmp_path / "nope", "rollout", "-n", "x", "-l", SELECTOR, "--image", f"dc/dc1={NEW}")
    assert result.code == 2
    assert "does not exist" in result.stderr and "--kubeconfig" in result.stderr
