"""The `builder` and `deployer` ServiceAccounts every namespace gets on OpenShift.

Mirrors openshift-controller-manager pkg/cmd/controller/serviceaccount.go, which runs Kubernetes'
ServiceAccountsController with those managed names: on every namespace (and whenever one of them is
deleted) the account is created if missing. Deployer pods run as `deployer`; the API server's
ServiceAccount admission refuses a pod whose account does not exist yet, as on a real cluster when a DC
is created in a namespace that is seconds old.
"""

from __future__ import annotations

import logging

from sandbox.openshift.informer import Informer
from sandbox.openshift.kube import JSON, ApiError, Kube

log = logging.getLogger(__name__)
MANAGED = ("builder", "deployer")


class ServiceAccountsController:
    def __init__(self, kube: Kube) -> None:
        self.kube = kube
        self.namespaces = Informer(kube, "/api/v1/namespaces", self._on_namespace)
        self.accounts = Informer(kube, "/api/v1/serviceaccounts", self._on_account)

    def start(self) -> None:
        self.namespaces.start()
        self.accounts.start()

    def _on_namespace(self, etype: str, ns: JSON) -> None:
        if etype != "DELETED":
            self._ensure(ns["metadata"]["name"], ns)

    def _on_account(self, etype: str, sa: JSON) -> None:
        if etype == "DELETED" and sa["metadata"]["name"] in MANAGED:
            ns = self.namespaces.get("", sa["metadata"]["namespace"])
            if ns is not None:
                self._ensure(sa["metadata"]["namespace"], ns)

    def _ensure(self, namespace: str, ns: JSON) -> None:
        if ns.get("status", {}).get("phase") == "Terminating" or ns["metadata"].get("deletionTimestamp"):
            return
        for name in MANAGED:
            if self.accounts.get(namespace, name) is not None:
                continue
            try:
                created = self.kube.request(
                    "POST",
                    f"/api/v1/namespaces/{namespace}/serviceaccounts",
                    {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name}},
                )
            except ApiError as e:
                if e.status not in (403, 404, 409):  # 403: the namespace is terminating
                    log.warning("could not create service account %s/%s: %s", namespace, name, e)
                continue
            self.accounts.store(created)
