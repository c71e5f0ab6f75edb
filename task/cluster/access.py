"""Permissions: what a run needs, asked with one SelfSubjectRulesReview per namespace, and a
SelfSubjectAccessReview for what its rules do not show (both persist nothing).

`rollout_permissions` lists what a rollout (and a repair) of a group of given kinds needs; `ask` sends
the reviews (the only I/O here); `first_gap` (pure) turns the answers into the refusal naming the first
permission missing and the Role verb to grant, or None.

Why rules first: a rollout needs some 20 permissions, and one SelfSubjectAccessReview each made the
permission check the biggest part of a run's fixed cost in requests. A rules review answers them all in
one request per namespace. Its rules are trusted only to *allow*, matched as RBAC matches them
(`rule_allows`, after k8s.io/kubernetes pkg/apis/rbac/v1 evaluation_helpers.go: verb, API group,
resource or ``resource/subresource``, ``*`` and ``*/subresource``; a rule limited to resourceNames
grants none of these nameless needs): a need no rule shows (RBAC lists nothing it denies; an authorizer
that cannot list its rules, a webhook say, answers ``incomplete``) is asked by SelfSubjectAccessReview,
so every refusal rests on the API server's own verdict for that one permission.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
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
    SELF_SUBJECT_RULES_REVIEWS,
    Resource,
)
from rollguard.core.structs import Obj
from rollguard.kinds import KINDS

ACCESS_REVIEWS = 8  # SelfSubjectAccessReviews in flight at once
RULES_FROM = 3  # a namespace with this many needs or more is asked for its rules first
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
    # create: the audit Event on each workload written; list: a DC whose deployer pod the API refuses has
    # the refusal (the quota's name) only in its FailedCreate Events, which the first error quotes
    needs += [(v, EVENTS, namespace) for v in ("create", "list")]
    if manifests:
        needs += [("list", HORIZONTAL_POD_AUTOSCALERS, namespace)]
    if promote_from:
        needs += [(v, IMAGE_STREAMS, namespace) for v in ("get", "list", "watch", "update")]
        needs += [("get", IMAGE_STREAMS, promote_from)]
        # OpenShift's API server asks this itself when a tag from another namespace is written into an
        # ImageStream (its tag verifier): missing, the promotion would fail mid-run instead of here.
        needs += [("get", IMAGE_STREAM_LAYERS, promote_from)]
    return needs


def rule_allows(rule: Obj, need: Need) -> bool:
    """True when one resource rule of a SelfSubjectRulesReview grants ``need`` (pure; RBAC's matching)."""
    verb, res, _namespace = need
    if rule.get("resourceNames"):  # grants named objects only; a need here names none
        return False
    verbs = rule.get("verbs") or []
    groups = rule.get("apiGroups") or []
    if not ("*" in verbs or verb in verbs) or not ("*" in groups or res.group in groups):
        return False
    _resource, _, subresource = res.plural.partition("/")
    for allowed in rule.get("resources") or []:
        if allowed in ("*", res.plural):
            return True
        if subresource and allowed == f"*/{subresource}":
            return True
    return False


def _rules(client: Api, namespace: str) -> list[Obj]:
    """The resource rules the API server lists for the user in ``namespace`` ([] when it cannot say)."""
    body = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SelfSubjectRulesReview",
        "spec": {"namespace": namespace},
    }
    try:
        answer = client.create(SELF_SUBJECT_RULES_REVIEWS, body)
    except ApiError:  # not served (an old or restricted API): every need is asked on its own
        return []
    found = (answer.get("status") or {}).get("resourceRules") or []
    return [r for r in found if isinstance(r, dict)]


def rules(client: Api, namespaces: Sequence[str]) -> dict[str, list[Obj]]:
    """The user's resource rules in each namespace: one SelfSubjectRulesReview each, at once."""
    if not namespaces:
        return {}
    with ThreadPoolExecutor(max_workers=max(1, min(ACCESS_REVIEWS, len(namespaces)))) as pool:
        return dict(zip(namespaces, pool.map(lambda ns: _rules(client, ns), namespaces), strict=True))


def ask(client: Api, needs: Sequence[Need], *, known: Mapping[str, list[Obj]] | None = None) -> list[Answer]:
    """The answer to every need, in the order of ``needs``: the rules of each namespace with several
    needs (``known`` already, else one SelfSubjectRulesReview each, at once), then one
    SelfSubjectAccessReview per need that no rule allows (at once)."""
    known = dict(known or {})
    several = {ns for _v, _r, ns in needs if sum(1 for n in needs if n[2] == ns) >= RULES_FROM}
    found = {**rules(client, sorted(several - set(known))), **known}
    allowed = [any(rule_allows(rule, need) for rule in found.get(need[2], [])) for need in needs]

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

    asked = [need for need, ok in zip(needs, allowed, strict=True) if not ok]
    with ThreadPoolExecutor(max_workers=max(1, min(ACCESS_REVIEWS, len(asked)))) as pool:
        futures = dict(zip(asked, [pool.submit(review, need) for need in asked], strict=True))
    answers = []
    for need in needs:
        if need not in futures:
            answers.append(Answer(need, True))
            continue
        try:
            answers.append(Answer(need, bool(futures[need].result().get("status", {}).get("allowed"))))
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
