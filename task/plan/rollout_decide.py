"""The decisions of a rollout's preflight (pure, no I/O): what was read in, a `Plan` or a refusal out.

`rollguard.plan.rollout_read.read_rollout` gathers everything into a `RolloutRead` (the group's
workloads and revisions, the access answers, the lease, the journal, the promotion's source streams);
`read_refusal` names the first of those facts that refuses the run, and `decide_rollout` resolves the
targets and promotions, carries a dead run's verified states forward, and applies the paused
(`--on-paused`) and never-completed (`--allow-never-completed`) rules. Kind-specific rules (triggers,
baselines) come from the workload's `Kind`. Every refusal and trigger rule is tested from the YAML cases
of tests/cases/planning/rollout.yaml (tests/unit/test_rollout_decide.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from rollguard.cluster.access import Answer, first_gap
from rollguard.cluster.cache import Listed
from rollguard.cluster.journal import Journal
from rollguard.cluster.lock import LEASE_SECONDS, LeaseView, held
from rollguard.core.errors import Forbidden, NoSuchNamespace, RefusedError
from rollguard.core.resources import Resource
from rollguard.core.structs import ImageTarget, Obj, Snapshot, VerifiedState, WorkloadRef
from rollguard.kinds import KINDS, ContainerNames, Kind, kind_of, triggers
from rollguard.plan import merge
from rollguard.plan.checks import Check
from rollguard.plan.manifest_decide import ManifestRead, attach_manifests, manifest_refusal, to_create
from rollguard.plan.manifests import ManifestSet
from rollguard.plan.members import judge_members, never_completed


@dataclass(frozen=True)
class Promotion:
    """Copy ``source_namespace/stream@image`` into ``stream:tag`` of the group's namespace."""

    stream: str
    tag: str
    source_namespace: str
    source_image: str  # sha256:...
    source_reference: str


@dataclass
class RolloutRequest:
    """A rollout's arguments, checked by the CLI: the group, what to change and how to run."""

    namespace: str
    selector: str
    targets: list[ImageTarget] = field(default_factory=list)
    promote_from: str | None = None
    tag: str | None = None
    timeout: int = 600
    on_paused: str = "take-over"
    fail_fast: bool = True
    crash_restarts: int = 2
    allow_never_completed: bool = False
    allow_failing: bool = False  # a member this run does not change may be failing (named, not verified)
    manifests: ManifestSet | None = None  # -f: the workloads' desired states
    skip_other_kinds: bool = False
    lease_seconds: int = LEASE_SECONDS
    checks: list[Check] = field(default_factory=list)  # --verify FILE: run after the group rolled out
    bake: int = 0  # --bake DURATION: seconds the group is watched after it is ready (0: none)


