"""The one place that knows how DeploymentConfigs and Deployments differ.

`base` defines the `Kind` interface and what every kind shares (`Owners`, `images_of`, ...); one module
per kind (`deploymentconfig`, `deployment`) holds that kind's annotations, revision numbering, readiness
predicate (returning a reason), deadline and how rollguard's changes are written into it; `dc_start`
when a DC starts a rollout by itself; `dc_pods` a DC rollout's deployer and hook pods as evidence;
`triggers` parses image triggers and holds the rules that read them; `templates` compares and diffs pod
templates; `conversion` turns a DC into the Deployment that replaces it (`rollguard migrate`). It imports
only `rollguard.core`. Everything else (state model, preflights, repair planning, promotion, the run,
the TUI) asks a `Kind` and never tests which one it holds (tests/unit/test_kind_branching.py keeps it
so). A third kind is one new module and a line in `KINDS`
(docs/architecture.md, "Adding a kind").
"""

from __future__ import annotations

from rollguard.core.structs import DC, DEPLOYMENT, WorkloadRef
from rollguard.kinds.base import (
    DC_NAME_LABEL,
    DEFAULT_DEADLINE,
    ContainerNames,
    Kind,
    Owners,
    images_of,
    pods_of_revision,
)
from rollguard.kinds.deployment import DeploymentKind, deployment_progress
from rollguard.kinds.deploymentconfig import DeploymentConfigKind, dc_progress, encoded_config, rc_template
from rollguard.kinds.triggers import ImageTrigger, Streams

__all__ = [
    "DC_NAME_LABEL",
    "DEFAULT_DEADLINE",
    "KINDS",
    "TEMPLATE_NOISE_ANNOTATIONS",
    "TEMPLATE_NOISE_LABELS",
    "ContainerNames",
    "DeploymentConfigKind",
    "DeploymentKind",
    "ImageTrigger",
    "Kind",
    "Owners",
    "Streams",
    "dc_progress",
    "deployment_progress",
    "encoded_config",
    "images_of",
    "kind_of",
    "pods_of_revision",
    "rc_template",
]

KINDS: dict[str, Kind] = {DC: DeploymentConfigKind(), DEPLOYMENT: DeploymentKind()}
# What any kind's controllers write into revision templates (tui.diff drops it before comparing)
TEMPLATE_NOISE_LABELS = tuple(sorted({key for k in KINDS.values() for key in k.template_noise_labels}))
TEMPLATE_NOISE_ANNOTATIONS = tuple(
    sorted({key for k in KINDS.values() for key in k.template_noise_annotations})
)
_BY_ALIAS = {alias: k for k in KINDS.values() for alias in k.aliases}


def kind_of(ref: WorkloadRef | str) -> Kind:
    """The `Kind` for a WorkloadRef, a kind name or an alias (``dc``, ``deploy`` ...)."""
    name = ref.kind if isinstance(ref, WorkloadRef) else ref
    found = KINDS.get(name) or _BY_ALIAS.get(name.lower())
    if found is None:
        raise KeyError(name)
    return found
