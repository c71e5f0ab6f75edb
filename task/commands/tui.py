"""`rollguard tui`: the repair TUI (Textual is imported only inside the handler, so `task` never needs it)."""

from __future__ import annotations

import argparse
from typing import Any

from rollguard.commands.common import cluster_args


def register(sub: Any) -> None:
    p = sub.add_parser("tui", help="interactive view of workloads by rollout group, with guarded repairs")
    scope = p.add_mutually_exclusive_group()
    scope.add_argument("-n", "--namespace", help="namespace to show (default: the kubeconfig context's)")
    scope.add_argument("-A", "--all-namespaces", action="store_true", help="show every namespace")
    p.add_argument("-l", "--selector", help="only workloads matching this label selector")
    p.add_argument("--read-only", action="store_true", help="show only: no action is offered or performed")
    cluster_args(p)
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from rollguard.plan.inputs import parse_namespace, parse_selector

    namespace = parse_namespace(args.namespace) if args.namespace else None
    selector = parse_selector(args.selector) if args.selector is not None else ""
    from rollguard.tui import main  # lazily: Textual loads only for this subcommand

    return main(
        namespace=namespace,
        all_namespaces=args.all_namespaces,
        selector=selector,
        context=args.context,
        kubeconfig=args.kubeconfig,
        read_only=args.read_only,
    )