@dataclass
class WorkloadPlan:
    """What the run will do to one workload."""

    snapshot: Snapshot
    baseline: VerifiedState
    revisions: list[Obj]
    target_images: dict[str, str] = field(default_factory=dict)
    promoted: dict[str, Promotion] = field(default_factory=dict)  # container -> promotion
    notes: list[str] = field(default_factory=list)
    manifest: Obj | None = None  # the desired state given with -f, merged onto the live object
    keep_replicas: bool = False  # a HorizontalPodAutoscaler scales it: the manifest's replicas ignored
    write_fields: list[str] = field(default_factory=list)  # what the manifest's write changes (dry run)
    restore: Obj = field(default_factory=dict)  # what a revert puts back besides the template
    create: bool = False  # given by manifest, not in the cluster: the run creates it
    remove_on_revert: bool = False  # created by this run (or a dead one): a revert deletes it
    server_view: Obj | None = None  # the write as the server would store it (the preflight's dry run)
    # A member the run does not write (rollguard.plan.members): a killed run's unverified change it
    # finishes (watched, reverted on failure), one it watches and leaves as it is, or one accepted unhealthy.
    finish: bool = False
    observe: bool = False
    accepted: str = ""  # why it is accepted unhealthy (--allow-failing, --allow-never-completed)
    revert_changes: list[str] = field(default_factory=list)  # every field a revert changed (old -> new)
    # the manifest the group's last verified run applied (the journal's record): what it set and this
    # run's manifest omits is removed, as kubectl apply removes it
    last_applied: Obj | None = None
    replicas_meant: int | None = None  # the count the run's write left (`Kind.scale_note`), once written

    @property
    def kind(self) -> Kind:
        return kind_of(self.snapshot.ref)

    @property
    def key(self) -> str:
        return self.snapshot.ref.key

    @property
    def needs_change(self) -> bool:
        live = self.snapshot.images
        images_change = any(live.get(c) != img for c, img in self.target_images.items())
        manifest_change = bool(self.write_fields) or self.create
        return images_change or bool(self.promoted) or self.snapshot.paused or manifest_change

    def write_body(self, obj: Obj, *, images: dict[str, str] | None = None) -> Obj:
        """The run's one write to this workload over ``obj`` (its current version; for a workload to
        create, its manifest): the manifest merged on, then the images set (``--image`` and promotions
        win over the manifest), resumed."""
        body = obj
        if self.manifest is not None and not self.create:
            body = merge.merged(
                obj, self.manifest, kind=self.kind, keep_replicas=self.keep_replicas, last=self.last_applied
            )
        tags = {c: f"{p.stream}:{p.tag}" for c, p in self.promoted.items()}
        return self.kind.with_images(
            body, self.target_images if images is None else images, trigger_tags=tags
        )

    def preview_images(self) -> dict[str, str]:
        """The images the write sets as known in preflight (a promotion's source reference for now)."""
        return {**self.target_images, **{c: p.source_reference for c, p in self.promoted.items()}}


@dataclass
class Plan:
    namespace: str
    selector: str
    workloads: list[WorkloadPlan]
    journal: Journal | None
    carried_forward: bool = False
    skipped: list[str] = field(default_factory=list)  # other kinds given with --skip-other-kinds
    # the namespace's lists preflight read, by resource: the run's live cache watches on from them
    listed: dict[Resource, Listed] = field(default_factory=dict)

    @property
    def kinds(self) -> set[str]:
        return {w.snapshot.ref.kind for w in self.workloads}


@dataclass(frozen=True)
class Found:
    """One workload as read: its kind, the object, and its revision objects (newest first)."""

    kind: Kind
    obj: Obj
    revisions: list[Obj] = field(default_factory=list)

    @property
    def ref(self) -> WorkloadRef:
        return self.kind.ref(self.obj)


@dataclass(frozen=True)
class GroupListing:
    """A LIST of every kind by a selector: the workloads, or the kind we may not list."""

    workloads: list[Found]
    forbidden: tuple[Resource, Forbidden] | None = None


def namespace_refusal(namespace: str) -> RefusedError:
    return NoSuchNamespace(namespace)


def listing_refusal(listing: GroupListing, *, namespace: str, selector: str) -> RefusedError | None:
    """Why a listed group cannot be rolled out or repaired: a kind we may not list, or no workload."""
    if listing.forbidden is not None:
        resource, exc = listing.forbidden
        refusal = RefusedError(
            f"not allowed to list {resource.label} in namespace {namespace!r}",
            fix="grant the Role verb 'list' on that resource (see tekton/rbac.yaml)",
        )
        refusal.__cause__ = exc
        return refusal
    if not listing.workloads:
        return RefusedError(
            f"selector {selector!r} matches no DeploymentConfig or Deployment in namespace {namespace!r}",
            fix="check the labels (kubectl get dc,deploy -n NS --show-labels) or the namespace",
        )
    return None


@dataclass(frozen=True)
class RolloutRead:
    """Everything a rollout's preflight decides on, as read (pure data; None: not read yet)."""

    namespace: str
    selector: str
    namespace_found: bool = True
    group: GroupListing | None = None
    promote_from: str | None = None
    promote_namespace_found: bool = True
    access: list[Answer] | None = None
    lease_name: str = ""
    holder: str = ""  # this run's lease holder identity
    lease: LeaseView | None = None  # None: no lease
    journal: Journal | None = None
    source_streams: dict[str, Obj | None] = field(default_factory=dict)  # promote-from stream -> object
    manifests: ManifestRead | None = None  # -f, with what the cluster said about its workloads
    listed: dict[Resource, Listed] = field(default_factory=dict)  # the lists read whole (`Plan.listed`)


