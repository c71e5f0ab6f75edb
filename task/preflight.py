"""Preflight: read-only checks that turn bad input or unmet preconditions into a refusal (exit 2).

Everything here only reads (GET/LIST, and SelfSubjectAccessReviews, which persist nothing). The result
is a `Plan`: pure data the engine carries out.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from rollguard.client import Client
from rollguard.errors import ApiError, Forbidden, NotFound, RefusedError
from rollguard.journal import Journal, JournalStore
from rollguard.kinds import KINDS, Kind, Owners, kind_of, triggers
from rollguard.lock import GroupLock
from rollguard.resources import (
    CONFIG_MAPS,
    EVENTS,
    IMAGE_STREAMS,
    LEASES,
    NAMESPACES,
    PODS,
    SELF_SUBJECT_ACCESS_REVIEWS,
    Resource,
)
from rollguard.structs import ImageTarget, Obj, Phase, Snapshot, VerifiedState, WorkloadRef

ACCESS_REVIEWS = 8  # SelfSubjectAccessReviews in flight at once
# The subresource as RBAC names it ("imagestreams/layers"): a SelfSubjectAccessReview for this resource
# string matches the same rules as resource imagestreams + subresource layers.
IMAGE_STREAM_LAYERS = Resource("image.openshift.io", "v1", "imagestreams/layers", "ImageStream")


@dataclass(frozen=True)
class Promotion:
    """Copy ``source_namespace/stream@image`` into ``stream:tag`` of the group's namespace."""

    stream: str
    tag: str
    source_namespace: str
    source_image: str  # sha256:...
    source_reference: str


@dataclass
class WorkloadPlan:
    """What the run will do to one workload."""

    snapshot: Snapshot
    baseline: VerifiedState
    revisions: list[Obj]
    target_images: dict[str, str] = field(default_factory=dict)
    promoted: dict[str, Promotion] = field(default_factory=dict)  # container -> promotion
    notes: list[str] = field(default_factory=list)

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
        return images_change or bool(self.promoted) or self.snapshot.paused


@dataclass
class Plan:
    namespace: str
    selector: str
    workloads: list[WorkloadPlan]
    journal: Journal | None
    carried_forward: bool = False

    @property
    def kinds(self) -> set[str]:
        return {w.snapshot.ref.kind for w in self.workloads}


def check_namespace(client: Client, namespace: str) -> None:
    try:
        client.get(NAMESPACES, namespace)
    except NotFound:
        raise RefusedError(
            f"namespace {namespace!r} does not exist", fix="check --namespace (kubectl get namespaces)"
        ) from None
    except Forbidden:
        pass  # may not read namespaces cluster-wide; the namespaced reads below will tell


def list_group(client: Client, namespace: str, selector: str) -> list[tuple[Kind, Obj]]:
    """Every DC and Deployment in ``namespace`` matching ``selector`` (no DCs where OpenShift is absent)."""
    found: list[tuple[Kind, Obj]] = []
    for kind in KINDS.values():
        try:
            items = client.list(kind.resource, namespace=namespace, selector=selector).get("items", [])
        except NotFound:
            continue
        except Forbidden as exc:
            raise RefusedError(
                f"not allowed to list {kind.resource.label} in namespace {namespace!r}",
                fix="grant the Role verb 'list' on that resource (see tekton/rbac.yaml)",
            ) from exc
        found.extend((kind, obj) for obj in items)
    return sorted(found, key=lambda pair: (pair[0].kind, pair[1]["metadata"]["name"]))


