"""Permissions: what a run needs, asked with SelfSubjectAccessReviews (which persist nothing).

`rollout_permissions` lists what a rollout (and a repair) of a group of given kinds needs; `ask` sends
the reviews at once (the only I/O here); `first_gap` (pure) turns the answers into the refusal naming the
first permission missing and the Role verb to grant, or None.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from rollguard.cluster.api import Api
from rollguard.core.errors import ApiError, RefusedError
from rollguard.core.resources import (
    CONFIG_MAPS,
    EVENTS,
    HORIZONTAL_POD_AUTOSCALERS,
    IMAGE_STREAMS,
    LEASES,
    PODS,
    SELF_SUBJECT_ACCESS_REVIEWS,
    Resource,
)
from rollguard.core.structs import Obj
from rollguard.kinds import KINDS

ACCESS_REVIEWS = 8  # SelfSubjectAccessReviews in flight at once
# The subresource as RBAC names it ("imagestreams/layers"): a SelfSubjectAccessReview for this resource
# string matches the same rules as resource imagestreams + subresource layers.
IMAGE_STREAM_LAYERS = Resource("image.openshift.io", "v1", "imagestreams/layers", "ImageStream")

Need = tuple[str, Resource, str]  # (verb, resource, namespace)


@dataclass(frozen=True)
class Answer:
    """The API server's answer to one SelfSubjectAccessReview (``error``: the review itself failed)."""

    need: Need
    allowed: bool
    error: ApiError | None = None


def rollout_permissions(
    namespace: str,
    kinds: set[str],
    *,
    promote_from: str | None,
    manifests: bool = False,
    creates: frozenset[str] = frozenset(),
) -> list[Need]:
    """What a rollout of a group with these kinds needs, as (verb, resource, namespace).

    With ``manifests`` it reads HorizontalPodAutoscalers (whose targets keep their replicas); a kind in
    ``creates`` is created (a workload given by manifest that does not exist yet) and deleted on revert.
    """
    needs: list[Need] = []
    for name in sorted(kinds | creates):
        kind = KINDS[name]
        needs += [(v, kind.resource, namespace) for v in ("get", "list", "watch", "update")]
        if name in creates:
            needs += [(v, kind.resource, namespace) for v in ("create", "delete")]
        needs += [(v, kind.revisions, namespace) for v in ("list", "watch")]
    needs += [(v, PODS, namespace) for v in ("list", "watch")]
    needs += [(v, CONFIG_MAPS, namespace) for v in ("get", "create", "update")]
    needs += [(v, LEASES, namespace) for v in ("get", "create", "update", "delete")]
    needs += [("create", EVENTS, namespace)]
    if manifests:
        needs += [("list", HORIZONTAL_POD_AUTOSCALERS, namespace)]
    if promote_from:
        needs += [(v, IMAGE_STREAMS, namespace) for v in ("get", "list", "watch", "update")]
        needs += [("get", IMAGE_STREAMS, promote_from)]
        # OpenShift's API server asks this itself when a tag from another namespace is written into an
        # ImageStream (its tag verifier): missing, the promotion would fail mid-run instead of here.
        needs += [("get", IMAGE_STREAM_LAYERS, promote_from)]
    return needs


def ask(client: Api, needs: Sequence[Need]) -> list[Answer]:
    """One SelfSubjectAccessReview per need, all at once; the answers in the order of ``needs``."""

    def review(need: Need) -> Obj:
        verb, res, namespace = need
        body = {
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
        return client.create(SELF_SUBJECT_ACCESS_REVIEWS, body)

    with ThreadPoolExecutor(max_workers=max(1, min(ACCESS_REVIEWS, len(needs)))) as pool:
        futures = [pool.submit(review, need) for need in needs]
    answers = []
    for need, future in zip(needs, futures, strict=True):
        try:
            answers.append(Answer(need, bool(future.result().get("status", {}).get("allowed"))))
        except ApiError as exc:
            answers.append(Answer(need, False, error=exc))
    return answers


def first_gap(answers: Sequence[Answer]) -> RefusedError | None:
    """The refusal naming the first permission missing (or the first review that failed), or None.

    The reviews go out at once, but the gap named is always the first of the list, whatever answered first.
    """
    for answer in answers:
        verb, res, namespace = answer.need
        if answer.error is not None:
            refusal = RefusedError(
                f"cannot check permissions (SelfSubjectAccessReview failed: {answer.error})",
                fix="allow 'create' on selfsubjectaccessreviews.authorization.k8s.io (system:basic-user grants it)",
            )
            refusal.__cause__ = answer.error
            return refusal
        if not answer.allowed:
            return RefusedError(
                f"not allowed to {verb} {res.label} in namespace {namespace!r}",
                fix=f"grant the Role verb '{verb}' on {res.label} (see tekton/rbac.yaml)",
            )
    return None


def check_access(client: Api, needs: Sequence[Need]) -> None:
    """Refuse naming the first permission of ``needs`` the user lacks."""
    refusal = first_gap(ask(client, needs))
    if refusal is not None:
        raise refusal