def read_refusal(read: RolloutRead) -> RefusedError | None:
    """The first fact of ``read`` that refuses the run (in the order the facts are read), or None."""
    if not read.namespace_found:
        return namespace_refusal(read.namespace)
    if read.group is not None:
        refusal = listing_refusal(read.group, namespace=read.namespace, selector=read.selector)
        if refusal is not None:
            return refusal
    if read.promote_from and not read.promote_namespace_found:
        return RefusedError(
            f"--promote-from namespace {read.promote_from!r} does not exist",
            fix="name the namespace the images were built in (e.g. PROJECT-cd)",
        )
    if read.manifests is not None and (refusal := manifest_refusal(read.manifests, selector=read.selector)):
        return refusal
    if read.access is not None and (gap := first_gap(read.access)) is not None:
        return gap
    return held(read.lease, lease=read.lease_name, holder=read.holder)


def container_stream(kind: Kind, obj: Obj, container: str, namespace: str) -> str | None:
    """The ImageStream of ``namespace`` a container's image comes from, if any (its trigger's, else its
    integrated-registry reference's)."""
    return triggers.stream_of(
        kind.image_triggers(obj),
        container=container,
        image=kind.snapshot(obj).images.get(container, ""),
        namespace=namespace,
    )


def resolve_targets(workloads: list[WorkloadPlan], targets: list[ImageTarget]) -> None:
    """Attach each --image to its workload and container; refuse unknown or ambiguous ones."""
    by_ref = {w.snapshot.ref: w for w in workloads}
    names = ", ".join(w.key for w in workloads)
    seen: dict[tuple[WorkloadRef, str], str] = {}
    for target in targets:
        plan = by_ref.get(target.ref)
        if plan is None:
            raise RefusedError(
                f"target {target.ref.key} is not in the rollout group",
                fix=f"the selector matches: {names}; fix the target name or the selector",
            )
        found = ContainerNames.of(plan.snapshot.template)
        container = found.find(target.container)
        if container is None and target.container is None:
            raise RefusedError(
                f"target {target.ref.key} is ambiguous: it has containers {found.listing()}",
                fix=f"name the container: --image {target.ref.key}/CONTAINER=REF",
            )
        if container is None:
            raise RefusedError(
                f"target {target.ref.key} has no container {target.container!r}",
                fix=f"its containers are: {found.listing()}",
            )
        if (target.ref, container) in seen and seen[(target.ref, container)] != target.image:
            raise RefusedError(
                f"target {target.ref.key}/{container} is given two images",
                fix="pass one --image per container",
            )
        seen[(target.ref, container)] = target.image
        plan.target_images[container] = target.image


def resolve_promotions(
    workloads: list[WorkloadPlan],
    *,
    namespace: str,
    source: str,
    tag: str,
    streams: dict[str, Obj | None],
) -> None:
    """For each container fed by an ImageStream of ``namespace``, find ``source/stream:tag`` in ``streams``."""
    found_any = False
    for plan in workloads:
        for container in plan.snapshot.images:
            if container in plan.target_images:
                continue  # an explicit --image wins
            stream = container_stream(plan.kind, plan.snapshot.raw, container, namespace)
            if stream is None:
                continue
            source_stream = streams.get(stream)
            if source_stream is None:
                raise RefusedError(
                    f"{plan.key}/{container} uses ImageStream {stream!r}, but {source}/{stream} does not exist",
                    fix=f"build and push {stream} into namespace {source} first, or fix --promote-from",
                )
            item = _tag_item(source_stream, tag)
            if item is None:
                raise RefusedError(
                    f"tag {tag!r} does not exist in ImageStream {source}/{stream}",
                    fix=f"check --tag (oc get istag -n {source} | grep {stream})",
                )
            if not item.get("image"):
                # a `reference: true` tag is never imported: its status item names a pull spec and no
                # image (openshift-apiserver pkg/image/apiserver/registry/imagestream/strategy.go
                # tagsChanged), so there is no image to copy and pin
                raise RefusedError(
                    f"tag {tag!r} of ImageStream {source}/{stream} is a reference tag (reference: true) "
                    f"that holds no imported image to promote (it only names {item.get('dockerImageReference') or '?'})",
                    fix=f"import the image into {source}/{stream}:{tag} (oc tag --source=docker IMAGE "
                    f"{source}/{stream}:{tag}, without --reference), or use --image with its digest",
                )
            plan.promoted[container] = Promotion(
                stream=stream,
                tag=tag,
                source_namespace=source,
                source_image=item["image"],
                source_reference=item["dockerImageReference"],
            )
            found_any = True
    if not found_any:
        raise RefusedError(
            f"--promote-from {source}: no container of the group takes its image from an ImageStream of {namespace}",
            fix="use --image TARGET=REF for these workloads instead",
        )


