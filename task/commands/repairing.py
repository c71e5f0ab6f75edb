"""What `resume`, `revert` and `redeploy` share on the command line (not a subcommand itself)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from rollguard.commands.common import (
    NAMESPACE_HELP,
    NAMESPACE_RULE,
    check_report_path,
    cluster_args,
    finish,
    lease_arg,
    lease_seconds,
    printer,
    session,
)
from rollguard.commands.guarded import execute, refused
from rollguard.core.errors import ApiError, RefusedError

if TYPE_CHECKING:  # imported when run: the CLI starts without the engine
    from rollguard.cluster.api import Api
    from rollguard.plan.repair_types import RepairPlan
    from rollguard.run.migrate import Migrate


def add(sub: Any, action: str, *, help: str, description: str) -> argparse.ArgumentParser:
    """The subcommand's parser with every option the three repairs take."""
    p: argparse.ArgumentParser = sub.add_parser(
        action,
        help=help,
        description=f"{description} {NAMESPACE_RULE}. Refused before any change (exit 2): bad input, "
        "a --report that cannot be written, missing permissions, a held lock, a workload another live run "
        "(a rollout of its group, another repair) has claimed.",
    )
    p.add_argument("targets", nargs="*", metavar="TARGET", help="dc/NAME or deployment/NAME (or use -l)")
    p.add_argument("-n", "--namespace", help=NAMESPACE_HELP)
    p.add_argument("-l", "--selector", help="act on this rollout group's workloads instead of TARGETs")
    p.add_argument(
        "--dry-run",
        action="store_true",
        help="print what would change (images, paused) as a diff; change nothing, exit 0 (report status "
        "dry-run, each workload planned or unchanged)",
    )
    p.add_argument(
        "--timeout", default="10m", metavar="DURATION", help="how long to wait for the result (10m)"
    )
    p.add_argument("--report", metavar="FILE", help="write a JSON report to FILE")
    lease_arg(p)
    cluster_args(p)
    p.set_defaults(handler=run, action=action)
    return p


def unfinished_migration(client: Api, plan: RepairPlan, *, timeout: int, lease: int) -> Migrate | None:
    """The `rollguard migrate --revert` run that reverts the group's killed migration, if the journal the
    repair's preflight read holds one (None otherwise): it points the HPAs back and brings the DCs back up
    and serving before it deletes the Deployments, which a revert of the journal's workloads would do
    all at once."""
    from rollguard.plan.migrate_decide import MigrateAction, MigrateRequest, MigrationState
    from rollguard.run.migrate import Migrate

    journal = plan.run_plan.journal
    if journal is None or journal.final or MigrationState.of(journal) is not MigrationState.MIGRATING:
        return None
    printer(f"journal of group {plan.selector!r}: a migration (run {journal.run_id}) was left "
            f"'{journal.state}'; reverting it as rollguard migrate -l {plan.selector!r} --revert does")  # fmt: skip
    request = MigrateRequest(namespace=plan.namespace, selector=plan.selector, action=MigrateAction.REVERT,
                             timeout=timeout, lease_seconds=lease)  # fmt: skip
    return Migrate(client, request, out=printer)


def run(args: argparse.Namespace) -> int:
    from rollguard.core.report import Report
    from rollguard.core.structs import ExitStatus
    from rollguard.plan.inputs import parse_duration
    from rollguard.plan.repair_read import plan_repair
    from rollguard.run.repair import Repair

    action = args.action
    report_ok = False  # a refused --report path is not written to either
    namespace, namespace_from = args.namespace or "", ""
    try:
        check_report_path(args.report)
        report_ok = True
        timeout = parse_duration(args.timeout)
        lease = lease_seconds(args)
        where = session(args)
        namespace, namespace_from, client = where.namespace, where.namespace_from, where.client
        printer(where.heading(action))
        plan = plan_repair(
            client,
            action=action,
            namespace=namespace,
            targets=args.targets,
            selector=args.selector,
            to_revision=getattr(args, "to_revision", None),
            allow_failed=getattr(args, "allow_failed", False),
        )
        migration = None
        if action == "revert" and plan.grouped and not args.targets and not args.dry_run:
            migration = unfinished_migration(client, plan, timeout=timeout, lease=lease)
        if migration is not None:  # a killed `rollguard migrate`: its own revert keeps the traffic
            outcome = execute(migration)
        elif args.dry_run:
            printer("\n".join(plan.diff()))
            changed = sum(c.changed for c in plan.changes)
            printer(f"dry run: {changed} of {len(plan.changes)} workloads would change; nothing was changed")
            outcome = Report(  # dry-run, never succeeded: nothing was repaired
                status=ExitStatus.DRY_RUN,
                command=action,
                namespace=plan.namespace,
                selector=plan.selector,
                workloads=plan.planned_results(),
            )
        else:
            outcome = execute(Repair(client, plan, timeout=timeout, out=printer, lease_seconds=lease))
    except (RefusedError, ApiError) as exc:  # the preflight only reads: nothing was changed
        outcome = refused(command=action, namespace=namespace, selector=args.selector or "", error=str(exc))
    outcome.namespace_from = namespace_from
    finish(outcome, report=args.report, report_ok=report_ok, dry_run=args.dry_run)
    return outcome.exit_code
