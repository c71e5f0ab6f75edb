"""The decisions about manifests given with ``rollout -f`` (pure, no I/O).

`rollguard.plan.rollout_read.read_rollout` reads, besides the group, what the manifests need: whether a
workload they name that is not in the group exists (outside the selector) or not (to be created), and
which workloads a HorizontalPodAutoscaler targets; that is a `ManifestRead`. Here:

- `manifest_refusal`: other kinds without ``--skip-other-kinds``, a manifest whose labels do not match
  the selector, a workload that exists outside the selector (exit 2, naming each);
- `attach_manifests`: each group member given by manifest gets it (with its HPA rule), and each absent
  one becomes a workload to create;
- `settle_dry_run`: the server's answers to the preflight's dry runs (``dryRun=All``) refuse with the
  server's own message, and say exactly what each write changes (server defaults applied), so a
  manifest that changes nothing is not rolled out.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from rollguard.core.errors import ApiError, Conflict, RefusedError
from rollguard.core.selectors import matches
from rollguard.core.structs import Obj, WorkloadRef
from rollguard.kinds import KINDS
from rollguard.plan import merge
from rollguard.plan.manifests import ManifestSet

if TYPE_CHECKING:  # the plans are rollout_decide's, which decides with this module
    from rollguard.plan.rollout_decide import WorkloadPlan

SECRET = "Secret"


@dataclass(frozen=True)
class ManifestRead:
    """The manifests and what the cluster said about them (pure data)."""

    manifests: ManifestSet
    skip_other_kinds: bool = False
    outside: Mapping[WorkloadRef, Mapping[str, str]] = field(default_factory=dict)  # exists: its labels
    absent: frozenset[WorkloadRef] = frozenset()  # not in the namespace: created by the run
    hpa_targets: frozenset[WorkloadRef] = frozenset()
    # fields a manifest gives that its type does not have, by the server's published schema
    unknown: Mapping[WorkloadRef, list[str]] = field(default_factory=dict)

    @property
    def skipped(self) -> list[str]:
        """Other kinds given and left alone (``--skip-other-kinds``), ``Kind/name`` each."""
        return self.manifests.other_names if self.skip_other_kinds else []


def hpa_targets(hpas: Iterable[Obj]) -> frozenset[WorkloadRef]:
    """The workloads HorizontalPodAutoscalers scale (their ``scaleTargetRef``), of the kinds we know."""
    found = set()
    for hpa in hpas:
        target = (hpa.get("spec") or {}).get("scaleTargetRef") or {}
        kind = KINDS.get(str(target.get("kind") or ""))
        if kind is not None and target.get("name"):
            found.add(WorkloadRef(kind.kind, str(target["name"])))
    return frozenset(found)


def manifest_refusal(read: ManifestRead, *, selector: str) -> RefusedError | None:
    """The first fact about the manifests that refuses the run, or None."""
    others = read.manifests.others
    if others and not read.skip_other_kinds:
        secrets = [n for n, _ in others if n.startswith(f"{SECRET}/")]
        listing = ", ".join(f"{n} ({origin})" for n, origin in others)
        return RefusedError(
            f"-f gives objects rollguard does not roll out: {listing}",
            fix="apply them yourself (Secrets never go through rollguard) or pass --skip-other-kinds"
            + (f"; {', '.join(secrets)} would not be touched either way" if secrets else ""),
        )
    for ref, manifest in read.manifests.workloads.items():
        if read.unknown.get(ref):  # kubectl apply refuses them; the server would drop them unsaid
            fields = read.unknown[ref]
            return RefusedError(
                f"{ref.key} ({manifest.origin}) has unknown field{'s' if len(fields) > 1 else ''} "
                + ", ".join(fields),
                fix="fix the spelling or remove the field (kubectl explain shows a type's fields), and run again",
            )
        if not matches(selector, manifest.labels):
            return RefusedError(
                f"{ref.key} ({manifest.origin}) does not match the selector {selector!r}: "
                f"its labels are {manifest.labels or 'none'}",
                fix="give only the group's workloads, or fix the manifest's labels or --selector",
            )
        if ref in read.outside:
            return RefusedError(
                f"{ref.key} exists but is not in the group: its live labels {dict(read.outside[ref])} "
                f"do not match {selector!r}",
                fix=f"label it into the group (kubectl label {ref.key} ...) or leave it out of -f",
            )
    return None


def attach_manifests(workloads: Iterable[WorkloadPlan], read: ManifestRead) -> None:
    """Give each group member the input names its manifest (and the HPA rule for its replicas)."""
    given = read.manifests.workloads
    for plan in workloads:
        manifest = given.get(plan.snapshot.ref)
        if manifest is None:
            continue
        keep = plan.snapshot.ref in read.hpa_targets
        plan.manifest, plan.keep_replicas = manifest.body, keep
        # Before the server's defaults are known (the dry run settles it): every field given that differs.
        plan.write_fields = merge.changed_fields(plan.snapshot.raw, plan.write_body(plan.snapshot.raw))
        if keep and "replicas" in (manifest.body.get("spec") or {}):
            plan.notes.append("a HorizontalPodAutoscaler scales it: its live replicas stay")


def to_create(read: ManifestRead, *, namespace: str) -> list[tuple[WorkloadRef, Obj, str]]:
    """The workloads given that do not exist yet: (ref, the body that creates it, its origin), sorted."""
    out = []
    for ref in sorted(read.absent):
        manifest = read.manifests.workloads[ref]
        body = merge.created(manifest.body)
        body["metadata"]["namespace"] = namespace
        out.append((ref, body, manifest.origin))
    return out


def settle_dry_run(plans: Iterable[WorkloadPlan], answers: Mapping[str, Obj | ApiError]) -> None:
    """Apply the server's dry-run answers: a rejection refuses the run with the server's message; an
    accepted write of a manifest says what it changes (with the server's defaults) and what a revert
    puts back."""
    for plan in plans:
        answer = answers.get(plan.key)
        if answer is None:
            continue
        if isinstance(answer, Conflict):
            raise RefusedError(
                f"{plan.key} changed while preflight checked it ({answer})", fix="run again"
            ) from answer
        if isinstance(answer, ApiError):
            raise RefusedError(
                f"{plan.key}: the API server rejects the change (dry run, nothing changed): {answer}",
                fix="fix the manifest (or the --image) it names and run again",
            ) from answer
        plan.server_view = answer
        if plan.manifest is not None and not plan.create:
            plan.write_fields = merge.changed_fields(plan.snapshot.raw, answer)
            plan.restore = merge.restore_record(plan.snapshot.raw, answer)
            if plan.write_fields:
                plan.notes.append("manifest changes " + ", ".join(plan.write_fields))