def _tag_item(stream: Obj, tag: str) -> Obj | None:
    for entry in stream.get("status", {}).get("tags", []) or []:
        if entry.get("tag") == tag and entry.get("items"):
            item: Obj = entry["items"][0]
            return item
    return None


def change_body(plan: WorkloadPlan) -> Obj:
    """The run's one change to the workload as planned (over the object preflight read)."""
    images = {**plan.target_images, **{c: p.source_image for c, p in plan.promoted.items()}}
    return plan.write_body(plan.snapshot.raw, images=images)


def trigger_effects(plan: WorkloadPlan) -> list[str]:
    """What the run's one change will do to the workload's image triggers, said before it is done."""
    reasons = {c: "it would overwrite the image this run sets" for c in plan.target_images}
    return plan.kind.trigger_changes(plan.snapshot.raw, change_body(plan), reasons=reasons)


def _paused_note(plan: WorkloadPlan) -> str:
    pending = {c: i for c, i in plan.snapshot.images.items() if plan.baseline.images.get(c) != i}
    note = "was paused: taken over and resumed by this run"
    if pending:
        note += "; pending un-rolled images included: " + ", ".join(f"{c}={i}" for c, i in pending.items())
    return note


def decide_rollout(read: RolloutRead, request: RolloutRequest) -> Plan:
    """The plan of ``request`` from what was read (pure); raises RefusedError naming the problem and fix.

    In order: the read's refusals; a `WorkloadPlan` per member (`_read_workloads`); the ``--image``
    targets and promotions; the ``-f`` manifests (`_attach_manifests`); the group-wide refusals (nothing
    to do, paused with ``--on-paused refuse``); each workload's own rules (`_decide_workload`); the
    members this run does not change (`rollguard.plan.members.judge_members`).
    """
    refusal = read_refusal(read)
    if refusal is not None:
        raise refusal
    journal = read.journal
    carried = journal is not None and not journal.final
    workloads, verified_by_journal = _read_workloads(read, carried=carried)
    resolve_targets(workloads, request.targets)
    if request.promote_from and request.tag:
        resolve_promotions(
            workloads,
            namespace=read.namespace,
            source=request.promote_from,
            tag=request.tag,
            streams=read.source_streams,
        )
    # created by a dead run of this group (from -f): a revert deletes it, whether or not -f is given now
    created = {k for k, e in journal.workloads.items() if e.created} if carried and journal else set()
    for plan in workloads:
        plan.remove_on_revert = plan.key in created
    if read.manifests is not None:
        workloads += _attach_manifests(workloads, read.manifests, journal=journal, namespace=read.namespace)
    if not request.targets and not request.promote_from and read.manifests is None:
        raise RefusedError(
            "nothing to roll out", fix="pass -f MANIFESTS, --image TARGET=REF or --promote-from NS --tag TAG"
        )
    paused = [plan.key for plan in workloads if plan.snapshot.paused]
    if paused and request.on_paused == "refuse":  # every one named, so that one resume fixes them all
        raise RefusedError(
            f"{', '.join(paused)} {'is' if len(paused) == 1 else 'are'} paused (left so by an earlier tool?) "
            "and --on-paused is refuse",
            fix=f"resume {'it' if len(paused) == 1 else 'them'} first (rollguard resume -n {read.namespace} "
            f"{' '.join(paused)}) or pass --on-paused take-over",
        )
    for plan in workloads:
        _decide_workload(
            plan,
            verified_by_journal=plan.key in verified_by_journal,
            allow_never_completed=request.allow_never_completed,
        )
    judge_members(
        workloads,
        journal=journal,
        carried=carried,
        namespace=read.namespace,
        selector=read.selector,
        allow_never_completed=request.allow_never_completed,
        allow_failing=request.allow_failing,
    )
    return Plan(
        namespace=read.namespace,
        selector=read.selector,
        workloads=workloads,
        journal=journal,
        carried_forward=carried,
        skipped=read.manifests.skipped if read.manifests is not None else [],
    )


