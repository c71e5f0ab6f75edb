"""The state cases (tests/cases/state/*.yaml): whole namespaces as the API lists them, loaded by kind."""

from __future__ import annotations

import datetime as dt

import yaml

from tests.helpers import CASES

FIXTURES = CASES / "state"
AFTER_RUN = dt.datetime(2024, 5, 2, 9, 5, tzinfo=dt.UTC)  # five minutes after the cases' runs
PLURAL = {
    "DeploymentConfig": "dcs",
    "Deployment": "deployments",
    "ReplicationController": "rcs",
    "ReplicaSet": "rss",
    "Pod": "pods",
    "ConfigMap": "configmaps",
    "Lease": "leases",
}


def load(name: str) -> dict[str, list[dict]]:
    lists: dict[str, list[dict]] = {p: [] for p in PLURAL.values()}
    for doc in yaml.safe_load_all((FIXTURES / name).read_text()):
        # a LIST answer carries no kind on its items: drop it, as inventory sees them
        lists[PLURAL[doc.pop("kind")]].append(doc)
    return lists
