"""The API resources rollguard touches, and request paths built from them (no I/O here)."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import quote


@dataclass(frozen=True)
class Resource:
    """A REST resource: where it lives in the API and what it is called."""

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool = True

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def label(self) -> str:
        """How RBAC and humans name it: ``deploymentconfigs.apps.openshift.io``."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    def path(self, *, namespace: str | None = None, name: str | None = None) -> str:
        """The request path of the collection (in ``namespace`` when namespaced), or of object ``name``."""
        base = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if self.namespaced and namespace is not None:
            base += f"/namespaces/{quote(namespace, safe='')}"
        base += f"/{self.plural}"
        if name is not None:
            base += f"/{quote(name, safe='')}"
        return base


DEPLOYMENT_CONFIGS = Resource("apps.openshift.io", "v1", "deploymentconfigs", "DeploymentConfig")
DEPLOYMENTS = Resource("apps", "v1", "deployments", "Deployment")
REPLICATION_CONTROLLERS = Resource("", "v1", "replicationcontrollers", "ReplicationController")
REPLICA_SETS = Resource("apps", "v1", "replicasets", "ReplicaSet")
PODS = Resource("", "v1", "pods", "Pod")
EVENTS = Resource("", "v1", "events", "Event")
JOBS = Resource("batch", "v1", "jobs", "Job")  # the job checks of --verify
# The subresource as RBAC names it: a SelfSubjectAccessReview for this resource string matches the same
# rules as resource pods + subresource log (a job check reads its pods' logs into the report).
POD_LOGS = Resource("", "v1", "pods/log", "Pod")
CONFIG_MAPS = Resource("", "v1", "configmaps", "ConfigMap")
LEASES = Resource("coordination.k8s.io", "v1", "leases", "Lease")
HORIZONTAL_POD_AUTOSCALERS = Resource(
    "autoscaling", "v1", "horizontalpodautoscalers", "HorizontalPodAutoscaler"
)
IMAGE_STREAMS = Resource("image.openshift.io", "v1", "imagestreams", "ImageStream")
NAMESPACES = Resource("", "v1", "namespaces", "Namespace", namespaced=False)
SELF_SUBJECT_ACCESS_REVIEWS = Resource(
    "authorization.k8s.io", "v1", "selfsubjectaccessreviews", "SelfSubjectAccessReview", namespaced=False
)
SELF_SUBJECT_RULES_REVIEWS = Resource(
    "authorization.k8s.io", "v1", "selfsubjectrulesreviews", "SelfSubjectRulesReview", namespaced=False
)
