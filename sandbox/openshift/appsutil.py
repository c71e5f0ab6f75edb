"""Names, annotations and small helpers of OpenShift's apps API (library-go `appsutil`, re-written)."""

from __future__ import annotations

import json
import math
import re
from datetime import UTC, datetime
from typing import Any

from sandbox.openshift.kube import JSON

GROUP_VERSION = "apps.openshift.io/v1"
DC_PATH = "/apis/apps.openshift.io/v1"
IS_PATH = "/apis/image.openshift.io/v1"

# annotations and labels
DC_NAME = "openshift.io/deployment-config.name"  # annotation, and label on RCs
LATEST_VERSION = "openshift.io/deployment-config.latest-version"
PHASE = "openshift.io/deployment.phase"
STATUS_REASON = "openshift.io/deployment.status-reason"
CANCELLED = "openshift.io/deployment.cancelled"
ENCODED_CONFIG = "openshift.io/encoded-deployment-config"
DEPLOYER_POD = "openshift.io/deployer-pod.name"
DEPLOYER_CREATED_AT = "openshift.io/deployer-pod.created-at"
DEPLOYER_STARTED_AT = "openshift.io/deployer-pod.started-at"
DEPLOYER_COMPLETED_AT = "openshift.io/deployer-pod.completed-at"
DESIRED_REPLICAS = "kubectl.kubernetes.io/desired-replicas"  # openshift/api apps/v1 deprecated_consts.go
DEPLOYMENT_REPLICAS = "openshift.io/deployment.replicas"
DEPLOYMENT_NAME = "openshift.io/deployment.name"  # pod annotation
DC_LABEL = "deploymentconfig"
DEPLOYMENT_LABEL = "deployment"
DC_NAME_LABEL = "deployment-config.name"
DEPLOYER_POD_FOR = "openshift.io/deployer-pod-for.name"  # label on deployer and hook pods
DEPLOYER_IMAGE = "quay.io/openshift/origin-deployer:v4.14"  # the sandbox registry runs any tag "ready"

NEW, PENDING, RUNNING, COMPLETE, FAILED = "New", "Pending", "Running", "Complete", "Failed"

# status reasons and condition reasons
# library-go pkg/apps/appsutil/const.go: the only texts OpenShift writes as a status-reason besides the
# rollout's cause ("config change", "image change", "manual change") set when the RC is made
CANCELLED_BY_NEWER = "newer deployment was found running"
CANCELLED_BY_USER = "cancelled by the user"
UNABLE_TO_CREATE_DEPLOYER = "unable to create deployer pod"
DEPLOYER_POD_GONE = "deployer pod no longer exists"
UNRELATED_POD_EXISTS = "unrelated pod with the same name as this deployment is already running"
NEW_RC_REASON = "NewReplicationControllerCreated"
RC_UPDATED_REASON = "ReplicationControllerUpdated"
NEW_RC_AVAILABLE_REASON = "NewReplicationControllerAvailable"
TIMED_OUT_REASON = "ProgressDeadlineExceeded"
CANCELLED_REASON = "RolloutCancelled"
FAILED_RC_CREATE_REASON = "ReplicationControllerCreateError"

DEFAULT_TIMEOUT = 600
DEFAULT_ACTIVE_DEADLINE = 21600


def now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def go_time(epoch: float | None = None) -> str:
    """A time (default now) as Go's time.String() prints it, the format of the deployer pod annotations."""
    t = datetime.now(UTC) if epoch is None else datetime.fromtimestamp(epoch, UTC)
    return t.strftime("%Y-%m-%d %H:%M:%S +0000 UTC")


def parse_time(s: str | None) -> float | None:
    """Seconds since the epoch of an RFC 3339 or Go time.String() timestamp (UTC), None if unparsable."""
    if not s:
        return None
    try:
        return (
            datetime.strptime(s[:19].replace("T", " "), "%Y-%m-%d %H:%M:%S").replace(tzinfo=UTC).timestamp()
        )
    except ValueError:
        return None


def annotations_of(obj: JSON) -> dict[str, str]:
    return obj.get("metadata", {}).get("annotations") or {}


def version_of(rc: JSON) -> int:
    try:
        return int(annotations_of(rc).get(LATEST_VERSION, ""))
    except ValueError:
        return -1


def phase_of(rc: JSON) -> str:
    return annotations_of(rc).get(PHASE, "")


def is_terminated(rc: JSON) -> bool:
    return phase_of(rc) in (COMPLETE, FAILED)