def check_access(client: Client, needs: list[tuple[str, Resource, str]]) -> None:
    """SelfSubjectAccessReview for each (verb, resource, namespace); refuse naming the first gap.

    The reviews go out at once (a rollout asks about twenty): the answers are read in order, so the gap
    named is always the first of the list, whatever answered first.
    """

    def ask(need: tuple[str, Resource, str]) -> Obj:
        verb, res, namespace = need
        review = {
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SelfSubjectAccessReview",
            "spec": {
                "resourceAttributes": {
                    "namespace": namespace,
                    "verb": verb,
                    "group": res.group,
                    "resource": res.plural,
                }
            },
        }
        return client.create(SELF_SUBJECT_ACCESS_REVIEWS, review)

    with ThreadPoolExecutor(max_workers=max(1, min(ACCESS_REVIEWS, len(needs)))) as pool:
        answers = [pool.submit(ask, need) for need in needs]
    for (verb, res, namespace), future in zip(needs, answers, strict=True):
        try:
            answer = future.result()
        except ApiError as exc:
            raise RefusedError(
                f"cannot check permissions (SelfSubjectAccessReview failed: {exc})",
                fix="allow 'create' on selfsubjectaccessreviews.authorization.k8s.io (system:basic-user grants it)",
            ) from exc
        if not answer.get("status", {}).get("allowed"):
            raise RefusedError(
                f"not allowed to {verb} {res.label} in namespace {namespace!r}",
                fix=f"grant the Role verb '{verb}' on {res.label} (see tekton/rbac.yaml)",
            )


def rollout_permissions(
    namespace: str, kinds: set[str], *, promote_from: str | None
) -> list[tuple[str, Resource, str]]:
    """What a rollout of a group with these kinds needs, as (verb, resource, namespace)."""
    needs: list[tuple[str, Resource, str]] = []
    for name in sorted(kinds):
        kind = KINDS[name]
        needs += [(v, kind.resource, namespace) for v in ("get", "list", "watch", "update")]
        needs += [(v, kind.revisions, namespace) for v in ("list", "watch")]
    needs += [(v, PODS, namespace) for v in ("list", "watch")]
    needs += [(v, CONFIG_MAPS, namespace) for v in ("get", "create", "update")]
    needs += [(v, LEASES, namespace) for v in ("get", "create", "update", "delete")]
    needs += [("create", EVENTS, namespace)]
    if promote_from:
        needs += [(v, IMAGE_STREAMS, namespace) for v in ("get", "list", "watch", "update")]
        needs += [("get", IMAGE_STREAMS, promote_from)]
        # OpenShift's API server asks this itself when a tag from another namespace is written into an
        # ImageStream (its tag verifier): missing, the promotion would fail mid-run instead of here.
        needs += [("get", IMAGE_STREAM_LAYERS, promote_from)]
    return needs


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
        containers = list(plan.snapshot.images)
        container = target.container
        if container is None:
            if len(containers) != 1:
                raise RefusedError(
                    f"target {target.ref.key} is ambiguous: it has containers {', '.join(containers)}",
                    fix=f"name the container: --image {target.ref.key}/CONTAINER=REF",
                )
            container = containers[0]
        elif container not in containers:
            raise RefusedError(
                f"target {target.ref.key} has no container {container!r}",
                fix=f"its containers are: {', '.join(containers)}",
            )
        if (target.ref, container) in seen and seen[(target.ref, container)] != target.image:
            raise RefusedError(
                f"target {target.ref.key}/{container} is given two images",
                fix="pass one --image per container",
            )
        seen[(target.ref, container)] = target.image
        plan.target_images[container] = target.image


def stream_of(plan: WorkloadPlan, container: str, namespace: str) -> str | None:
    """The ImageStream of ``namespace`` a container's image comes from, if any."""
    return triggers.stream_of(
        plan.kind.image_triggers(plan.snapshot.raw),
        container=container,
        image=plan.snapshot.images.get(container, ""),
        namespace=namespace,
    )


def resolve_promotions(
    client: Client, workloads: list[WorkloadPlan], *, namespace: str, source: str, tag: str
) -> None:
    """For each container fed by an ImageStream of ``namespace``, find ``source/stream:tag``."""
    streams: dict[str, Obj | None] = {}
    found_any = False
    for plan in workloads:
        for container in plan.snapshot.images:
            if container in plan.target_images:
                continue  # an explicit --image wins
            stream = stream_of(plan, container, namespace)
            if stream is None:
                continue
            if stream not in streams:
                try:
                    streams[stream] = client.get(IMAGE_STREAMS, stream, namespace=source)
                except NotFound:
                    streams[stream] = None
            source_stream = streams[stream]
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


