"""The live TUI tests' equipment: RBAC for a test user (a Role on what rollguard reads and writes) and
the findings the app shows."""

from __future__ import annotations

from rollguard.cluster.client import Client
from rollguard.core.resources import Resource

ROLES = Resource("rbac.authorization.k8s.io", "v1", "roles", "Role")


BINDINGS = Resource("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding")


READ = ["get", "list", "watch"]


RULES = [
    ("apps.openshift.io", ["deploymentconfigs"]),
    ("apps", ["deployments", "replicasets"]),
    ("", ["replicationcontrollers", "pods", "events", "configmaps"]),
    ("coordination.k8s.io", ["leases"]),
]


def grant(client: Client, namespace: str, user: str, verbs: list[str]) -> None:
    """A Role with ``verbs`` on everything rollguard reads and writes, bound to ``user``."""
    rules = [{"apiGroups": [g], "resources": r, "verbs": verbs} for g, r in RULES]
    client.create(ROLES, {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
                          "metadata": {"name": user}, "rules": rules}, namespace=namespace)  # fmt: skip
    client.create(BINDINGS, {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": user},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": user},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}],
    }, namespace=namespace)  # fmt: skip


def findings(app) -> dict[str, set[str]]:
    return {r.name: {f.code for f in r.findings} for r in app.inventory.rows} if app.inventory else {}
