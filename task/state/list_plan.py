"""Which requests read the revisions and pods of the workloads a selector matched (pure).

With a selector, `rollguard.state.inventory` lists the matched workloads first; their revisions (RCs,
ReplicaSets) and pods are then read by label. `needs` says, per owned list and namespace, what that
namespace's workloads need of it: ``None`` for the namespace's whole list (many workloads, or one that
selects its pods by no label), else the label selectors whose union it needs (RCs: the DC-name label
with each DC's name; ReplicaSets and pods: each workload's pod selector).

`plan_list` decides, for one owned list, where to ask: per namespace (each namespace's selectors in
that namespace), or **cluster-wide** (every narrowed namespace's selectors in one set of queries, the
answers bucketed by namespace) when that takes fewer requests. With a selector matching 1% of the
workloads spread over 100 namespaces that is a few requests instead of ~300. Ties stay per namespace:
a namespaced request makes the API server read that namespace only. Namespaces read whole are always
read per namespace.

Queries may select more than asked: a selector of several requirements is asked by one of its
equality requirements, so that selectors combine into ``key in (...)`` (`queries`). Every answer is
then kept only where it belongs: in a namespace the plan asked for, matching one of that namespace's
own selectors (`keeps`). So either plan gives exactly the objects the selectors select in each
namespace: a same-named DC's RCs in another namespace, or a pod labelled alike elsewhere, never leak in.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from rollguard.core.selectors import matches, requirements
from rollguard.core.structs import Obj
from rollguard.kinds import KINDS

# A namespace's selectors for one owned list; None: read its whole list.
Need = frozenset[str] | None

OWNED = ("rcs", "rss", "pods")
# Above this many selected workloads in a namespace, its revisions and pods are read whole (3 lists)
# rather than by owner.
NARROW_MAX = 20
NAMES_PER_QUERY = 50  # values per ``key in (...)`` selector: keeps the query string short
_EQUALS = re.compile(r"^([A-Za-z0-9._/-]+)=([A-Za-z0-9._-]*)$")  # one ``key=value`` requirement


def needs(workloads: Mapping[str, Sequence[tuple[str, Obj]]]) -> dict[str, dict[str, Need]]:
    """{owned list: {namespace: what its workloads need of it}} from each namespace's (kind, workload)."""
    found: dict[str, dict[str, Need]] = {arg: {} for arg in OWNED}
    for ns, objs in workloads.items():
        if not objs:
            continue
        if len(objs) > NARROW_MAX:
            for arg in OWNED:
                found[arg][ns] = None
            continue
        wanted: dict[str, set[str]] = {arg: set() for arg in OWNED}
        for kind_name, obj in objs:
            kind = KINDS[kind_name]
            revisions = "rcs" if kind.revision_label else "rss"
            selector = kind.pod_selector(obj)
            if kind.revision_label:  # its revisions carry its name in a label
                wanted[revisions].add(f"{kind.revision_label}={obj['metadata']['name']}")
            else:  # its revisions are what its pod selector selects
                wanted[revisions].add(selector)
            wanted["pods"].add(selector)
        for arg, selectors in wanted.items():
            if selectors:  # a workload selecting nothing by label (""): the namespace's list whole
                found[arg][ns] = None if "" in selectors else frozenset(selectors)
    return found


def queries(selectors: Iterable[str]) -> list[str]:
    """Few label selectors whose union contains every object any of ``selectors`` selects.

    Each selector is asked by one of its ``key=value`` requirements (the key most of the selectors
    have, the one with the most distinct values first: the most selective that combines), those of
    one key as ``key in (...)`` with at most `NAMES_PER_QUERY` values each. A selector with no
    equality requirement is asked as it is. Filter the answers with `keeps`.
    """
    split = {s: [m.groups() for r in requirements(s) if (m := _EQUALS.match(r))] for s in set(selectors)}
    coverage = Counter(key for pairs in split.values() for key in {k for k, _ in pairs})
    distinct = {key: len({v for pairs in split.values() for k, v in pairs if k == key}) for key in coverage}
    rank = {key: (-coverage[key], -distinct[key], key) for key in coverage}
    by_key: dict[str, set[str]] = {}
    rest = []
    for selector, pairs in split.items():
        if pairs:
            key, value = min(pairs, key=lambda kv: rank[kv[0]])
            by_key.setdefault(key, set()).add(value)
        else:
            rest.append(selector)
    return sorted(rest) + [q for key, values in sorted(by_key.items()) for q in in_queries(key, values)]


def in_queries(key: str, values: Iterable[str]) -> list[str]:
    """``key in (...)`` selectors covering ``values``, at most `NAMES_PER_QUERY` values each."""
    ordered = sorted(set(values))
    return [
        f"{key} in ({','.join(ordered[i : i + NAMES_PER_QUERY])})"
        for i in range(0, len(ordered), NAMES_PER_QUERY)
    ]


def keeps(selectors: Iterable[str], obj: Obj) -> bool:
    """Whether one of ``selectors`` selects ``obj`` (by its labels, as the API server would)."""
    labels = obj.get("metadata", {}).get("labels") or {}
    return any(matches(s, labels) for s in selectors)


@dataclass(frozen=True)
class ListPlan:
    """The requests that read one owned list for the narrowed namespaces."""

    cluster_wide: tuple[str, ...] = ()  # asked across the cluster, answers bucketed by namespace
    covered: frozenset[str] = frozenset()  # the namespaces ``cluster_wide`` answers for
    # the rest, asked in their namespace: its queries, or None for its whole list
    per_namespace: dict[str, tuple[str, ...] | None] = field(default_factory=dict)

    @property
    def requests(self) -> int:
        """How many lists the plan asks (each paginated: pages beyond the first not counted)."""
        return len(self.cluster_wide) + sum(1 if q is None else len(q) for q in self.per_namespace.values())


def plan_list(needs: Mapping[str, Need], *, cluster_wide: bool = True) -> ListPlan:
    """Where to ask for one owned list (see the module's docstring); ``cluster_wide`` False: never."""
    whole: dict[str, tuple[str, ...] | None] = {ns: None for ns, need in needs.items() if need is None}
    narrow = {ns: need for ns, need in needs.items() if need}
    apart = {ns: tuple(queries(need)) for ns, need in narrow.items()}
    together = tuple(queries(s for need in narrow.values() for s in need))
    if cluster_wide and len(together) < sum(len(q) for q in apart.values()):
        return ListPlan(cluster_wide=together, covered=frozenset(narrow), per_namespace=whole)
    return ListPlan(per_namespace={**whole, **apart})
