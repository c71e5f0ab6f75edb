"""The emulation's own tests talk to the sandbox with its plain HTTP client (`sandbox.openshift.kube`),
not with rollguard's: what they check must not depend on the engine."""

from __future__ import annotations

import pytest

from sandbox.cluster import Sandbox
from sandbox.openshift.kube import Kube


@pytest.fixture(scope="module")
def kube(sandbox: Sandbox) -> Kube:
    return Kube(str(sandbox.kubeconfig))