def never_completed(kind: Kind, obj: Obj, revisions: list[Obj]) -> bool:
    """Neither the current template nor any revision ever ran complete: nothing to revert to."""
    if kind.progress(obj, revisions).phase is Phase.COMPLETE:
        return False
    current = kind.new_revision(obj, revisions)
    return not any(
        kind.is_complete_revision(rev) or (rev is not current and kind.was_complete(rev)) for rev in revisions
    )


def plan_rollout(
    client: Client,
    *,
    namespace: str,
    selector: str,
    targets: list[ImageTarget],
    promote_from: str | None,
    tag: str | None,
    on_paused: str,
    lock: GroupLock,
    journal_store: JournalStore,
    allow_never_completed: bool = False,
) -> Plan:
    """All read-only checks of a rollout; returns the plan or raises RefusedError."""
    check_namespace(client, namespace)
    found = list_group(client, namespace, selector)
    if not found:
        raise RefusedError(
            f"selector {selector!r} matches no DeploymentConfig or Deployment in namespace {namespace!r}",
            fix="check the labels (kubectl get dc,deploy -n NS --show-labels) or the namespace",
        )
    if promote_from:
        try:
            client.get(NAMESPACES, promote_from)
        except NotFound:
            raise RefusedError(
                f"--promote-from namespace {promote_from!r} does not exist",
                fix="name the namespace the images were built in (e.g. PROJECT-cd)",
            ) from None
        except Forbidden:
            pass
    check_access(
        client, rollout_permissions(namespace, {k.kind for k, _ in found}, promote_from=promote_from)
    )
    lock.check()
    journal = journal_store.load()
    carried = journal is not None and not journal.final

    workloads = []
    verified_by_journal: set[str] = set()
    revisions_by_kind: dict[str, Owners] = {}
    for kind, obj in found:
        if kind.kind not in revisions_by_kind:
            listed = client.list(kind.revisions, namespace=namespace).get("items", [])
            revisions_by_kind[kind.kind] = Owners(listed)
        revisions = kind.owned(obj, revisions_by_kind[kind.kind].candidates(obj))
        snapshot = kind.snapshot(obj)
        baseline = kind.verified_state(obj, revisions)
        if carried and journal is not None and snapshot.ref.key in journal.workloads:
            baseline = journal.workloads[snapshot.ref.key].verified
            verified_by_journal.add(snapshot.ref.key)
        workloads.append(WorkloadPlan(snapshot=snapshot, baseline=baseline, revisions=revisions))

    resolve_targets(workloads, targets)
    if promote_from and tag:
        resolve_promotions(client, workloads, namespace=namespace, source=promote_from, tag=tag)
    if not targets and not promote_from:
        raise RefusedError(
            "nothing to roll out", fix="pass --image TARGET=REF or --promote-from NS --tag TAG"
        )

    for plan in workloads:
        if plan.snapshot.paused:
            if on_paused == "refuse":
                raise RefusedError(
                    f"{plan.key} is paused (left so by an earlier tool?) and --on-paused is refuse",
                    fix=f"resume it first (rollguard resume {plan.key}) or pass --on-paused take-over",
                )
            pending = {c: i for c, i in plan.snapshot.images.items() if plan.baseline.images.get(c) != i}
            note = "was paused: taken over and resumed by this run"
            if pending:
                note += "; pending un-rolled images included: " + ", ".join(
                    f"{c}={i}" for c, i in pending.items()
                )
            plan.notes.append(note)
        if (
            plan.needs_change
            and plan.key not in verified_by_journal
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
        if plan.needs_change:
            blocker = plan.kind.rollout_blocker(plan.snapshot.raw)
            if blocker:
                raise RefusedError(
                    f"{plan.key} {blocker}",
                    fix=f"add it (oc set triggers {plan.key} --from-config) or leave {plan.key} out of the selector",
                )
    return Plan(
        namespace=namespace, selector=selector, workloads=workloads, journal=journal, carried_forward=carried
    )