def is_cancelled(rc: JSON) -> bool:
    return annotations_of(rc).get(CANCELLED, "").lower() == "true"


def spec_replicas(rc: JSON) -> int:
    r = rc.get("spec", {}).get("replicas")
    return 0 if r is None else int(r)


def status_int(obj: JSON, field: str) -> int:
    return int(obj.get("status", {}).get(field) or 0)


def rc_path(rc: JSON) -> str:
    """The API path of an RC (or of any object with namespace and name in its metadata)."""
    m = rc["metadata"]
    return f"/api/v1/namespaces/{m['namespace']}/replicationcontrollers/{m['name']}"


def rc_name(dc_name: str, version: int) -> str:
    return f"{dc_name}-{version}"


def deployer_pod_name(rc: str) -> str:
    return f"{rc}-deploy"


def by_version_desc(rcs: list[JSON]) -> list[JSON]:
    return sorted(rcs, key=version_of, reverse=True)


def latest_deployment(dc: JSON, rcs: list[JSON]) -> tuple[bool, JSON | None]:
    """(latest exists, newest RC): the newest RC is the latest when its version is status.latestVersion."""
    latest = int(dc.get("status", {}).get("latestVersion") or 0)
    if latest == 0 or not rcs:
        return False, None
    newest = by_version_desc(rcs)[0]
    return version_of(newest) == latest, newest


def active_deployment(rcs: list[JSON]) -> JSON | None:
    """The newest RC in phase Complete: the one scaled to spec.replicas."""
    complete = [rc for rc in rcs if phase_of(rc) == COMPLETE and version_of(rc) > 0]
    return max(complete, key=version_of) if complete else None


def decode_config(rc: JSON) -> JSON | None:
    raw = annotations_of(rc).get(ENCODED_CONFIG)
    if not raw:
        return None
    try:
        config = json.loads(raw)
    except ValueError:
        return None
    return config if isinstance(config, dict) else None


def has_trigger(dc: JSON, kind: str) -> bool:
    return any(t.get("type") == kind for t in dc.get("spec", {}).get("triggers") or [])


def image_triggers(dc: JSON) -> list[JSON]:
    return [
        t["imageChangeParams"]
        for t in dc.get("spec", {}).get("triggers") or []
        if t.get("type") == "ImageChange" and isinstance(t.get("imageChangeParams"), dict)
    ]


def containers(dc_or_rc: JSON) -> list[JSON]:
    return ((dc_or_rc.get("spec", {}).get("template") or {}).get("spec") or {}).get("containers") or []


def _int_or_percent(value: Any, total: int, round_up: bool) -> int:
    if value is None:
        return 0
    if isinstance(value, int):
        return value
    m = re.fullmatch(r"(\d+)%", str(value).strip())
    if not m:
        try:
            return int(str(value))
        except ValueError:
            return 0
    scaled = int(m.group(1)) * total / 100
    return math.ceil(scaled) if round_up else math.floor(scaled)


def fenceposts(params: JSON, desired: int) -> tuple[int, int]:
    """(maxSurge, maxUnavailable) resolved against `desired`, as the rolling updater does."""
    surge = _int_or_percent(params.get("maxSurge"), desired, True)
    unavailable = _int_or_percent(params.get("maxUnavailable"), desired, False)
    if surge == 0 and unavailable == 0:
        unavailable = 1  # both rounded to zero: allow one, as OpenShift does
    return surge, unavailable


def max_unavailable(dc: JSON) -> int:
    strategy = dc.get("spec", {}).get("strategy") or {}
    if strategy.get("type", "Rolling") != "Rolling":
        return 0
    return fenceposts(strategy.get("rollingParams") or {}, int(dc.get("spec", {}).get("replicas") or 0))[1]


def timeout_of(config: JSON) -> int:
    """The strategy's timeoutSeconds (Recreate's or Rolling's), default 600."""
    strategy = config.get("spec", {}).get("strategy") or {}
    params = strategy.get("recreateParams" if strategy.get("type") == "Recreate" else "rollingParams") or {}
    t = params.get("timeoutSeconds")
    return int(t) if t else DEFAULT_TIMEOUT


def normalized(value: Any) -> Any:
    """`value` without null and empty members: how Go's typed round trip would see two templates."""
    if isinstance(value, dict):
        out = {k: normalized(v) for k, v in value.items()}
        return {k: v for k, v in out.items() if v not in (None, {}, [], "")}
    if isinstance(value, list):
        return [normalized(v) for v in value]
    return value
