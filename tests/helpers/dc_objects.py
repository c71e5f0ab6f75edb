"""Real-shaped DC, RC and deployer-pod objects for the pure readiness and failure tests."""

from __future__ import annotations

import json

TEMPLATE = {
    "metadata": {"labels": {"name": "api"}},
    "spec": {"containers": [{"name": "app", "image": "x:v2"}]},
}


def dc(**status: object) -> dict:
    return {
        "metadata": {"name": "api", "namespace": "shop", "uid": "dc1", "generation": 3},
        "spec": {"replicas": 1, "template": TEMPLATE},
        "status": {"latestVersion": 2, "observedGeneration": 3, **status},
    }


def rc(phase: str, **notes: str) -> dict:
    return {
        "metadata": {
            "name": "api-2",
            "uid": "rc2",
            "ownerReferences": [{"uid": "dc1", "controller": True}],
            "annotations": {
                "openshift.io/deployment.phase": phase,
                "openshift.io/deployment-config.latest-version": "2",
                "openshift.io/encoded-deployment-config": json.dumps({"spec": {"template": TEMPLATE}}),
                "openshift.io/deployer-pod.name": "api-2-deploy",
                **notes,
            },
        },
        "status": {},
    }


def deployer_pod(status: dict) -> dict:
    return {
        "metadata": {
            "name": "api-2-deploy",
            "labels": {"openshift.io/deployer-pod-for.name": "api-2"},
            "ownerReferences": [{"uid": "rc2", "kind": "ReplicationController", "name": "api-2"}],
        },
        "status": status,
    }


FAILED_CONDITION = {
    "type": "Progressing",
    "status": "False",
    "reason": "ProgressDeadlineExceeded",
    "message": 'replication controller "api-2" has failed progressing',
}
