"""The TUI's one door to the cluster: connects, reads, watches, checks permissions and acts.

Every call the TUI makes on a cluster (through a `rollguard.cluster.api.Api`: the real `Client`, or a test
double) and every read of the kubeconfig is in this package, so that the rest of the TUI is pure or Textual.
One module per concern, each adding its methods to `Backend` (layers from the bottom up, none imports
one above it): `core` (the state, the kubeconfig and the connection), `live` (the read, the live caches
and re-judging what changed), `pod_logs` (the pods and logs `l` shows), `details` (one row's detail, YAML
and diff), `browse` (the pods and events pages), `actions` (access reviews, repair plans and their
execution).
Every method may block on the network: the app and its screens call them from thread workers only.
Views are built by `rollguard.tui.data` (pure) from what this module read.
"""

from __future__ import annotations

from rollguard.tui.backend.actions import Actions
from rollguard.tui.backend.browse import Browse
from rollguard.tui.backend.core import (
    ClientFactory,
    Options,
    default_factory,
    default_namespace,
    kubeconfig_contexts,
)
from rollguard.tui.backend.details import Details
from rollguard.tui.backend.pod_logs import PodLogs

__all__ = [
    "Backend",
    "ClientFactory",
    "Options",
    "default_factory",
    "default_namespace",
    "kubeconfig_contexts",
]


class Backend(Details, PodLogs, Browse, Actions):
    """One cluster connection, the namespaces in view, and their live caches: every concern's methods on
    the one state `Core` holds."""
