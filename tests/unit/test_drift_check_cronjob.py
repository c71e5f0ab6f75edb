"""tekton/drift-check-cronjob.yaml, validated structurally (the sandbox's API server has no batch/v1 CronJob).

Every field is checked against the Kubernetes models of the official client (unknown or misspelt keys,
wrong types, missing required fields), the command against the real CLI parser, and the RBAC against
what `rollguard.state.inventory` actually lists.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any

import kubernetes.client as k8s
import pytest
import yaml

from rollguard.cli import build_parser
from rollguard.state.inventory import LISTS

FILE = Path(__file__).resolve().parents[2] / "tekton" / "drift-check-cronjob.yaml"
MODELS = {
    "ServiceAccount": "V1ServiceAccount",
    "ClusterRole": "V1ClusterRole",
    "RoleBinding": "V1RoleBinding",
    "CronJob": "V1CronJob",
}
PRIMITIVES = {"str": str, "int": int, "bool": bool, "object": object, "float": (int, float)}


def docs() -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(FILE.read_text()) if d]


def of(kind: str) -> list[dict[str, Any]]:
    return [d for d in docs() if d["kind"] == kind]


def check_model(value: Any, type_name: str, path: str) -> None:
    """Fail on a key the model does not have, a value of the wrong type, or a missing required field."""
    if type_name.startswith("list["):
        assert isinstance(value, list), f"{path}: expected a list"
        for i, item in enumerate(value):
            check_model(item, type_name[5:-1], f"{path}[{i}]")
        return
    if type_name.startswith("dict("):
        assert isinstance(value, dict), f"{path}: expected a map"
        inner = type_name[type_name.index(",") + 1 : -1].strip()
        for key, item in value.items():
            check_model(item, inner, f"{path}.{key}")
        return
    if type_name in PRIMITIVES:
        assert isinstance(value, PRIMITIVES[type_name]), f"{path}: expected {type_name}, got {value!r}"
        return
    model = getattr(k8s, type_name)
    assert isinstance(value, dict), f"{path}: expected a {type_name} object"
    by_json = {json: attr for attr, json in model.attribute_map.items()}
    for key, item in value.items():
        assert key in by_json, f"{path}: {type_name} has no field {key!r}"
        check_model(item, model.openapi_types[by_json[key]], f"{path}.{key}")
    try:  # the model's own validation: required fields, allowed values
        model(**{by_json[k]: v for k, v in value.items()})
    except ValueError as exc:
        raise AssertionError(f"{path}: {exc}") from None


@pytest.mark.parametrize("doc", docs(), ids=lambda d: f"{d['kind']}/{d['metadata'].get('namespace', '')}")
def test_every_document_matches_its_kubernetes_model(doc: dict[str, Any]) -> None:
    assert doc["kind"] in MODELS, f"unexpected kind {doc['kind']}"
    check_model(doc, MODELS[doc["kind"]], doc["kind"])


def test_cronjob_schedule_and_policies() -> None:
    (cron,) = of("CronJob")
    assert cron["apiVersion"] == "batch/v1"
    spec = cron["spec"]
    fields = spec["schedule"].split()
    assert len(fields) == 5 and all(re.fullmatch(r"[\d*/,-]+", f) for f in fields)
    assert "02:30" in cron["metadata"]["annotations"]["description"]  # the schedule is documented
    assert spec["concurrencyPolicy"] == "Forbid"
    assert spec["successfulJobsHistoryLimit"] >= 1 and spec["failedJobsHistoryLimit"] >= 1
    job = spec["jobTemplate"]["spec"]
    assert job["backoffLimit"] == 0  # exit 1 is a finding, not a flake
    assert job["template"]["spec"]["restartPolicy"] == "Never"


def cron_argv() -> list[str]:
    (cron,) = of("CronJob")
    (container,) = cron["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"]
    script = " ".join(container["args"])
    line = next(x for x in script.splitlines() if x.strip().startswith("rollguard "))
    return shlex.split(line)[1:]


def test_command_parses_with_the_real_cli_and_is_read_only() -> None:
    args = build_parser().parse_args(cron_argv())
    assert args.command == "drift-check" and not args.emit_events
    assert args.namespace == ["example-dev", "example-test"]
    assert args.report and args.report.startswith("/reports/")
    (cron,) = of("CronJob")
    pod = cron["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    mounts = {m["mountPath"] for m in pod["containers"][0]["volumeMounts"]}
    assert "/reports" in mounts and "/tmp" in mounts  # read-only root filesystem: writable places only


def test_rbac_lists_exactly_what_drift_check_reads_and_nothing_else() -> None:
    (account,) = of("ServiceAccount")
    (role,) = of("ClusterRole")
    granted = {
        (g, r): set(rule["verbs"])
        for rule in role["rules"]
        for g in rule["apiGroups"]
        for r in rule["resources"]
    }
    needed = {(res.group, res.plural) for res, _, _ in LISTS.values()}
    assert set(granted) == needed
    assert all(verbs == {"list"} for verbs in granted.values())
    assert not any("secrets" in r or "*" in r for _, r in granted)
    (cron,) = of("CronJob")
    assert (
        cron["spec"]["jobTemplate"]["spec"]["template"]["spec"]["serviceAccountName"]
        == account["metadata"]["name"]
    )
    bound = {b["metadata"]["namespace"] for b in of("RoleBinding")}
    assert bound == set(build_parser().parse_args(cron_argv()).namespace)  # one grant per checked namespace
    for binding in of("RoleBinding"):
        assert binding["roleRef"] == {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": "ClusterRole",
            "name": "rollguard-drift-check",
        }
        assert binding["subjects"] == [
            {
                "kind": "ServiceAccount",
                "name": account["metadata"]["name"],
                "namespace": account["metadata"]["namespace"],
            }
        ]
    assert not of("ClusterRoleBinding")  # no cluster-wide grant unless an operator opts in
