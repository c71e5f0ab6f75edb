"""`rollguard status`: one row per workload with its findings, grouped by rollout group (read-only)."""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from rollguard.commands.common import NAMESPACE_RULE, Session, cluster_args, session
from rollguard.core.errors import failed_check
from rollguard.core.images import short_image

if TYPE_CHECKING:
    from rollguard.state.model import NamespaceState, WorkloadState


def register(sub: Any) -> None:
    p = sub.add_parser(
        "status",
        help="show each workload's state and findings, by rollout group",
        description=f"Read-only. {NAMESPACE_RULE} (table output; -o json holds it per entry).",
    )
    scope_args(p)
    p.add_argument("-o", "--output", choices=("table", "json"), default="table", help="output format")
    cluster_args(p)
    p.set_defaults(handler=run)


def scope_args(p: argparse.ArgumentParser, *, many: bool = False) -> None:
    """-n/--namespace (repeatable with ``many``), --all-namespaces and -l/--selector."""
    scope = p.add_mutually_exclusive_group()
    scope.add_argument(
        "-n",
        "--namespace",
        action="extend" if many else "store",
        nargs="+" if many else None,
        help="namespace to read"
        + (" (repeatable)" if many else "")
        + " (default: the kubeconfig context's; in a pod, the pod's; else 'default')",
    )
    scope.add_argument("-A", "--all-namespaces", action="store_true", help="read every namespace")
    p.add_argument("-l", "--selector", help="only workloads matching this label selector")


def scope(where: Session, args: argparse.Namespace) -> tuple[list[str], str]:
    """(namespaces, where they came from) the scope arguments select; ([], ...) for all namespaces."""
    from rollguard.plan.inputs import parse_namespace

    if args.all_namespaces:
        return [], "--all-namespaces"
    given = args.namespace if isinstance(args.namespace, list) else [args.namespace] if args.namespace else []
    if given:
        return [parse_namespace(ns) for ns in given], "--namespace"
    return [where.namespace], where.namespace_from


def heading(command: str, where: Session, args: argparse.Namespace) -> str:
    """The first line of output: the namespaces read and why those."""
    namespaces, source = scope(where, args)
    what = f"namespace {namespaces[0]}" if len(namespaces) == 1 else f"namespaces {', '.join(namespaces)}"
    if not namespaces:
        what = "all namespaces"
    return f"rollguard {command}: {what} ({source}), {where.connection.describe}"


def read(where: Session, args: argparse.Namespace) -> list[NamespaceState]:
    """The states the scope arguments select (RefusedError on bad input)."""
    from rollguard.plan.inputs import parse_selector
    from rollguard.state.inventory import check_namespace, read_cluster, read_namespaces

    selector = parse_selector(args.selector) if args.selector is not None else None
    client = where.client
    if args.all_namespaces:
        return read_cluster(client, selector=selector)
    namespaces, _ = scope(where, args)
    states = read_namespaces(client, namespaces, selector=selector)
    for state in states:
        if not state.workloads and not state.groups:
            # Empty lists are also what a mistyped namespace gives: without this a nightly
            # drift-check of a wrong name would report "clean" forever. One GET, only when empty.
            check_namespace(client, state.namespace)
    return states


def render(namespaces: Sequence[NamespaceState], *, only: Sequence[WorkloadState] | None = None) -> list[str]:
    """Table lines: a heading per group, one row per workload, its finding reasons indented below."""
    keep = {(w.namespace, w.key) for w in only} if only is not None else None
    lines: list[str] = []
    for ns in namespaces:
        for group, members in ns.by_group():
            rows = [w for w in members if keep is None or (w.namespace, w.key) in keep]
            if not rows:
                continue
            if group is None:
                lines.append(f"{ns.namespace}: workloads in no rollout group")
            else:
                lock = f", locked by {group.lock_holder}" if group.lock_live else ""
                lines.append(
                    f"{ns.namespace}: group {group.selector!r} (journal {group.name}: "
                    f"{group.state}{', run ' + group.run_id if group.run_id else ''}{lock})"
                )
                kept = group.journal.kept_dcs
                if kept:  # `rollguard migrate` ran: its DCs at 0 are the way back, not a broken group
                    lines.append(
                        f"  migrated to Deployments; {', '.join(f'dc/{n}' for n in kept)} kept at 0 replicas for "
                        f"the way back: rollguard migrate -l {group.selector!r} --finish deletes them, --revert "
                        "returns to them"
                    )
                if failed_check(group.error):  # its last run failed a post-rollout check (--verify)
                    said = group.error if len(group.error) <= 200 else group.error[:197] + "..."
                    lines.append(f"  last run failed a check: {said}")
            table = [("KIND", "NAME", "STATE", "REVISION", "READY", "IMAGES")]
            for w in rows:
                images = ", ".join(f"{c}={short_image(i)}" for c, i in sorted(w.images.items()))
                table.append(
                    (w.kind, w.ref.name, ",".join(w.names), str(w.revision), f"{w.ready}/{w.desired}", images)
                )
            widths = [max(len(r[i]) for r in table) for i in range(5)]
            for index, row in enumerate(table):
                lines.append(
                    "  " + "  ".join(c.ljust(widths[i]) for i, c in enumerate(row[:5])) + "  " + row[5]
                )
                if index:
                    lines += [f"      {f.name}: {f.reason}" for f in rows[index - 1].findings]
    return lines


def to_json(namespaces: Sequence[NamespaceState]) -> list[Any]:
    return [
        {
            "namespace": ns.namespace,
            "groups": [
                {
                    "name": g.name,
                    "selector": g.selector,
                    "state": g.state,
                    "run_id": g.run_id,
                    "command": g.command,
                    "actor": g.actor,
                    "updated": g.updated,
                    "error": g.error,
                    "failed_check": failed_check(g.error),
                    "lock_holder": g.lock_holder,
                    "lock_live": g.lock_live,
                    **({"migration": g.journal.migration.get("state")} if g.journal.migration else {}),
                }
                for g in ns.groups
            ],
            "workloads": [w.to_json() for w in ns.workloads],
        }
        for ns in namespaces
    ]


def run(args: argparse.Namespace) -> int:
    import sys

    from rollguard.core.errors import EXIT_REFUSED, ApiError, RefusedError

    try:
        where = session(args)
        namespaces = read(where, args)
    except (ApiError, RefusedError) as exc:  # unreachable or refused by the API server
        print(f"rollguard: status: {exc}", file=sys.stderr)
        return EXIT_REFUSED
    if args.output == "json":
        print(json.dumps(to_json(namespaces), indent=2, sort_keys=True))
    else:
        lines = [heading("status", where, args), *render(namespaces)]
        print(
            "\n".join(lines) if len(lines) > 1 else f"{lines[0]}\nno DeploymentConfigs or Deployments found"
        )
    return 0