def _read_workloads(read: RolloutRead, *, carried: bool) -> tuple[list[WorkloadPlan], set[str]]:
    """A `WorkloadPlan` per member as read, and the keys whose baseline is the journal's: a dead run's
    verified state carried forward (``carried``) wins over the one the cluster's revisions say."""
    journal = read.journal if carried else None
    workloads = []
    verified_by_journal: set[str] = set()
    for f in read.group.workloads if read.group else []:
        snapshot = f.kind.snapshot(f.obj)
        baseline = f.kind.verified_state(f.obj, f.revisions)
        if journal is not None and snapshot.ref.key in journal.workloads:
            baseline = journal.workloads[snapshot.ref.key].verified
            verified_by_journal.add(snapshot.ref.key)
        workloads.append(WorkloadPlan(snapshot=snapshot, baseline=baseline, revisions=f.revisions))
    return workloads, verified_by_journal


def _attach_manifests(
    workloads: list[WorkloadPlan], manifests: ManifestRead, *, journal: Journal | None, namespace: str
) -> list[WorkloadPlan]:
    """``-f``: each manifest merged onto its live workload (what the group's last verified run applied
    first, so that the merge removes what this one omits); the plans of the workloads to create."""
    for plan in workloads:  # before the manifests are attached: their merge removes what it omits
        entry = journal.workloads.get(plan.key) if journal is not None else None
        plan.last_applied = entry.applied if entry is not None and entry.applied else None
    attach_manifests(workloads, manifests)
    return [
        WorkloadPlan(
            snapshot=KINDS[ref.kind].snapshot(body),
            baseline=VerifiedState(template={}, triggers=None, revision=0, images={}, paused=False),
            revisions=[],
            manifest=body,
            create=True,
            remove_on_revert=True,
            notes=[f"does not exist yet: created from {origin} (a revert deletes it)"],
        )
        for ref, body, origin in to_create(manifests, namespace=namespace)
    ]


def _decide_workload(plan: WorkloadPlan, *, verified_by_journal: bool, allow_never_completed: bool) -> None:
    """One workload's own rules, said in its notes: a paused one taken over; one that never completed a
    rollout refused (its baseline is not a journal's) unless ``--allow-never-completed``; what the change
    does to its triggers and whether the platform starts the rollout by itself."""
    if plan.snapshot.paused:
        plan.notes.append(_paused_note(plan))
    if (
        plan.needs_change
        and not plan.remove_on_revert
        and not verified_by_journal
        and never_completed(plan.kind, plan.snapshot.raw, plan.revisions)
    ):
        if not allow_never_completed:
            raise RefusedError(
                f"{plan.key} never completed a rollout: if this run failed there would be nothing "
                "verified to revert it to",
                fix=f"get it to roll out once (oc rollout status {plan.key}), leave it out of the "
                "run, or pass --allow-never-completed to accept that a failure leaves it as found",
            )
        plan.notes.append(
            "never completed a rollout before this run (accepted with --allow-never-completed): "
            "a revert returns it to its template as found, which was never seen working"
        )
    if plan.needs_change and not plan.create:
        plan.notes += trigger_effects(plan)
        start = plan.kind.start_request(plan.snapshot.raw, change_body(plan), plan.revisions)
        plan.notes += [start] if start else []
