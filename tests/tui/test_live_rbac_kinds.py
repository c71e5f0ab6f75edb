"""Issue 19 point 6 on the live sandbox: permissions are reviewed per kind and verb, not per namespace.

A user who may update Deployments (and the journal ConfigMap, the Lease, events) but not
DeploymentConfigs gets the repair keys on the Deployment's row, none on the DC's, and the DC's key says
what is missing. The needs are rollguard.cluster.access.rollout_permissions' (what the repair preflight asks)."""

from __future__ import annotations

from rollguard.cluster.client import Client
from rollguard.tui.widgets.workload_table import WorkloadTable
from tests.helpers.cluster import OLD, create_group, dc_body, deployment_body
from tests.helpers.tui import SIZE, footer_keys, make_app, until
from tests.helpers.tui_live import BINDINGS, READ, ROLES, grant


async def test_a_user_who_may_update_deployments_only(sandbox, namespace, client):
    create_group(client, namespace, [dc_body("dc1", OLD), deployment_body("web", OLD)])
    grant(client, namespace, "alice", READ)
    rules = [
        {"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["update", "patch"]},
        {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "create", "update"]},
        {
            "apiGroups": ["coordination.k8s.io"],
            "resources": ["leases"],
            "verbs": ["get", "create", "update", "delete"],
        },
        {"apiGroups": [""], "resources": ["events"], "verbs": ["create"]},
    ]
    client.create(ROLES, {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
                          "metadata": {"name": "alice-write"}, "rules": rules}, namespace=namespace)  # fmt: skip
    client.create(BINDINGS, {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": "alice-write"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "alice-write"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "alice"}],
    }, namespace=namespace)  # fmt: skip
    alice = Client.connect(kubeconfig=str(sandbox.user_kubeconfig("alice", namespace)))
    app = make_app(alice, namespace=namespace, live=True)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await until(pilot, lambda: app.permissions_known and app.inventory and len(app.inventory.rows) == 2,
                    timeout=30, what="the workloads and permissions")  # fmt: skip
        table = app.screen.query_one(WorkloadTable)
        keys: dict[str, set[str]] = {}
        for i, line in enumerate(table.lines):
            table.move_cursor(row=i)
            await pilot.pause()
            if line.row is not None:
                keys[line.row.name] = footer_keys(app)
        assert "r" in keys["web"], keys
        assert "r" not in keys["dc1"], keys
        dc_row = next(i for i, ln in enumerate(table.lines) if ln.row is not None and ln.row.name == "dc1")
        table.move_cursor(row=dc_row)
        await pilot.pause()
        why = app.screen.why_not("redeploy", "selection")
        assert f"update on deploymentconfigs.apps.openshift.io in {namespace}" in why, why
